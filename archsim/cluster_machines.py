"""``archsim cluster --cluster FILE.toml``: the job scheduler's machines read from a cluster TOML, by the loader ``archsim
train`` uses (:func:`archsim.training.cluster_file.gpu_cluster`). The scheduler places jobs by device count only, so of the
file it takes each server's GPU count, one GPU's memory (GiB, 2³⁰ bytes, what ``--device-memory-gb`` means) and the
migration cost γ from the link between servers; its NVLink, leaves and oversubscription it does not read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from archsim.errors import InputError
from archsim.units import GIB


@dataclass(frozen=True)
class FileMachines:
    """What ``archsim cluster`` reads of a cluster file: ``machine_sizes`` (each server's GPUs, the file's order,
    ``count`` expanded), ``device_memory_gib`` (each GPU's memory a job may allocate, GiB = 2³⁰ bytes: the
    servers' ``usable_memory_gib``, else the board's or device file's memory), ``gamma_ns_per_byte`` (a migration's
    cost per model byte: 10⁹ / one GPU's share of its server's NICs in bytes/s, the line rate ``archsim train``
    prints as ``inter_server``'s GB/s per GPU), ``gpu`` (the GPU's name) and ``warnings`` (the loader's lines on
    implausible figures, a NIC speed's unit slipped among them, which γ reads)."""

    machine_sizes: tuple[int, ...]
    device_memory_gib: float
    gamma_ns_per_byte: float
    gpu: str
    warnings: tuple[str, ...] = ()

    @property
    def gpus(self) -> int:
        return sum(self.machine_sizes)


def gamma_ns_per_byte(gpu_bytes_per_s: float) -> float:
    """γ, ns per model byte, of a migration over a link of ``gpu_bytes_per_s`` (bytes/s, one direction): the bytes'
    serialization time at the line rate, as §3.1's 0.8 ns/byte is 10 Gb/s (1.25 × 10⁹ bytes/s)."""
    return 1e9 / gpu_bytes_per_s


def read_machines(path: str | Path) -> FileMachines:
    """The job scheduler's machines from the cluster TOML at ``path`` (:class:`FileMachines`); a file ``archsim train``
    refuses is refused alike (its line), and so, in one line naming the file, are servers whose GPUs hold different
    memory (the scheduler gives every device one memory) and a one-server file that states no link between servers
    (no ``inter_server_gbps``, ``[network]`` table or device file's ``inter_node_gbps``: nothing to price a migration on)."""
    from archsim.spp.cluster_document import read_cluster_document
    from archsim.toml_errors import located
    from archsim.training.cluster_file import device_inter_node_gbps, gpu_cluster

    file = str(path)
    spec = read_cluster_document(path)
    with located(spec, file):
        cluster = gpu_cluster(spec, Path(path).parent, file)
    sizes = cluster.sizes
    devices = cluster.servers or (cluster.gpu,) * len(sizes)
    memory = {device.name: cluster.capacity(device) for device in devices}
    if len(set(memory.values())) > 1:
        said = ", ".join(f"{name} {gib / GIB:.4g} GiB" for name, gib in memory.items())
        raise InputError(f"its servers' GPUs hold different memory ({said}); archsim cluster gives every device one "
                         "memory: give a file of one GPU type, or --gpus, --gpus-per-machine and --device-memory-gb",
                         file=file, field="servers")
    stated = ("network" in spec or spec["cluster"].get("inter_server_gbps") is not None
              or device_inter_node_gbps(devices) > 0)
    if len(sizes) == 1 and not stated:
        raise InputError("one server and no link between servers (inter_server_gbps, a [network] table or a device "
                         "file's inter_node_gbps) to price a migration on: state one, or give --gpus, "
                         "--gpus-per-machine, --device-memory-gb and --gamma-ns-per-byte", file=file,
                         field="inter_server_gbps")
    return FileMachines(tuple(sizes), next(iter(memory.values())) / GIB,
                        gamma_ns_per_byte(cluster.inter_server_bytes_per_s), cluster.gpu_names, cluster.warnings)


__all__ = ["FileMachines", "gamma_ns_per_byte", "read_machines"]
