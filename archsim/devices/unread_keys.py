"""The note that a device file states keys its kind does not read (an array device's board power, a tile-timed
device's SRAM, split-K, DRAM count or energy table), so a figure written to change a result is not silently dropped."""

from __future__ import annotations

from pathlib import Path

from archsim.devices.device import Device
from archsim.devices.device_file import load_device
from archsim.errors import InputError

_UNREAD = {"arrays": (("[device] board_watts", "its energy is the energy model's, not board power × time"),
                      ("[memory] l2_bytes_per_clock", "only gemm = \"tiles\" caps its tiles by the L2's read rate")),
           "tiles": (("[memory] sram_kib_per_array", "its energy is board power × time, which no SRAM changes"),
                     ("[device] split_k", "only gemm = \"arrays\" splits a GEMM over its arrays"),
                     ("[memory] dram_traffic", "only gemm = \"arrays\" counts SCALE-Sim's DRAM traffic for its SRAMs"),
                     ("[energy]", "its energy is board power × time, not the energy model's"))}
_CFG_KEYS = {"[memory] sram_kib_per_array": "[architecture_presets] IfmapSramSzkB, FilterSramSzkB, OfmapSramSzkB"}


def unread_keys_note(device: Device, file: str) -> str | None:
    """The note that ``file``, a device file, states keys its kind does not read (:data:`_UNREAD`), naming each and
    why, so a figure written to change a result is not silently dropped; None for a catalog GPU or a file stating
    none. A note, not a refusal: one file may serve both kinds (switching ``gemm``)."""
    if device.catalog is not None:
        return None
    stated = {"[device] board_watts": device.board_watts is not None,
              "[memory] l2_bytes_per_clock": bool(device.l2_bytes_per_clock),
              "[memory] sram_kib_per_array": device.sram_bytes_per_array > 0, "[device] split_k": device.split_k,
              "[memory] dram_traffic": device.dram_traffic != "compulsory",
              "[energy]": bool(device.energy_table or device.energy_figures)}
    cfg = Path(file).suffix.lower() == ".cfg"  # its SRAM is SCALE-Sim's three keys, which its format requires
    unread = [(_CFG_KEYS.get(key, key) if cfg else key, why) for key, why in _UNREAD[device.gemm] if stated[key]]
    if not unread:
        return None
    many = len(unread) > 1 or "," in unread[0][0]
    return (f"{file} is a gemm = \"{device.gemm}\" device: {'these keys are' if many else 'this key is'} not read: "
            + "; ".join(f"{key} ({why})" for key, why in unread))


def config_unread_keys_note(config: str | Path, *, name: str | None = None, rates_read: bool = False) -> str | None:
    """:func:`unread_keys_note` of an array command's ``--config`` (``cost``, ``energy``, an array sweep's ``.cfg``), so
    every reader of a device file says it; None for a plain ``.cfg`` and for a device ``.cfg`` train refuses (only
    train's reading gives a device to judge). ``name``: the file as the user named it (default ``config``);
    ``rates_read``: the caller runs the file's GEMMs at its MACs per PE per cycle (``cost``, ``energy``, ``gemm``,
    ``pipeline``, ``schedule``, ``plan``, ``bppsa rnn``, an array sweep with a ``dtypes`` axis), so
    :func:`mac_rates_note` is not said."""
    try:
        device = load_device(config)
    except InputError:
        return None
    named = str(config) if name is None else name
    notes = [note for note in (unread_keys_note(device, named), None if rates_read else mac_rates_note(device, named))
             if note]
    return "; ".join(notes) if notes else None


def mac_rates_note(device: Device, file: str) -> str | None:
    """The note that a reader of a device file that does not read its MACs per PE per cycle (an array sweep's without
    a ``dtypes`` axis, whose rows name no dtype: :func:`config_unread_keys_note`) prices SCALE-Sim's array, one MAC
    per PE per cycle; ``train`` and ``search``, and since 2026-12-05 ``cost``, ``energy``, ``gemm``, ``pipeline``,
    ``schedule`` and ``bppsa rnn`` (since 2026-12-06 ``plan``; at ``--dtype``'s rate) and an array sweep's ``dtypes``
    rows, run GEMMs at it, a TOML's ``[compute] macs_per_pe`` or a ``.cfg``'s ``[macs_per_pe]``. None where the file states no
    rate other than 1."""
    if all(rate == 1 for _, rate in device.macs_per_pe):
        return None
    key = "[macs_per_pe]" if Path(file).suffix.lower() == ".cfg" else "[compute] macs_per_pe"
    return (f"{file}: {key} is not read here: this prices SCALE-Sim's array at one MAC per PE per cycle in every "
            "dtype (train and search, cost, energy, gemm, pipeline, schedule, plan and bppsa rnn at --dtype's rate, "
            "and an array sweep's dtypes rows, run GEMMs at it)")


__all__ = ["config_unread_keys_note", "mac_rates_note", "unread_keys_note"]
