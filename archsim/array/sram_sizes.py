"""SRAM sizes beside one array, KiB: a device file's one figure split in the energy model's three operand buffers,
and the one rule (with its one wording) for a figure that looks like bytes, for ``--sram-kb``, a device file's
``sram_kib_per_array`` and a ``.cfg``'s three ``SramSzkB`` keys. Split from :mod:`archsim.array.config`, whose
reader gives the sizes these judge."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from archsim.validate import INT32_MAX, shown, shown_number
from archsim.value_parsers import whole_number

if TYPE_CHECKING:
    from archsim.array.config import ArrayConfig


def operand_sram_kib(sram_kib_per_array: float) -> int:
    """Each operand SRAM, KiB, of a device file's one figure ``sram_kib_per_array`` split in three whole KiB (≥ 1)."""
    return max(int(sram_kib_per_array / 3), 1)


# KiB: the least one figure the energy model prices as stated, three operand buffers of 1 KiB (its table's SRAMs
# are whole KiB); below it the buffers would be priced as 1 KiB each, a larger SRAM than the chip's
MIN_SRAM_KIB = 3


def short_sram(kib_per_array: float) -> str | None:
    """The refusal, one line, of one SRAM figure per array below :data:`MIN_SRAM_KIB` (a device file's
    ``sram_kib_per_array``, a device sweep's axis); None otherwise."""
    if kib_per_array >= MIN_SRAM_KIB:
        return None
    return (f"{kib_per_array:g} KiB is below the {MIN_SRAM_KIB} KiB the energy model prices: it splits the figure "
            f"in three operand buffers of whole KiB, 1 KiB each at the least; give {MIN_SRAM_KIB} or more")


# KiB: the most one figure takes, three operand buffers of 2³¹ − 1 KiB (an int32 of KiB each, as a .cfg's SramSzkB)
MAX_SRAM_KIB = 3 * INT32_MAX


def sram_figure(value: object, priced: bool = True) -> int:
    """One SRAM figure per array as written (a device file's ``[memory] sram_kib_per_array``, each value of a device
    sweep's axis of it), whole KiB: the one check of both readers, so a figure one takes the other takes too.
    ``priced``: the energy model prices it (an array device), so below :data:`MIN_SRAM_KIB` is refused
    (:func:`short_sram`); a device file checks that once it knows the device's ``gemm``. ValueError in one line."""
    kib = whole_number(value)  # 2048.0 is 2048 KiB; 2048.7 no whole-KiB buffers hold, refused
    if isinstance(kib, bool) or not isinstance(kib, int) or kib < 0:
        accepted = f"in {MIN_SRAM_KIB}…{MAX_SRAM_KIB}" if priced else "(a non-negative integer)"
        raise ValueError(f"expected whole KiB {accepted}, got {shown_number(value)}")
    if kib > MAX_SRAM_KIB:
        raise ValueError(f"expected at most {MAX_SRAM_KIB} KiB, three operand buffers of {INT32_MAX} KiB "
                         f"(the most one takes), got {shown(value)}")
    if priced and (short := short_sram(kib)):
        raise ValueError(short)
    return kib


# KiB of SRAM per array (256 MiB): above any chip's on-chip SRAM (Groq's ~230 MB, the whole chip's), and below
# 1 MiB written in bytes (1,048,576), whole or split in three (349,525 each), where KiB go.
MAX_PLAUSIBLE_SRAM_KIB = 2**18


def sram_in_bytes(what: str, kib_per_array: float, fix: str) -> str | None:
    """The warning, one line, for an SRAM figure in KiB that looks like bytes: ``what`` (the figure as written,
    naming its key or flag) when ``kib_per_array`` (KiB beside one array, its buffers together) is above
    :data:`MAX_PLAUSIBLE_SRAM_KIB`, ending with ``fix`` (the figure in KiB, as the key or flag takes it); None
    otherwise. One rule for a device file's ``sram_kib_per_array`` (train, search, sweep) and the array commands'
    ``--sram-kb``. A warning, not a refusal: the figure is possible, only implausible."""
    if kib_per_array <= MAX_PLAUSIBLE_SRAM_KIB:
        return None
    return f"{what} is above {MAX_PLAUSIBLE_SRAM_KIB // 1024} MiB per array: if it is in bytes, write {fix}"


def cfg_sram_keys(array: ArrayConfig) -> tuple[tuple[str, int], ...]:
    """A ``.cfg``'s three SRAM keys as written, (key, KiB): what :func:`cfg_sram_slip` names."""
    return (("IfmapSramSzkB", array.ifmap_sram_kb), ("FilterSramSzkB", array.filter_sram_kb),
            ("OfmapSramSzkB", array.ofmap_sram_kb))


def cfg_sram_slip(what: str, keys: tuple[tuple[str, int], ...]) -> str | None:
    """:func:`sram_in_bytes` for a SCALE-Sim ``.cfg``'s three SRAMs (``keys``: :func:`cfg_sram_keys`), ``what``
    naming the file or device: the rule ``--sram-kb`` and a device file are judged by, its fix naming the keys that
    look like bytes (each above a third of the limit; all three when none is), each in whole KiB, as a ``.cfg`` has
    no key for the sum. One wording for ``cost --config`` and for train, search and plan on a ``.cfg`` device."""
    sizes = dict(keys)
    slipped = [key for key, kib in sizes.items() if kib > MAX_PLAUSIBLE_SRAM_KIB / 3] or list(sizes)
    stated = ", ".join(f"{key} {kib}" for key, kib in sizes.items())
    return sram_in_bytes(f"{what}: {stated}: {sum(sizes.values())} KiB of SRAM beside the array (the three "
                         "together)", sum(sizes.values()),
                         cfg_sram_fix(keys, lambda kib: max(round(kib / 1024), 1), slipped))


def cfg_sram_fix(keys: tuple[tuple[str, int], ...], convert, only=None) -> str:
    """What to write in a ``.cfg`` whose SRAM slipped a unit: ``key: convert(KiB as written)`` for each of
    ``keys`` (:func:`cfg_sram_keys`; ``only``: those named), as a ``.cfg`` has no key for the three's sum."""
    return ", ".join(f"{key}: {convert(kib):g}" for key, kib in keys if only is None or key in only)


def cfg_sram_warning(path: str | Path) -> str | None:
    """:func:`cfg_sram_slip` of the ``.cfg`` at ``path`` (what the array commands' ``--config`` reads)."""
    from archsim.array.config import read_scalesim_cfg  # the reader, whose module imports this one

    array = read_scalesim_cfg(path, sparsity=True, layouts=True)  # its sizes alone: the caller checked the rest
    return cfg_sram_slip(str(path), cfg_sram_keys(array))
