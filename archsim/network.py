"""The network between servers as it is built: a cluster TOML's ``[network]`` table (docs/formats.md,
"Cluster (TOML)") — NICs per server and their speed, which GPUs share a NIC (rails), the NVLink
domain, switch tiers, servers per leaf group and the oversubscription above it.

Without a ``[network]`` table the two older keys say the same in fewer words: ``inter_server_gbps``
with ``inter_server_link = "per_gpu_pair"`` is one NIC of that speed per GPU (a rail per GPU),
``"shared"`` (the default) one NIC of that speed for the whole server.

What a group of GPUs gets between servers (:meth:`ServerNetwork.group_bytes_per_s`): NCCL splits a
collective into channels and spreads them over every NIC its GPUs reach (NCCL's graph search gives each
channel one NIC), so a group with k GPUs in each server moves k GPUs' share of the server's NICs —
all of them for a group that fills the server — while the other groups of the same kind (the DP
groups of the other TP ranks, say) use the rest at the same time. Above a leaf group the uplinks may
be oversubscribed: a group whose servers sit under different leaves moves the bytes that leave a leaf at
the leaf's uplink share, how much slower by its traffic pattern (:meth:`ServerNetwork.uplinks`).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from archsim.cluster_keys import MAX_GBPS, MIN_GBPS, NETWORK_KEYS, is_gbps, key_hint
from archsim.collectives import NO_LEAVES, Uplinks
from archsim.errors import InputError
from archsim.links import nic_share
from archsim.validate import shown, shown_boolean, shown_number

DEFAULT_SWITCH_TIERS = 2  # leaf–spine: what a [network] table that states none has
@dataclass(frozen=True)
class ServerNetwork:
    """nics_per_server × nic_gbps (Gbit/s each, one direction); gpus_per_nic: GPUs sharing one NIC
    (GPU g of a server uses NIC g // gpus_per_nic: its rail); nvlink_domain: GPUs one NVLink/NVSwitch
    fabric joins (a server's, or several servers' with an NVLink switch system); switch_tiers: 1 (one
    switch), 2 (leaf–spine) or 3 (leaf–spine–core); servers_per_leaf: the servers whose NICs of a rail
    share a leaf switch (a DGX SuperPOD's scalable unit); oversubscription ≥ 1: down- to up-link
    bandwidth of a leaf (1: non-blocking); nvls: the NVSwitch reduces all-reduces in the switch."""

    nics_per_server: int
    nic_gbps: float
    gpus_per_nic: int
    nvlink_domain: int
    switch_tiers: int = DEFAULT_SWITCH_TIERS
    servers_per_leaf: int = 0  # 0: every server under one leaf group
    oversubscription: float = 1.0
    nvls: bool = False

    def one_domain(self, first, last, gpus_per_server: int):
        """Whether servers ``first`` and ``last`` (the cluster file's indices, ``count`` expanded, or arrays of them;
        servers of ``gpus_per_server`` GPUs) sit in one NVLink domain that spans servers (``nvlink_domain`` above a
        server's GPUs): their transfers run on NVLink, not the NICs. A domain holds the file's servers, nvlink_domain
        / gpus_per_server consecutive ones, whatever order ``--placement`` lays them out in. Train's groups
        (:meth:`archsim.training.cluster.GpuCluster.one_domain`) and plan's pairs
        (:func:`archsim.spp.link_classes.domain_pairs`) ask this one rule."""
        servers = self.nvlink_domain // gpus_per_server  # a domain's servers (a multiple: read_network)
        return (self.nvlink_domain > gpus_per_server) & (first // max(servers, 1) == last // max(servers, 1))

    def _uneven(self, gpus_per_server: int) -> bool:
        """Whether every GPU reaches a NIC but the NICs carry unequal GPU counts (8 GPUs on 3 NICs: 3, 3, 2)."""
        return gpus_per_server % self.gpus_per_nic != 0 and \
            self.nics_per_server == math.ceil(gpus_per_server / self.gpus_per_nic)

    def gpu_bytes_per_s(self, gpus_per_server: int) -> float:
        """One GPU's share of its server's NICs when every GPU sends at once (bytes/s): its own NIC's
        bandwidth over the GPUs sharing it — on NICs of unequal GPU counts the fullest NIC's, what the slowest
        GPU gets (not the mean: a collective of GPUs that all send waits for it) — or less where the server
        has fewer NIC ports than GPUs use."""
        if self._uneven(gpus_per_server):
            return nic_share(self.nic_gbps * 1e9 / 8, self.gpus_per_nic, alone=False)
        used = min(self.nics_per_server, math.ceil(gpus_per_server / self.gpus_per_nic))
        return nic_share(used * self.nic_gbps * 1e9 / 8, gpus_per_server, alone=False)

    def group_bytes_per_s(self, per_server: int, gpus_per_server: int, local: tuple[int, ...] = ()) -> float:
        """What a group with ``per_server`` GPUs in each of its servers moves between servers through the NICs
        (bytes/s): those GPUs' share of the NICs (the leaves' uplinks above them: :meth:`uplinks`). On NICs of
        unequal GPU counts each of the group's ``local`` GPUs (indices in a server) gets its own NIC's share: a
        group filling the server moves all its NICs' bandwidth, one GPU of a full NIC a third of it."""
        if local and self._uneven(gpus_per_server):
            nic = self.nic_gbps * 1e9 / 8
            bandwidth = sum(nic_share(nic, min(self.gpus_per_nic, gpus_per_server - g // self.gpus_per_nic *
                                               self.gpus_per_nic), alone=False) for g in local)
        else:
            bandwidth = per_server * self.gpu_bytes_per_s(gpus_per_server)
        return bandwidth

    def uplinks(self, servers: tuple[int, ...], hop: bool = False) -> Uplinks:
        """How much slower than its NIC share (:meth:`group_bytes_per_s`) a group over ``servers`` runs through the
        leaves' uplinks, per traffic pattern (:class:`~archsim.collectives.Uplinks`; all 1 under one leaf).
        ``servers``: the file's indices (they set the leaves) in the group's rank order, once each (a ring's
        order); ``hop``: a point-to-point pair, all of whose bytes leave its leaf, so ``oversubscription``.

        Why. Every group of the group's shape runs at once, each at its GPUs' share of the NICs, so together they
        keep every NIC of a server busy: a server sends N bytes/s (all its NICs), and the fraction f of that which
        leaves its leaf is the fraction of its groups' traffic whose next hop sits under another leaf — taken from
        this group, as the other groups of its shape are laid out alike (the DP groups of the other TP ranks on
        the same servers; those of other pipeline ranks shifted by whole stages). A leaf's uplinks carry, one
        direction, its servers' NICs over the oversubscription o (down- over up-link, Al-Fares et al., SIGCOMM
        2008): N / o per server. So the group runs max(1, f·o) times slower than on a non-blocking fabric, at its
        worst leaf; o, the rule before 2026-12-05, whenever servers sat under two leaves, is the case f = 1.

        * Ring (all-reduce's reduce-scatter and all-gather, all-gather, reduce-scatter): NCCL chains each
          server's GPUs and joins the servers in the order of their ranks (it does not detect switches:
          NVIDIA/nccl#1340, #1545), which a launcher and archsim's placement give leaf by leaf. Each ring edge
          carries the ring's full rate b (2(n − 1)/n·S over 2(n − 1)/n·S / b), so a leaf holding h of the
          group's servers, e of whose edges leave it (one per run of consecutive servers: 1 where the group's
          servers under a leaf are consecutive), sends e·b against h·b of NIC traffic: f = e / h. Two servers a
          leaf at 2:1 (f = 1/2): not slowed; at 4:1, 2×; one server a leaf: o.
        * Tree (NCCL's double binary tree over the servers, src/graph/trees.cc; NVIDIA's "Massively Scale Your
          Deep Learning Training with NCCL 2.4", 2019): each tree carries half the buffer, S/2 each way along each
          edge (reduce up, broadcast down), while archsim prices the tree at 2S / b a server; a leaf with c edges
          of the two trees leaving it sends c·S/2 in that time: f = c / (4h).
        * Every pair (all-to-all): a GPU sends 1/n of its buffer to each GPU, (n − k)/n through the NICs, of
          which (n − h·k)/n leaves its leaf (k GPUs a server): f = (m − h) / (m − 1) on m servers — o where each
          leaf holds one of them, less where a leaf holds several.
        """
        leaves = [self.leaf(s) for s in servers]
        if len(set(leaves)) < 2:
            return NO_LEAVES
        over = self.oversubscription
        if hop:
            return Uplinks(over, over, over, over)
        m, held = len(leaves), Counter(leaves)
        ring = Counter(a for a, b in zip(leaves, leaves[1:] + leaves[:1], strict=True) if a != b)
        tree: Counter = Counter()
        for a, b in double_tree_edges(m):
            if leaves[a] != leaves[b]:
                tree.update((leaves[a], leaves[b]))

        def worst(fraction) -> float:
            return max(1.0, over * max(fraction(leaf, h) for leaf, h in held.items()))

        return Uplinks(ring=worst(lambda leaf, h: ring[leaf] / h), tree=worst(lambda leaf, h: tree[leaf] / (4 * h)),
                       every_pair=worst(lambda leaf, h: (m - h) / (m - 1)), pair=over)

    def leaf(self, server: int) -> int | None:
        """The leaf group of the cluster file's server ``server`` (its index, ``count`` expanded: leaves hold the
        file's servers, whatever order a placement lays them out in) where the uplinks above the leaves are
        oversubscribed, else None: only there do two servers' leaves change a group's links. The one rule of
        :meth:`uplinks`, ``--placement planned``'s classes, train's ``leaves_crossed_by``, and whether a group
        crosses leaves (:func:`archsim.training.group_links.crosses_leaves`: train's and ``archsim.collective``'s)."""
        if self.oversubscription == 1 or not self.servers_per_leaf:
            return None
        return server // self.servers_per_leaf


@lru_cache(maxsize=64)
def double_tree_edges(m: int) -> tuple[tuple[int, int], ...]:
    """The edges (pairs of positions 0 … m − 1 in rank order) of NCCL's two binary trees over ``m`` servers
    (src/graph/trees.cc): in the first, position r > 0 whose lowest set bit is ``low`` hangs under r with ``low``
    cleared and ``2·low`` set, or, where that is past the end, under r with ``low`` cleared; the second is the first
    mirrored (position r as m − 1 − r) for even m, shifted by one for odd m."""
    first = []
    for r in range(1, m):
        low = r & -r
        parent = (r - low) | (2 * low)
        first.append((r, parent if parent < m else r - low))
    second = [(m - 1 - a, m - 1 - b) if m % 2 == 0 else ((a + 1) % m, (b + 1) % m) for a, b in first]
    return tuple(first + second)


def _positive(table: dict, key: str, default, file: str, kind=int):
    """``table[key]``, a positive ``kind`` (``default`` where absent; None: the key is required)."""
    value = table.get(key, default)
    if value is None:  # a required key left out: the user wrote no None to be shown
        raise InputError("missing key in [network]", file=file, field=key, missing=True)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 and math.isfinite(value)
    if not ok or (kind is int and not isinstance(value, int)):
        what = "a positive integer" if kind is int else "a positive number"
        raise InputError(f"expected {what}, got {shown_number(value)}", file=file, field=key)
    return kind(value)


def _check_rails(nics: int, per_nic: int, gpus: int, per_nic_given: bool, file: str) -> None:
    """Refuse NICs and GPUs per NIC that disagree with the server's GPUs: GPU g sends on NIC g // per_nic,
    so a server of ``gpus`` GPUs reaches ⌈gpus / per_nic⌉ NICs (its rails). More NICs than that would be
    silently idle (their bandwidth lost); fewer would leave GPUs without a NIC."""
    rails = math.ceil(gpus / per_nic)
    fit = math.ceil(gpus / nics)  # the GPUs per NIC that reach every NIC
    if rails < nics:
        hint = f"nics_per_server = {rails} (a GPU with several NICs: their sum as nic_gbps)"
        if per_nic_given and math.ceil(gpus / fit) == nics:
            hint += f", or gpus_per_nic = {fit}"
        raise InputError(f"{gpus} GPUs per server at {per_nic} per NIC reach {rails} of its {nics} NICs, the rest "
                         f"would carry nothing: give {hint}", file=file,
                         field="gpus_per_nic" if per_nic_given else "nics_per_server")
    if rails > nics:
        raise InputError(f"{gpus} GPUs per server at {per_nic} per NIC need {rails} NICs, the server has {nics}: "
                         f"GPUs {nics * per_nic}…{gpus - 1} would have none; give gpus_per_nic = {fit}", file=file,
                         field="gpus_per_nic")


def read_network(spec: dict, gpus_per_server: int, file: str = "<cluster>", default_gbps: float = 0.0) -> ServerNetwork:
    """The cluster document's network: its ``[network]`` table, else the one ``inter_server_gbps`` and
    ``inter_server_link`` describe (module docstring); ``default_gbps``: the devices' own inter-node
    Gb/s (a device file's ``[links]``), used when the file states no ``inter_server_gbps``."""
    cluster = spec.get("cluster", {})
    table = spec.get("network")
    if table is None:
        inter = cluster.get("inter_server_gbps", 0) or default_gbps
        if isinstance(inter, list):  # plan draws a figure within it (its seed); an iteration needs the one it ran at
            raise InputError("a [low, high] range is drawn by archsim plan; train and search take one figure, "
                             "Gbit/s", file=file, field="inter_server_gbps")
        shared = cluster.get("inter_server_link", "shared") != "per_gpu_pair"
        # no inter-server bandwidth (one server): 1 byte/s per GPU, never used
        gbps = float(inter) or 8e-9 * (gpus_per_server if shared else 1)
        if not shared:
            return ServerNetwork(gpus_per_server, gbps, 1, gpus_per_server)
        return ServerNetwork(1, gbps, gpus_per_server, gpus_per_server)
    if not isinstance(table, dict):
        raise InputError("expected a table: write [network] above its keys", file=file, field="network")
    unknown = sorted(set(table) - NETWORK_KEYS)
    if unknown:
        hint = key_hint(unknown[0], "[network]", NETWORK_KEYS, table[unknown[0]], table)
        raise InputError(f"unknown key in [network]{hint}; keys are "
                         f"{', '.join(sorted(NETWORK_KEYS))}", file=file, field=unknown[0])
    nics = _positive(table, "nics_per_server", None, file)
    gbps = _positive(table, "nic_gbps", None, file, float)
    if not is_gbps(gbps):  # every link figure's bound (archsim.cluster_keys.MAX_GBPS), as inter_server_gbps's
        raise InputError(f"expected a number in [{MIN_GBPS:g}, {MAX_GBPS:g}], got {shown_number(table['nic_gbps'])}",
                         file=file, field="nic_gbps")
    per_nic = _positive(table, "gpus_per_nic", math.ceil(gpus_per_server / nics), file)
    _check_rails(nics, per_nic, gpus_per_server, "gpus_per_nic" in table, file)
    domain = _positive(table, "nvlink_domain", gpus_per_server, file)
    if domain % gpus_per_server:
        raise InputError(f"an NVLink domain holds whole servers: a multiple of {gpus_per_server} GPUs, got {domain}",
                         file=file, field="nvlink_domain")
    tiers = _positive(table, "switch_tiers", DEFAULT_SWITCH_TIERS, file)
    if tiers > 3:
        raise InputError(f"expected 1, 2 or 3 switch tiers, got {tiers}", file=file, field="switch_tiers")
    # absent: every server under one leaf (0 inside); a stated 0 or false is refused, as -1 is, not read as absent
    leaf = _positive(table, "servers_per_leaf", None, file) if "servers_per_leaf" in table else 0
    over = _positive(table, "oversubscription", 1.0, file, float)
    if over < 1:
        raise InputError(f"expected ≥ 1 (down- over up-link bandwidth), got {shown(over)}", file=file,
                         field="oversubscription")
    if tiers == 1 and over > 1:  # one switch joins every NIC: no leaf, no uplink to oversubscribe
        raise InputError(f"switch_tiers = 1 is one switch with no uplinks, so nothing to oversubscribe: give "
                         f"switch_tiers = 2 (leaf–spine) with servers_per_leaf, or no oversubscription (got "
                         f"{over:g})", file=file, field="oversubscription")
    nvls = table.get("nvls", False)
    if not isinstance(nvls, bool):
        raise InputError(f"expected true or false, got {shown_boolean(nvls)}", file=file, field="nvls")
    return ServerNetwork(nics, gbps, per_nic, domain, tiers, leaf, over, nvls)


NIC_GBPS_SOLD = (1.0, 3200.0)  # Gb/s per NIC, one direction: 1 GbE up to twice the 1.6 Tb/s NICs announced


def nic_speed_warning(key: str, gbps: float) -> str:
    """A plausibility warning for one NIC's speed (Gbit/s) outside every NIC sold (:data:`NIC_GBPS_SOLD`), naming
    ``key`` and the unit it was likely written in: 400000 is 400 Gb/s written in Mb/s, 0.4 is 400 Gb/s in Tb/s.
    Not a refusal: the figure is possible, only implausible; a slipped unit otherwise prices every collective
    across servers 1000 times off without a word. Empty when plausible. (50 meaning 50 GB/s, 400 Gb/s, is a real
    NIC speed in Gb/s: nothing can flag it; ``inter_server`` in train's output shows the GB/s per GPU.)"""
    low, high = NIC_GBPS_SOLD
    if gbps > high:
        return (f"{key} = {gbps:g} Gb/s per NIC is above any NIC sold (≤ {high:g} Gb/s): if it is in Mb/s, write "
                f"{key} = {gbps / 1000:g}")
    if gbps < low:
        return (f"{key} = {gbps:g} Gb/s per NIC is below any NIC sold (≥ {low:g} Gb/s): if it is in Tb/s, write "
                f"{key} = {gbps * 1000:g}")
    return ""


def network_warnings(spec: dict, network: ServerNetwork) -> tuple[str, ...]:
    """The cluster document's implausible NIC speed, one line (train, search and plan print it on stderr): ``[network]
    nic_gbps``, or without that table a stated ``inter_server_gbps``, which is one NIC's speed either way
    (:func:`read_network`: one NIC per GPU with ``per_gpu_pair``, one for the whole server with ``shared``)."""
    if "network" in spec:
        line = nic_speed_warning("nic_gbps", network.nic_gbps)
    elif spec.get("cluster", {}).get("inter_server_gbps"):
        line = nic_speed_warning("inter_server_gbps", network.nic_gbps)
        if line and network.nics_per_server == 1 and network.nic_gbps > NIC_GBPS_SOLD[1]:  # shared: maybe NICs summed
            line += "; if it is the server's NICs together, give a [network] table (nics_per_server, nic_gbps)"
    else:
        line = ""
    return (line,) if line else ()


def superseded_notes(cluster: dict, network: ServerNetwork) -> tuple[str, ...]:
    """The ``[cluster]`` keys a ``[network]`` table supersedes (train, search and plan read the table), each where it
    states otherwise than the table: a note on stderr, not an error, since the keys describe the same NICs."""
    notes = []
    gbps = cluster.get("inter_server_gbps")
    if gbps is not None and gbps != network.nic_gbps:
        stated = f"{gbps:g}" if isinstance(gbps, (int, float)) and not isinstance(gbps, bool) else shown_number(gbps)
        notes.append(f"inter_server_gbps = {stated} is not read: [network] gives the NICs "
                     f"({network.nic_gbps:g} Gb/s each)")
    link = cluster.get("inter_server_link")
    if link is not None and not ((link == "per_gpu_pair" and network.gpus_per_nic == 1)
                                 or (link == "shared" and network.nics_per_server == 1)):
        notes.append(f"inter_server_link = {shown(link)} is not read: [network] gives the NICs "
                     f"({network.nics_per_server} per server, {network.gpus_per_nic} GPUs each)")
    return tuple(notes)


def network_notes(table: dict, network: ServerNetwork, servers: int, gpus: int = 0) -> tuple[str, ...]:
    """What a ``[network]`` table states that changes no figure on ``servers`` servers, one line each (train, search
    and plan print them on stderr): a ``switch_tiers`` other than the default 2 (switch hops' latency is not
    modelled, so a stated 1 or 3 prices as 2 does; the default itself assumes nothing unmodelled), an
    ``oversubscription`` above leaves no group crosses (every server under one leaf), a ``servers_per_leaf`` without
    an ``oversubscription`` (non-blocking uplinks: leaves change no figure), and an ``nvlink_domain``
    above the cluster's ``gpus`` (servers of one kind; 0: not judged): the cluster is part of a larger domain (an
    NVL72 rack's 72 GPUs), so NVLink joins all its GPUs and no transfer crosses the NICs."""
    notes = []
    if 0 < gpus < network.nvlink_domain:
        notes.append(f"nvlink_domain = {network.nvlink_domain} is more than the cluster's {gpus} GPUs: read as part "
                     "of a larger NVLink domain, so NVLink joins all of them and no transfer crosses [network]'s "
                     "NICs (nic_gbps, servers_per_leaf and oversubscription change nothing)")
    if "switch_tiers" in table and network.switch_tiers != DEFAULT_SWITCH_TIERS:
        notes.append(f"switch_tiers = {network.switch_tiers} is not read: the latency of switch "
                     "hops is not modelled (docs/training.md, Beyond one server)")
    if network.oversubscription > 1 and servers == 1:  # nothing to split: no servers_per_leaf would change it
        notes.append(f"oversubscription = {network.oversubscription:g} changes nothing: the cluster is one server, "
                     "so no group crosses an uplink")
    elif network.oversubscription > 1 and not 0 < network.servers_per_leaf < servers:
        leaf = "no servers_per_leaf" if not network.servers_per_leaf else \
            f"servers_per_leaf = {network.servers_per_leaf} of {servers} servers"
        notes.append(f"oversubscription = {network.oversubscription:g} changes nothing: every server sits under "
                     f"one leaf ({leaf}), so no group crosses an uplink; give servers_per_leaf below {servers} to "
                     "split them")
    if "servers_per_leaf" in table and "oversubscription" not in table and not 0 < gpus < network.nvlink_domain:
        # leaves whose uplinks cost nothing (a domain over the cluster's GPUs already says the NICs carry nothing)
        notes.append(f"servers_per_leaf = {network.servers_per_leaf} changes nothing: without oversubscription "
                     "(default 1, non-blocking uplinks) a group across leaves runs as one under a leaf; give "
                     "oversubscription above 1 (down- over up-link bandwidth) for a blocking fabric")
    return tuple(notes)


def network_warnings_and_notes(spec: dict, network: ServerNetwork | None,
                               servers: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The cluster document's network as train, search and plan judge it on stderr, one line each: (warnings —
    :func:`network_warnings` —, notes — :func:`superseded_notes` and :func:`network_notes` where a ``[network]``
    table is given); ``network``: as read (None: plan's drawn ``[low, high]`` range, no one NIC figure to judge);
    ``servers``: the server count. A cluster whose servers name devices adds theirs
    (:func:`archsim.training.cluster_file.cluster_file_warnings_and_notes`)."""
    if network is None:
        return (), ()
    groups = [group for group in spec["servers"] if isinstance(group, dict)]
    kinds = {(g.get("gpus"), g.get("gpu"), g.get("device"), repr(g.get("intra_server_gbps"))) for g in groups}
    gpus = sum(g.get("count", 1) * g["gpus"] for g in groups) if len(kinds) == 1 else 0  # one kind: the domain read
    notes = superseded_notes(spec["cluster"], network) + network_notes(spec["network"], network, servers, gpus) \
        if "network" in spec else ()
    return network_warnings(spec, network), notes


__all__ = ["DEFAULT_SWITCH_TIERS", "NIC_GBPS_SOLD", "ServerNetwork", "double_tree_edges", "network_notes", "network_warnings",
           "network_warnings_and_notes", "nic_speed_warning", "read_network", "superseded_notes"]
