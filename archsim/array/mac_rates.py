"""MACs per PE per cycle by dtype on a device file's arrays (``[compute] macs_per_pe``, docs/formats.md "Device
files"): many arrays run a narrower dtype at a multiple of their 16-bit MAC rate (H100's tensor cores and TPU
v5p's MXUs double it at fp8/int8), a wider one at a fraction (fp32 in several bf16 passes).

The cycle model's assumption: a rate r packs r MACs of one output's reduction into each PE and cycle, so a
GEMM (m, k, n) at rate r runs as SCALE-Sim's (m, ⌈k / r⌉, n) — the reduction's depth per step × r, the array's
shape and dataflow unchanged. Source: NVIDIA's PTX ISA ``mma`` shapes, where an fp8 (e4m3/e5m2) ``mma`` is
m16n8k32 against fp16's m16n8k16 at the same issue rate (the K a step reduces doubles, not M or N). Under ws and
is, K lies along the rows (a fold holds rows · r of it: ⌈k / (rows · r)⌉ = ⌈⌈k / r⌉ / rows⌉ folds); under os it
is streamed (⌈k / r⌉ cycles a fold). A fraction 1 / q runs each MAC in q passes: k · q. Rate 1 is the GEMM
itself, SCALE-Sim's cost exactly. Operands and HBM bytes stay the real GEMM's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from archsim.choices.devices import DTYPES, FP8, SCALESIM_DTYPE
from archsim.errors import InputError
from archsim.validate import shown
from archsim.value_parsers import parse_float

if TYPE_CHECKING:  # numpy only where a GEMM is packed: a device file's checks run under --help's parsers
    import numpy as np
    import numpy.typing as npt

# the dtypes archsim's GEMMs run in on a device's arrays: what macs_per_pe may name, every --dtype of the array
# commands (int8 since 2026-12-06: until then refused, though cost --dtype int8 ran it at one MAC per PE per cycle)
MAC_DTYPES = (SCALESIM_DTYPE, *DTYPES, FP8)
MAX_MAC_RATE = 64  # MACs per PE per cycle: above any array's packing (int4 on a 16-bit PE is 4); 1/64 the least
_EXACT = 1e-9  # a unit fraction as TOML writes it (0.25) read as 1 / 4


def mac_rate(value: object) -> float:
    """One ``macs_per_pe`` figure: a whole number 1 … :data:`MAX_MAC_RATE` or a unit fraction 1/2 … 1/64 (``0.25``),
    the forms :func:`packed_k` runs exactly; else ValueError in one line."""
    what = f"a whole number 1 … {MAX_MAC_RATE} or a unit fraction (0.5, 0.25, …) of MACs per PE per cycle"
    if isinstance(value, str):
        raise ValueError(f"expected {what}, got {shown(value)}")  # noqa: TRY004 (one error type for the callers)
    rate = parse_float(value, low_open=True, high=MAX_MAC_RATE, what=what)
    if rate >= 1 and abs(rate - round(rate)) <= _EXACT:
        return float(round(rate))
    passes = 1 / rate
    if rate < 1 and abs(passes - round(passes)) <= _EXACT * passes and round(passes) <= MAX_MAC_RATE:
        return 1 / round(passes)
    raise ValueError(f"expected {what}, got {shown(value)}")


def rates_table(value: object, file: str, field: str) -> dict[str, float]:
    """``[compute] macs_per_pe`` read (:func:`mac_rate` each), or InputError naming the file and the dtype's key."""
    if not isinstance(value, dict):
        raise InputError("expected a table of dtype = MACs per PE per cycle, e.g. { fp8 = 2, bf16 = 1 }", file=file,
                         field=field)
    rates = {}
    for dtype, rate in value.items():
        if dtype not in MAC_DTYPES:
            raise InputError(f"unknown dtype {dtype!r}; expected {', '.join(MAC_DTYPES)}", file=file, field=field)
        try:
            rates[dtype] = mac_rate(rate)
        except ValueError as exc:
            raise InputError(str(exc), file=file, field=f"{field}.{dtype}") from None
    return rates


def array_rates(rates: dict[str, float], gemm: str, lanes: bool, file: str,
                field: str = "compute.macs_per_pe") -> dict[str, float]:
    """A device file's read ``[compute] macs_per_pe`` (:func:`rates_table`), refused in one line where nothing runs
    at it: on ``gemm = "tiles"`` (its GEMMs run at the stated peaks) and for fp32 beside ``lanes`` (fp32 runs on the
    lanes, one FMA a lane and cycle). ``field``: where the file states it (a ``.cfg``'s :data:`CFG_SECTION`)."""
    if rates and gemm != "arrays":
        raise InputError(f"macs_per_pe is a rate of gemm = \"arrays\" (a gemm = {gemm!r} device runs its GEMMs at its "
                         "stated peak_tflops)", file=file, field=field)
    if "fp32" in rates and lanes:
        raise InputError("fp32 GEMMs run on the lanes this device states, not its arrays: drop macs_per_pe.fp32 "
                         "(or lanes)", file=file, field=f"{field}.fp32")
    return rates


# A SCALE-Sim .cfg has no [compute] (its array is [architecture_presets]'): it states the rates as a section of
# their own, one dtype = rate a line (``[macs_per_pe]`` / ``fp8 = 2``), read by the TOML's rule (:func:`rates_table`)
CFG_SECTION = "macs_per_pe"


def cfg_rates(section: dict[str, str] | None, file: str) -> dict[str, float]:
    """A ``.cfg``'s ``[macs_per_pe]`` (configparser's text values, keys lowercased) read by the TOML's rule and
    refusals (:func:`rates_table`, a bad figure named ``macs_per_pe.DTYPE``); {} where the file has no such section.
    A value is text: a number is read as one, anything else refused as a TOML's string is."""
    if not section:
        return {}
    from archsim.array.cfg_lines import cfg_unquoted

    values: dict[str, object] = {}
    for dtype, text in section.items():
        cfg_unquoted(text, file, f"{CFG_SECTION}.{dtype}")  # fp8 = "2": a TOML habit, told what to write
        try:
            values[dtype] = float(text.strip())
        except ValueError:
            values[dtype] = text.strip()  # refused by mac_rate, named as written
        if dtype not in MAC_DTYPES:  # the dtype's own line, not the section's
            raise InputError(f"unknown dtype {dtype!r}; expected {', '.join(MAC_DTYPES)}", file=file,
                             field=f"{CFG_SECTION}.{dtype}")
    return rates_table(values, file, CFG_SECTION)


def rate_hint(dtype: str, ratio: float, tolerance: float) -> str:
    """`` or state [compute] macs_per_pe = { dtype = r }`` where a stated peak is ``ratio`` × the one-MAC rate and r,
    the nearest whole number (or unit fraction), is a rate the key takes within ``tolerance`` (the peaks' 1%); else
    nothing."""
    near = float(round(ratio)) if ratio >= 1 else 1 / max(1, round(1 / ratio))
    try:
        rate = mac_rate(near)
    except ValueError:
        return ""
    if rate == 1 or abs(ratio - rate) > tolerance * rate:
        return ""
    return f" or state [compute] macs_per_pe = {{ {dtype} = {rate:g} }}"


def packed_k(k: npt.ArrayLike, rate: float) -> np.ndarray:
    """The reduction depth a GEMM of depth ``k`` runs at ``rate`` MACs per PE per cycle (module docstring): ⌈k / r⌉
    for a whole r, k · q for r = 1 / q; ``k`` itself at rate 1. Elements in, reduction steps out (int64)."""
    import numpy as np

    k = np.asarray(k, dtype=np.int64)
    if rate >= 1:
        whole = int(round(rate))
        return k if whole == 1 else -(-k // whole)
    return k * int(round(1 / rate))


def rate_words(dtype: str, rate: float) -> str:
    """``rate`` as a message writes it: ``2`` or ``1/4`` MACs per PE per cycle."""
    shown_rate = f"{rate:g}" if rate >= 1 else f"1/{round(1 / rate)}"
    return f"{shown_rate} MACs per PE per cycle (macs_per_pe.{dtype})"


__all__ = ["CFG_SECTION", "MAC_DTYPES", "MAX_MAC_RATE", "array_rates", "cfg_rates", "mac_rate", "packed_k",
           "rate_hint", "rate_words", "rates_table"]
