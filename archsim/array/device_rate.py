"""The DRAM rate a ``--config`` device file states, as the cycle engine runs at it: ``[memory] hbm_gbps`` at the
file's own clock in words/cycle on each operand buffer (:func:`device_dram_rate`, the one rule), an array set to it
(:func:`with_device_bandwidth`) and the notes that say so (one file's, a sweep's, one run without it). Apart from
:mod:`archsim.array.options`, the array flags, which it serves: one job each. GB/s, GHz, words per cycle."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from archsim.array.config import ArrayConfig, dram_words
from archsim.array.device_sections import is_device_toml
from archsim.console import setting
from archsim.errors import InputError
from archsim.validate import INT32_MAX


def device_dram_rate(config: str | Path, element_bytes: int) -> tuple[int, float, float] | None:
    """(words/cycle, GB/s, GHz): the DRAM rate a ``--config`` device file states as ``[memory] hbm_gbps`` at its own
    clock (a TOML's ``[compute] clock_mhz``, a ``.cfg``'s ``[archsim] ClockGHz``), in words of ``element_bytes``:
    hbm_gbps / (element_bytes × GHz) to the nearest whole
    number (a half up), at least 1. None for a plain SCALE-Sim file, one stating
    ``Bandwidth`` (checked against ``hbm_gbps`` on reading: that rate is the file's) or one without a clock.

    The rule is per operand: SCALE-Sim's ``Bandwidth`` is each buffer's own DRAM port, not a share (USER mode
    passes it as ``ifmap_backing_buf_bw``, ``filter_backing_buf_bw`` and ``ofmap_backing_buf_bw`` alike, in
    ``scalesim/single_layer_sim.py`` to ``memory/double_buffered_scratchpad_mem.py``'s ``set_params``), and a
    ``.cfg`` device file's ``Bandwidth`` already must equal its ``hbm_gbps`` (:func:`~archsim.array.device_sections.
    check_bandwidth_once`): so each of the ifmap, filter and ofmap buffers reads (or writes) at the chip's whole
    rate, the chip's total not divided among them (three buffers streaming at once draw up to 3 × hbm_gbps)."""
    hbm, ghz, bandwidth = _stated_rate(config)
    if not hbm or ghz is None or bandwidth:
        return None
    return dram_words(hbm, ghz, element_bytes), float(hbm), ghz  # a half up, not to even


def _stated_rate(config: str | Path) -> tuple[float | None, float | None, bool]:
    """(hbm_gbps in GB/s, clock in GHz, whether SCALE-Sim's ``Bandwidth`` is written) as a device file states them,
    each None where not written (a device TOML writes no ``Bandwidth``): what :func:`device_dram_rate` and
    :func:`unclocked_hbm_note` read, read as every device-file reader reads it (its keys checked)."""
    from archsim.array.cfg_lines import cfg_stated
    from archsim.array.device_sections import cfg_device_sections, toml_sections
    from archsim.validate import read_text

    text = read_text(config, "config file", encoding="utf-8-sig")  # read once already: no error here
    if is_device_toml(config):  # read as every device-file reader reads it: the shared TOML reader, its keys checked
        values = toml_sections(text, str(config), ("compute", "memory")) or {}
        hbm, mhz = values.get("memory", {}).get("hbm_gbps"), values.get("compute", {}).get("clock_mhz")
        return hbm, None if mhz is None else mhz / 1e3, False
    checked = cfg_device_sections(text, str(config), required=False)
    hbm = None if checked is None else checked[0].get("memory", {}).get("hbm_gbps")
    stated = cfg_stated(config)  # as the array was read from it
    return hbm, stated.clock_ghz, stated.bandwidth


def unclocked_hbm_note(config: str | Path, flag: str = "bandwidth", *, spec_key: bool = False,
                       name: str | None = None) -> str | None:
    """What the cycle engine says of a device ``.cfg`` stating ``[memory] hbm_gbps`` but neither ``[archsim]
    ClockGHz`` nor SCALE-Sim's ``Bandwidth``: GB/s become words/cycle only at a clock, so the file's rate was not
    applied and the array ran at its ``Bandwidth`` default (SCALE-Sim's 10 words/cycle); how to state the clock, or
    ``flag`` (its DRAM words/cycle, as the caller spells it; ``spec_key``: a sweep spec's list key) to give the rate.
    None for any other file. ``name``: the file as the user named it (default ``config``)."""
    hbm, ghz, bandwidth = _stated_rate(config)
    if not hbm or ghz is not None or bandwidth:
        return None
    default = ArrayConfig().bandwidth[0]
    named = f"{flag} = [WORDS]" if spec_key else setting(flag, placeholder="WORDS")
    return (f"{config if name is None else name}: [memory] hbm_gbps = {hbm:g} GB/s was not applied: the file states "
            f"no clock to turn GB/s into words/cycle, so the cycle engine ran at {default} words/cycle per operand "
            f"buffer, SCALE-Sim's default; state the clock as ClockGHz = GHZ under [archsim] (in GHz), or give {named}")


def with_device_bandwidth(array: ArrayConfig, config: str | Path | None, element_bytes: int, flag: str = "bandwidth",
                          *, name: str | None = None) -> tuple[ArrayConfig, str | None]:
    """(array, note): ``array`` in ``element_bytes``-byte words at the DRAM words/cycle its ``--config`` device file's
    ``[memory] hbm_gbps`` states (:func:`device_dram_rate`, every operand), carried as the file's GB/s and clock
    (:attr:`ArrayConfig.dram_rate`) so the words follow a later element size, and the note the cycle engine says of
    it, naming ``flag`` (its DRAM words/cycle, as the caller spells it) that overrides it; ``array`` and None where the
    file states no such rate, or ``array`` and :func:`unclocked_hbm_note` where its hbm_gbps has no clock. Callers
    run it only under the cycle engine with ``flag`` not given: the flag wins, the analytic engine reads no
    bandwidth."""
    rate = None if config is None else device_dram_rate(config, element_bytes)
    if rate is None:  # a file whose hbm_gbps states no clock to be read at: said so, not passed over
        return array, None if config is None else unclocked_hbm_note(config, flag, name=name)
    words, hbm, ghz = rate
    if words > INT32_MAX:  # the file's rate in the file's terms, not ArrayConfig's dram_rate tuple
        raise InputError(f"{hbm:g} GB/s at the file's {ghz:g} GHz is {words:.3g} DRAM words/cycle of {element_bytes} "
                         f"bytes, above the {INT32_MAX} the cycle engine takes: give a lower hbm_gbps",
                         file=str(config), field="memory.hbm_gbps")
    return replace(array, element_bytes=element_bytes, read_bandwidth=None, dram_rate=(hbm, ghz)), (
        f"{config if name is None else name}: the cycle engine ran at {words} words/cycle per operand buffer, "
        f"[memory] hbm_gbps = {hbm:g} GB/s in {element_bytes}-byte words at the file's {ghz:g} GHz "
        f"({words * element_bytes * ghz:g} GB/s; {PER_BUFFER}); {setting(flag, placeholder='WORDS')} overrides it")


# Why each operand buffer reads at the chip's whole GB/s (device_dram_rate's rule), as the notes say it.
PER_BUFFER = "each of ifmap, filter and ofmap at the chip's whole rate, as SCALE-Sim's Bandwidth is per buffer"


def sweep_rate_note(name: str, rate: tuple[float, float], widths: Sequence[int]) -> str:
    """What a sweep's cycle engine says, run without a spec's ``bandwidths``, of the device ``.cfg`` ``name`` (as the
    spec names it) whose ``[memory] hbm_gbps`` set its DRAM rate, ``rate`` (GB/s, GHz: :attr:`ArrayConfig.dram_rate`):
    the words/cycle in each of the sweep's element sizes ``widths`` (bytes), as :func:`with_device_bandwidth` says it
    for one."""
    hbm, ghz = rate
    said = [(width, dram_words(hbm, ghz, width)) for width in dict.fromkeys(widths)]
    words = " and ".join(f"{count}{' words/cycle per operand buffer' if i == 0 else ''} in {width}-byte words "
                         f"({count * width * ghz:g} GB/s)" for i, (width, count) in enumerate(said))
    return (f"{name}: the cycle engine ran at {words}, [memory] hbm_gbps = {hbm:g} GB/s at the file's {ghz:g} GHz "
            f"({PER_BUFFER}); a spec's bandwidths = [WORDS] overrides it")


def hbm_unread_note(config: str | Path, element_bytes: int, flag: str = "bandwidth", *,
                    spec_key: bool = False, name: str | None = None) -> str | None:
    """What a sweep's cycle engine says, run without ``flag`` (its DRAM words/cycle, named as the caller spells it),
    of a device ``.cfg`` that states ``[memory] hbm_gbps`` but no SCALE-Sim ``Bandwidth`` on an array that does not
    carry that rate (a :class:`~archsim.sweep.spec.SweepSpec` built by hand from the file's array: a spec file read
    by :func:`~archsim.sweep.spec.load_spec` runs at the file's rate): it ran at the array's words/cycle, SCALE-Sim's
    default; the flag's value nearest the file's GB/s (:func:`device_dram_rate`) is named. None where the file states
    no such rate. ``spec_key``: ``flag`` is a sweep spec's list key, named as ``bandwidths = [N]``; ``name``: the file
    as the user named it (default ``config``)."""
    rate = device_dram_rate(config, element_bytes)
    if rate is None:
        return None
    (words, hbm, ghz), default = rate, ArrayConfig().bandwidth[0]
    named = f"{flag} = [{words}]" if spec_key else setting(flag, words)
    return (f"{config if name is None else name} states [memory] hbm_gbps = {hbm:g} GB/s, which the spec's array does not "
            f"carry (a spec read from its file does, as cost --config reads it): it ran at {default} words/cycle per operand, SCALE-Sim's default ({default * element_bytes * ghz:g} "
            f"GB/s of {element_bytes}-byte words at {ghz:g} GHz); {named} is {words * element_bytes * ghz:g} GB/s")


__all__ = ["PER_BUFFER", "device_dram_rate", "hbm_unread_note", "sweep_rate_note", "unclocked_hbm_note",
           "with_device_bandwidth"]
