"""Array-model profiles in seconds, for planners over a cluster (SPP, PipeDream's optimizer).

PipeDream's ``graph.txt`` profiles are read by :func:`archsim.partition.graph_txt.load_graph_txt`;
both give the one :class:`~archsim.partition.profile.LayerProfile`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import replace

import numpy as np

from archsim.lowering import Mode
from archsim.partition.profile import LayerProfile, build_profile, profile_from_costs, profile_of_lowered


def equal_runs(keys: Sequence[Hashable]) -> list[list[int]]:
    """The positions of ``keys`` in runs of consecutive equal keys, in order (``a a b a`` → ``[[0, 1], [2], [3]]``):
    the layers one block merges into one node of a chain, the GPUs one server holds in a cluster file's order."""
    runs: list[list[int]] = []
    for index, key in enumerate(keys):
        if runs and keys[runs[-1][0]] == key:
            runs[-1].append(index)
        else:
            runs.append([index])
    return runs


def cycle_seconds(array) -> float:
    """Seconds of one cycle of ``array``, at its clock (default :data:`~archsim.array.config.DEFAULT_CLOCK_HZ`):
    what an array profile's cycles are multiplied by to plan a cluster in seconds (:func:`profile_from_network`), and
    what a δ split of such a profile is costed back through (:class:`~archsim.spp.layerpipe_cluster.SecondsCoster`)."""
    from archsim.array.config import DEFAULT_CLOCK_HZ

    return 1.0 / (array.clock_hz or DEFAULT_CLOCK_HZ)


def profile_from_network(network, array, batch: int, mode: Mode = "exact", group=None) -> LayerProfile:
    """Array-model costs in seconds (cycles / clock). ``group`` maps a layer name to a block name;
    consecutive layers of one block merge into one node of a chain (e.g. a BERT encoder layer),
    whose boundary tensor is its last layer's output and whose δ back is the previous block's."""
    p = build_profile(network, array, batch, mode)
    seconds = cycle_seconds(array)
    if group is None:
        return replace(p, forward=p.forward * seconds, weight_grad=p.weight_grad * seconds,
                       delta=p.delta * seconds, unit="seconds")
    keys = [group(n) for n in p.names]
    blocks = equal_runs(keys)
    total = lambda values, block: float(np.sum(values[block]))
    activation = [int(p.activation_bytes[b[-1]]) for b in blocks]
    return profile_from_costs(
        [keys[b[0]] for b in blocks],
        forward=[total(p.forward, b) * seconds for b in blocks],
        weight_grad=[total(p.weight_grad, b) * seconds for b in blocks],
        delta=[total(p.delta, b) * seconds for b in blocks],
        activation_bytes=activation, delta_bytes=[0, *activation[:-1]],
        weight_bytes=[int(np.sum(p.weight_bytes[b])) for b in blocks], unit="seconds",
    )


def profile_on_machine(network, machine, batch: int, mode: Mode = "exact") -> LayerProfile:
    """Per-layer F, G and D seconds of ``network`` at ``batch`` samples on a training machine's device (a
    catalog GPU or a device file, :class:`~archsim.training.machine.Machine`): every op timed by the one
    op-timing model ``train`` and ``search`` use (:func:`archsim.training.iteration.machine_op_seconds`:
    a GPU's tensor tiles, a device file's arrays in waves), tensors at the machine's dtype's bytes per
    element. Why: a cluster of H100s and one of a small accelerator must not plan alike. δ is not split
    (a profile in seconds has no array to cost a sub-GEMM on)."""
    from archsim.choices.devices import ELEMENT_BYTES
    from archsim.lowering import lower_network
    from archsim.training.iteration import machine_op_seconds

    lowered = lower_network(network, batch, mode, ELEMENT_BYTES[machine.dtype])
    seconds = machine_op_seconds([op for item in lowered for op in item.ops], machine)
    return profile_of_lowered(lowered, seconds, mode=mode, batch=batch, unit="seconds")


__all__ = ["cycle_seconds", "equal_runs", "profile_from_network", "profile_on_machine"]
