"""nccl-tests figures cited from public NCCL threads (``tests/data/nccl_multinode.csv``: source, GPU,
servers, GPUs and NICs per server, NIC Gb/s, collective, algorithm, bytes, bus bandwidth GB/s), and
archsim's bus bandwidth for the same run — the check of the collectives across servers and of NVLS,
which no shipped table measures. Nothing here is fitted."""

from __future__ import annotations

import csv
from dataclasses import dataclass, replace
from pathlib import Path

from archsim.collective_units import bus_bandwidth_factor
from archsim.collectives import LinkClass, Spanning, collective_seconds
from archsim.devices.gpu_lookup import gpu
from archsim.links import infiniband, nvlink
from archsim.network import ServerNetwork


@dataclass(frozen=True)
class CitedRun:
    """One cited figure; ``expected``: how the thread says the run relates to a sound system
    (``match``; ``below-model``: the maintainers called it low; ``above-ring`` / ``match-ratio``: NVLS
    and ring figures of one server)."""

    source: str
    gpu: str
    servers: int
    gpus_per_server: int
    nics_per_server: int
    nic_gbps: float
    collective: str
    algorithm: str
    nbytes: float
    bus_gbytes_per_s: float
    expected: str


def read_cited(path: str | Path) -> list[CitedRun]:
    with open(path, encoding="utf-8") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    return [CitedRun(r["source"], r["gpu"], int(r["servers"]), int(r["gpus_per_server"]), int(r["nics_per_server"]),
                     float(r["nic_gbps"]), r["collective"], r["algorithm"], float(r["bytes"]),
                     float(r["bus_gbytes_per_s"]), r["expected"]) for r in rows]


def predicted_bus_gbytes_per_s(run: CitedRun) -> float:
    """archsim's bus bandwidth (nccl-tests' definition: 2(n − 1)/n · S / t for an all-reduce, GB/s) for the
    cited run, the whole server's GPUs in one group; ``algorithm`` ring or nvls forces NCCL's choice."""
    device = gpu(run.gpu)
    n = run.servers * run.gpus_per_server
    intra = nvlink(device.nvlink_bytes_per_s)
    link: LinkClass | Spanning
    if run.servers == 1:
        link = replace(intra, nvls=run.algorithm == "nvls")
    else:
        network = ServerNetwork(run.nics_per_server, run.nic_gbps, max(1, run.gpus_per_server // run.nics_per_server),
                          run.gpus_per_server)
        inter = infiniband(network.group_bytes_per_s(run.gpus_per_server, run.gpus_per_server))
        link = Spanning(intra, inter, run.gpus_per_server)
    return bus_gbytes_per_s(run.collective, run.nbytes, n, link)


def bus_gbytes_per_s(collective: str, nbytes: float, n: int, link: LinkClass | Spanning) -> float:
    """archsim's bus bandwidth of ``collective`` over ``n`` GPUs on ``link`` (nccl-tests' definition,
    :func:`~archsim.collective_units.bus_bandwidth_factor` · S / t; GB/s = 10⁹ bytes/s)."""
    seconds = float(collective_seconds(collective, nbytes, n, link))
    return bus_bandwidth_factor(collective, n) * nbytes / seconds / 1e9


__all__ = ["CitedRun", "bus_gbytes_per_s", "predicted_bus_gbytes_per_s", "read_cited"]
