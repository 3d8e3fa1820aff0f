"""What an array command says of a ``--config`` that is a device file (``cost``, ``energy``, ``pipeline``, an array
sweep): the notes that name what it prices apart from ``train``. Apart from :mod:`archsim.array.device_sections`,
whose checks they read: one job each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from archsim.array.device_sections import cfg_device_sections, is_device_toml, toml_sections
from archsim.console import setting
from archsim.units import GIB


def _device_file(config: str | Path) -> tuple[dict[str, dict[str, Any]], int] | None:
    """A ``--config`` device file's checked sections and its array count, for the notes below: a ``.cfg``'s
    (:func:`cfg_device_sections`) or a device TOML's (:func:`toml_sections`, ``[compute] arrays``, and its
    ``[memory]``, whose ``hbm_gib`` :func:`device_capacity_note` names as a ``.cfg``'s); None for a plain SCALE-Sim
    file."""
    from archsim.validate import read_text

    text, file = read_text(config, "config file", encoding="utf-8-sig"), str(config)
    if is_device_toml(config):
        values = toml_sections(text, file, ("device", "compute", "memory"))
        return None if values is None else (values, values.get("compute", {}).get("arrays", 1))
    checked = cfg_device_sections(text, file, required=False)
    return None if checked is None else (checked[0], checked[1])


def device_array_count(config: str | Path) -> int | None:
    """The arrays a ``--config`` device file states (a TOML's ``[compute] arrays``, a ``.cfg``'s ``[device]``):
    the processors ``pipeline`` and ``schedule`` partition a network over when no ``--processors`` is given, one
    array each. None for a plain SCALE-Sim ``.cfg``, which states no count."""
    checked = _device_file(config)
    return None if checked is None else int(checked[1])


def device_dtype_note(config: str | Path) -> str | None:
    """What an array command says of a ``--config`` device file when no ``--dtype`` (nor ``--element-bytes``)
    is given: it prices SCALE-Sim's 1-byte word, train the chip at :data:`~archsim.choices.devices.TRAIN_DTYPE`
    (every per-word energy and size at 2 bytes), so the flag that prices what train charges is named.
    None for a plain SCALE-Sim file."""
    from archsim.choices.devices import SCALESIM_DTYPE, TRAIN_DTYPE

    if _device_file(config) is None:
        return None
    return (f"{config} is a device file; this prices its arrays at {SCALESIM_DTYPE} (SCALE-Sim's 1-byte word, the "
            f"default here), train at {TRAIN_DTYPE}: add {setting('dtype', TRAIN_DTYPE)} to price what train charges")


def device_arrays_note(config: str | Path, *, name: str | None = None) -> str | None:
    """What an array command says of a ``--config`` that is a device file of several arrays (it costs each op on
    one of them, pipeline and schedule one a processor, where train deals each GEMM over all): ``archsim cost``'s stderr note, ``archsim.cost``'s warning.
    ``name``: the file as the user named it (default ``config``). None for a plain SCALE-Sim file or a device of
    one array."""
    checked = _device_file(config)
    if checked is None or checked[1] <= 1:
        return None
    return (f"{config if name is None else name} is a device of {checked[1]} arrays; this costs each op on one of them "
            f"(pipeline and schedule: one array a processor; train and search deal each GEMM's folds over all "
            f"{checked[1]}, as cost's chip_seconds columns do)")


def device_static_watts(config: str | Path) -> float:
    """The ``[device] static_watts`` (W per chip) a ``--config`` device file states, read as text (whether ``train``
    reads the file is :func:`archsim.energy_run.device_static_note`'s question: the devices package is a later
    stage); 0 for a plain SCALE-Sim file or one stating none."""
    checked = _device_file(config)
    return 0.0 if checked is None else checked[0].get("device", {}).get("static_watts", 0.0)


def sweep_unused_device_note(config: str | Path, *, name: str | None = None) -> str | None:
    """What a design sweep (an array sweep pricing energy and area) says of a ``.cfg`` array entry that is a device
    file stating several ``[device] arrays`` or a ``static_watts``: the sweep's processors are one array each (P
    processors of the file's array: its ``leakage_pj`` P × one array's leakage from the energy table, its
    ``area_mm2`` P arrays'), so the file's array count and static power (W per chip) price nothing there; train,
    search and a device sweep price the chip with them. ``name``: the file as the spec names it (default
    ``config``). None for a plain SCALE-Sim file, or a device of one array stating no static power."""
    checked = _device_file(config)
    if checked is None:
        return None
    watts = checked[0].get("device", {}).get("static_watts", 0.0)
    stated = [*([f"arrays = {checked[1]}"] if checked[1] > 1 else []),
              *([f"static_watts = {watts:g} W"] if watts else [])]
    if not stated:
        return None
    return (f"{config if name is None else name} states [device] {' and '.join(stated)}: the array sweep uses "
            f"{'neither' if len(stated) == 2 else 'it'}: each of its processors is one array of the file's (leakage_pj: "
            "the processors × one array's leakage from the energy table; area_mm2: the processors' arrays'), not the "
            "file's chip, which train, search and a device sweep price")


def device_capacity_note(config: str | Path) -> str | None:
    """What ``pipeline --memory`` says of a ``--config`` device file (a ``.cfg`` or a device TOML) stating ``[memory] hbm_gib`` when no
    ``--capacity-gb`` is given: its memory check reads that flag alone (GB, 10⁹ bytes), so the value that checks the
    file's GiB is named. None for a plain SCALE-Sim file or one stating none."""
    checked = _device_file(config)
    gib = None if checked is None else checked[0].get("memory", {}).get("hbm_gib")
    if not gib:
        return None
    return (f"{config} states [memory] hbm_gib = {gib:g}: pipeline checks memory against --capacity-gb alone (GB, "
            f"10⁹ bytes), so no processor was checked against it: add --capacity-gb {gib * GIB / 1e9:.12g} to check "
            f"each processor against {gib:g} GiB")

