"""What each GPU of a cluster costs per second: its price per GPU-hour (USD) and its board power (W).

The default prices (:data:`PRICE_PER_GPU_HOUR`) are AWS EC2 on-demand list prices in US East (N. Virginia),
Linux, per 8-GPU instance hour ÷ 8, as published in 2024 (docs/citations.md, "GPU prices and power"):
p3dn.24xlarge (8 × V100 32 GB) $31.212, p4d.24xlarge (8 × A100 40 GB) $32.7726, p4de.24xlarge (8 × A100
80 GB) $40.9657, p5.48xlarge (8 × H100 SXM 80 GB) $98.32. The default board power is the device's
``board_watts`` (a catalog GPU's datasheet TDP from :data:`archsim.devices.catalog.TABLE`). A server's
``price_per_gpu_hour`` and ``gpu_watts`` override them (the H200 has no default price: a cluster of them
must set it for ``cost``). The search's objectives
(:mod:`archsim.training.objectives`) and the board-power energy of an iteration
(:func:`archsim.training.energy.cluster_iteration_energy`) both price here; this module imports neither, so
neither imports the other through it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from archsim.devices.catalog import GPUS
from archsim.errors import InputError

PRICE_PER_GPU_HOUR = {"v100-32gb": 31.212 / 8, "a100-40gb": 32.7726 / 8, "a100-80gb": 40.9657 / 8,
                      "h100-80gb-sxm": 98.32 / 8}  # USD, AWS on-demand list prices (module docstring)
def _key(device) -> str | None:
    """A catalog GPU's catalog key (``Device.catalog``: kept by ``dataclasses.replace``, so a catalog GPU with a
    figure changed keeps its board's price), None for a device file's chip, even one named like a catalog GPU
    ("A100"): it is no catalog board and gets no catalog price."""
    return device.catalog if device.catalog in GPUS else None


def _per_gpu(cluster, gpus: int, overrides: tuple, default: Callable[[Any], float | None], key: str,
             own_figure: str, counted: Callable[[Any], bool] = lambda device: True) -> float:
    """Σ over the first ``gpus`` GPUs whose device is ``counted`` of their server's override (the ``[[servers]]``
    ``key``), else their device's ``default``; none: an error naming ``key`` and ``own_figure``, where the device
    could state one."""
    total = 0.0
    starts = cluster.starts
    for server in range(len(starts) - 1):
        count = min(starts[server + 1], gpus) - starts[server]
        if count <= 0:
            break
        own = overrides[server] if server < len(overrides) else None
        device = cluster.gpu_at(starts[server])
        if not counted(device):
            continue
        if own is None:
            own = default(device)
        if own is None:
            whose = _key(device) or f"{device.name} (a device file's chip, no catalog board)"
            raise InputError(f"no default figure for {whose}: set {key} in its "
                             f"[[servers]] table{own_figure}", field=key)
        total += count * own
    return total


def dollars_per_hour(cluster, gpus: int) -> float:
    """USD per hour of the first ``gpus`` GPUs."""
    return _per_gpu(cluster, gpus, cluster.prices, lambda d: PRICE_PER_GPU_HOUR.get(_key(d) or ""),
                    "price_per_gpu_hour", "")


def watts(cluster, gpus: int, counted: Callable[[Any], bool] = lambda device: True) -> float:
    """Watts of the first ``gpus`` GPUs at board power, of those whose device is ``counted`` (default all: on a mixed
    cluster :mod:`archsim.training.energy` counts the GPUs the energy model does not price)."""
    return _per_gpu(cluster, gpus, cluster.watts, lambda d: d.board_watts, "gpu_watts",
                    " (or [device] board_watts in its device file)", counted)


__all__ = ["PRICE_PER_GPU_HOUR", "dollars_per_hour", "watts"]
