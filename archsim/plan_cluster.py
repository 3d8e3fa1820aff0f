"""The cluster file as ``archsim plan`` reads it, once for the command and :func:`archsim.plan`: its topology and
the lines said of it after the run, and the device its servers name (read by train's own loader), which prices the
layers where no array flag is given."""

from __future__ import annotations

from pathlib import Path

from archsim.choices.devices import DTYPES
from archsim.console import setting
from archsim.errors import InputError
from archsim.plan_flags import DEFAULT_DTYPE


def server_devices(cluster: str) -> list[str | None]:
    """Each ``[[servers]]`` table's device as written (its ``device`` path or catalog ``gpu``; None where
    it names neither); empty when no server names one (the cluster's links alone: the array prices)."""
    from archsim.spp.cluster_document import read_cluster_document

    servers = read_cluster_document(cluster).get("servers", [])
    if not isinstance(servers, list):
        return []  # the topology loader has refused it already
    named = [s.get("device", s.get("gpu")) if isinstance(s, dict) else None for s in servers]
    return [None if n is None else str(n) for n in named] if any(n is not None for n in named) else []


def server_machine(cluster: str, named: list[str | None], dtype: str = DEFAULT_DTYPE):
    """The training machine (device, kernel constants, ``dtype``: --dtype, default fp16 as train's) of a cluster
    whose servers all name one device, read by ``train``'s own loader
    (:func:`archsim.training.cluster_file.load_gpu_cluster`). The planners take one per-layer cost for every GPU,
    so servers of different devices (or some of none) are refused rather than priced on one of them."""
    from archsim.spp.cluster_document import read_cluster_document
    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.training.parallel import Parallelism

    on_array = f"{setting('array')}/{setting('config')}"
    if None in named:
        raise InputError(f"some servers name a device ({', '.join(sorted({n for n in named if n}))}) and some "
                         "none: name the same gpu or device in every [[servers]] table, or price the layers on "
                         f"one array with {on_array}", file=cluster, field="servers")
    if "gpu_memory_gb" in read_cluster_document(cluster).get("cluster", {}):
        raise InputError("sizes the GPUs of a cluster that names no device; these servers' devices state their "
                         "own memory: drop gpu_memory_gb", file=cluster, field="gpu_memory_gb")
    gpus = load_gpu_cluster(cluster, dtype)
    kinds = sorted({device.name for device in gpus.servers})
    if len(kinds) > 1:
        raise InputError(f"the servers name different devices ({'; '.join(kinds)}): plan prices every GPU with "
                         "one layer profile, so it plans on one device type; give a cluster of one device, or "
                         f"{on_array} to price every GPU as one array", file=cluster, field="servers")
    peaks = [p for p in DTYPES if p in dict(gpus.gpu.peaks)]
    if dtype not in peaks:  # a card of no FP16 peak (GTX 1080 Ti, P100): name the setting that fixes it
        raise InputError(f"{gpus.gpu.name} has no {dtype} peak; give {' or '.join(setting('dtype', p) for p in peaks)}",
                         field="dtype")
    return gpus.machine(Parallelism())



def drawn_seed(spec: dict, seed: int | None, drew: bool) -> int | None:
    """The seed a cluster's ``[low, high]`` bandwidths were drawn with (``--seed``, else the file's ``[cluster] seed``,
    default 0), or None where the file states figures alone and nothing was drawn: what makes two runs on one
    file differ, so the output states it."""
    if not drew:
        return None
    if seed is not None:
        return seed
    cluster = spec.get("cluster", {})
    return int(cluster.get("seed", 0)) if isinstance(cluster, dict) else 0


def read_plan_cluster(cluster: str, seed: int | None, links: str = "paper"):
    """The cluster file as plan reads it, once: its topology, the seed its ranges were drawn with
    (:func:`drawn_seed`), and what plan says of it on stderr after the run —
    train's warnings and notes on the same file
    (:func:`archsim.training.cluster_file.cluster_file_warnings_and_notes`), the
    keys only train and search read first among the notes (docs/formats.md, "Cluster (TOML)"). Every device a
    ``[[servers]]`` table names is read (whatever prices the layers): its figures are judged as train judges
    them, and where the file states no bandwidth between servers the devices' one ``[links] inter_node_gbps``
    is taken, as train takes it. ``links``: how a transfer is priced (:func:`archsim.spp.topology.build_topology`)."""
    from collections import Counter

    from archsim.network import network_warnings_and_notes
    from archsim.spp.cluster_document import read_cluster_document
    from archsim.spp.topology import build_topology
    from archsim.toml_errors import located

    spec = read_cluster_document(cluster)
    devices: tuple = ()  # each [[servers]] table's device (archsim.training.cluster_file.named_devices)
    nic = 0.0
    with located(spec, cluster):  # a key's error names its line
        if server_devices(cluster):  # a cluster of links alone loads no device model
            from archsim.training.cluster_file import device_inter_node_gbps, named_devices

            devices = named_devices(spec, Path(cluster).parent, cluster)
            nic = device_inter_node_gbps(devices)
        topology = build_topology(spec, file=cluster, seed=seed, default_gbps=nic, links=links, devices=devices)
    per_server = Counter(topology.servers)
    network = topology.network  # train's, read once (None: a drawn [low, high] range, no one NIC figure)
    if devices:
        from archsim.training.cluster_file import cluster_file_warnings_and_notes

        warnings, notes = cluster_file_warnings_and_notes(spec, devices, network, len(per_server))
    else:
        warnings, notes = network_warnings_and_notes(spec, network, len(per_server))
    servers = [s for s in spec["servers"] if isinstance(s, dict)]
    readers = {"price_per_gpu_hour": "search reads it (its cost objective)",
               "gpu_watts": "train and search read it (energy)",
               "usable_memory_gib": "train and search read it (the memory a job may allocate)"}
    unread = tuple(f"[[servers]] {key} is not read by plan: {who}" for key, who in readers.items()
                   if any(key in s for s in servers))
    if seed is not None and not topology.drew:  # --seed draws [low, high] ranges; a file of figures has none
        unread += (f"--seed {seed} is not read: {Path(cluster).name} states no bandwidth as a [low, high] range to draw",)
    return topology, drawn_seed(spec, seed, topology.drew), (warnings, unread + notes)


__all__ = ["drawn_seed", "read_plan_cluster", "server_devices", "server_machine"]
