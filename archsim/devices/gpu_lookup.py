"""A GPU as a user or CUDA names it, found in the catalog (:mod:`archsim.devices.catalog`): a catalog name, an alias
(``a100``), a slug or a CUDA device string ("NVIDIA A100-SXM4-40GB", "Tesla_T4" in a file name) → the board's
:class:`~archsim.devices.device.Device` (:func:`gpu`) or the chip's :class:`~archsim.devices.catalog.GpuSpec`
(:func:`find_gpu`, :func:`resolve_gpu`).

Why apart from the table: the table states figures; this module holds the rules for reading a name — aliases,
CUDA's spellings by pattern, a whole name (:mod:`archsim.devices.gpu_names`), the memory a name states, a MIG
slice refused or cut to its whole GPU.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from archsim.devices.catalog import GPUS, KNOWN_GPUS, TABLE, GpuSpec
from archsim.devices.device import Device
from archsim.devices.gpu_names import CUDA_WORDS, fits_form, form_factor_of, form_factors, name_words, strange_reason
from archsim.errors import InputError
from archsim.units import GIB

BOARD_OF_CHIP = {row.slug: row.board.key for row in TABLE if row.board is not None}
CHIP_OF_BOARD = {board: slug for slug, board in BOARD_OF_CHIP.items()}


def gpu_name(slug: str) -> str:
    """The catalog's one name of the GPU whose chip is ``slug``: its board's key where it has one (what
    ``train`` and the docs call it: ``t4`` → ``t4-16gb``), else the slug. Outputs print this name;
    inputs take it, the slug, an alias or a CUDA name alike."""
    return BOARD_OF_CHIP.get(slug, slug)


GPU_NAMES = tuple(gpu_name(slug) for slug in KNOWN_GPUS)  # every catalog GPU by its one name, table order
ALIASES = {"v100": "v100-32gb", "a100": "a100-80gb", "h100": "h100-80gb-sxm", "h100-sxm": "h100-80gb-sxm",
           "h200": "h200-141gb"}  # a chip's short name for one of its boards, where the catalog has more than one
# Every short name read as one board: a chip's slug where it is not the board's key (``t4`` → ``t4-16gb``), and the
# aliases. docs/formats.md's table of GPU names lists each with the part it means (a test holds the two equal).
SHORT_NAMES = {**{chip: board for chip, board in BOARD_OF_CHIP.items() if chip != board}, **ALIASES}


def gpu(name: str) -> Device:
    """The catalog GPU called ``name`` (a key of :data:`GPUS`, an alias such as ``a100``, or its name as
    CUDA reports it, such as ``Tesla V100-PCIE-32GB``, spaces or underscores) as its device (one object
    per GPU)."""
    if not str(name).isprintable():  # a name with a newline or tab is a broken file, not a CUDA name
        raise InputError(f"unknown GPU {name!r}: a GPU name is one line of printable characters", field="gpu")
    key = SHORT_NAMES.get(str(name).lower(), str(name).lower())
    if key not in GPUS:
        slug, why = read_whole(str(name))  # file names: _ for spaces, as find_gpu reads
        if why:
            raise InputError(f"unknown GPU {name!r}{_nearest(str(name))}: {why}; the catalog has {', '.join(GPUS)}",
                             field="gpu")
        key = BOARD_OF_CHIP.get(slug or "", key)
        if key in GPUS:  # read by pattern: of its board's memory
            _check_stated_memory(str(name), GPUS[key])
    if key not in GPUS:
        raise InputError(f"unknown GPU {name!r}{_nearest(str(name))}; the catalog has {', '.join(GPUS)}", field="gpu")
    return GPUS[key]


def _nearest(name: str) -> str:
    """`` (did you mean 'X'?)`` for the catalog or short name nearest ``name``, only a near miss (``v10``:
    ``v100``; ``v100-pcie-32``: ``v100-pcie-32gb``), never a different GPU of a like name (``b200`` is no ``h200``):
    a typo's error names the fix, where the catalog's list alone left it to be found."""
    from archsim.validate import did_you_mean

    return did_you_mean(name, (*GPUS, *SHORT_NAMES), cutoff=0.8)


def _check_stated_memory(name: str, board: Device) -> None:
    """Refuse a CUDA name whose memory ("Tesla V100-PCIE-16GB") is not its catalog board's: training's
    memory check would read the board's. Within 5%: the H200's 141 GB is 139.8 GiB under CUDA."""
    stated = re.search(r"(\d+)\s*gb\b", name.lower().replace("_", " "))
    board_gib = board.memory_bytes / GIB
    if stated and abs(int(stated[1]) - board_gib) > 0.05 * board_gib:
        raise InputError(f"GPU {name!r} has {stated[1]} GB; the catalog's {board.name} has {board_gib:.0f} GiB: "
                         "write a device file with its memory (docs/formats.md, \"Device files\")", field="gpu")


# A name matches its board only: another board of the same chip (P100 SXM2 or PCIe 12GB, H100 or H200 NVL) is
# not in the table, nor another GPU whose name holds a catalog one's (the MI250X, the GH200's H100-class GPU).
_NAME_PATTERNS = ((r"p100(?!.*(sxm|12\s*gb))", "p100-pcie"), (r"1080\s*ti", "gtx-1080-ti"), (r"titan\s*xp", "titan-xp"),
                  (r"titan\s*x.*pascal", "titan-x-pascal"), (r"titan\s*x.*maxwell", "titan-x-maxwell"),
                  (r"\bm40\b", "m40"), (r"\bmi25\b", "mi25"), (r"vega.*(frontier|\bfe\b)", "vega-fe"),
                  (r"(?<!g)h200(?!.*nvl)", "h200"), (r"h100.*pcie", "h100-pcie"), (r"h100(?!.*nvl)", "h100-sxm"),
                  (r"a100.*(pcie.*40\s*gb|40\s*gb.*pcie)", "a100-40gb-pcie"), (r"a100.*40\s*gb", "a100-40gb"),
                  (r"a100.*80\s*gb.*pcie", "a100-80gb-pcie"), (r"a100", "a100-80gb"), (r"\ba10\b", "a10"),
                  (r"\bl4\b", "l4"), (r"v100.*pcie", "v100-pcie"), (r"v100.*16\s*gb", "v100-16gb"),
                  (r"v100", "v100"), (r"\bt4\b", "t4"), (r"\bp4\b", "p4"))


def find_gpu(name: str) -> str | None:
    """The :data:`KNOWN_GPUS` slug for a device name such as ``"NVIDIA H100 80GB HBM3"`` (None if unknown;
    an InputError for a MIG slice, which no slug describes)."""
    text = name.strip().lower()
    if text in KNOWN_GPUS:
        return text
    if text in CHIP_OF_BOARD:  # the catalog's name ("gtx-1080-ti-11gb", which no pattern below matches)
        return CHIP_OF_BOARD[text]
    text = text.replace("_", " ")  # NeuSight's file names' spelling ("Tesla_T4"): "_" is no word boundary
    if re.search(r"\bmig\b", text):  # CUDA's name of a MIG instance: "NVIDIA A100-SXM4-80GB MIG 1g.10gb"
        raise InputError(f"{name!r} is a MIG slice, not a whole GPU: the catalog's GPUs are whole (a slice has a "
                         "fraction of their SMs and memory; validate-gpu's --sm-count gives a slice's SMs on "
                         "archsim's measured CSVs)", field="gpu")
    return next((slug for pattern, slug in _NAME_PATTERNS if re.search(pattern, text)), None)


_CATALOG_WORDS = (*KNOWN_GPUS, *GPU_NAMES, *ALIASES, *(spec.name for spec in KNOWN_GPUS.values()))  # their words count
# each part's words (its slug, its one name, its printed name) and form factor, for a name that states one
_PART_WORDS = {slug: {w for text in (slug, gpu_name(slug), spec.name) for w in name_words(text)}
               for slug, spec in KNOWN_GPUS.items()}
_FORM = {slug: form_factor_of(spec.name) for slug, spec in KNOWN_GPUS.items()}


def read_whole(name: str) -> tuple[str | None, str]:
    """The part (a :data:`KNOWN_GPUS` slug) that ``name`` reads as by :func:`find_gpu`'s patterns, and ``""``;
    None and why (one clause) where a word of it is in no GPU name ("a1000", "RTX A1000", "V100S": other GPUs, which
    an ``a100`` or ``v100`` pattern reads: :func:`~archsim.devices.gpu_names.strange_reason`); None and ``""``
    where no pattern reads it. The one whole-name rule of train's ``gpu =`` (:func:`gpu`) and validate-gpu's
    names (:func:`find_whole_gpu`). A name stating a form factor (PCIe, SXM) reads as a part of it
    (:func:`_of_stated_form`)."""
    slug = find_gpu(name)
    if slug is None:
        return None, ""
    why = strange_reason(name, _CATALOG_WORDS)
    return (None, why) if why else (_of_stated_form(name, slug), "")


def _of_stated_form(name: str, slug: str) -> str:
    """``slug`` where ``name`` states no form factor or ``slug``'s; else the one part of the same GPU (every part
    whose names hold the name's model words: "a100") of the form factor and memory stated ("A100 PCIe 80GB": the
    80 GB PCIe card, not the SXM4 module the ``a100`` pattern reads), or an error naming the GPU's parts, each with
    its form factor ("a100-pcie": two PCIe A100s; "v100-sxm3": the catalog has no SXM3 V100)."""
    stated = form_factors(name)
    if all(fits_form(form, _FORM[slug]) for form in stated):
        return slug
    words = name_words(name)
    model = {w for w in words if w not in CUDA_WORDS and not re.fullmatch(r"\d+gb", w)}
    memory = {w for w in words if re.fullmatch(r"\d+gb", w)}
    family = [part for part in KNOWN_GPUS if model <= _PART_WORDS[part]] or [slug]
    fitting = [part for part in family if memory <= _PART_WORDS[part]
               and all(fits_form(form, _FORM[part]) for form in stated)]
    if len(fitting) == 1:
        return fitting[0]
    said = " ".join(["PCIe" if form == "pcie" else form.upper() for form in sorted(stated)]
                    + [size.upper() for size in sorted(memory)])
    parts = ", ".join(f"{gpu_name(part)} ({'PCIe' if _FORM[part] == 'pcie' else _FORM[part].upper()})"
                      for part in family)
    shown = " ".join(w for w in dict.fromkeys(words) if w in model).upper()
    raise InputError(f"GPU {name!r} ({'an' if said.startswith('SXM') else 'a'} {said} part) names no one catalog part: the catalog's {shown} parts are "
                     f"{parts}; name one", field="gpu")


def find_whole_gpu(name: str) -> str | None:
    """:func:`find_gpu`'s slug, but None for a name that is not a whole name of it (:func:`read_whole`), as
    :func:`gpu` requires of train's ``gpu =``; a name stating a form factor reads as a part of it."""
    exact = name.strip().lower()
    return find_gpu(name) if exact in (*KNOWN_GPUS, *CHIP_OF_BOARD) else read_whole(name)[0]


def whole_gpu_name(name: str) -> str:
    """``name`` less CUDA's MIG suffix ("NVIDIA A100-SXM4-80GB MIG 3g.40gb" → its GPU's name): where a
    slice's own SM count is given, the slice is that GPU cut down."""
    return re.sub(r"\s*\bmig\b.*$", "", name, flags=re.IGNORECASE)


def resolve_gpu(name: str, *, like: str | None = None, sm_count: int | None = None,
                tensor_cores_per_sm: int | None = None, mma: tuple[int, int] | None = None,
                clock_hz: float | None = None, memory_bytes_per_s: float | None = None) -> GpuSpec:
    """The known GPU ``name`` matches (or ``like``, for one not in the table), with overrides applied.

    A measured SM count (MIG slices, a cut-down part) should be passed as ``sm_count``.
    """
    whole = whole_gpu_name(name) if sm_count is not None else name
    slug = find_whole_gpu(like) if like else find_whole_gpu(whole)  # a MIG slice: its GPU, with the slice's SMs given
    if slug is None:
        field = "like" if like else "gpu"
        raise InputError(f"unknown GPU {(like or name)!r}; name a similar known one with --like "
                         f"({', '.join(GPU_NAMES)}) and override what differs", field=field)
    base = KNOWN_GPUS[slug]
    changes: dict[str, Any] = {"name": name or base.name}
    for key, value in (("sm_count", sm_count), ("tensor_cores_per_sm", tensor_cores_per_sm),
                       ("clock_hz", clock_hz), ("memory_bytes_per_s", memory_bytes_per_s)):
        if value is not None:
            changes[key] = value
    if mma is not None:
        changes["mma_rows"], changes["mma_cols"] = mma
    return replace(base, **changes)


__all__ = ["ALIASES", "BOARD_OF_CHIP", "CHIP_OF_BOARD", "GPU_NAMES", "SHORT_NAMES", "find_gpu", "find_whole_gpu", "gpu",
           "gpu_name", "read_whole", "resolve_gpu", "whole_gpu_name"]
