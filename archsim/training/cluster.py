"""A GPU cluster for training: today's cluster TOML (:mod:`archsim.spp.topology`) with each
``[[servers]]`` table naming its GPU by catalog name (``gpu = "a100-80gb"``), read into the
:class:`~archsim.training.iteration.Machine` the iteration model runs on.

Groups are placed Megatron's way: TP innermost (consecutive GPUs), then DP, then PP. A group whose
GPUs all sit in one server talks over that server's NVLink (the catalog's per-GPU NVLink bandwidth
through NVSwitches; on a DGX-1 of V100s, the NVLink rings its GPUs can form — calibrated on
nccl-tests, :func:`archsim.training.fitted.nvlink_group`); a group that spans servers over the inter-server network at
``inter_server_gbps`` per GPU (``inter_server_link = "per_gpu_pair"``: each GPU its own NIC) or that
bandwidth shared by the server's GPUs (``"shared"``).

Heterogeneous clusters: ``[[servers]]`` tables may name different GPUs (same GPU count per server).
GPUs are numbered in the file's order, and a pipeline rank runs on GPUs r·TP·DP … (r + 1)·TP·DP − 1
(Megatron's order), so list the servers in the pipeline order wanted; :meth:`GpuCluster.rank_machines`
gives each rank its GPU, kernels and links (None when one rank's GPUs mix types). A server may
override the objectives' figures with ``price_per_gpu_hour`` (USD) and ``gpu_watts``
(:mod:`archsim.training.objectives`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from archsim.devices.catalog import Gpu, gpu
from archsim.errors import InputError
from archsim.spp.topology import Topology, build_topology
from archsim.training import fitted
from archsim.training.iteration import Links, Machine
from archsim.training.parallel import Parallelism
from archsim.validate import parse_toml, read_text

MAX_GPUS = 4096  # a training cluster's GPUs (its topology is a GPUs × GPUs bandwidth matrix)


@dataclass(frozen=True)
class GpuCluster:
    topology: Topology
    gpu: Gpu
    gpus_per_server: int
    inter_server_bytes_per_s: float
    servers: tuple[Gpu, ...] = ()  # each server's GPU, in the file's order (empty: all ``gpu``)
    prices: tuple[float | None, ...] = ()  # each server's USD per GPU-hour override (None: the default table)
    watts: tuple[float | None, ...] = ()  # each server's watts per GPU override

    @cached_property
    def heterogeneous(self) -> bool:
        return len({device.name for device in self.servers}) > 1

    def gpu_at(self, index: int) -> Gpu:
        return self.servers[index // self.gpus_per_server] if self.servers else self.gpu

    def machine(self, par: Parallelism, device: Gpu | None = None) -> Machine:
        """The machine of a pipeline rank on ``device`` (default the cluster's first GPU type)."""
        if par.gpus > self.topology.devices:
            raise InputError(f"TP × PP × DP = {par.gpus} GPUs, the cluster has {self.topology.devices}", field="gpus")
        device = device or self.gpu
        ib = fitted.infiniband(self.inter_server_bytes_per_s)
        g = self.gpus_per_server

        def link(members: range):  # the first group of a kind: GPU indices, Megatron's order
            return fitted.nvlink_group(device, tuple(members)) if members[-1] < g else ib

        return Machine(device, fitted.kernels(device.name),
                       Links(tp=link(range(par.tp)), dp=link(range(0, par.tp * par.dp, par.tp)),
                             pp=link(range(0, par.gpus, par.tp * par.dp))))

    def rank_gpus(self, par: Parallelism) -> tuple[Gpu, ...] | None:
        """Each pipeline rank's GPU, or None when a rank's TP × DP GPUs are of different types."""
        if par.gpus > self.topology.devices:
            raise InputError(f"TP × PP × DP = {par.gpus} GPUs, the cluster has {self.topology.devices}", field="gpus")
        group = par.tp * par.dp
        out = []
        for r in range(par.pp):
            kinds = {self.gpu_at(i) for i in range(r * group, (r + 1) * group, self.gpus_per_server)}
            kinds.add(self.gpu_at((r + 1) * group - 1))
            if len(kinds) > 1:
                return None
            out.append(kinds.pop())
        return tuple(out)

    def rank_machines(self, par: Parallelism) -> tuple[Machine, ...] | None:
        """Each pipeline rank's machine (one object per GPU type), or None as :meth:`rank_gpus`."""
        kinds = self.rank_gpus(par)
        if kinds is None:
            return None
        made = {device: self.machine(par, device) for device in set(kinds)}
        return tuple(made[device] for device in kinds)


def load_gpu_cluster(path: str | Path) -> GpuCluster:
    """Read a cluster TOML whose servers each name a catalog GPU."""
    file = str(path)
    spec = parse_toml(read_text(path, "cluster file"), file)
    topology = build_topology(spec, file=file, max_devices=MAX_GPUS)
    servers = spec["servers"]
    if any(group.get("gpu") is None for group in servers):
        raise InputError('every [[servers]] table needs gpu = "<catalog name>" for archsim train', file=file,
                         field="gpu")
    kinds: list[Gpu] = []
    prices: list[float | None] = []
    watts: list[float | None] = []
    for group in servers:
        try:
            device = gpu(str(group["gpu"]))
        except InputError as exc:
            raise InputError(exc.message, file=file, field="gpu") from None
        for key, out in (("price_per_gpu_hour", prices), ("gpu_watts", watts)):
            value = group.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
                raise InputError(f"expected a positive number, got {value!r}", file=file, field=key)
            out.extend([None if value is None else float(value)] * group.get("count", 1))
        kinds.extend([device] * group.get("count", 1))
    sizes = {group["gpus"] for group in servers}
    if len(sizes) != 1:
        raise InputError("servers of different GPU counts are not modelled yet", file=file, field="gpus")
    per_server = sizes.pop()
    inter = spec["cluster"].get("inter_server_gbps", 0)
    inter_bytes = float(inter if not isinstance(inter, list) else inter[0]) * 1e9 / 8
    if spec["cluster"].get("inter_server_link", "shared") == "shared" and inter_bytes:
        inter_bytes /= per_server
    return GpuCluster(topology, kinds[0], per_server, inter_bytes or 1.0, tuple(kinds), tuple(prices), tuple(watts))


def single_node(name: str = "a100-80gb", gpus: int = 8) -> GpuCluster:
    """One server of ``gpus`` catalog GPUs on NVLink (the measured runs' machine)."""
    spec = {"cluster": {"name": f"{name}-node"}, "servers": [{"count": 1, "gpus": gpus, "intra_server_gbps": 4800,
                                                               "gpu": name}]}
    return GpuCluster(build_topology(spec), gpu(name), gpus, 1.0)


__all__ = ["GpuCluster", "load_gpu_cluster", "single_node"]
