"""A device TOML given as ``--config`` to the array commands (``cost``, ``energy``, ``gemm``, ``pipeline``,
``schedule``) and their API functions, read once for all: the dtype they price it at without ``--dtype``
(:func:`device_toml_dtype`), its one array kind as train's energy model reads it with the notes and warnings train
gives the file (:func:`device_toml_array`), and that array under the ``cycle`` engine at the file's DRAM rate with
its notes as values for each caller to say its way (:func:`device_toml_notes`). Widths in bytes per word."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from archsim.console import Speak, say_after_run

if TYPE_CHECKING:
    from archsim.array.config import ArrayConfig
    from archsim.devices.device import Device


def device_toml_dtype(config: str | Path | None, dtype: str | None, element_bytes: object) -> str | None:
    """The dtype ``cost``, ``energy``, ``gemm``, ``pipeline`` and ``schedule`` (and ``archsim.cost``,
    ``archsim.iteration_energy``, ``archsim.gemm``, ``archsim.profile``, ``archsim.schedule``) price: ``dtype`` (``--dtype``) as given; on a device TOML given neither it nor
    ``element_bytes``, train's (:data:`~archsim.choices.devices.TRAIN_DTYPE`), so they and train price one file
    alike (a device file states no dtype of its own; train's cluster names the run's); else None (SCALE-Sim's 1-byte
    word, a ``.cfg``'s default). The one rule: every caller asks it before reading the file."""
    from archsim.array.device_sections import is_device_toml
    from archsim.choices.devices import TRAIN_DTYPE

    return TRAIN_DTYPE if dtype is None and element_bytes is None and is_device_toml(config) else dtype


def device_toml_array(config: str | Path, array: str | None, dataflow: str | None, width: int | None,
                      speak_after: Speak = say_after_run, *, dtype: str | None = None) -> ArrayConfig:
    """A device TOML's one array kind as train's energy model reads it
    (:func:`~archsim.training.energy.device_file_array`) at ``width`` bytes (None: 1, with the note that train
    prices the chip's dtype), reshaped by ``array`` and ``dataflow``, its GEMMs at ``dtype``'s MACs per PE per cycle
    (``[compute] macs_per_pe``, train's rate: :attr:`~archsim.array.config.ArrayConfig.mac_rate`; 1 where unstated
    or ``dtype`` is None), with the notes a ``.cfg`` device file gets and the warnings train gives the file, said
    through ``speak_after`` (default: after the run). Its memory and clock are the caller's to set."""
    from archsim.array.device_notes import device_arrays_note, device_dtype_note
    from archsim.array.options import array_size_warning, array_source, reshaped
    from archsim.devices.device_file import implausible_figures
    from archsim.devices.unread_keys import unread_keys_note
    from archsim.training.energy import device_file_array

    device, found = device_file_array(str(config), 1 if width is None else width)
    fp8_refusal(device, str(config), dtype)
    shaped = reshaped(found, array, dataflow)
    rate = 1.0 if dtype is None else device.mac_rate(dtype)
    shaped = shaped if rate == 1 else replace(shaped, mac_rate=rate)
    huge = array_size_warning(shaped.rows, shaped.cols, array_source(array, str(config)))
    if huge:
        speak_after("warning", huge)
    for text in (device_arrays_note(str(config)), None if width is not None else device_dtype_note(str(config)),
                 unread_keys_note(device, str(config))):
        if text:
            speak_after("note", text)
    for line in implausible_figures(device):
        speak_after("warning", line)
    return shaped


def fp8_refusal(device: Device, config: str, dtype: str | None) -> None:
    """Refuse ``--dtype fp8`` in one line on a device file that states no fp8 rate (``[compute] macs_per_pe`` fp8, or
    a ``[compute.peak_tflops]`` fp8 peak), where ``train --fp8`` refuses the file too: one device model, so the
    array commands price no fp8 GEMM that train would not run."""
    from archsim.choices.devices import FP8
    from archsim.console import setting
    from archsim.errors import InputError

    if dtype == FP8 and FP8 not in dict(device.peaks):
        raise InputError(f"{setting('dtype', FP8)} needs the device's fp8 rate, as train --fp8 does: {config} states "
                         "none (add [compute] macs_per_pe = { fp8 = N }, its arrays' fp8 MACs per PE per cycle)",
                         field="dtype")


def device_toml_notes(config: str | Path, array: str | None, dataflow: str | None, width: int | None, *,
                      engine: str | None, bandwidth: object, flag: str,
                      dtype: str | None = None) -> tuple[ArrayConfig, list[tuple[str, str]]]:
    """(array, notes): a device TOML's array read by :func:`device_toml_array` (at ``dtype``'s MACs per PE per
    cycle) and, as (kind, text) in the order
    said, its warnings and notes; under the ``cycle`` engine run without ``flag`` (``bandwidth`` None) the array is at
    the DRAM rate ``[memory] hbm_gbps`` states, with the note saying so
    (:func:`~archsim.array.device_rate.with_device_bandwidth`). The one
    reading ``cost``, ``energy``, ``gemm``, ``pipeline`` and ``schedule`` take; each caller says the notes its way."""
    from archsim.array.device_rate import with_device_bandwidth

    notes: list[tuple[str, str]] = []
    shaped = device_toml_array(config, array, dataflow, width, speak_after=lambda kind, text: notes.append((kind, text)),
                               dtype=dtype)
    rate = None
    if engine == "cycle" and bandwidth is None:  # the flag wins; the analytic engine reads no bandwidth
        shaped, rate = with_device_bandwidth(shaped, config, width or 1, flag)
    return shaped, [*notes, *([("note", rate)] if rate else [])]


__all__ = ["device_toml_array", "device_toml_dtype", "device_toml_notes", "fp8_refusal"]
