"""A GPU cluster for training: the servers of a cluster TOML as
:mod:`archsim.training.cluster_file` reads them (each server's
:class:`~archsim.devices.device.Device`, its in-server link, the network between servers), and how a
parallel configuration's groups are placed on them and what their links cost.

Groups are placed Megatron's way: TP innermost (consecutive GPUs), then DP, then PP. A group whose
GPUs all sit in one server talks over that server's NVLink at the file's ``intra_server_gbps`` (per
GPU, both directions: 4800 is an A100's 300 GB/s per direction, the catalog's figure; through
NVSwitches; on a DGX-1 of V100s, the NVLink rings its GPUs can form — calibrated on
nccl-tests, :func:`archsim.links.nvlink_group`); a group that spans servers over the inter-server network at
``inter_server_gbps`` per GPU (``inter_server_link = "per_gpu_pair"``: each GPU its own NIC) or that
bandwidth shared by the server's GPUs (``"shared"``).

Heterogeneous clusters: ``[[servers]]`` tables may name different GPUs and hold different GPU
counts. GPUs are numbered in the file's order (or in a server order of
:mod:`archsim.training.placement`, :meth:`GpuCluster.reordered`), and a pipeline rank runs on GPUs
r·TP·DP … (r + 1)·TP·DP − 1 (Megatron's order). A TP group may span whole servers (its all-reduces
then cross the network, :meth:`GpuCluster.tp_servers`). :meth:`GpuCluster.problem` says why a
configuration cannot be laid out — a TP group holding part of a server and part of another
(``tp-straddles-servers``) or one rank's GPUs of two types (``stage-mixes-gpu-types``: archsim does not run a stage at its slowest GPU, it refuses it) —
and :meth:`GpuCluster.rank_machines` gives each rank its GPU, kernels and links (its own TP and DP
groups' links). A server may override the objectives' figures with ``price_per_gpu_hour`` (USD) and
``gpu_watts`` (:mod:`archsim.training.rates`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import cached_property
from itertools import accumulate

from archsim import links
from archsim.collectives import Spanning
from archsim.devices.device import Device
from archsim.errors import InputError
from archsim.network import Network
from archsim.training import fitted
from archsim.training.machine import Links, Machine
from archsim.training.parallel import Parallelism, tp_straddles


@dataclass(frozen=True)
class GpuCluster:
    gpus: int  # GPUs in all (links are priced by class, below, not by a planner's bandwidth matrix)
    gpu: Device  # the first server's device
    gpus_per_server: int  # the largest server's GPUs (every server's on a uniform cluster)
    inter_server_bytes_per_s: float
    servers: tuple[Device, ...] = ()  # each server's device, in the file's order (empty: all ``gpu``)
    prices: tuple[float | None, ...] = ()  # each server's USD per GPU-hour override (None: the default table)
    watts: tuple[float | None, ...] = ()  # each server's watts per GPU override
    sizes: tuple[int, ...] = ()  # each server's GPU count (empty: all ``gpus_per_server``)
    network: Network | None = None  # the network as built (None: ``inter_server_bytes_per_s`` per GPU, no rails)
    dtype: str = "fp16"  # what every machine trains in (:class:`~archsim.training.machine.Machine`)
    fabrics: tuple[float, ...] = ()  # each server's in-server link, bytes/s per GPU per direction (empty: its device's)
    unread: tuple[str, ...] = ()  # what the file states that train and search do not read, one line each (stderr)
    warnings: tuple[str, ...] = ()  # what the file states that is implausible (a link's unit slipped), one line each

    @cached_property
    def heterogeneous(self) -> bool:
        """Servers of several GPU types, GPU counts or in-server links: each rank is then laid out and costed
        on its own."""
        return len({device.name for device in self.servers}) > 1 or len(set(self.sizes)) > 1 or \
            len(set(self.fabrics)) > 1

    @cached_property
    def gpu_names(self) -> str:
        """Every GPU type of the cluster, sorted and joined (what a result over the whole cluster names)."""
        return ", ".join(sorted({device.name for device in self.servers} or {self.gpu.name}))

    @cached_property
    def starts(self) -> tuple[int, ...]:
        """Each server's first GPU index, then the GPU count."""
        sizes = self.sizes or (self.gpus_per_server,) * max(len(self.servers), 1)
        return tuple(accumulate(sizes, initial=0))

    def server_of(self, index: int) -> int:
        return bisect_right(self.starts, index) - 1

    def gpu_at(self, index: int) -> Device:
        return self.servers[self.server_of(index)] if self.servers else self.gpu

    def reordered(self, order: tuple[int, ...]) -> GpuCluster:
        """The cluster with its servers in ``order`` (indices of the file's servers, ``count`` expanded),
        its GPUs numbered anew in that order."""
        def pick(values: tuple) -> tuple:
            return tuple(values[i] for i in order) if values else values

        servers = pick(self.servers)
        return replace(self, gpu=servers[0] if servers else self.gpu, servers=servers, prices=pick(self.prices),
                       watts=pick(self.watts), sizes=pick(self.sizes), fabrics=pick(self.fabrics))

    def fabric(self, server: int) -> float | None:
        """Server ``server``'s in-server link as its cluster file states it (``intra_server_gbps``), bytes/s
        per GPU per direction; None: its device's own NVLink figure."""
        return self.fabrics[server] if self.fabrics else None

    def _check_gpus(self, par: Parallelism) -> None:
        if par.gpus > self.gpus:
            raise InputError(f"TP × PP × DP = {par.gpus} GPUs, the cluster has {self.gpus}", field="gpus")

    def _link(self, device: Device, members: range, hop: bool = False):
        """A group's link: its server's NVLink when all ``members`` (GPU indices) sit in one server (or one
        NVLink domain of several servers), else NVLink inside each server and the network between
        (:class:`~archsim.collectives.Spanning`: the group's share of every NIC rail; one GPU's for a
        pipeline ``hop``, where every GPU of the stage sends its own slice at once). On a mixed cluster
        each server's own GPU and in-server link price its part, not the asking rank's ``device``: a
        pipeline hop or the pipeline's ``pp`` link may sit in another rank's servers (a V100 server's hop is
        its DGX-1 rings, not an A100's NVSwitch), and a group over servers runs at its slowest server's
        NVLink."""
        server = self.server_of(members[0])
        net = self.network
        if self.heterogeneous:
            device = self.servers[server]
        if server == self.server_of(members[-1]):
            first = self.starts[server]
            link = links.nvlink_group(device, tuple(i - first for i in members), self.fabric(server))
            return replace(link, nvls=True) if net is not None and net.nvls and device.nvswitch else link
        if net is not None and self._one_domain(members[0], members[-1]):
            fabric = self.fabric(server)
            link = links.nvlink(device.nvlink_bytes_per_s if fabric is None else fabric, device.intra_latency_s)
            return replace(link, nvls=net.nvls)
        local = tuple(i - self.starts[server] for i in members if self.server_of(i) == server)
        if net is None:
            per_gpu = self.inter_server_bytes_per_s
            bandwidth = per_gpu if hop else per_gpu * len(local)
        else:
            servers = tuple(sorted({self.server_of(i) for i in members}))  # a hop: one GPU's share
            bandwidth = net.group_bytes_per_s(1 if hop else len(local), self.gpus_per_server, servers,
                                              local[:1] if hop else local)
        # on a mixed cluster every spanned server's own GPUs and fabric: the slowest bounds the ring
        # (of equal bandwidths the one of longer steps); a step through the NICs waits for the slowest device's
        spanned = sorted({self.server_of(i) for i in members}) if self.heterogeneous else (server,)
        devices = [self.servers[s] if self.heterogeneous else device for s in spanned]
        intra = min((self._intra(d, tuple(i - self.starts[s] for i in members if self.server_of(i) == s), s)
                     for d, s in zip(devices, spanned, strict=True)),
                    key=lambda link: (link.bus_bandwidth, -link.alpha_s))
        inter = max((links.infiniband(bandwidth, d.inter_node_latency_s) for d in devices),
                    key=lambda link: link.alpha_s)
        return Spanning(intra, inter, len(local))

    def _intra(self, device: Device, local: tuple[int, ...], server: int):
        """The NVLink part of a group over servers: its ``local`` GPUs (indices within ``server``) on
        ``device`` at the server's fabric."""
        fabric = self.fabric(server)
        return links.nvlink_group(device, local, fabric) if len(local) > 1 else \
            links.nvlink(device.nvlink_bytes_per_s if fabric is None else fabric, device.intra_latency_s)

    def machine(self, par: Parallelism, device: Device | None = None, rank: int = 0) -> Machine:
        """The machine of pipeline rank ``rank`` on ``device`` (default the cluster's first GPU type):
        its own TP and DP groups' links (the slowest of each kind, :meth:`_slowest_link`), the pipeline's
        link over its ranks' first GPUs (its slowest hop's where that is slower) and, when the pipeline
        spans servers or sits in a DGX-1 of V100s, each hop's link (:meth:`pipeline_hops`), and the tied embedding's link between the
        first and last rank (:meth:`_pair_link`); every link on its own servers' GPUs on a mixed cluster
        (:meth:`_link`)."""
        self._check_gpus(par)
        device = self.gpu if device is None else device
        group = par.tp * par.dp
        start = rank * group
        kernels = device.efficiency or fitted.kernels(device.name)
        tp_groups = (range(first, first + par.tp) for first in range(start, start + par.tp * par.dp, par.tp))
        # a DP group holds GPU t of each TP group; its servers change with t only where TP spans servers,
        # but inside a server wired without an NVSwitch its GPUs (so its NVLinks) change with every t
        wired = self._wired_within(device, start, start + group - 1)
        step = 1 if wired else min(self.gpus_per_server, par.tp)
        dp_groups = (range(start + t, start + par.tp * par.dp, par.tp) for t in range(0, par.tp, step))
        hops = self.pipeline_hops(par, device)
        # the pipeline's link over its ranks' first GPUs, or its slowest hop where that is slower: the
        # first GPUs may share a server while another pair of a hop crosses (:meth:`pipeline_hops`)
        pp = min((self._link(device, range(0, par.gpus, group), hop=True), *hops),
                 key=lambda link: link.bus_bandwidth)
        return Machine(device, kernels,
                       Links(tp=self._slowest_link(device, tp_groups, every=wired and par.tp > 1),
                             dp=self._slowest_link(device, dp_groups, every=wired and par.dp > 1),
                             pp=pp, pp_hops=hops,
                             embedding=self._pair_link(device, 0, (par.pp - 1) * group, group) if par.pp > 1
                             else None),
                       dtype=self.dtype)

    def _one_domain(self, first: int, last: int) -> bool:
        """Whether GPUs ``first`` … ``last`` of several servers sit in one NVLink domain (``nvlink_domain``):
        their group runs on NVLink, not over the network."""
        net = self.network
        return net is not None and net.nvlink_domain > self.gpus_per_server and not self.heterogeneous and \
            first // net.nvlink_domain == last // net.nvlink_domain

    @property
    def _leaves_oversubscribed(self) -> bool:
        """Whether groups of one kind can differ in their network share: servers under several leaves of an
        oversubscribed fabric, on a cluster of one server kind (a mixed one prices each rank on its own)."""
        net = self.network
        return net is not None and net.oversubscription != 1 and bool(net.servers_per_leaf) and not self.heterogeneous

    def _slowest_link(self, device: Device, groups: Iterator[range], hop: bool = False, every: bool = False):
        """The link of a rank's slowest group of one kind (:meth:`_slowest`): on a mixed cluster every group
        priced on its own servers (:meth:`_link`) and the one of least bus bandwidth taken, since servers of
        one GPU type may state different in-server links (a rank's TP group on a 2400 Gbit/s server waits
        longer than its twin on a 4800 one); on a uniform one, the slowest kind's first group, unless
        ``every`` (groups inside servers wired without an NVSwitch, :meth:`_wired_within`: a rank's TP groups,
        its DP groups or a hop's pairs there differ in their NVLinks) has every group priced — each place in
        a server once (:meth:`_distinct`) — and the slowest taken as well."""
        if self.heterogeneous or every:
            return min((self._link(device, members, hop) for members in self._distinct(groups)),
                       key=lambda link: link.bus_bandwidth)
        return self._link(device, self._slowest(groups), hop)

    def _distinct(self, groups: Iterator[range]) -> Iterator[range]:
        """``groups`` less those inside one server that hold the same places in their server as an earlier
        one: on a uniform cluster such a group's link is the same (its server's GPUs and fabric are every
        server's), so a DGX-1 cluster's 512 TP pairs are priced as its 4 distinct ones. Every group on a
        mixed cluster, every group over servers (its network share may differ)."""
        seen: set[tuple[int, int, int]] = set()
        for members in groups:
            server = self.server_of(members[0])
            if not self.heterogeneous and server == self.server_of(members[-1]):
                place = (members[0] - self.starts[server], len(members), members.step)
                if place in seen:
                    continue
                seen.add(place)
            yield members

    def _slowest(self, groups: Iterator[range]) -> range:
        """Of a rank's groups of one kind (its TP groups, its DP groups, a hop's GPU pairs), which run at once
        and which the iteration waits for together, the first of the slowest kind: one that crosses servers
        over the network before one on NVLink (TP 2 · DP 3 on 8-GPU servers: rank 1 holds GPUs 6…11, so GPU
        0's hop to GPU 6 stays in server 0 while GPU 2's to GPU 8 crosses), and of those one whose servers sit
        under different leaves of an oversubscribed fabric (its share divided by the oversubscription: with TP
        across servers and DP > 1, the first TP group may sit under one leaf and the second cross two)."""
        first = next(groups)
        worst = (True, self._leaves_oversubscribed)  # the slowest kind there is: stop at the first of it
        slowest, kind = first, self._crossing(first)
        for members in groups:
            if kind == worst:
                break
            crossing = self._crossing(members)
            if crossing > kind:
                slowest, kind = members, crossing
        return slowest

    def _crossing(self, members: range) -> tuple[bool, bool]:
        """Whether a group's GPUs cross servers over the network, and whether they sit under different leaves
        of an oversubscribed fabric (:meth:`_slowest`'s order: False before True)."""
        over = self.server_of(members[0]) != self.server_of(members[-1]) and \
            not self._one_domain(members[0], members[-1])
        net = self.network
        leaves = over and net is not None and self._leaves_oversubscribed and \
            len({self.server_of(i) // net.servers_per_leaf for i in members}) > 1
        return over, leaves

    def pipeline_hops(self, par: Parallelism, device: Device) -> tuple:
        """Each pipeline hop's link, rank r to rank r + 1 (the last rank's to rank 0): NVLink when every
        pair of the two ranks' GPUs (GPU g of one, GPU g of the other) shares a server, the network (one
        GPU's share) when one pair does not (:meth:`_pair_link`); inside a server wired without an NVSwitch
        (a DGX-1 of V100s, :meth:`_wired`) each pair's own NVLinks, or PCIe where it has none, the slowest
        pair's setting the hop. Empty when the whole pipeline sits in one NVSwitch server (every hop is
        then the one NVLink ``pp``). A pipeline over servers always has a pair that crosses, even where
        the ranks' first GPUs share a server (TP 2 · DP 3 · PP 2 on 8-GPU servers: GPUs 0 and 6 share
        server 0, GPUs 2 and 8 do not)."""
        group = par.tp * par.dp
        firsts = [r * group for r in range(par.pp)]
        if par.pp == 1 or (self.server_of(0) == self.server_of(par.gpus - 1) and not self._wired(device, 0)):
            return ()
        return tuple(self._pair_link(device, firsts[r], firsts[(r + 1) % par.pp], group) for r in range(par.pp))

    def _pair_link(self, device: Device, a: int, b: int, group: int):
        """The link between two pipeline ranks whose ``group`` (TP × DP) GPUs start at ``a`` and ``b``: GPU
        g of one talks to GPU g of the other, every g at once, so each pair gets one GPU's share of the
        NICs (``hop``) and the slowest pair sets the time (:meth:`_slowest_link` over :meth:`_hop_shifts`).
        A pipeline hop's, and the tied embedding's all-reduce between the first and last rank (Megatron's
        embedding group: the two GPUs of one TP/DP position)."""
        a, b = sorted((a, b))
        wired = self._wired_shifts(device, a, b, group)
        shifts = sorted({*self._hop_shifts(a, b, group), *wired})
        return self._slowest_link(device, (range(a + g, b + g + 1, b - a) for g in shifts), hop=True,
                                  every=bool(wired))

    def _wired(self, device: Device, server: int) -> bool:
        """Whether ``server``'s GPUs are wired to each other directly, without an NVSwitch (a DGX-1 of
        V100s): two of its GPUs then talk over the NVLinks between them, or PCIe where there are none
        (:func:`~archsim.links.nvlink_group`), so which two GPUs a pair holds sets its link."""
        board = self.servers[server] if self.heterogeneous else device
        return bool(board.nvlink_bytes_per_s) and not board.nvswitch

    def _wired_within(self, device: Device, first: int, last: int) -> bool:
        """Whether any server holding GPUs ``first`` … ``last`` is wired without an NVSwitch (:meth:`_wired`):
        its groups of one kind then differ in their NVLinks, so each is priced (every server alike on a
        uniform cluster)."""
        if not self.heterogeneous:
            return self._wired(device, 0)
        return any(self._wired(device, s) for s in range(self.server_of(first), self.server_of(last) + 1))

    def _wired_shifts(self, device: Device, a: int, b: int, group: int) -> list[int]:
        """The GPU offsets g at which a hop's pair (a + g, b + g) sits in one server wired without an
        NVSwitch (:meth:`_wired`), one per distinct pair of that server's GPUs: each such pair's own
        NVLinks price it (GPU 0–4 share two on a DGX-1, 2–6 one, 2–4 none), not the first pair's."""
        if not self._wired_within(device, a, b + group - 1):
            return []
        seen: dict[tuple[int, int], int] = {}
        for g in range(group):
            server = self.server_of(a + g)
            if server == self.server_of(b + g) and self._wired(device, server):
                seen.setdefault((server if self.heterogeneous else 0, a + g - self.starts[server]), g)
        return list(seen.values())

    def _hop_shifts(self, a: int, b: int, group: int) -> list[int]:
        """The GPU offsets g at which a hop's pair (a + g, b + g) may change servers — 0 and where either GPU
        starts a server — for :meth:`_slowest` to find the pair crossing servers or leaves (GPU g of one rank
        sends to GPU g of the other, all g at once)."""
        starts = self.starts
        shifts = {0}
        for first in (a, b):
            shifts.update(s - first for s in starts[bisect_right(starts, first):bisect_right(starts, first + group - 1)])
        return sorted(shifts)

    def problem(self, par: Parallelism) -> str | None:
        """Why ``par`` cannot be laid out in GPU order: a TP group holding part of a server and part of
        another (``tp-straddles-servers``: a group is one server's GPUs or whole servers of one size —
        a collective over servers runs as many GPUs in each) or a rank whose TP × DP GPUs are of two
        types (``stage-mixes-gpu-types``); None when it can."""
        self._check_gpus(par)
        if (any(self._straddles(start, par.tp) for start in range(0, par.gpus, par.tp)) if self.heterogeneous
                else tp_straddles(par.tp, par.gpus, self.gpus_per_server)):  # the search's rule on one server size
            return "tp-straddles-servers"
        return "stage-mixes-gpu-types" if self.rank_gpus(par) is None else None

    def _straddles(self, start: int, tp: int) -> bool:
        """Whether GPUs start … start + tp − 1 hold part of a server and part of another, or whole
        servers of different sizes."""
        first, last = self.server_of(start), self.server_of(start + tp - 1)
        if first == last:
            return False
        sizes = {self.starts[s + 1] - self.starts[s] for s in range(first, last + 1)}
        return self.starts[first] != start or self.starts[last + 1] != start + tp or len(sizes) > 1

    def tp_servers(self, par: Parallelism) -> int:
        """The most servers one TP group spans over the network (1: every group inside a server or inside
        one NVLink domain of several servers): its all-reduces then cross the NICs
        (:class:`~archsim.collectives.Spanning`), which ``archsim train`` warns of and search rows flag."""
        self._check_gpus(par)
        most = 1
        for start in range(0, par.gpus, par.tp):
            end = start + par.tp - 1
            if self._one_domain(start, end):
                continue
            most = max(most, self.server_of(end) - self.server_of(start) + 1)
        return most

    def rank_gpus(self, par: Parallelism) -> tuple[Device, ...] | None:
        """Each pipeline rank's GPU, or None when a rank's TP × DP GPUs are of different types."""
        self._check_gpus(par)
        group = par.tp * par.dp
        out = []
        for r in range(par.pp):
            first, last = self.server_of(r * group), self.server_of((r + 1) * group - 1)
            kinds = {self.gpu_at(self.starts[s]).name for s in range(first, last + 1)}
            if len(kinds) > 1:
                return None
            out.append(self.gpu_at(r * group))
        return tuple(out)

    def rank_machines(self, par: Parallelism) -> tuple[Machine, ...] | None:
        """Each pipeline rank's machine (equal ones shared), or None as :meth:`rank_gpus` (a TP group
        across servers is costed over the network, :class:`~archsim.collectives.Spanning`)."""
        key = (par.tp, par.pp, par.dp)
        if key not in self._machines:
            kinds = self.rank_gpus(par)
            made: dict[Machine, Machine] = {}
            self._machines[key] = None if kinds is None else tuple(
                made.setdefault(m, m) for m in (self.machine(par, device, r) for r, device in enumerate(kinds)))
        return self._machines[key]

    def rank_wise(self, par: Parallelism) -> tuple[Machine, ...] | None:
        """Each pipeline rank's machine where ranks differ — mixed clusters (:meth:`rank_machines`), one
        GPU type whose DP groups sit under different leaves of an oversubscribed fabric (rank 0's pair
        under one leaf, another rank's across two), or DGX-1s of V100s, whose ranks' groups hold different
        GPU pairs (TP 2 · DP 3 · PP 2 on two: rank 0's TP groups 0–1, 2–3, 4–5, rank 1's 6–7 of one server
        and 0–1, 2–3 of the next) — else None: every rank is :meth:`machine`'s. What search costs a
        candidate on, as train does."""
        if self.heterogeneous:
            return self.rank_machines(par)
        net = self.network
        leaves = net is not None and net.oversubscription != 1 and bool(net.servers_per_leaf)
        # on DGX-1s, ranks that each start a server (TP × DP a multiple of its GPUs) hold the same GPU pairs
        wired = self._wired(self.gpu, 0) and par.pp > 1 and par.tp * par.dp % self.gpus_per_server != 0
        if not leaves and not wired:  # every rank's links alike
            return None
        machines = self.rank_machines(par)
        return machines if machines is not None and len(set(machines)) > 1 else None

    def laid_out(self, par: Parallelism) -> tuple[Machine, ...]:
        """:meth:`rank_machines`, or a one-line :class:`InputError` saying why ``par`` cannot be laid
        out in this server order (:data:`LAYOUT_ERRORS`): what ``archsim train`` and the API run."""
        problem = self.problem(par)
        machines = None if problem else self.rank_machines(par)
        if machines is None:
            raise InputError(LAYOUT_ERRORS[problem or "stage-mixes-gpu-types"], field="tp")
        return machines

    @cached_property
    def _machines(self) -> dict[tuple[int, int, int], tuple[Machine, ...] | None]:
        return {}  # (tp, pp, dp) → rank_machines: they depend on nothing else


LAYOUT_ERRORS = {
    "tp-straddles-servers": "a TP group holds part of a server and part of another: choose a TP that divides a "
                            "server's GPUs or is a multiple of them (whole servers of one size)",
    "stage-mixes-gpu-types": "a pipeline stage's GPUs are of different types: choose TP × DP to fill whole servers "
                             "of one type"}


__all__ = ["LAYOUT_ERRORS", "GpuCluster"]
