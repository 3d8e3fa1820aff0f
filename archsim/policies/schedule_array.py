"""The array a schedule run costs a network on (``archsim schedule`` and :func:`archsim.schedule`, through
:func:`archsim.policies.schedule_run.run_schedule`): from ``--config``, ``--array``, ``--dataflow``, the width, the
memory flags and the clock, each warning the array commands give spoken; and the meta keys that say what the costs
were computed at. Split from :mod:`archsim.policies.schedule_run`, which runs the policies on those costs."""

from __future__ import annotations

from types import SimpleNamespace


def costs_meta(args: SimpleNamespace, network: str, unit: str, array) -> dict[str, object]:
    """The meta keys that say what a NETWORK's costs were: unit costs, or the mode, array, dataflow and
    batch they were computed at, defaults included (as cost and pipeline say)."""
    from archsim.array.options import dtype_meta

    if array is None:
        return {"network": network, "unit": unit, "costs": "unit", "unit_costs": unit_costs_scope(args.policy)}
    return {"network": network, "unit": unit, "costs": f"{args.mode} mode", "array": f"{array.rows}x{array.cols}",
            "dataflow": array.dataflow, "batch": args.batch,
            "dtype": dtype_meta(args.dtype, array), "element_bytes": array.element_bytes}


def unit_costs_scope(policy: str) -> str:
    """What ``--unit-costs`` prices under ``policy``: a layer (the out-of-order pipelines, data parallel), or a whole
    stage (the published stage schedules and their list versions, whose stage profile it replaces), so two policies'
    unit makespans on one network are told apart in the output."""
    from archsim.choices.schedules import LIST_SCHEDULES, ZB_SCHEDULES

    if policy in ZB_SCHEDULES + LIST_SCHEDULES:
        return "F = I = W = 1 per stage, whatever its layers (peaks count micro-batches: M_B = 1)"
    return "F = D = G = 1 per layer"


def run_array(args: SimpleNamespace, speak=None):
    """The array ``--config``, ``--array``, ``--dataflow`` and ``--dtype`` or ``--element-bytes`` describe
    (:func:`archsim.array.options.array_from_flags`; a ``.cfg``'s GEMMs at its ``[macs_per_pe]`` rate of ``--dtype``,
    as ``cost`` runs them), or an :class:`ArrayConfig` given as ``array`` with the
    dataflow and width given beside it; ``speak``: say when ``--config`` is a device file of several arrays. A
    device TOML is read by ``args.read_device`` (the caller's: ``cost``'s reading,
    :func:`archsim.device_toml.device_toml_notes`, its notes said through ``speak``; policies/ reads no device);
    without one it is refused as a ``.cfg`` reader refuses it."""
    from dataclasses import replace

    from archsim.array.config import ArrayConfig
    from archsim.array.device_sections import is_device_toml
    from archsim.array.options import (
        array_from_flags,
        array_size_warning,
        array_source,
        check_rate_dtype,
        element_width,
    )
    from archsim.array.sram_sizes import cfg_sram_warning

    width = element_width(args.dtype, args.element_bytes)
    if isinstance(args.array, ArrayConfig):  # its rate another dtype's: refused, as archsim.cost refuses it
        check_rate_dtype(args.array, getattr(args, "dtype", None), width)
        given = {"dataflow": args.dataflow, "element_bytes": width}
        return replace(args.array, **{key: value for key, value in given.items() if value is not None})
    read_device = getattr(args, "read_device", None)
    if args.config is not None and read_device is not None and is_device_toml(args.config):
        array, notes = read_device(args.config, args.array, args.dataflow, width, engine=getattr(args, "engine", None),
                                   bandwidth=args.dram_bandwidth, flag="dram-bandwidth",
                                   dtype=getattr(args, "dtype", None))
        for kind, text in notes if speak is not None else ():
            speak(kind, text)
        return array
    # a .cfg's [macs_per_pe] rate of --dtype, by the rule cost and train read it (None, int8: 1 MAC per PE per cycle)
    array = array_from_flags(args.array, args.config, args.dataflow, 1 if width is None else width,
                             getattr(args, "dtype", None))
    huge = array_size_warning(array.rows, array.cols, array_source(args.array, args.config))
    if speak is not None and huge:  # as every array command warns it (commands.common.warn_array_size)
        speak("warning", huge)
    unread = None  # the file's GB/s as the cycle engine's DRAM rate, as every array command reads it
    if args.config and getattr(args, "engine", None) == "cycle" and getattr(args, "dram_bandwidth", None) is None:
        from archsim.array.device_rate import with_device_bandwidth

        array, unread = with_device_bandwidth(array, args.config, width or 1, "dram-bandwidth")
    if speak is not None and args.config:  # as every array command says it (commands.common.note_device_arrays)
        from archsim.array.device_notes import device_arrays_note, device_dtype_note

        for text in (device_arrays_note(args.config), None if width is not None else device_dtype_note(args.config),
                     unread):
            if text:
                speak("note", text)
        slip = cfg_sram_warning(args.config)  # its SRAMs in bytes, judged as --sram-kb is
        if slip:
            speak("warning", slip)
    return array


def with_memory_flags(array, args: SimpleNamespace, speak):
    """``array`` with ``--dram-bandwidth`` and ``--sram-kb`` (:func:`archsim.array.options.with_memory`), sizes that
    look like bytes warned."""
    from archsim.array.options import check_bandwidth_engine, sram_kb_warning, with_memory

    check_bandwidth_engine(args.dram_bandwidth, args.engine, "--dram-bandwidth")
    costed = with_memory(array, args.dram_bandwidth, args.sram_kb)
    warning = sram_kb_warning(args.sram_kb)
    if warning:
        speak("warning", warning)
    return costed


def with_clock_flag(array, args: SimpleNamespace):
    """``array`` at ``--clock-ghz`` where given, else at its own clock (possibly none)."""
    from archsim.array.options import with_clock

    return with_clock(array, args.clock_ghz)
