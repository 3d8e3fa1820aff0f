"""Structured partial backprop (SPB, Kumar et al. 2021, §2): what one worker's task costs.

With k workers, worker j (1-based) back-propagates only a suffix of the network — by default the
last ⌈j·L/k⌉ of the L layers, counted from the output (§2, Fig. 1) — so worker k does the whole
backward pass and worker 1 a k-th of it. A worker's *task* for one iteration is the forward pass of
every layer plus G and D of its suffix; the first suffix layer needs no D (nothing below it is
back-propagated), for every layer whose producers all lie outside the suffix.

Peak memory (bytes) of a task with suffix starting at layer p:

    parameters (all layers: the forward pass reads every weight)
    + max( forward working set of the no-grad prefix  = max_{l<p} (act[l] + act[l+1]),
           stashed activations of the suffix Σ_{l≥p} act[l] + weight gradients Σ_{l≥p} param[l]
           + one δ buffer max_{l≥p} act[l] )

where ``act[l]`` is what layer l keeps for its backward pass (its input activation). Optimizer
state and framework workspace are not modelled. Costs come from the array model
(:func:`layer_costs_from_network`, cycles / clock) or from a per-layer profile in seconds
(:mod:`archsim.cluster.profile_csv`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from archsim.array.config import DEFAULT_CLOCK_HZ, ArrayConfig
from archsim.array.costing import layer_cost_rows
from archsim.errors import InputError
from archsim.lowering import Mode, lower_network
from archsim.workload.layer import NETWORK_INPUT, Network

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True, eq=False)
class JobLayerCosts:
    """A job's per-layer costs as SPB prices its suffix tasks, in network (topological) order; times
    in seconds, sizes in bytes. (The planners' per-layer type is
    :class:`~archsim.partition.profile.LayerProfile`, in cycles or seconds.)

    backward_s is G + D of the layer; input_grad_s is its D part alone (zero when a profile does
    not separate it), skipped for suffix layers that no back-propagated layer feeds.
    producers[l]: indices of the layers feeding layer l (empty: only the network input).
    """

    names: tuple[str, ...]
    forward_s: np.ndarray
    backward_s: np.ndarray
    input_grad_s: np.ndarray
    activation_bytes: np.ndarray
    parameter_bytes: np.ndarray
    producers: tuple[tuple[int, ...], ...]
    source: str = field(default="")

    def __len__(self) -> int:
        return len(self.names)

    def __post_init__(self) -> None:
        n = len(self.names)
        if n == 0:
            raise InputError("a profile needs at least one layer", file=self.source or None)
        for name in ("forward_s", "backward_s", "input_grad_s", "activation_bytes", "parameter_bytes"):
            values = np.asarray(getattr(self, name), dtype=float)
            if values.shape != (n,) or not np.all(np.isfinite(values)) or np.any(values < 0):
                raise InputError(f"needs {n} finite non-negative values", file=self.source or None, field=name)
            object.__setattr__(self, name, values)
        if len(self.producers) != n:
            raise InputError(f"needs {n} producer lists", field="producers")


def chain_producers(count: int) -> tuple[tuple[int, ...], ...]:
    """Producers of a plain chain: layer l reads layer l−1 (the first reads the network input)."""
    return tuple(() if i == 0 else (i - 1,) for i in range(count))


def layer_costs_from_network(network: Network, array: ArrayConfig, batch: int, mode: Mode = "exact"
                             ) -> JobLayerCosts:
    """Per-layer costs from the array model: F/G/D cycles (``cost_network``) / ``array.clock_hz``
    (1 GHz when the array has none).

    ``exact`` mode (default) is what SPB really runs: no δ for the network input. Activation bytes
    are each layer's input tensor (``delta_bytes`` of the lowering: what G needs), parameter bytes its
    weights (bias excluded), both at ``array.element_bytes`` per element.
    """
    table = layer_cost_rows(lower_network(network, batch, mode, array.element_bytes), array)  # cost_network's rows
    column = lambda name: np.array([row[name] for row in table], dtype=float)
    clock = array.clock_hz or DEFAULT_CLOCK_HZ
    index = {layer.name: i for i, layer in enumerate(network.layers)}
    producers = tuple(tuple(index[p] for p in layer.inputs if p != NETWORK_INPUT) for layer in network.layers)
    return JobLayerCosts(
        names=tuple(str(row["layer"]) for row in table),
        forward_s=column("F_cycles") / clock,
        backward_s=np.array([row["G_cycles"] + row["D_cycles"] for row in table], dtype=float) / clock,
        input_grad_s=column("D_cycles") / clock,
        activation_bytes=column("delta_bytes"),
        parameter_bytes=column("weight_bytes"),
        producers=producers,
        source=f"{network.name} on {array.rows}x{array.cols} {array.dataflow}, batch {batch}, {mode} mode",
    )


@dataclass(frozen=True)
class TaskCost:
    """One worker's per-iteration task: back-propagated layers, share of L, seconds and peak bytes."""

    layers: int
    share: float
    forward_s: float
    backward_s: float
    memory_bytes: float

    @property
    def time_s(self) -> float:
        return self.forward_s + self.backward_s


def suffix_lengths(layers: int, workers: int, shares: Sequence[float] | None = None) -> tuple[int, ...]:
    """Layers each worker back-propagates: ⌈share_j · L⌉ with share_j = j/k by default (§2, Fig. 1).

    ``shares`` overrides the split (one value in (0, 1] per worker); the largest must be 1, or some
    layers would never receive a gradient.
    """
    if workers <= 0:
        raise InputError(f"workers must be positive, got {workers}", field="workers")
    if shares is None:
        shares = [j / workers for j in range(1, workers + 1)]
    shares = [float(s) for s in shares]
    if len(shares) != workers:
        raise InputError(f"expected {workers} shares, got {len(shares)}", field="shares")
    if any(not (0.0 < s <= 1.0) for s in shares):
        raise InputError(f"shares must lie in (0, 1], got {shares}", field="shares")
    if max(shares) != 1.0:
        raise InputError("one worker must back-propagate every layer (a share of 1)", field="shares")
    return tuple(max(1, math.ceil(s * layers - 1e-9)) for s in shares)


def task_cost(costs: JobLayerCosts, suffix: int) -> TaskCost:
    """Time and peak memory of a task back-propagating the last ``suffix`` layers (module docstring)."""
    n = len(costs)
    if not 0 < suffix <= n:
        raise InputError(f"suffix must be within 1..{n}, got {suffix}", field="suffix")
    p = n - suffix
    skip = sum(costs.input_grad_s[l] for l in range(p, n) if all(q < p for q in costs.producers[l]))
    backward = float(costs.backward_s[p:].sum() - skip)
    act, par = costs.activation_bytes, costs.parameter_bytes
    prefix = max((act[l] + act[min(l + 1, n - 1)] for l in range(p)), default=0.0)
    suffix_mem = act[p:].sum() + par[p:].sum() + act[p:].max()
    return TaskCost(layers=suffix, share=suffix / n, forward_s=float(costs.forward_s.sum()),
                    backward_s=max(backward, 0.0), memory_bytes=float(par.sum() + max(prefix, suffix_mem)))


def spb_tasks(costs: JobLayerCosts, workers: int, shares: Sequence[float] | None = None) -> tuple[TaskCost, ...]:
    """The k tasks of one SPB iteration, worker 1 … k (§2)."""
    return tuple(task_cost(costs, n) for n in suffix_lengths(len(costs), workers, shares))


def backprop_sweep(costs: JobLayerCosts, percents: Sequence[float] = (100, 90, 80, 70, 60, 50, 40, 30, 20, 10, 5)
                   ) -> pd.DataFrame:
    """Table 1's shape: forward/backward seconds and peak bytes as the back-propagated share falls."""
    import pandas as pd

    rows = []
    for percent in percents:
        n = max(1, math.ceil(percent / 100 * len(costs) - 1e-9))
        task = task_cost(costs, n)
        rows.append({"percent": percent, "layers": n, "forward_s": task.forward_s, "backward_s": task.backward_s,
                     "peak_memory_bytes": task.memory_bytes})
    return pd.DataFrame(rows)
