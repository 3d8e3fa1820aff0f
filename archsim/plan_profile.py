"""The layer profile ``archsim plan`` plans, once for the command and :func:`archsim.plan`: a PipeDream graph.txt's
measured seconds, the layers priced on the device the cluster's servers name, or on one array per GPU at a clock
(array flags given). The layers are loaded and the array built by the caller's ``loader`` and ``array_of``, and a
note is said through ``speak(kind, text)``. Seconds throughout."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archsim.choices.devices import DTYPES, FP8
from archsim.console import Speak, say, setting
from archsim.errors import InputError
from archsim.plan_cluster import server_devices, server_machine
from archsim.plan_flags import ARRAY_FLAGS, DEFAULT_DTYPE, array_flags, micro_batch

if TYPE_CHECKING:
    from archsim.array.config import ArrayConfig
    from archsim.workload.layer import Network


def layer_profile(args: Any, *, loader: Callable[[Any], Network], array_of: Callable[[Any], ArrayConfig],
                  speak: Speak = say):
    """The layer profile in seconds, what it is and what priced it (meta keys: the network, and for costs archsim
    computes the micro-batch, the mode and the device or array, with the array's dtype and element_bytes) and the
    device's memory in bytes (None: not priced on a device). A graph.txt's own costs; else the cluster's device when
    its servers name one and no array flag is given (:func:`server_machine`); else one array, ``array_of(args)``
    at the clock (default 1 GHz)."""
    if Path(args.network).suffix == ".txt":
        from archsim.partition.graph_txt import load_graph_txt

        profile = load_graph_txt(args.network)
        named = server_devices(args.cluster)
        if named:
            speak("note", f"{args.cluster}'s servers name {', '.join(sorted({n for n in named if n}))}; plan "
                          f"takes the layer costs {args.network} measured, not the servers' devices")
        return profile, {"network": Path(args.network).name, "priced_on": "the profile's measured seconds"}, None
    from archsim.spp.profiles import profile_from_network, profile_on_machine

    named = server_devices(args.cluster)
    if named and not array_flags(args):
        if args.dtype == FP8:  # train's --fp8 is a recipe beside a 16-bit dtype, not a dtype of its own
            raise InputError(f"on the servers' device the layers train in {', '.join(DTYPES)} (train's "
                             f"{setting('dtype')}; fp8 is train's --fp8 beside one of them, which plan does not "
                             f"price); {setting('dtype', FP8)} prices on an array, at a .cfg's [macs_per_pe] fp8 "
                             f"rate: give {setting('array')}/{setting('config')}", field="dtype")
        if args.dtype not in (None, *DTYPES):
            raise InputError(f"on the servers' device the layers train in {', '.join(DTYPES)} (train's "
                             f"{setting('dtype')}); {args.dtype} sizes an array's words: price on an array with "
                             f"{setting('array')}/{setting('config')}", field="dtype")
        machine = server_machine(args.cluster, named, args.dtype or DEFAULT_DTYPE)
        if args.element_bytes is not None:
            raise InputError(f"sizes the array model's tensors; on the servers' device ({machine.gpu.name}) they "
                             f"are {machine.dtype}'s ({setting('dtype')}): drop it, or price on an array with "
                             f"{setting('array')}/{setting('config')}", field="element-bytes")
        network, inputs = _network(args, loader, speak)
        profile = profile_on_machine(network, machine, inputs["micro_batch"], args.mode)
        return profile, {**inputs, **_priced_on(machine)}, machine.gpu.memory_bytes
    from archsim.array.options import dtype_meta

    clock_ghz = 1.0 if args.clock_ghz is None else args.clock_ghz
    array = replace(array_of(args), clock_hz=clock_ghz * 1e9)
    shape = f"{array.rows}x{array.cols} {array.dataflow} at {clock_ghz:g} GHz"
    if named:
        speak("note", f"{args.cluster}'s servers name {', '.join(sorted({n for n in named if n}))}; plan prices the "
                      f"layers on one {shape} array per GPU, as {', '.join(array_flags(args))} asked, not on the "
                      f"servers' devices (without {'/'.join(setting(f) for f in ARRAY_FLAGS)} it prices them on the "
                      "device)")
    network, inputs = _network(args, loader, speak)
    profile = profile_from_network(network, array, inputs["micro_batch"], args.mode)
    return profile, {**inputs, "priced_on": f"array {shape}", "dtype": dtype_meta(args.dtype, array),
                     "element_bytes": array.element_bytes}, None


def _network(args: Any, loader: Callable[[Any], Network], speak: Speak):
    """The network archsim prices (a file fixing a batch other than the mini-batch, ``microbatches`` × the
    micro-batch, noted), and the meta keys that say what was priced: its name, the micro-batch and the mode."""
    from archsim.workload.shipped import file_batch_note

    network, samples = loader(args), micro_batch(args)
    if note := file_batch_note(network, samples * args.microbatches):
        speak("note", note)
    return network, {"network": network.name, "micro_batch": samples, "mode": args.mode}


def _priced_on(machine) -> dict[str, str]:
    """Meta keys naming the device that priced the layers, how its GEMMs run (arrays or GPU tiles), and ``dtype``,
    the element type priced (``--dtype``, default train's fp16), the key an array run states it under."""
    device = machine.gpu
    if device.gemm == "arrays":
        units = device.arrays
        how = (f"{units.count} array{'s' if units.count > 1 else ''} of {units.rows}x{units.cols} {units.dataflow} "
               f"at {units.clock_hz / 1e9:g} GHz")
    else:
        how = f"tiles on {device.sms} SMs at {device.clock_hz / 1e9:g} GHz"
    return {"priced_on": device.name, "priced_on_model": f"{how}, {machine.dtype}", "dtype": machine.dtype}


__all__ = ["layer_profile"]
