"""The one-line refusals of a ``.cfg`` reader's two kinds of wrong file: an unknown ``[archsim]`` key, named as
written, and a TOML given where a SCALE-Sim ``.cfg`` goes (a device TOML told the flags that cost one of its arrays)."""

from __future__ import annotations

from archsim.array.cfg_lines import cfg_line
from archsim.array.device_sections import toml_sections
from archsim.array.sram_sizes import operand_sram_kib, short_sram
from archsim.choices.devices import TRAIN_DTYPE
from archsim.clock import MAX_CLOCK_HZ, MIN_CLOCK_HZ
from archsim.errors import InputError
from archsim.validate import did_you_mean


def archsim_key_error(key: str, value: str, text: str, file: str) -> InputError:
    """The one-line refusal of an unknown ``[archsim]`` key, named as the file spells it (configparser lowers it:
    ``ClockMHz`` read as ``clockmhz``) with the nearest valid key; a clock written in MHz (``ClockMHz = 1000``)
    is told the GHz figure to write, as every clock archsim reads is taken in GHz there."""
    line = cfg_line(text, f"archsim.{key}")
    written = text.splitlines()[line - 1].split(":")[0].split("=")[0].strip() if line else key
    fix = ""
    if key == "clockmhz":
        try:
            hz = float(value) * 1e6
        except ValueError:
            hz = 0.0
        fix = ": ClockGHz takes GHz" + (f", write ClockGHz = {hz / 1e9:g}" if MIN_CLOCK_HZ <= hz <= MAX_CLOCK_HZ else "")
    return InputError(f"unknown key in [archsim]{did_you_mean(written, ['ClockGHz'])}; expected ClockGHz{fix}",
                      file=file, line=line, field=written)


def toml_refusal(text: str, file: str, dtype_flag: bool) -> InputError:
    """Why a TOML is no ``.cfg``; for a device TOML, the flags (the library's keywords) that cost one of its arrays, its
    values read as the device reader reads them (:func:`~archsim.array.device_sections.toml_sections`). ``dtype_flag``:
    the command takes ``--dtype``, so they name train's (:data:`~archsim.choices.devices.TRAIN_DTYPE`), as the array
    commands' own default is SCALE-Sim's 1-byte word: without it they price another chip."""
    from archsim.console import route, setting
    word, sep = route("flags", "keywords"), route(" ", ", ")  # how the caller sets an array
    refusal = f"a TOML file: {setting('config')} reads a SCALE-Sim .cfg (a device TOML is for train, search, cost, energy, gemm, pipeline and schedule)"
    try:
        values = toml_sections(text, file, ("compute", "memory")) or {}
    except InputError as exc:  # where, and why no flags stand for its array
        return InputError(f"{refusal}; its array as {word} cannot be read: {exc.message}", file=file,
                          line=exc.where.line, field=exc.where.field)
    compute, sram, split = values.get("compute", {}), values.get("memory", {}).get("sram_kib_per_array"), ""
    if "rows" not in compute or "cols" not in compute:
        return InputError(refusal, file=file)
    if not isinstance(sram, tuple) and sram and (short := short_sram(sram)):  # as train refuses it
        return InputError(f"{refusal}; its array as {word} cannot be read: {short}", file=file,
                          field="memory.sram_kib_per_array")
    flags = [setting("array", f"{compute['rows']}x{compute['cols']}")]
    if compute.get("dataflow", "ws") in ("ws", "os", "is"):
        flags.append(setting("dataflow", compute.get("dataflow", "ws")))
    if "clock_mhz" in compute:
        flags.append(setting("clock-ghz", placeholder=f"{compute['clock_mhz'] / 1000:g}"))
    if isinstance(sram, tuple):  # the three buffers as stated, as train's energy model prices them
        flags.append(setting("sram-kb", ",".join(map(str, sram))))
    elif sram:  # one figure: the energy model's buffers (train's), so that --energy prices what train charges
        flags.append(setting("sram-kb", ",".join([str(kib := operand_sram_kib(sram))] * 3)))
        left = sram - 3 * kib  # the split's rule stated, so 341,341,341 for 1024 KiB reads as meant
        split = (f"; its {sram:g} KiB of SRAM per array is {kib} KiB per operand buffer, as train's energy "
                 f"model splits it (in three, whole KiB{f': {left:g} KiB unused' if left > 0 else ''})")
    if dtype_flag:
        flags.append(setting("dtype", TRAIN_DTYPE))
    return InputError(f"{refusal}{split}; its array as {word}: {sep.join(flags)}", file=file)
