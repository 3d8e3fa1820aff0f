"""A GPU cluster for training: today's cluster TOML (:mod:`archsim.spp.topology`) with each
``[[servers]]`` table naming its GPU by catalog name (``gpu = "a100-80gb"``), read into the
:class:`~archsim.training.iteration.Machine` the iteration model runs on.

Groups are placed Megatron's way: TP innermost (consecutive GPUs), then DP, then PP. A group whose
GPUs all sit in one server talks over that server's NVLink (the catalog's per-GPU NVLink bandwidth
through NVSwitches; on a DGX-1 of V100s, the NVLink rings its GPUs can form — calibrated on
nccl-tests, :func:`archsim.training.fitted.nvlink_group`); a group that spans servers over the inter-server network at
``inter_server_gbps`` per GPU (``inter_server_link = "per_gpu_pair"``: each GPU its own NIC) or that
bandwidth shared by the server's GPUs (``"shared"``).
"""

from __future__ import annotations

from dataclasses import dataclass
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

    def machine(self, par: Parallelism) -> Machine:
        if par.gpus > self.topology.devices:
            raise InputError(f"TP × PP × DP = {par.gpus} GPUs, the cluster has {self.topology.devices}", field="gpus")
        ib = fitted.infiniband(self.inter_server_bytes_per_s)
        g = self.gpus_per_server

        def link(members: range):  # the first group of a kind: GPU indices, Megatron's order
            return fitted.nvlink_group(self.gpu, tuple(members)) if members[-1] < g else ib

        return Machine(self.gpu, fitted.kernels(self.gpu.name),
                       Links(tp=link(range(par.tp)), dp=link(range(0, par.tp * par.dp, par.tp)),
                             pp=link(range(0, par.gpus, par.tp * par.dp))))


def load_gpu_cluster(path: str | Path) -> GpuCluster:
    """Read a cluster TOML whose servers all name one catalog GPU."""
    file = str(path)
    spec = parse_toml(read_text(path, "cluster file"), file)
    topology = build_topology(spec, file=file, max_devices=MAX_GPUS)
    servers = spec["servers"]
    names = {group.get("gpu") for group in servers}
    if None in names:
        raise InputError('every [[servers]] table needs gpu = "<catalog name>" for archsim train', file=file,
                         field="gpu")
    if len(names) != 1:
        raise InputError(f"servers of different GPUs ({', '.join(sorted(map(str, names)))}) are not modelled yet",
                         file=file, field="gpu")
    try:
        device = gpu(str(names.pop()))
    except InputError as exc:
        raise InputError(exc.message, file=file, field="gpu") from None
    sizes = {group["gpus"] for group in servers}
    if len(sizes) != 1:
        raise InputError("servers of different GPU counts are not modelled yet", file=file, field="gpus")
    per_server = sizes.pop()
    inter = spec["cluster"].get("inter_server_gbps", 0)
    inter_bytes = float(inter if not isinstance(inter, list) else inter[0]) * 1e9 / 8
    if spec["cluster"].get("inter_server_link", "shared") == "shared" and inter_bytes:
        inter_bytes /= per_server
    return GpuCluster(topology, device, per_server, inter_bytes or 1.0)


def single_node(name: str = "a100-80gb", gpus: int = 8) -> GpuCluster:
    """One server of ``gpus`` catalog GPUs on NVLink (the measured runs' machine)."""
    spec = {"cluster": {"name": f"{name}-node"}, "servers": [{"count": 1, "gpus": gpus, "intra_server_gbps": 4800,
                                                               "gpu": name}]}
    return GpuCluster(build_topology(spec), gpu(name), gpus, 1.0)


__all__ = ["GpuCluster", "load_gpu_cluster", "single_node"]
