"""What a training search minimises: time, cost or energy per iteration.

* ``time``: the iteration's seconds.
* ``cost``: GPU-hours × price per GPU-hour of each GPU's type, in USD per iteration, at
  :mod:`archsim.training.rates`' prices (their sources, and the GPUs that have none, are stated there); set
  ``price_per_gpu_hour`` in a ``[[servers]]`` table of the cluster TOML to use your own.
* ``energy``: every GPU at its board power (the device's ``board_watts``: a catalog GPU's datasheet
  TDP from :data:`archsim.devices.catalog.TABLE`) for the whole iteration, in joules — an upper bound: a GPU
  waiting in a pipeline bubble draws less, and the host, network and cooling are left out. Set
  ``gpu_watts`` per server to use a measured figure. A device file's ``board_watts`` stands for its
  devices where the server sets none; a device file has no default price. On array devices the search
  takes the energy model's figure instead, as ``archsim train`` does (:func:`objectives`): on a cluster mixing
  them with GPUs, each device's own, summed.

Only the GPUs a configuration uses are counted (the first TP × PP × DP GPUs of the cluster file, or of
the server order ``--placement`` chose).
"""

from __future__ import annotations

from typing import cast

from archsim.errors import InputError
from archsim.training.energy import cluster_iteration_energy
from archsim.training.energy_sources import array_devices, board_watts
from archsim.training.rates import dollars_per_hour, watts
from archsim.training.search_space import Candidate, rank_memories
from archsim.workload.transformer import TransformerConfig


def objective_columns(cluster, gpus: int, seconds: float, strict: str | None = None) -> dict[str, float]:
    """The row's cost (USD) and energy (J) per iteration; a figure with no price or power known (a
    device file's) is NaN, unless it is the ``strict`` column (the objective searched), then refused."""
    out = {}
    for column, value in (("cost_usd", lambda: seconds / 3600 * dollars_per_hour(cluster, gpus)),
                          ("energy_j", lambda: seconds * watts(cluster, gpus))):
        try:
            out[column] = value()
        except InputError:
            if column == strict:
                raise
            out[column] = float("nan")
    return out


def objectives(c: TransformerConfig, k: Candidate, cluster, global_batch: int, seconds: float,
               strict: str | None = None) -> dict[str, float]:
    """A configuration's cost (USD) and energy (J) per iteration. Where it uses array devices the energy is
    ``archsim train``'s (:func:`~archsim.training.energy.cluster_iteration_energy`, one implementation for both: the energy
    model's on those devices, plus board power × time on any other GPUs; NaN where one of those has no figure);
    elsewhere board power × time (:func:`objective_columns`, whose ``strict`` refuses a column with no figure
    known)."""
    gpus = k.gpus
    if not array_devices(cluster, gpus):
        return objective_columns(cluster, gpus, seconds, strict)
    out = objective_columns(cluster, gpus, seconds, None if strict == "energy_j" else strict)
    par = k.parallelism(global_batch)
    energy = cluster_iteration_energy(c, par, cluster, seconds, memory=rank_memories(c, par))["energy_j"]
    out["energy_j"] = float("nan") if energy is None else cast(float, energy)
    return out


OBJECTIVE_COLUMN = {"time": "iteration_seconds", "cost": "cost_usd", "energy": "energy_j"}


def check_objective_figures(cluster, gpus: int, objective: str) -> None:
    """Refuse, before any configuration is costed, an ``objective`` whose figure :func:`objectives` would find
    unknown on ``gpus`` GPUs (a device file's chip has no price; a tile device without ``board_watts`` no power):
    the same :class:`InputError` it raises, now ahead of a search of seconds or minutes instead of after it."""
    column = OBJECTIVE_COLUMN[objective]
    if column == "energy_j":
        board_watts(cluster, gpus)  # an array device's energy is the energy model's, which needs no figure
    elif objective != "time":  # time needs no figure
        objective_columns(cluster, gpus, 1.0, column)


__all__ = ["OBJECTIVE_COLUMN", "check_objective_figures", "objective_columns", "objectives"]
