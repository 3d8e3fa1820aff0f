"""What a training search minimises: time, cost or energy per iteration.

* ``time``: the iteration's seconds.
* ``cost``: GPU-hours × price per GPU-hour of each GPU's type, in USD per iteration. The default prices
  (:data:`PRICE_PER_GPU_HOUR`) are AWS EC2 on-demand list prices in US East (N. Virginia), Linux, per
  8-GPU instance hour ÷ 8, as published in 2024 (docs/citations.md, "GPU prices and power"): p3dn.24xlarge
  (8 × V100 32 GB) $31.212, p4d.24xlarge (8 × A100 40 GB) $32.7726, p4de.24xlarge (8 × A100 80 GB) $40.9657,
  p5.48xlarge (8 × H100 SXM 80 GB) $98.32. Cloud prices change (AWS cut P4 and P5 prices in 2025):
  set ``price_per_gpu_hour`` in a ``[[servers]]`` table of the cluster TOML to use your own. The H200 has
  no default price (a cluster of them must set it for ``cost``).
* ``energy``: every GPU at its board power (the device's ``board_watts``: a catalog GPU's datasheet
  TDP from :data:`archsim.devices.catalog.TABLE`) for the whole iteration, in joules — an upper bound: a GPU
  waiting in a pipeline bubble draws less, and the host, network and cooling are left out. Set
  ``gpu_watts`` per server to use a measured figure. A device file's ``board_watts`` stands for its
  devices where the server sets none; a device file has no default price. On array devices the search
  takes the energy model's figure instead, as ``archsim train`` does (:func:`archsim.training.search.objectives`).

Only the GPUs a configuration uses are counted (the first TP × PP × DP GPUs of the cluster file, or of
the server order ``--placement`` chose).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from archsim.choices.training import OBJECTIVES
from archsim.devices.catalog import GPUS
from archsim.errors import InputError

PRICE_PER_GPU_HOUR = {"v100-32gb": 31.212 / 8, "a100-40gb": 32.7726 / 8, "a100-80gb": 40.9657 / 8,
                      "h100-80gb-sxm": 98.32 / 8}  # USD, AWS on-demand list prices (module docstring)
_KEY = {device.name: key for key, device in GPUS.items()}  # a catalog GPU's name → its catalog key


def _per_gpu(cluster, gpus: int, overrides: tuple, default: Callable[[Any], float | None]) -> float:
    """Σ over the first ``gpus`` GPUs of their server's override, else their device's ``default``."""
    total = 0.0
    starts = cluster.starts
    for server in range(len(starts) - 1):
        count = min(starts[server + 1], gpus) - starts[server]
        if count <= 0:
            break
        own = overrides[server] if server < len(overrides) else None
        device = cluster.gpu_at(starts[server])
        if own is None:
            own = default(device)
        if own is None:
            raise InputError(f"no default figure for {_KEY.get(device.name, device.name)}: set price_per_gpu_hour / "
                             "gpu_watts in its [[servers]] table", field="price_per_gpu_hour")
        total += count * own
    return total


def dollars_per_hour(cluster, gpus: int) -> float:
    """USD per hour of the first ``gpus`` GPUs."""
    return _per_gpu(cluster, gpus, cluster.prices, lambda d: PRICE_PER_GPU_HOUR.get(_KEY.get(d.name, d.name)))


def watts(cluster, gpus: int) -> float:
    """Watts of the first ``gpus`` GPUs at board power."""
    return _per_gpu(cluster, gpus, cluster.watts, lambda d: d.board_watts)


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


OBJECTIVE_COLUMN = {"time": "iteration_seconds", "cost": "cost_usd", "energy": "energy_j"}

__all__ = ["OBJECTIVES", "OBJECTIVE_COLUMN", "PRICE_PER_GPU_HOUR", "dollars_per_hour",
           "objective_columns", "watts"]
