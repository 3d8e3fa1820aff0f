"""A GPU cluster for training: the servers of a cluster TOML as
:mod:`archsim.training.cluster_file` reads them (each server's
:class:`~archsim.devices.device.Device`, its in-server link, the network between servers), and how a
parallel configuration's groups are placed on them and what their links cost. This module is the record and
its layout queries (which server holds a GPU, whether a layout can run, what each rank gets); which link each
group runs on is :mod:`archsim.training.group_links`'.

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
from dataclasses import dataclass, field, replace
from functools import cached_property
from itertools import accumulate, groupby
from typing import TYPE_CHECKING

from archsim.devices.device import Device
from archsim.errors import InputError
from archsim.network import ServerNetwork
from archsim.training.group_links import leaves_oversubscribed, rank_machine
from archsim.training.machine import Machine
from archsim.training.parallel import Parallelism, tp_straddles

if TYPE_CHECKING:
    from archsim.spp.topology import ClusterLayout, Topology


@dataclass(frozen=True)
class GpuCluster:
    """A cluster file's servers as train and search read them: each server's device, GPU count and in-server link,
    the network between servers, and the :class:`~archsim.spp.topology.Topology` the planners read of the same file
    (:attr:`topology`), whose GPUs, ``fabrics`` and ``network`` these are; each server's GPUs and one GPU's NIC share
    are read off them (:attr:`sizes`, :attr:`gpus_per_server`, :attr:`inter_server_bytes_per_s`). Links in bytes/s."""

    gpus: int  # GPUs in all (a group's links are priced by class, group_links, on fabrics and network)
    gpu: Device  # the first server's device
    servers: tuple[Device, ...] = ()  # each server's device, in the file's order (empty: all ``gpu``)
    prices: tuple[float | None, ...] = ()  # each server's USD per GPU-hour override (None: the default table)
    watts: tuple[float | None, ...] = ()  # each server's watts per GPU override
    network: ServerNetwork | None = None  # the network as built (None: one server, single_node)
    dtype: str = "fp16"  # what every machine trains in (:class:`~archsim.training.machine.Machine`)
    fabrics: tuple[float, ...] = ()  # each server's in-server link, bytes/s per GPU per direction (empty: its device's)
    unread: tuple[str, ...] = ()  # what the file states that train and search do not read, one line each (stderr)
    warnings: tuple[str, ...] = ()  # what the file states that is implausible (a link's unit slipped), one line each
    usable: tuple[tuple[str, float], ...] = ()  # (GPU name, bytes a job may allocate): [[servers]] usable_memory_gib
    comm_sms: int | None = None  # SMs an overlapped collective holds on each GPU: [cluster] comm_sms (None: each GPU's own)
    # each server's torus, chips per dimension ([[servers]] torus; () a switched server, as every one where empty)
    tori: tuple[tuple[int, ...], ...] = ()
    # the file as read, its GPU pairs not priced (servers in the file's order; None: a cluster made here, single_node)
    file_layout: ClusterLayout | None = field(default=None, compare=False, repr=False)
    # the file's servers in this order (reordered; empty: the file's). Compared: it sets each server's leaf and NVLink
    # domain (file_server), so a reordered cluster of identical servers is another cluster, and prices apart
    order: tuple[int, ...] = field(default=(), repr=False)

    def __repr__(self) -> str:
        """One line: its GPUs by kind over its servers, and the dtype it trains in (a notebook shows a cell's value by
        its repr; the dataclass's printed every server's Device, 140,000 characters for a 1,024-GPU file)."""
        sizes = self.sizes or (self.gpus,)
        devices = self.servers if len(self.servers) == len(sizes) else (self.gpu,) * len(sizes)
        kinds: dict[str, int] = {}
        for device, size in zip(devices, sizes):
            kinds[device.name] = kinds.get(device.name, 0) + size
        said = ", ".join(f"{count} × {name}" for name, count in kinds.items())
        return (f"GpuCluster({self.gpus} GPU{'s' * (self.gpus != 1)} on {len(sizes)} server{'s' * (len(sizes) != 1)}: "
                f"{said}; {self.dtype})")

    @cached_property
    def file_topology(self) -> Topology | None:
        """The Topology the file was read into (servers in the file's order), its GPU pairs priced at the first
        asking (:func:`archsim.spp.topology.pair_topology`): train and search read none of them."""
        if self.file_layout is None:
            return None
        from archsim.spp.topology import pair_topology

        return pair_topology(self.file_layout)

    @cached_property
    def topology(self) -> Topology | None:
        """The planners' view of this cluster in its server order: its GPUs, each one's server and every pair's
        bandwidth (bytes/s), priced on this record's ``fabrics`` and ``network`` (:func:`archsim.spp.topology.
        build_topology`, :meth:`~archsim.spp.topology.Topology.reordered`); None where no file was read."""
        if self.file_topology is None or not self.order:
            return self.file_topology
        return self.file_topology.reordered(self.order)

    @cached_property
    def sizes(self) -> tuple[int, ...]:
        """Each server's GPU count in this cluster's server order, as its topology states them (empty: a cluster made
        without a file, single_node: one server of :attr:`gpus`)."""
        if self.file_layout is None:
            return ()
        counts = tuple(len(list(gpus)) for _, gpus in groupby(self.file_layout.servers))  # servers in order
        return tuple(counts[i] for i in self.order) if self.order else counts

    @cached_property
    def gpus_per_server(self) -> int:
        """The largest server's GPUs (every server's on a uniform cluster): what a shared NIC's GPUs and an NVLink
        domain are counted against."""
        return max(self.sizes, default=self.gpus)

    @cached_property
    def inter_server_bytes_per_s(self) -> float:
        """One GPU's share of its server's NICs when every GPU sends at once, bytes/s
        (:meth:`~archsim.network.ServerNetwork.gpu_bytes_per_s` of the largest server); 1 where there is none (one
        server)."""
        return (self.network.gpu_bytes_per_s(self.gpus_per_server) if self.network is not None else 0.0) or 1.0

    @cached_property
    def heterogeneous(self) -> bool:
        """Servers of several GPU types, GPU counts or in-server links: each rank is then laid out and costed
        on its own."""
        return len({device.name for device in self.servers}) > 1 or len(set(self.sizes)) > 1 or \
            len(set(self.fabrics)) > 1 or len(set(self.tori)) > 1

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

    def file_server(self, server: int) -> int:
        """The cluster file's index of the server at ``server`` in this order (:meth:`reordered`): what sets its
        leaf and its NVLink domain (``servers_per_leaf`` and ``nvlink_domain`` count the file's servers, which
        ``--placement`` reorders, not rewires)."""
        return self.order[server] if self.order else server

    def gpu_at(self, index: int) -> Device:
        return self.servers[self.server_of(index)] if self.servers else self.gpu

    def reordered(self, order: tuple[int, ...]) -> GpuCluster:
        """The cluster with its servers in ``order`` (indices of the file's servers, ``count`` expanded),
        its GPUs numbered anew in that order."""
        def pick(values: tuple) -> tuple:
            return tuple(values[i] for i in order) if values else values

        servers = pick(self.servers)
        return replace(self, gpu=servers[0] if servers else self.gpu, servers=servers, prices=pick(self.prices),
                       watts=pick(self.watts), fabrics=pick(self.fabrics), tori=pick(self.tori),
                       order=pick(self.order) or tuple(order))

    def fabric(self, server: int) -> float | None:
        """Server ``server``'s in-server link as its cluster file states it (``intra_server_gbps``), bytes/s
        per GPU per direction; None: its device's own NVLink figure."""
        return self.fabrics[server] if self.fabrics else None

    def torus(self, server: int) -> tuple[int, ...]:
        """Server ``server``'s torus of point-to-point links, chips per dimension (``[[servers]] torus``); (): switched."""
        return self.tori[server] if self.tori else ()

    def check_gpus(self, par: Parallelism) -> None:
        """Refuses ``par`` in one line when TP × PP × DP asks for more GPUs than the cluster has (before any
        layout or link is worked out for it)."""
        if par.gpus > self.gpus:
            raise InputError(f"TP × PP × DP = {par.gpus} GPUs, the cluster has {self.gpus}", field="gpus")

    def one_domain(self, first: int, last: int, step: int = 1) -> bool:
        """Whether GPUs ``first``, ``first + step`` … ``last`` (a group, in this order's numbering) sit in one NVLink
        domain (``nvlink_domain``): their group runs on NVLink, not over the network. A domain holds the file's
        servers (:meth:`file_server`), so under a placement each GPU's server is looked up, not its index: servers
        placed side by side may sit in two domains, and two placed apart in one."""
        net, size = self.network, self.gpus_per_server
        if net is None or self.heterogeneous or net.nvlink_domain <= size:
            return False
        servers = {self.file_server(self.server_of(i)) for i in range(first, last + 1, step)}
        head = next(iter(servers))
        return all(bool(net.one_domain(head, s, size)) for s in servers)

    def wired(self, device: Device, server: int) -> bool:
        """Whether ``server``'s GPUs are wired to each other directly, without an NVSwitch (a DGX-1 of
        V100s): two of its GPUs then talk over the NVLinks between them, or PCIe where there are none
        (:func:`~archsim.links.nvlink_group`), so which two GPUs a pair holds sets its link."""
        board = self.servers[server] if self.heterogeneous else device
        return bool(board.nvlink_bytes_per_s) and not board.nvswitch

    def capacity(self, device: Device) -> float:
        """The bytes a job may allocate on ``device`` here: its servers' ``usable_memory_gib``, else its memory."""
        return dict(self.usable).get(device.name, device.memory_bytes)

    def machine(self, par: Parallelism, device: Device | None = None, rank: int = 0) -> Machine:
        """The machine of pipeline rank ``rank`` on ``device`` (default the cluster's first GPU type): its GPU,
        kernels and its groups' links, placed on this cluster's servers
        (:func:`~archsim.training.group_links.rank_machine`), built once per (TP, PP, DP, CP, a2a+p2p's levels,
        EP, device, rank): it reads no other setting of ``par``, and a search asks for it once per candidate (about 5 ms
        each)."""
        key = (par.tp, par.pp, par.dp, par.cp, par.cp_exchange, par.cp_hierarchy, par.ep, par.etp, device, rank)
        if key not in self._rank_machine:
            self._rank_machine[key] = rank_machine(self, par, device, rank)
        return self._rank_machine[key]

    def problem(self, par: Parallelism) -> str | None:
        """Why ``par`` cannot be laid out in GPU order: a TP group holding part of a server and part of
        another (``tp-straddles-servers``: a group is one server's GPUs or whole servers of one size —
        a collective over servers runs as many GPUs in each) or a rank whose TP × DP GPUs are of two
        types (``stage-mixes-gpu-types``); None when it can."""
        self.check_gpus(par)
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
        self.check_gpus(par)
        most = 1
        for start in range(0, par.gpus, par.tp):
            end = start + par.tp - 1
            if self.one_domain(start, end):
                continue
            most = max(most, self.server_of(end) - self.server_of(start) + 1)
        return most

    def rank_gpus(self, par: Parallelism) -> tuple[Device, ...] | None:
        """Each pipeline rank's GPU, or None when a rank's TP × DP GPUs are of different types."""
        self.check_gpus(par)
        group = par.tp * par.replicas
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
        key = (par.tp, par.pp, par.dp, par.cp, par.cp_exchange, par.cp_hierarchy, par.ep, par.etp)  # as machine's key
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
        leaves = leaves_oversubscribed(self)
        # on DGX-1s, ranks that each start a server (TP × DP a multiple of its GPUs) hold the same GPU pairs
        wired = self.wired(self.gpu, 0) and par.pp > 1 and par.tp * par.replicas % self.gpus_per_server != 0
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
            sizes = self.straddled_sizes(par) if problem == "tp-straddles-servers" else None
            raise InputError(LAYOUT_ERRORS[problem or "stage-mixes-gpu-types"] if sizes is None else
                             f"a TP group of {par.tp} GPUs spans whole servers of different sizes "
                             f"({' + '.join(map(str, sizes))} GPUs), and a collective over servers runs as many GPUs "
                             "in each: choose a TP that divides a server's GPUs or spans servers of one size",
                             field="tp")
        return machines

    def straddled_sizes(self, par: Parallelism) -> tuple[int, ...] | None:
        """The GPU counts of the servers the first TP group over servers of different sizes spans, where it holds
        each of them whole (TP 16 on servers of 8, 4 and 4 GPUs); None where no group does (a group that holds part
        of a server is the other way to straddle servers)."""
        for start in range(0, par.gpus, par.tp):
            first, last = self.server_of(start), self.server_of(start + par.tp - 1)
            if first == last or self.starts[first] != start or self.starts[last + 1] != start + par.tp:
                continue
            sizes = tuple(self.starts[s + 1] - self.starts[s] for s in range(first, last + 1))
            if len(set(sizes)) > 1:
                return sizes
        return None

    @cached_property
    def _machines(self) -> dict[tuple, tuple[Machine, ...] | None]:
        return {}  # (tp, pp, dp, cp, exchange, CP levels) → rank_machines: they depend on nothing else

    @cached_property
    def _rank_machine(self) -> dict[tuple, Machine]:
        return {}  # (tp, pp, dp, cp, exchange, CP levels, device, rank) → machine: what rank_machine reads of par, and
        # its other arguments


LAYOUT_ERRORS = {
    "tp-straddles-servers": "a TP group holds part of a server and part of another: choose a TP that divides a "
                            "server's GPUs or is a multiple of them (whole servers of one size)",
    "stage-mixes-gpu-types": "a pipeline stage's GPUs are of different types: choose TP × DP to fill whole servers "
                             "of one type"}


__all__ = ["LAYOUT_ERRORS", "GpuCluster"]
