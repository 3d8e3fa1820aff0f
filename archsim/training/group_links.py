"""Which link each of a pipeline rank's groups runs on, on a :class:`~archsim.training.cluster.GpuCluster`:
its TP and DP groups, each pipeline hop and the tied embedding's pair, placed on the cluster's servers (NVLink
inside a server or an NVLink domain, NVLink and the network for a group over servers,
:class:`~archsim.collectives.Spanning`) and priced by :mod:`archsim.links`. Bandwidths in bytes/s, latencies
in seconds. The cluster record and its layout queries (which server holds a GPU, whether a layout can run) are
:mod:`archsim.training.cluster`'s; :meth:`GpuCluster.machine <archsim.training.cluster.GpuCluster.machine>`
is :func:`rank_machine`.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import replace
from typing import Protocol

from archsim import links
from archsim.collectives import NO_LEAVES, Spanning, slowest_class
from archsim.devices.device import Device
from archsim.network import ServerNetwork
from archsim.training import fitted
from archsim.training.context_parallel_hierarchy import cp_subgroups
from archsim.training.machine import Links, Machine
from archsim.training.parallel import Parallelism


class Layout(Protocol):
    """What placing links reads of a cluster: :class:`~archsim.training.cluster.GpuCluster`, typed here by its
    members since that module imports this one."""

    @property
    def gpu(self) -> Device: ...
    @property
    def gpus_per_server(self) -> int: ...
    @property
    def inter_server_bytes_per_s(self) -> float: ...
    @property
    def servers(self) -> tuple[Device, ...]: ...
    @property
    def network(self) -> ServerNetwork | None: ...
    @property
    def dtype(self) -> str: ...
    @property
    def comm_sms(self) -> int | None: ...
    @property
    def heterogeneous(self) -> bool: ...
    @property
    def starts(self) -> tuple[int, ...]: ...
    def server_of(self, index: int) -> int: ...
    def file_server(self, server: int) -> int: ...
    def fabric(self, server: int) -> float | None: ...
    def torus(self, server: int) -> tuple[int, ...]: ...
    def check_gpus(self, par: Parallelism) -> None: ...
    def one_domain(self, first: int, last: int, step: int = 1) -> bool: ...
    def capacity(self, device: Device) -> float: ...
    def wired(self, device: Device, server: int) -> bool: ...


def group_link(cluster: Layout, device: Device, members: range, hop: bool = False):
    """A group's link: its server's NVLink when all ``members`` (GPU indices) sit in one server (or one
    NVLink domain of several servers), else NVLink inside each server and the network between
    (:class:`~archsim.collectives.Spanning`: the group's share of every NIC rail; one GPU's for a
    pipeline ``hop``, where every GPU of the stage sends its own slice at once). On a mixed cluster
    each server's own GPU and in-server link price its part, not the asking rank's ``device``: a
    pipeline hop or the pipeline's ``pp`` link may sit in another rank's servers (a V100 server's hop is
    its DGX-1 rings, not an A100's NVSwitch), and a group over servers runs at its slowest server's
    NVLink."""
    server = cluster.server_of(members[0])
    net = cluster.network
    if cluster.heterogeneous:
        device = cluster.servers[server]
    if server == cluster.server_of(members[-1]):
        first = cluster.starts[server]
        if cluster.torus(server):  # chips on a torus of point-to-point links: the rings the group spans
            return links.torus_link(device, cluster.torus(server), tuple(i - first for i in members),
                                    cluster.fabric(server))
        link = links.nvlink_group(device, tuple(i - first for i in members), cluster.fabric(server))
        return replace(link, nvls=True) if links.switch_reduces(device, net is not None and net.nvls) else link
    if net is not None and cluster.one_domain(members[0], members[-1], members.step):
        return links.server_link(device, (0,), cluster.fabric(server), net.nvls)
    local = tuple(i - cluster.starts[server] for i in members if cluster.server_of(i) == server)
    if net is None:
        per_gpu = cluster.inter_server_bytes_per_s
        bandwidth = per_gpu if hop else per_gpu * len(local)
        uplinks = NO_LEAVES  # no [network]: no leaves
    else:
        bandwidth = net.group_bytes_per_s(1 if hop else len(local), cluster.gpus_per_server,
                                          local[:1] if hop else local)  # a hop: one GPU's share
        uplinks = group_uplinks(cluster, members, hop)
    # on a mixed cluster every spanned server's own GPUs and fabric: the slowest bounds the ring
    # (of equal bandwidths the one of longer steps); a step through the NICs waits for the slowest device's
    spanned = sorted({cluster.server_of(i) for i in members}) if cluster.heterogeneous else (server,)
    devices = [cluster.servers[s] if cluster.heterogeneous else device for s in spanned]
    intra = min((intra_server_link(cluster, d, tuple(i - cluster.starts[s] for i in members if cluster.server_of(i) == s), s)
                 for d, s in zip(devices, spanned, strict=True)),
                key=lambda link: (link.bus_bandwidth, -link.alpha_s))
    inter = slowest_class(links.device_nic(d, bandwidth) for d in devices)
    return Spanning(intra, inter, len(local), uplinks)


def file_servers(cluster: Layout, members: range) -> tuple[int, ...]:
    """The servers a group's GPUs sit in, as the cluster file numbers them (they set the leaves,
    :meth:`~archsim.network.ServerNetwork.leaf`), in its ranks' order (its ring's), once each."""
    return tuple(dict.fromkeys(cluster.file_server(cluster.server_of(i)) for i in members))


def group_uplinks(cluster: Layout, members: range, hop: bool = False):
    """How much slower a group over servers runs through the leaves' uplinks, per traffic pattern
    (:meth:`~archsim.network.ServerNetwork.uplinks` over :func:`file_servers`; all 1 without a ``[network]``)."""
    net = cluster.network
    return NO_LEAVES if net is None else net.uplinks(file_servers(cluster, members), hop)


def intra_server_link(cluster: Layout, device: Device, local: tuple[int, ...], server: int):
    """The NVLink part of a group over servers: its ``local`` GPUs (indices within ``server``) on
    ``device`` at the server's fabric (:func:`archsim.links.server_link`, as plan's pairs)."""
    return links.server_link(device, local, cluster.fabric(server))


def rank_machine(cluster: Layout, par: Parallelism, device: Device | None = None, rank: int = 0) -> Machine:
    """The machine of pipeline rank ``rank`` on ``device`` (default the cluster's first GPU type):
    its own TP and DP groups' links (the slowest of each kind, :func:`_slowest_link`), the pipeline's
    link over its ranks' first GPUs (its slowest hop's where that is slower) and, when the pipeline
    spans servers or sits in a DGX-1 of V100s, each hop's link (:func:`pipeline_hops`), and the tied embedding's link between the
    first and last rank (:func:`_pair_link`); every link on its own servers' GPUs on a mixed cluster
    (:func:`group_link`)."""
    cluster.check_gpus(par)
    device = cluster.gpu if device is None else device
    group = par.tp * par.replicas  # Megatron's order tp-cp-dp-pp: a DP group holds GPU t of each TP × CP block
    start = rank * group
    kernels = device.efficiency or fitted.kernels(device.name)
    tp_groups = (range(first, first + par.tp) for first in range(start, start + group, par.tp))
    # a DP group holds GPU t of each TP group; its servers change with t only where TP spans servers,
    # but inside a server wired without an NVSwitch its GPUs (so its NVLinks) change with every t
    wired = _wired_within(cluster, device, start, start + group - 1)
    step = 1 if wired else min(cluster.gpus_per_server, par.tp)
    dp_groups = (range(start + t, start + group, par.tp) for t in range(0, par.tp, step))  # over DP × CP ranks
    cp_groups = [range(first + t, first + par.tp * par.cp, par.tp) for first in range(start, start + group,
                                                                                     par.tp * par.cp)
                 for t in range(0, par.tp, step)]
    ring_groups = cp_groups  # the ring's hops and the all-to-all's groups: the CP groups, or a2a+p2p's two levels
    if par.cp_exchange == "a2a+p2p" and par.cp_hierarchy is not None:
        levels = [cp_subgroups(g, par.cp_hierarchy) for g in cp_groups]
        cp_groups = [inner for split in levels for inner in split[0]]
        ring_groups = [ring for split in levels for ring in split[1]]
    # Megatron-Core's expert ranks, order tp-ep-dp-pp over the TP·CP·DP GPUs (parallel_state's expert rank generator,
    # its tp ETP, cp 1): an EP group holds GPU t of EP consecutive ETP groups (at ETP = TP, of the CP ranks first),
    # an expert-DP group GPU t of every EP-th one
    etp, estep = par.expert_tp, 1 if wired else min(cluster.gpus_per_server, par.expert_tp)
    ep_groups = (range(first + t, first + etp * par.ep, etp) for first in range(start, start + group, etp * par.ep)
                 for t in range(0, etp, estep))
    edp_groups = (range(start + t, start + group, etp * par.ep) for t in range(0, etp * par.ep, estep))
    etp_groups = (range(first, first + etp) for first in range(start, start + group, etp))
    hops = pipeline_hops(cluster, par, device)
    # the pipeline's link over its ranks' first GPUs, or its slowest hop where that is slower: the
    # first GPUs may share a server while another pair of a hop crosses (:func:`pipeline_hops`)
    pp = min((group_link(cluster, device, range(0, par.gpus, group), hop=True), *hops),
             key=lambda link: link.bus_bandwidth)
    return Machine(device, kernels,
                   Links(tp=_slowest_link(cluster, device, tp_groups, every=wired and par.tp > 1),
                         dp=_slowest_link(cluster, device, dp_groups, every=wired and par.replicas > 1),
                         pp=pp, pp_hops=hops,
                         embedding=_pair_link(cluster, device, 0, (par.pp - 1) * group, group) if par.pp > 1
                         else None,
                         cp=_slowest_link(cluster, device, iter(cp_groups), every=wired) if par.cp > 1 else None,
                         cp_hop=_slowest_link(cluster, device, iter(ring_groups), hop=True, every=wired)
                         if par.cp > 1 else None,
                         ep=_slowest_link(cluster, device, ep_groups, every=wired, pattern="every_pair")
                         if par.ep > 1 else None,
                         expert_dp=_slowest_link(cluster, device, edp_groups, every=wired)
                         if par.experts_apart and par.expert_replicas > 1 else None,
                         etp=_slowest_link(cluster, device, etp_groups, every=wired)
                         if etp != par.tp and etp > 1 else None),
                   dtype=cluster.dtype, memory_bytes=_stated(cluster.capacity(device), device),
                   comm_sms=cluster.comm_sms)


def _stated(capacity: float, device: Device) -> float:
    """A machine's ``memory_bytes``: the cluster's usable memory where it is below the device's, else 0 (the whole)."""
    return capacity if capacity < device.memory_bytes else 0.0


def leaves_oversubscribed(cluster: Layout) -> bool:
    """Whether groups of one kind can differ in their network share: servers under several leaves of an
    oversubscribed fabric, on a cluster of one server kind (a mixed one prices each rank on its own); then
    train and search price each pipeline rank on its own machine (:meth:`.cluster.GpuCluster.rank_wise`)."""
    net = cluster.network
    return net is not None and net.oversubscription != 1 and bool(net.servers_per_leaf) and not cluster.heterogeneous


def _slowest_link(cluster: Layout, device: Device, groups: Iterator[range], hop: bool = False, every: bool = False,
                  pattern: str = "ring"):
    """The link of a rank's slowest group of one kind (:func:`_slowest`): on a mixed cluster every group
    priced on its own servers (:func:`group_link`) and the one of least bus bandwidth taken, since servers of
    one GPU type may state different in-server links (a rank's TP group on a 2400 Gbit/s server waits
    longer than its twin on a 4800 one); on a uniform one, the group slowest for ``pattern`` (the uplinks'
    traffic pattern of its collective, :func:`_slowest`), unless
    ``every`` (groups inside servers wired without an NVSwitch, :func:`_wired_within`: a rank's TP groups,
    its DP groups or a hop's pairs there differ in their NVLinks) has every group priced — each place in
    a server once (:func:`_distinct`) — and the slowest taken as well."""
    if cluster.heterogeneous or every:
        return min((group_link(cluster, device, members, hop) for members in _distinct(cluster, groups)),
                   key=lambda link: link.bus_bandwidth)
    return group_link(cluster, device, _slowest(cluster, groups, hop, pattern), hop)


def _distinct(cluster: Layout, groups: Iterator[range]) -> Iterator[range]:
    """``groups`` less those inside one server that hold the same places in their server as an earlier
    one: on a uniform cluster such a group's link is the same (its server's GPUs and fabric are every
    server's), so a DGX-1 cluster's 512 TP pairs are priced as its 4 distinct ones. Every group on a
    mixed cluster, every group over servers (its network share may differ)."""
    seen: set[tuple[int, int, int]] = set()
    for members in groups:
        server = cluster.server_of(members[0])
        if not cluster.heterogeneous and server == cluster.server_of(members[-1]):
            place = (members[0] - cluster.starts[server], len(members), members.step)
            if place in seen:
                continue
            seen.add(place)
        yield members


def _slowest(cluster: Layout, groups: Iterator[range], hop: bool = False, pattern: str = "ring") -> range:
    """Of a rank's groups of one kind (its TP groups, its DP groups, a hop's GPU pairs), which run at once
    and which the iteration waits for together, the first of the slowest kind: one that crosses servers
    over the network before one on NVLink (TP 2 · DP 3 on 8-GPU servers: rank 1 holds GPUs 6…11, so GPU
    0's hop to GPU 6 stays in server 0 while GPU 2's to GPU 8 crosses), and of those the one slowed most by
    the uplinks of an oversubscribed fabric for its collective's ``pattern`` (an :class:`~archsim.collectives.Uplinks`
    field; ``pair`` for a ``hop``), by :func:`group_uplinks` as :func:`group_link` prices it: each group's
    factor max(1, o·f) depends on how its servers sit under leaves (TP 16 · DP 4 on 8 servers, 4 a leaf, placed
    so that one DP group holds two servers a leaf and another alternates leaves: the second's ring is twice as
    slow); of equal factors, one across leaves, then the first."""
    net = cluster.network
    leaves = leaves_oversubscribed(cluster)
    top = max(1.0, net.oversubscription) if leaves and net is not None else 1.0
    worst = (True, top, leaves)  # the slowest kind there is: stop at the first of it
    pattern = "pair" if hop else pattern
    first = next(groups)
    slowest, kind = first, _crossing(cluster, first, hop, pattern)
    for members in groups:
        if kind == worst:
            break
        crossing = _crossing(cluster, members, hop, pattern)
        if crossing > kind:
            slowest, kind = members, crossing
    return slowest


def _crossing(cluster: Layout, members: range, hop: bool, pattern: str) -> tuple[bool, float, bool]:
    """Whether a group's GPUs cross servers over the network, its uplinks' factor for ``pattern``
    (:func:`group_uplinks`) and whether they sit under different leaves of an oversubscribed fabric
    (:func:`crosses_leaves`): :func:`_slowest`'s order, False before True, the smaller factor first."""
    over = _over_network(cluster, members)
    leaves = over and crosses_leaves(cluster, members)
    return over, getattr(group_uplinks(cluster, members, hop), pattern) if leaves else 1.0, leaves


def _over_network(cluster: Layout, members: range) -> bool:
    """Whether a group's GPUs talk over the network: in several servers, not one NVLink domain."""
    return cluster.server_of(members[0]) != cluster.server_of(members[-1]) and \
        not cluster.one_domain(members[0], members[-1], members.step)


def crosses_leaves(cluster: Layout, members: range) -> bool:
    """Whether a group's traffic crosses the uplinks of an oversubscribed fabric: over the network
    (:func:`_over_network`) between servers under different leaves (:meth:`~archsim.network.ServerNetwork.leaf`, the
    one rule, of the file's servers). Train's rule for a rank's groups and ``archsim.collective``'s
    ``crosses_leaves``."""
    net = cluster.network
    return net is not None and _over_network(cluster, members) and \
        len({net.leaf(s) for s in file_servers(cluster, members)}) > 1


def pipeline_hops(cluster: Layout, par: Parallelism, device: Device) -> tuple:
    """Each pipeline hop's link, rank r to rank r + 1 (the last rank's to rank 0): NVLink when every
    pair of the two ranks' GPUs (GPU g of one, GPU g of the other) shares a server, the network (one
    GPU's share) when one pair does not (:func:`_pair_link`); inside a server wired without an NVSwitch
    (a DGX-1 of V100s, :meth:`GpuCluster.wired <archsim.training.cluster.GpuCluster.wired>`) each pair's own NVLinks, or PCIe where it has none, the slowest
    pair's setting the hop. Empty when the whole pipeline sits in one NVSwitch server (every hop is
    then the one NVLink ``pp``). A pipeline over servers always has a pair that crosses, even where
    the ranks' first GPUs share a server (TP 2 · DP 3 · PP 2 on 8-GPU servers: GPUs 0 and 6 share
    server 0, GPUs 2 and 8 do not)."""
    group = par.tp * par.replicas
    firsts = [r * group for r in range(par.pp)]
    if par.pp == 1 or (cluster.server_of(0) == cluster.server_of(par.gpus - 1) and not cluster.wired(device, 0)):
        return ()
    return tuple(_pair_link(cluster, device, firsts[r], firsts[(r + 1) % par.pp], group) for r in range(par.pp))


def _pair_link(cluster: Layout, device: Device, a: int, b: int, group: int):
    """The link between two pipeline ranks whose ``group`` (TP × DP) GPUs start at ``a`` and ``b``: GPU
    g of one talks to GPU g of the other, every g at once, so each pair gets one GPU's share of the
    NICs (``hop``) and the slowest pair sets the time (:func:`_slowest_link` over :func:`_hop_shifts`).
    A pipeline hop's, and the tied embedding's all-reduce between the first and last rank (Megatron's
    embedding group: the two GPUs of one TP/DP position)."""
    a, b = sorted((a, b))
    wired = _wired_shifts(cluster, device, a, b, group)
    shifts = sorted({*_hop_shifts(cluster, a, b, group), *wired})
    return _slowest_link(cluster, device, (range(a + g, b + g + 1, b - a) for g in shifts), hop=True,
                              every=bool(wired))


def _wired_within(cluster: Layout, device: Device, first: int, last: int) -> bool:
    """Whether any server holding GPUs ``first`` … ``last`` is wired without an NVSwitch (:meth:`GpuCluster.wired <archsim.training.cluster.GpuCluster.wired>`):
    its groups of one kind then differ in their NVLinks, so each is priced (every server alike on a
    uniform cluster)."""
    if not cluster.heterogeneous:
        return cluster.wired(device, 0)
    return any(cluster.wired(device, s) for s in range(cluster.server_of(first), cluster.server_of(last) + 1))


def _wired_shifts(cluster: Layout, device: Device, a: int, b: int, group: int) -> list[int]:
    """The GPU offsets g at which a hop's pair (a + g, b + g) sits in one server wired without an
    NVSwitch (:meth:`GpuCluster.wired <archsim.training.cluster.GpuCluster.wired>`), one per distinct pair of that server's GPUs: each such pair's own
    NVLinks price it (GPU 0–4 share two on a DGX-1, 2–6 one, 2–4 none), not the first pair's."""
    if not _wired_within(cluster, device, a, b + group - 1):
        return []
    seen: dict[tuple[int, int], int] = {}
    for g in range(group):
        server = cluster.server_of(a + g)
        if server == cluster.server_of(b + g) and cluster.wired(device, server):
            seen.setdefault((server if cluster.heterogeneous else 0, a + g - cluster.starts[server]), g)
    return list(seen.values())


def _hop_shifts(cluster: Layout, a: int, b: int, group: int) -> list[int]:
    """The GPU offsets g at which a hop's pair (a + g, b + g) may change servers — 0 and where either GPU
    starts a server — for :func:`_slowest` to find the pair crossing servers or leaves (GPU g of one rank
    sends to GPU g of the other, all g at once)."""
    starts = cluster.starts
    shifts = {0}
    for first in (a, b):
        shifts.update(s - first for s in starts[bisect_right(starts, first):bisect_right(starts, first + group - 1)])
    return sorted(shifts)
