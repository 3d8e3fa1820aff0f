"""Collectives on the cluster model as NCCL runs them (calibrated link classes, ring, tree and NVLS,
spanning groups): what GPU training prices its TP, CP, EP, pipeline and DP traffic with. The papers'
planners (SPP's PRM, the out-of-order data-parallel policy, the matrix collectives) keep the textbook ring
their papers price, :mod:`archsim.ring_allreduce`; both read each algorithm's bytes from
:mod:`archsim.collective_wire`.

Times are in the unit the bandwidth's "per" names (bytes per second → seconds, bytes per cycle →
cycles); sizes in bytes.

Calibrated link classes (GPU training)
--------------------------------------

Collectives on a link class: α–β ring and tree models (Thakur et al. 2005; NCCL's algorithms).

A link class is what a GPU reaches its group peers over: NVLink inside a server (an NVSwitch
makes every pair a full-bandwidth path, so a ring over any n GPUs of a server runs at one GPU's
NVLink bandwidth), or the inter-server network (each GPU's own InfiniBand NIC with
``inter_server_link = "per_gpu_pair"``). Bandwidths are per direction, bytes/s.

For a buffer of S bytes over n GPUs, with per-step latency α, fixed launch latency α₀, link
bandwidth B and the fraction η of it NCCL's ring reaches (protocol, copy engine and SM limits):

* ring all-reduce (reduce-scatter + all-gather): α₀ + 2(n − 1)·α + γ·S + 2(n − 1)/n · S / (η·B)
* ring all-gather or reduce-scatter (S the gathered buffer): α₀ + (n − 1)·α + γ·S/2 + (n − 1)/n · S / (η·B)
* tree all-reduce (double binary tree, pipelined): α₀ + 2⌈log₂ n⌉·α + γ·S + 2·S / (η·B);
  NCCL picks whichever is faster, so :func:`collective_seconds` takes the minimum; on NVLink the rings and tree on
  the faster of NCCL's Simple and LL128 protocols (:mod:`archsim.nccl_protocols`: its own α₀, α and share of η)
* point-to-point send (a pipeline hop): α₀ + S / (η·B)
* all-to-all: α₀ + (n − 1)·α + (n − 1)/n · S / (η·B)
* NVLS all-reduce (``nvls``: the NVSwitch reduces): α₀ + 2α + γ·S + (n + 1)/n · S / (η·B)
  (all-reduce only: NCCL's NVLS reduce-scatter sends S and its all-gather receives S, more than the
  ring's (n − 1)/n · S a direction, so they stay on the ring; docs/training.md, "NVLS and sequence
  parallelism")

Each wire term is the algorithm's bytes on the wire (:func:`archsim.collective_wire.wire_bytes`, the one rule link
energy reads too) over η·B.

A group spread over servers (:class:`Spanning`) runs NVLink inside each server and the network between,
channels over every NIC rail of its GPUs (docs/training.md, "Beyond one server").

γ (seconds per byte, whatever n) is the cost the GPUs' own copy-and-reduce kernels add beside the
wire: on an NVSwitch node the large-message all-reduce time of n GPUs is γ·S + 2(n − 1)/n · S/B with
B within a few percent of NVLink's datasheet rate, which a plain α–β ring (bus bandwidth constant
in n) cannot fit — nccl-tests' bus bandwidth rises from 197 GB/s on 2 A100s to 229 GB/s on 8.
η, α, α₀ and γ are calibrated on nccl-tests tables (:mod:`archsim.training.nccl_fit`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from archsim.collective_wire import to_peers, wire_bytes
from archsim.errors import InputError
from archsim.nccl_protocols import Protocol, protocol_links
from archsim.torus import torus_rings, torus_seconds

if TYPE_CHECKING:
    from archsim.network import ServerNetwork


KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "p2p")


@dataclass(frozen=True)
class LinkClass:
    """name; bandwidth: bytes/s per direction per GPU; efficiency η; alpha_s: latency per ring step;
    launch_s: fixed latency α₀ of one collective (seconds); copy_s_per_byte: γ (see the module docstring)."""

    name: str
    bandwidth: float
    efficiency: float
    alpha_s: float
    launch_s: float
    copy_s_per_byte: float = 0.0
    nvls: bool = False  # NVSwitch reduces in the switch (NVLink SHARP, third-generation NVSwitch): all-reduce
    # a group on a torus of point-to-point links (``[[servers]] torus``): the size of each bidirectional ring it runs,
    # in order (:func:`torus_rings`); ``bandwidth`` is then one link's, what a send between two chips gets, and each
    # ring runs over two (empty: switched)
    torus: tuple[int, ...] = ()
    protocols: tuple[Protocol, ...] = ()  # NCCL's LL and LL128 beside Simple (:mod:`archsim.nccl_protocols`; empty: Simple)

    def __post_init__(self) -> None:
        if not (self.bandwidth > 0 and 0 < self.efficiency <= 1 and self.alpha_s >= 0 and self.launch_s >= 0
                and self.copy_s_per_byte >= 0):
            raise InputError(f"bad link class {self}", field="link")

    @property
    def bus_bandwidth(self) -> float:
        """η·B: the large-message bus bandwidth nccl-tests would report (bytes/s)."""
        return self.efficiency * self.bandwidth

    def send_seconds(self, nbytes):
        """One point-to-point send of ``nbytes`` (array or scalar) between two GPUs on this link: its launch
        latency α₀ plus the bytes at η·B (s). The one price of a GPU pair's transfer: train's pipeline hops
        (:func:`collective_seconds` ``"p2p"``) and ``plan --links exact``'s sends
        (:func:`archsim.spp.topology.build_topology`) both read it."""
        return self.launch_s + nbytes / self.bus_bandwidth


@dataclass(frozen=True)
class Uplinks:
    """How many times slower than its share of the NICs a group over servers moves its bytes because its servers sit
    under several leaves of an oversubscribed fabric, per traffic pattern (each ≥ 1; all 1: one leaf, or non-blocking
    uplinks): ``ring`` (a ring's edges: all-reduce, all-gather, reduce-scatter), ``tree`` (NCCL's double binary
    tree's edges), ``every_pair`` (all-to-all) and ``pair`` (a point-to-point hop). Derived in
    :meth:`archsim.network.ServerNetwork.uplinks`."""

    ring: float = 1.0
    tree: float = 1.0
    every_pair: float = 1.0
    pair: float = 1.0

    def __post_init__(self) -> None:
        if not all(f >= 1 for f in (self.ring, self.tree, self.every_pair, self.pair)):
            raise InputError(f"bad uplink slowdown {self}: each factor must be at least 1", field="link")


NO_LEAVES = Uplinks()


@dataclass(frozen=True)
class Spanning:
    """A group spread over servers, ``per_server`` of its GPUs in each: inside a server they talk over
    ``intra``, between servers over ``inter``, whose bandwidth is the whole group's between two
    servers — NCCL runs a collective as channels, each over its own NIC rail, so a group of k GPUs per
    server moves data over the k GPUs' share of all the server's NICs at once, not over one NIC.
    ``inter`` for a point-to-point hop: one GPU's share (every GPU of a stage sends its own slice). ``uplinks``: how
    much slower each traffic pattern runs through the leaves' uplinks (:class:`Uplinks`; ``inter`` is the NICs'
    share before them)."""

    intra: LinkClass
    inter: LinkClass
    per_server: int
    uplinks: Uplinks = NO_LEAVES

    @property
    def name(self) -> str:
        return self.inter.name

    def network(self, pattern: str) -> LinkClass:
        """``inter`` at what ``pattern`` (an :class:`Uplinks` field: ``ring``, ``tree``, ``every_pair``, ``pair``)
        gets of it through the leaves' uplinks (its bandwidth over that factor)."""
        factor = getattr(self.uplinks, pattern)
        return self.inter if factor == 1 else replace(self.inter, bandwidth=self.inter.bandwidth / factor)

    @property
    def bus_bandwidth(self) -> float:
        """The slower of the two: what a ring through both runs at (bytes/s), the uplinks' ring factor included."""
        return min(self.intra.bus_bandwidth, self.network("ring").bus_bandwidth)


@dataclass(frozen=True, eq=False)
class PairLinks:
    """``plan --links exact``'s link classes (:func:`archsim.spp.link_classes.exact_links`): ``classes`` and the
    (V, V) ``index`` of each GPU pair's class (the pair's bandwidth matrix entry is η·B of it), each GPU's
    ``server`` and ``sharing``, the GPUs that share its NIC when all send at once (a shared server link: the
    server's GPUs; one NIC per GPU: 1; a ``[network]`` table: its rail's GPUs), and the ``network`` between the
    servers (its leaves' uplinks slow a group over them as train's; None: drawn ranges, no leaves)."""

    classes: tuple[LinkClass, ...]
    index: np.ndarray
    server: np.ndarray
    sharing: np.ndarray
    domain: np.ndarray | None = None  # (V, V): pairs of two servers in one NVLink domain (None: no such domain)
    network: ServerNetwork | None = None
    # (V, V): the link each pair's send leaves on and the one it arrives on — its GPUs' NICs between servers, each
    # GPU's own link out and in a server (a DGX-1 pair: its own NVLinks); None: each pair its own link
    sends_on: np.ndarray | None = None
    takes_on: np.ndarray | None = None
    tori: tuple[tuple[int, ...], ...] = ()  # each server's torus ([[servers]] torus; empty: none), chips per dimension

    def channel_bandwidth(self, devices: Sequence[int], others: Sequence[int], bandwidth: np.ndarray) -> float:
        """The bandwidth b at which a split channel from ``devices`` to ``others`` moves its bytes d in d / (r′·r·b)
        (bytes/s): each of the r′·r pairs sends d / (r′·r) at once, and the pairs whose sends leave on one link (a
        NIC, a GPU's link in its server) or arrive on one take turns on it, each at its own entry of ``bandwidth``,
        so the busiest link sets the time: d / (r′·r) · max over links of Σ 1 / b_pair. Pairs on links of their own
        give the slowest pair's bandwidth, SPP's; two GPUs behind one NIC sending to two behind another move d in
        d / b, not d / (2·b)."""
        return float(self.channel_bandwidths(tuple(devices)[::-1], others, bandwidth)[-1])

    def channel_bandwidths(self, senders: Sequence[int], others: Sequence[int], bandwidth: np.ndarray) -> np.ndarray:
        """[k]: :meth:`channel_bandwidth` from the first k + 1 of ``senders`` to ``others``, every k at once (PRM's
        tables: each block of senders that ends where ``others`` begins, ``senders`` nearest first), bytes/s."""
        assert self.sends_on is not None and self.takes_on is not None
        block = np.ix_(np.asarray(senders), np.asarray(others))
        seconds = 1.0 / bandwidth[block].astype(float)  # per byte, each pair
        rows = np.repeat(np.arange(seconds.shape[0]), seconds.shape[1])
        busiest = np.zeros(seconds.shape[0])
        for on in (self.sends_on, self.takes_on):
            _, link = np.unique(on[block], return_inverse=True)
            load = np.zeros((seconds.shape[0], int(link.max()) + 1))  # [sender, link]: its pairs' seconds a byte
            np.add.at(load, (rows, link.ravel()), seconds.ravel())
            busiest = np.maximum(busiest, np.cumsum(load, axis=0).max(axis=1))
        return 1.0 / busiest

    def pair_class(self, u: int, v: int, bandwidth: np.ndarray) -> LinkClass:
        """The class of the pair (u, v) at the pair's own bandwidth (its matrix entry over η)."""
        link = self.classes[int(self.index[u, v])]
        return replace(link, bandwidth=float(bandwidth[u, v]) / link.efficiency)

    def allreduce_link(self, devices: Sequence[int], bandwidth: np.ndarray) -> LinkClass | Spanning:
        """The link a group's all-reduce runs on, as train places it (:class:`Spanning`,
        :meth:`archsim.training.cluster.GpuCluster._link`): in one server or one NVLink domain over servers, its
        slowest pair's class (in one server wired as a torus, ``tori``, that class on the torus rings the group
        spans, :func:`torus_rings`, as :func:`archsim.links.torus_link`); over servers, NVLink inside each (its slowest in-server pair's class; where no two of its GPUs share a
        server, its first GPU's server's own class) and between them the group's share of its GPUs' NICs — each GPU
        its NIC's bandwidth toward the group's other servers over the GPUs sharing that NIC, summed per
        server, the least server's sum (its NICs carry every byte of the ring), each step at its slowest
        server's NIC latency. ``per_server``: the group's
        GPUs in its least-held server (train's groups hold as many in each). Under leaves of an oversubscribed
        fabric the NICs' share is taken before the uplinks (a pair's entry across leaves is its NIC over the whole
        oversubscription, a pipeline hop's price) and the uplinks slow each pattern as they slow train's group over
        the same servers in the group's order (:meth:`archsim.network.ServerNetwork.uplinks`)."""
        group = np.asarray(devices)
        where = self.server[group]
        same = where[:, None] == where[None, :]
        sub = bandwidth[np.ix_(group, group)].astype(float)  # a copy
        np.fill_diagonal(sub, np.inf)
        if self.domain is not None:  # a pair of two servers of one NVLink domain is on its NVLink, as in a server
            same = same | self.domain[np.ix_(group, group)]  # (a group over domains: NICs shared per server)
        inside = np.where(same, sub, np.inf)
        u, v = np.unravel_index(np.argmin(inside), inside.shape)
        if np.isfinite(inside[u, v]):
            intra = self.pair_class(int(group[u]), int(group[v]), bandwidth)
            home = int(where[0])
            if same.all() and (where == home).all() and self.tori and self.tori[home]:  # train's torus_link
                first = int(np.flatnonzero(self.server == home)[0])
                return replace(intra, name="torus", torus=torus_rings(self.tori[home], group - first) or (1,))
            if same.all():
                return intra
        else:  # one GPU in each server: its server's own class (its diagonal entry), at that class's bandwidth
            intra = self.classes[int(self.index[group[0], group[0]])]
        # its servers' NICs, each term at the slowest one's (train's group_links.group_link)
        pairs = self.index[np.ix_(group, group)]
        nic = slowest_class(self.classes[i] for i in np.unique(pairs[~same]))
        stated = sub / np.array([c.efficiency for c in self.classes])[pairs]  # each pair's B, its entry over its η
        uplinks = NO_LEAVES
        if self.network is not None:
            net = self.network
            uplinks = net.uplinks(tuple(dict.fromkeys(int(s) for s in where)))  # the ring's servers, in its order
            if uplinks != NO_LEAVES:  # a pair across leaves holds its NIC over o: the NIC's own, before the uplinks
                leaf = np.array([net.leaf(int(s)) for s in where])
                stated = np.where(leaf[:, None] != leaf[None, :], stated * net.oversubscription, stated)
        out = np.where(same, np.inf, stated).min(axis=1) / self.sharing[group]  # each GPU's share
        _, server, held = np.unique(where, return_inverse=True, return_counts=True)
        share = float(np.bincount(server, weights=out).min())
        return Spanning(intra, replace(nic, bandwidth=share), int(held.min()), uplinks)


def slowest_class(classes: Iterable[LinkClass]) -> LinkClass:
    """One link class that is, term by term, the slowest of ``classes``: the least bandwidth and η, the largest step
    latency α, launch α₀ and copy cost γ (the first one's name). What a collective through the NICs of several
    servers waits for, each term bounded by its slowest server's (of equal classes: that class)."""
    group = tuple(classes)
    return replace(group[0], bandwidth=min(c.bandwidth for c in group), efficiency=min(c.efficiency for c in group),
                   alpha_s=max(c.alpha_s for c in group), launch_s=max(c.launch_s for c in group),
                   copy_s_per_byte=max(c.copy_s_per_byte for c in group))


def collective_seconds(kind: str, nbytes, n: int, link: LinkClass | Spanning):
    """Seconds of one collective of ``nbytes`` (array or scalar) over ``n`` GPUs on ``link``; 0 when n = 1
    (except p2p, which always moves its bytes). NCCL's choice by size: the fastest of ring and tree
    (and NVLS where the switch reduces)."""
    if kind not in KINDS:
        raise InputError(f"unknown collective {kind!r}; choose {', '.join(KINDS)}", field="collective")
    s = np.asarray(nbytes, dtype=np.float64)
    if isinstance(link, Spanning):
        return _spanning_seconds(kind, s, n, link)
    if link.torus:
        return torus_seconds(kind, s, n, link)
    bw = link.bus_bandwidth
    if kind == "p2p":
        return link.send_seconds(s)
    if n <= 1:
        return np.zeros_like(s)
    if kind == "all-reduce":  # NCCL's fastest (algorithm, protocol)
        return np.minimum.reduce(list(_allreduce_options(s, n, link).values()))
    if kind == "all-to-all":  # every GPU sends (n − 1)/n of its buffer, one peer at a time
        return link.launch_s + (n - 1) * link.alpha_s + wire_bytes(kind, "pairwise", s, n) / bw
    return np.minimum.reduce([p.launch_s + (n - 1) * p.alpha_s + p.copy_s_per_byte * s / 2
                              + wire_bytes(kind, "ring", s, n) / p.bus_bandwidth for p in protocol_links(link)])


def _allreduce_options(s: np.ndarray, n: int, link: LinkClass) -> dict[str, np.ndarray]:
    """The all-reduce's seconds on one link class by each algorithm NCCL may run it with (n ≥ 2), each on its fastest
    protocol (:func:`archsim.nccl_protocols.protocol_links`): ``ring``, ``tree`` and, where the switch reduces
    (``link.nvls``), ``nvls``; NCCL runs the fastest (:func:`collective_seconds`)."""
    if link.protocols:
        runs = [_allreduce_options(s, n, p) for p in protocol_links(link)]
        return {name: np.minimum.reduce([r[name] for r in runs if name in r]) for name in runs[0]}
    bw = link.bus_bandwidth
    copy = link.copy_s_per_byte * s

    def wire(algorithm: str):
        return wire_bytes("all-reduce", algorithm, s, n) / bw

    options = {"ring": link.launch_s + copy + (wire("ring") + 2 * (n - 1) * link.alpha_s),
               "tree": link.launch_s + 2 * math.ceil(math.log2(n)) * link.alpha_s + copy + wire("tree")}
    if link.nvls:  # the switch reduces: each GPU sends its buffer and its reduced shard, reads both back
        options["nvls"] = link.launch_s + 2 * link.alpha_s + copy + wire("nvls")
    return options


def _spanning_allreduce(s: np.ndarray, n: int, link: Spanning):
    """A :class:`Spanning` all-reduce (n ≥ 2): its seconds, and where NCCL runs it as the tree rather than the ring (a
    boolean array of ``s``'s shape); the terms are :func:`_spanning_seconds`'s."""
    intra, inter, k = link.intra, link.inter, link.per_server
    m = max(1, n // max(k, 1))
    net = link.network("ring").bus_bandwidth
    launch = max(intra.launch_s, inter.launch_s)
    rings, trees = wire_bytes("all-reduce", "ring", s, n), wire_bytes("all-reduce", "tree", s, n)
    nvlink = intra.copy_s_per_byte * s + rings / intra.bus_bandwidth

    def ring(wire: float):
        return launch + 2 * (n - m) * intra.alpha_s + 2 * (m - 1) * inter.alpha_s + np.maximum(nvlink, rings / wire)

    def tree(wire: float):
        return launch + 2 * ((k - 1) * intra.alpha_s + math.ceil(math.log2(m)) * inter.alpha_s) + np.maximum(
            intra.copy_s_per_byte * s + trees / intra.bus_bandwidth, trees / wire)

    if link.uplinks == NO_LEAVES:
        by_ring, by_tree = ring(net), tree(net)
        return np.minimum(by_ring, by_tree), by_tree < by_ring
    # NCCL picks ring or tree by its own model, blind to the switches above the NICs (NVIDIA/nccl#1340,
    # #1545): chosen at the NICs' share, each then run through the leaves' uplinks
    nics = inter.bus_bandwidth
    picked = tree(nics) < ring(nics)
    chosen = np.where(picked, tree(link.network("tree").bus_bandwidth), ring(net))
    return chosen[()], picked  # a scalar's as np.minimum gives it


def collective_algorithm(kind: str, nbytes: float, n: int, link: LinkClass | Spanning) -> str:
    """The algorithm :func:`collective_seconds` prices one ``kind`` collective of ``nbytes`` over ``n`` GPUs on ``link``
    with, NCCL's choice by size: an all-reduce's ``ring``, ``tree`` or ``nvls`` (the fastest; on a tie the ring),
    ``ring`` for an all-gather or a reduce-scatter, ``pairwise`` for an all-to-all (each GPU sends each peer its
    part), ``p2p`` for a send; ``torus-ring`` for any other on a torus link (:func:`archsim.torus.torus_seconds`'s rings);
    ``none`` where n = 1 leaves nothing to do."""
    if kind not in KINDS:
        raise InputError(f"unknown collective {kind!r}; choose {', '.join(KINDS)}", field="collective")
    if kind == "p2p":
        return "p2p"
    if n <= 1:
        return "none"
    if isinstance(link, LinkClass) and link.torus:  # torus_seconds: rings of the torus's dimensions, whatever the kind
        return "torus-ring"
    if kind == "all-to-all":
        return "pairwise"
    if kind != "all-reduce":
        return "ring"
    s = np.asarray(nbytes, dtype=np.float64)
    if isinstance(link, Spanning):
        return "tree" if bool(_spanning_allreduce(s, n, link)[1]) else "ring"
    options = _allreduce_options(s, n, link)
    return min(options, key=lambda name: float(options[name]))  # the first of the fastest: ring on a tie


def _spanning_seconds(kind: str, s: np.ndarray, n: int, link: Spanning):
    """A collective over servers (:class:`Spanning`), NCCL's way (its tuning model, src/graph/tuning.cc):
    a ring's 2(n − 1) steps (n − 1 for all-gather and reduce-scatter) of which 2(m − 1) cross servers
    (m − 1), each step paying its link's latency; a tree that is a chain inside each server and a
    double binary tree over the m servers, 2((k − 1)·α_intra + ⌈log₂ m⌉·α_inter). The bytes stream
    through both kinds of link at once, so the slower bounds the time: the GPUs' own ring (or tree) at
    the in-server link's fitted rate and copy cost, over all n ranks, or the network at the group's
    share of every NIC rail. The in-server term takes every byte a GPU's ring steps move, not the
    (k − 1)/k of them whose next hop is NVLink: η·B and γ were fitted on whole rings of one server,
    where they cannot tell NVLink's wire from the copy-and-reduce kernel every step runs whichever link
    it sends on, and NCCL's own model (tuning.cc) gives a ring over servers one channel speed for all
    its edges and its 2(n − 1)/n over all n ranks. So a group over servers is never faster than the
    same ring in one server (until 2026-12-04 a DP 16 all-reduce over two H100 servers was 4.5%
    faster than DP 8 in one, for the same bytes per GPU). Under leaves of an oversubscribed fabric each
    pattern's network term runs at ``link.network(pattern)`` (:class:`Uplinks`)."""
    intra, inter, k = link.intra, link.inter, link.per_server
    m = max(1, n // max(k, 1))
    net = link.network("ring").bus_bandwidth  # each pattern through the leaves' uplinks (ServerNetwork.uplinks)
    if kind == "p2p":
        return link.network("pair").send_seconds(s)
    if n <= 1:
        return np.zeros_like(s)
    launch = max(intra.launch_s, inter.launch_s)
    if kind == "all-to-all":  # (k − 1)/n of each GPU's buffer inside the server, (n − k)/n through its own
        # share of the NICs: point-to-point sends do not spread over other GPUs' rails
        wire = np.maximum(to_peers(s, n, k - 1) / intra.bus_bandwidth,
                          to_peers(s, n, n - k) / (link.network("every_pair").bus_bandwidth / k))
        return launch + (k - 1) * intra.alpha_s + (m - 1) * inter.alpha_s + wire
    if kind == "all-reduce":
        return _spanning_allreduce(s, n, link)[0]
    sent = wire_bytes(kind, "ring", s, n)
    nvlink = intra.copy_s_per_byte * s / 2 + sent / intra.bus_bandwidth
    return launch + (n - m) * intra.alpha_s + (m - 1) * inter.alpha_s + np.maximum(nvlink, sent / net)


__all__ = ["KINDS", "NO_LEAVES", "LinkClass", "PairLinks", "Spanning", "Uplinks",
           "collective_algorithm", "collective_seconds", "slowest_class"]
