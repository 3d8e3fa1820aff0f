"""Cluster topologies: servers × GPUs with intra- and inter-server bandwidths → a device graph.

A TOML file (``configs/clusters/*.toml``), keys checked exactly::

    [cluster]
    name = "spp_sim"
    seed = 0                      # bandwidths given as [low, high] ranges are drawn uniformly
    inter_server_gbps = [32, 40]  # per server pair
    inter_server_link = "shared"  # or "per_gpu_pair" (see below)
    gpu_memory_gb = 16            # optional: each GPU's memory (10⁹ bytes), for memory-constrained planners
    [[servers]]
    count = 3                     # servers of this kind
    gpus = 4
    intra_server_gbps = [192, 256] # per server (its PCIe or NVLink fabric), per GPU, both directions together;
                                   # optional beside gpu or device (the chip's own link: server_fabric)
    gpu = "a100-80gb"             # optional: the GPU by catalog name (archsim train; archsim.devices)
    # device = "tpu.toml"         # or a device file, relative to this file (archsim train, instead of gpu)
    # torus = [2, 2, 1]           # optional: the chips on a torus of point-to-point links, chips per dimension

Bandwidths are stored in bytes per second (Gbps · 10⁹ / 8), one direction: ``inter_server_gbps`` is per
direction, ``intra_server_gbps`` both directions together (docs/formats.md), so a transfer in a server gets
half of it (:func:`archsim.links.fabric_bytes_per_s`), as train's links do.

A transfer between two GPUs runs at the bandwidth of their server pair (or of their server's
fabric, one direction): a pipeline send runs alone, so it gets the whole link even where the server's GPUs
share it (:func:`archsim.links.nic_share` with ``alone=True``; train's collectives, every GPU at once, take
its share from the same function). What the min-cut of recursive device ordering weighs is *capacity*: with
``inter_server_link = "shared"`` (the default, a server's NIC) the g_a·g_b GPU pairs of two servers
share one inter-server link, so each pair's capacity is the link's bandwidth / (g_a·g_b) and a
server pair's pairs sum to its link; with ``"per_gpu_pair"`` every GPU pair has a dedicated link of
the full bandwidth (a complete GPU graph; the lightest cut then isolates a single GPU, because its
few fast intra-server links weigh less than its many inter-server ones).

The links between servers are train's :class:`~archsim.network.ServerNetwork` (:func:`archsim.network.read_network`, the
object :class:`~archsim.training.cluster.GpuCluster` holds, :attr:`Topology.network`): ``shared`` is one NIC per server,
``per_gpu_pair`` one NIC per GPU, and a ``[network]`` table (NICs per server, their speed, GPUs per NIC, leaves;
docs/formats.md) replaces both keys (:func:`~archsim.spp.link_classes.network_pairs`). Only ``[low, high]`` ranges
between server pairs, drawn per pair, state no one network (``network`` None): train refuses them.

A server wired as a torus (``torus``, :func:`server_torus`) sends between two of its chips on one link, its fabric
over the chip's links (:func:`~archsim.spp.link_classes.torus_pairs`), and train's groups run on its rings
(:func:`archsim.links.torus_link`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from archsim.cluster_keys import CLUSTER_KEYS, SERVER_KEYS, is_gbps, key_hint
from archsim.errors import InputError
from archsim.links import check_nvls, fabric_bytes_per_s, nic_share
from archsim.network import ServerNetwork, read_network
from archsim.spp.cluster_document import DEVICE_NOT_CLUSTER, read_cluster_document, server_fabric
from archsim.spp.cluster_figures import Draws, check_figure, figure, gbps
from archsim.spp.link_classes import (
    board_pairs,
    domain_fabric,
    domain_pairs,
    exact_links,
    gpu_nics,
    network_pairs,
    torus_pairs,
)
from archsim.toml_errors import table_line
from archsim.validate import SEED_MAX, check_name, did_you_mean, shown, shown_number

if TYPE_CHECKING:
    import networkx as nx

    from archsim.collectives import PairLinks

CLUSTER_TABLES = ("a cluster file has one [cluster] table, one or more [[servers]] tables and optionally one [network] "
                  "table (the NICs between servers)")
INTER_SERVER_LINKS = ("shared", "per_gpu_pair")
LINK_MODELS = ("paper", "exact")  # how plan prices a transfer (build_topology's ``links``; plan --links)
MAX_DEVICES = 1024  # GPUs in one cluster file (the planner's min-cut works on the complete GPU graph)
MIN_MEMORY_GB, MAX_MEMORY_GB = 1e-6, 1e6  # a GPU's memory: 1 kB … 1 PB


@dataclass(frozen=True)
class Topology:
    """The one cluster model every planner reads: devices ``g0, g1, …`` (GPUs or arrays) with the
    server each sits on (the hierarchy), a symmetric bandwidth matrix (bytes per time unit: bytes/s
    from a cluster file) and what is known of each device. A flat group of processors is a
    one-server cluster (:meth:`flat`); PipeDream's levels are :meth:`uniform_levels`; collectives
    over it are :mod:`archsim.collectives`."""

    name: str
    servers: tuple[int, ...]  # server index of each GPU
    bandwidth: np.ndarray  # (V, V), zero on the diagonal: what one transfer between two GPUs gets
    capacity: np.ndarray | None = None  # (V, V) min-cut weights; None: the bandwidths themselves
    gpu_memory_bytes: float | None = None  # None: not given (a planner uses its own default)
    device_types: tuple[str, ...] | None = None  # each device's type name (a GPU model, an array); None: not given
    latency: np.ndarray | float = 0.0  # per transfer (V, V) or one figure, in the bandwidth's time unit (0: the
    # paper's model, bytes / bandwidth alone; ``plan --links exact``: each pair's launch latency, build_topology)
    links: PairLinks | None = None  # ``plan --links exact``: each pair's link class, what a stage's all-reduce is
    # priced on (archsim.matrix_collectives.ring_allreduce_on, PRM's search and the plan it reports); None: the paper's model
    unit: str | None = None  # bandwidth's time unit: "seconds" from a cluster file (planners.check_units)
    fabrics: tuple[float, ...] = ()  # each server's in-server link, bytes/s per GPU per direction (from a file)
    network: ServerNetwork | None = None  # the links between servers its pairs are priced on (None: drawn ranges, flat)
    domain_fabric: float | None = None  # bytes/s of a pair of two servers in one NVLink domain (None: no such domain)
    drew: bool = False  # some bandwidth was drawn from a [low, high] range with the cluster's seed

    @property
    def devices(self) -> int:
        return len(self.servers)

    @classmethod
    def flat(cls, processors: int, bandwidth: float | None = None, *, name: str = "flat",
             memory_bytes: float | None = None) -> Topology:
        """``processors`` identical devices on one server, every pair joined at ``bandwidth`` bytes
        per time unit (None: free links): the cluster of ``archsim pipeline --processors P``."""
        if not processors > 0:
            raise InputError(f"processors must be positive, got {processors}", field="processors")
        return _flat(int(processors), None if bandwidth is None else float(bandwidth), name, memory_bytes)

    def reordered(self, order: tuple[int, ...]) -> Topology:
        """This cluster with its servers in ``order`` (indices of its servers), its GPUs numbered anew in that order:
        a pair in a server keeps its link, a pair between servers is priced anew on :attr:`network` (a leaf and an
        NVLink domain hold the servers they held before, their indices here: an order moves servers in the
        numbering, not under other leaves or into other domains, as :meth:`archsim.training.cluster.GpuCluster.
        reordered` prices them)."""
        if self.network is None or self.links is not None or self.device_types is not None:
            raise InputError("only a cluster file's topology with one network and paper links is reordered",
                             field="placement")
        where = np.array(self.servers)
        gpus = np.concatenate([np.flatnonzero(where == s) for s in order])
        placed = np.repeat(np.arange(len(order)), np.bincount(where)[list(order)])
        bandwidth, capacity, _ = network_pairs(self.network, placed, self.bandwidth[np.ix_(gpus, gpus)],
                                               self.domain_fabric, np.array(order)[placed])
        return replace(self, servers=tuple(placed.tolist()), bandwidth=bandwidth, capacity=capacity,
                       fabrics=tuple(self.fabrics[s] for s in order) if self.fabrics else ())

    def uniform_levels(self) -> tuple[tuple[int, float], ...]:
        """(machines, bandwidth in bytes/s) per level, innermost first, for planners that model a
        uniform hierarchy (PipeDream's optimizer): GPUs in a server at its fabric's bandwidth, then
        servers at the inter-server bandwidth. One server is one level."""
        per_server = np.bincount(np.array(self.servers))
        if len(set(per_server.tolist())) != 1:
            raise InputError(f"servers hold different GPU counts ({sorted(set(per_server.tolist()))}): a "
                             "uniform hierarchy needs equal servers", field="servers")
        where = np.array(self.servers)
        same = where[:, None] == where[None, :]
        off_diagonal = ~np.eye(self.devices, dtype=bool)
        intra = sorted(set(self.bandwidth[same & off_diagonal].tolist()))  # not np.unique: it imports numpy.ma
        inter = sorted(set(self.bandwidth[~same].tolist()))
        for values, field in ((intra, "intra_server_gbps"), (inter, "inter_server_gbps")):
            if len(values) > 1:
                raise InputError("links of one level differ (a range was drawn?): a uniform hierarchy needs one "
                                 "bandwidth per level", field=field)
        gpus, servers = int(per_server[0]), len(per_server)
        levels = [(gpus, float(intra[0]) if len(intra) else float(inter[0]) if len(inter) else 1.0)]
        if servers > 1:
            levels.append((servers, float(inter[0])))
        return tuple(levels)

    def graph(self) -> nx.Graph:
        """The complete device graph RDO's min-cuts read."""
        import networkx as nx  # here, not at the top: plans that never build the graph skip its import (~1 s)

        capacity = self.bandwidth if self.capacity is None else self.capacity
        graph = nx.Graph()
        graph.add_nodes_from(range(self.devices))
        for u in range(self.devices):
            for v in range(u + 1, self.devices):
                graph.add_edge(u, v, bandwidth=float(self.bandwidth[u, v]), capacity=float(capacity[u, v]))
        return graph


@functools.lru_cache(maxsize=256)
def _flat(processors: int, bandwidth: float | None, name: str, memory_bytes: float | None) -> Topology:
    """:meth:`Topology.flat`, built once per shape (frozen, shared): a sweep plans on the same few
    processor counts thousands of times."""
    # one read-only value broadcast over every pair (O(1) memory for thousands of processors);
    # its diagonal holds the link too, and nothing reads a device's link to itself
    links = np.broadcast_to(np.inf if bandwidth is None else bandwidth, (processors, processors))
    return Topology(name, (0,) * processors, links, None, memory_bytes)


@dataclass(frozen=True, eq=False)
class ClusterLayout:
    """A cluster document read and checked, its GPU pairs not yet priced (:func:`pair_topology` prices them): each
    GPU's server, each server's fabric (bytes/s per GPU per direction), catalog board and device, the network
    between servers, the server pairs' drawn links (bytes/s; None: none drawn). Train and search read no pair: a
    :class:`~archsim.training.cluster.GpuCluster` keeps this and prices its pairs when asked (3,072² of them take
    ≈ 0.4 CPU s and 0.4 GB)."""

    name: str
    file: str
    servers: tuple[int, ...]  # server index of each GPU
    fabrics: tuple[float, ...]
    boards: tuple[str | None, ...]  # each server's catalog GPU where it names one (its in-server pairs' links)
    server_devices: tuple  # each server's device (None: its table names none)
    network: ServerNetwork | None
    domain_fabric: float | None
    drawn: np.ndarray | None  # (servers, servers) bytes/s from [low, high] ranges (plan's seed)
    link: str  # inter_server_link
    memory_bytes: float | None
    links: str  # how plan prices a transfer, one of LINK_MODELS
    drew: bool = False  # some bandwidth was drawn from a [low, high] range (the seed was read)
    tori: tuple[tuple[int, ...], ...] = ()  # each server's torus, chips per dimension ([[servers]] torus; (): switched)


def build_topology(spec: dict, *, file: str = "<cluster>", seed: int | None = None,
                   max_devices: int = MAX_DEVICES, network_links: bool = False,
                   default_gbps: float = 0.0, links: str = "paper", devices: tuple = ()) -> Topology:
    """Validate a parsed cluster document and draw its bandwidths (at most ``max_devices`` GPUs).
    ``network_links``: the caller (train and search) refuses a document that states no link between servers
    itself (:func:`missing_inter_server`, or the device files' ``[links] inter_node_gbps``), so here it may omit
    ``inter_server_gbps`` (its pairs then hold read_network's stand-in, 1 byte/s per GPU). ``default_gbps``: the
    servers' devices' own NIC, Gbit/s (train, search and plan: :func:`archsim.network.read_network`), taken as ``inter_server_gbps`` where the document states none and no
    ``[network]`` table; 0: none. ``links``: ``"paper"`` (SPP's model: a transfer takes bytes / bandwidth) or
    ``"exact"`` (each pair's transfer costs what train's pipeline hop on it costs,
    :func:`~archsim.spp.link_classes.exact_links`, which needs ``devices``: each ``[[servers]]`` table's device,
    :func:`archsim.training.cluster_file.named_devices`)."""
    return pair_topology(cluster_layout(spec, file=file, seed=seed, max_devices=max_devices, network_links=network_links,
                                        default_gbps=default_gbps, links=links, devices=devices))


def cluster_layout(spec: dict, *, file: str = "<cluster>", seed: int | None = None, max_devices: int = MAX_DEVICES,
                   network_links: bool = False, default_gbps: float = 0.0, links: str = "paper",
                   devices: tuple = ()) -> ClusterLayout:
    """:func:`build_topology`'s reading and checks (every refusal but ``exact`` links' own), its pairs not priced."""
    if links not in LINK_MODELS:
        raise InputError(f"expected one of {', '.join(LINK_MODELS)}, got {shown(links)}", field="links")
    if "device" in spec and "cluster" not in spec:  # a device file given where its cluster goes
        raise InputError(DEVICE_NOT_CLUSTER, file=file, field="cluster")
    stray = sorted(set(spec) - {"cluster", "servers", "network"})
    if stray:  # a misspelt table ([networks], [[server]]) by name, not as if [cluster] were missing
        written = f"[[{stray[0]}]]" if isinstance(spec[stray[0]], list) else f"[{stray[0]}]"
        hint = did_you_mean(written, ("[cluster]", "[[servers]]", "[network]"))
        raise InputError(f"unknown table{hint}; {CLUSTER_TABLES}", file=file, field=stray[0],
                         line=table_line(spec, stray[0]))  # a [[server]]'s line too, its first entry's header
    for name, header in (("cluster", "[cluster]"), ("servers", "[[servers]]")):
        if name not in spec:
            raise InputError(f"missing {header} table; {CLUSTER_TABLES}", file=file, field=name, missing=True)
    cluster = spec["cluster"]
    if not isinstance(cluster, dict):
        raise InputError("expected a table: write [cluster] above its keys", file=file, field="cluster")
    if not isinstance(spec["servers"], list) or not all(isinstance(g, dict) for g in spec["servers"]):
        raise InputError("expected [[servers]] tables", file=file, field="servers")
    unknown = sorted(set(cluster) - CLUSTER_KEYS)
    if unknown:
        raise InputError(f"unknown key in [cluster]{key_hint(unknown[0], '[cluster]', CLUSTER_KEYS, cluster[unknown[0]], cluster)}; "
                         "keys are "
                         f"{', '.join(sorted(CLUSTER_KEYS))}", file=file, field=unknown[0])
    if seed is None:
        seed = cluster.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= SEED_MAX:
            raise InputError(f"expected an integer in 0…{SEED_MAX}, got {shown(seed)}", file=file, field="seed")
    rng = Draws(seed)
    servers: list[int] = []
    intra: list[float] = []
    boards: list[str | None] = []  # each server's catalog GPU, where it names one (its in-server pairs' links)
    server_devices: list = []  # each server's device from ``devices`` (None: its table names none)
    tori: list[tuple[int, ...]] = []  # each server's torus ([[servers]] torus; (): switched)
    for table, group in enumerate(spec["servers"]):
        unknown = sorted(set(group) - SERVER_KEYS)
        if unknown:
            hint = key_hint(unknown[0], "[[servers]]", SERVER_KEYS, group[unknown[0]], group)
            raise InputError(f"unknown key in [[servers]]{hint}; keys are "
                             f"{', '.join(sorted(SERVER_KEYS))}", file=file, field=f"servers[{table + 1}].{unknown[0]}")
        count, gpus = group.get("count", 1), group.get("gpus")
        for key, value in (("count", count), ("gpus", gpus)):  # the key at fault, by name
            if value is None:
                raise InputError("missing key in [[servers]]", file=file, field=f"servers[{table + 1}].{key}", missing=True)
            if not (isinstance(value, int) and not isinstance(value, bool) and value > 0):
                raise InputError(f"expected a positive integer, got {shown_number(value)}", file=file,
                                 field=f"servers[{table + 1}].{key}")
        if len(servers) + count * gpus > max_devices:
            raise InputError(f"more than {max_devices} GPUs in all", file=file, field=f"servers[{table + 1}].count")
        tori.extend([server_torus(group, devices[table] if table < len(devices) else None, file, table)] * count)
        for _ in range(count):
            intra.append(fabric_bytes_per_s(figure(group["intra_server_gbps"], f"servers[{table + 1}].intra_server_gbps",
                                                    file, rng))
                         if "intra_server_gbps" in group else
                         server_fabric(group, devices[table] if table < len(devices) else None, file))
            servers.extend([len(intra) - 1] * gpus)
            boards.append(group.get("gpu") if isinstance(group.get("gpu"), str) and "device" not in group else None)
            server_devices.append(devices[table] if table < len(devices) else None)
    if not servers:
        raise InputError("no GPUs", file=file, field="servers")
    n_servers = len(intra)
    between = cluster.get("inter_server_gbps")
    if between is not None:  # checked where it is not read too (one server, or a [network] table's NICs)
        check_figure(between, "inter_server_gbps", file)
    if between is None and default_gbps and "network" not in spec:
        between = default_gbps
    if between is None and n_servers > 1 and not network_links and "network" not in spec:
        raise missing_inter_server(file)
    where = np.array(servers)
    # [low, high] ranges between servers, one draw per pair (plan's seed), state no one network; else train's
    drawn = "network" not in spec and between is not None and not is_gbps(between)
    pairs = None
    if drawn and n_servers > 1:  # in this order (the seed's numbers)
        pairs = np.zeros((n_servers, n_servers))
        for a in range(n_servers):
            for b in range(a + 1, n_servers):
                pairs[a, b] = pairs[b, a] = gbps(between, "inter_server_gbps", file, rng)
    link = cluster.get("inter_server_link", "shared")
    if link not in INTER_SERVER_LINKS:
        raise InputError(f"expected one of {', '.join(INTER_SERVER_LINKS)}, got {shown(link)}", file=file,
                         field="inter_server_link")
    network = None if drawn else read_network(spec, int(np.bincount(where).max()), file, default_gbps=default_gbps)
    check_nvls(network is not None and network.nvls, server_devices, file)  # a board that cannot: refused
    # a pair of two servers of one NVLink domain runs on the servers' one fabric, as train's group of the two
    fabric = domain_fabric(network, where, intra, [b if d is None else d.name for d, b in zip(server_devices, boards)])
    memory = cluster.get("gpu_memory_gb")
    if memory is not None and not (isinstance(memory, (int, float)) and not isinstance(memory, bool)
                                   and MIN_MEMORY_GB <= memory <= MAX_MEMORY_GB):
        raise InputError(f"expected a number of GB in [{MIN_MEMORY_GB:g}, {MAX_MEMORY_GB:g}]", file=file,
                         field="gpu_memory_gb")
    name = check_name(cluster.get("name", Path(file).stem), "name", file=file)
    return ClusterLayout(name, file, tuple(servers), tuple(intra), tuple(boards), tuple(server_devices), network, fabric,
                         pairs, link, None if memory is None else float(memory) * 1e9, links, rng.drew, tuple(tori))


def server_torus(group: dict, device, file: str, table: int) -> tuple[int, ...]:
    """A ``[[servers]]`` table's ``torus``: its servers' chips on a torus of point-to-point links, chips per dimension
    (whole numbers ≥ 1 whose product is the table's ``gpus``, two of the chip's links per dimension of more than one
    chip: ``device``'s ``nvlinks``, the table's chip); (): none stated, a switched server. Anything else is refused in
    one line naming the key."""
    dims = group.get("torus")
    if dims is None:
        return ()
    field = f"servers[{table + 1}].torus"
    if not (isinstance(dims, list) and dims and all(isinstance(d, int) and not isinstance(d, bool) and d >= 1
                                                     for d in dims)):
        raise InputError(f"torus must be a list of chips per dimension, whole numbers of at least 1 "
                         f"(torus = [4, 4, 4]), got {shown(dims)}", file=file, field=field)
    if math.prod(dims) != group["gpus"]:
        raise InputError(f"torus = {dims} holds {math.prod(dims)} chips, the table's gpus = {group['gpus']}: "
                         "the product of its dimensions must be the server's chips", file=file, field=field)
    if device is None:
        raise InputError("a torus's links are its chip's: name a gpu or device in this table", file=file, field=field)
    rings = sum(d > 1 for d in dims)
    if 2 * rings > device.nvlinks:
        raise InputError(f"torus = {dims} has {rings} dimensions of more than one chip, two links each, and "
                         f"{device.name} has {device.nvlinks} links ([links] links)", file=file, field=field)
    return tuple(dims)


def pair_topology(layout: ClusterLayout) -> Topology:
    """``layout``'s Topology: each GPU pair's bandwidth and min-cut capacity (``exact`` links: its latency and link
    class too, :func:`~archsim.spp.link_classes.exact_links`, which refuses a server naming no device)."""
    where, intra, network, fabric = np.array(layout.servers), list(layout.fabrics), layout.network, layout.domain_fabric
    same = where[:, None] == where[None, :]
    inter: np.ndarray | float = 0.0
    if layout.drawn is not None:  # a pipeline send runs alone on its server pair's link: the whole of it (nic_share)
        inter = nic_share(layout.drawn[where][:, where], np.bincount(where)[where][:, None], alone=True)
    bandwidth = np.where(same, np.array(intra)[where][:, None], inter)
    np.fill_diagonal(bandwidth, 0.0)
    board_pairs(bandwidth, where, list(layout.boards), intra)
    torus_pairs(bandwidth, where, layout.tori, list(layout.server_devices), intra)
    if network is not None:  # the NICs train prices its groups on: a send alone gets one whole
        bandwidth, capacity, sharing = network_pairs(network, where, bandwidth, fabric)
    elif layout.link == "shared":  # a server pair's g_a·g_b GPU pairs share its link
        sharing = np.bincount(where)[where]
        capacity = np.where(same, bandwidth, bandwidth / np.outer(sharing, sharing))
    else:
        capacity, sharing = bandwidth, np.ones(len(where))
    latency: np.ndarray | float = 0.0
    classes = None
    if layout.links == "exact":
        bandwidth, latency, classes = exact_links(bandwidth, where, sharing, list(layout.server_devices), intra,
                                                  layout.file, domain_pairs(network, where, fabric),
                                                  network is not None and network.nvls, network,
                                                  gpu_nics(network, where, layout.link), layout.tori)
    return Topology(layout.name, layout.servers, bandwidth, capacity, layout.memory_bytes, latency=latency,
                    links=classes, unit="seconds", fabrics=layout.fabrics, network=network, domain_fabric=fabric,
                    drew=layout.drew)


def missing_inter_server(file: str) -> InputError:
    """The refusal of a cluster of 2 or more servers that states no bandwidth between them."""
    return InputError("missing: the bandwidth between two servers, Gbit/s (required with 2 or more servers without "
                      "a [network] table of NICs, or the servers' device files' one [links] inter_node_gbps)",
                      file=file, field="inter_server_gbps", missing=True)


def load_topology_file(path: str | Path, *, seed: int | None = None) -> Topology:
    return build_topology(read_cluster_document(path), file=str(path), seed=seed)
