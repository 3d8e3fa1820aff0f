"""Each GPU pair's link as plan reads a cluster file (:func:`archsim.spp.topology.build_topology`): the link
train's pipeline hop between the two runs on (a DGX-1's NVLink rings or PCIe, :func:`board_pairs`; between servers
the NIC of train's :class:`~archsim.network.ServerNetwork`, :func:`network_pairs`) and, for
``plan --links exact``, the classes themselves (:func:`exact_links`), which price its sends and its all-reduces as
train prices them. Bandwidths in bytes/s per direction, latencies in seconds."""

from __future__ import annotations

import numpy as np

from archsim.collectives import PairLinks, slowest_class
from archsim.errors import InputError
from archsim.links import device_nic, nic_share, nvlink_group, server_link
from archsim.network import ServerNetwork


def exact_links(bandwidth: np.ndarray, where: np.ndarray, sharing: np.ndarray, devices: list, intra: list[float],
                file: str, domain: np.ndarray | None = None,
                nvls: bool = False, network: ServerNetwork | None = None,
                on_nic: np.ndarray | None = None,
                tori: tuple[tuple[int, ...], ...] = ()) -> tuple[np.ndarray, np.ndarray, PairLinks]:
    """Each pair's bandwidth (bytes/s) and latency (s) for ``plan --links exact``: the pair's link class as train
    prices its pipeline hop on it (:mod:`archsim.links`: the server's NVLink, its rings or PCIe,
    :func:`~archsim.links.nvlink_group`, in a server; :func:`~archsim.links.infiniband` between servers, each step
    at the slower of the two servers' devices' ``inter_node_latency_s`` as train takes it), whose
    send of d bytes costs α₀ + d / (η·B) (:meth:`~archsim.collectives.LinkClass.send_seconds`): the pair's
    bandwidth B (as the paper's model reads it) becomes η·B and its latency α₀. The min-cut capacities keep the
    stated figures. A server whose table names no device has no link class: refused. Third: the link classes
    (:class:`~archsim.collectives.PairLinks`, ``sharing``: the GPUs sharing each GPU's NIC), which a stage's
    all-reduce is priced on as train prices it; a GPU's own entry (the diagonal) is the class train gives a lone
    GPU of its server in a group over servers (its fabric's NVLink), and a pair of two servers of one NVLink domain
    (``domain``, :func:`domain_pairs`) takes its server's NVLink class, as train's group of the two runs on.
    ``nvls``: the ``[network]`` table's flag; an in-server pair's class and a domain pair's reduce in the switch
    where train's groups do (:func:`~archsim.links.switch_reduces`), the diagonal not (train's lone GPU of a group
    over servers). ``network``: the NICs between servers, whose leaves' uplinks slow a stage's all-reduce over
    them as train's group (:meth:`~archsim.collectives.PairLinks.allreduce_link`; None: no leaves). ``on_nic``: each
    GPU's NIC (:func:`gpu_nics`), which the sends of a split channel between servers share
    (:func:`channel_links`; None: every GPU its own). ``tori``: each server's torus (``[[servers]] torus``; empty:
    none), whose groups' all-reduces run on its rings as train's (:meth:`~archsim.collectives.PairLinks.allreduce_link`)."""
    if None in devices:
        raise InputError("--links exact prices each GPU pair on its device's link class: name a gpu or device in "
                         "every [[servers]] table, or plan with --links paper", file=file, field="servers")
    # each device's NIC (its step α and link rule, train's group_links.group_link): a pair of servers runs on the
    # slower of their two devices' NICs, term by term (slowest_class)
    nics = [device_nic(device, 1.0) for device in devices]
    kinds = sorted(set(nics), key=lambda link: (link.alpha_s, -link.efficiency))
    step = np.array([kinds.index(link) for link in nics], dtype=np.int32)
    classes: list = []
    table = np.zeros((len(kinds), len(kinds)), dtype=np.int32)
    for a, b in np.ndindex(table.shape):
        pair = slowest_class((kinds[a], kinds[b]))
        if pair not in classes:
            classes.append(pair)
        table[a, b] = classes.index(pair)
    index = table[np.ix_(step, step)][np.ix_(where, where)]
    effective = bandwidth * np.array([c.efficiency for c in classes])[index]
    latency = np.array([c.launch_s for c in classes])[index]
    starts = np.searchsorted(where, np.arange(len(devices)))
    lone = np.zeros(len(devices), dtype=np.int32)  # each server's NVLink class (its GPUs' diagonal entry)
    wired = np.zeros(len(where), dtype=bool)  # each GPU's server wires each pair its own NVLinks (a DGX-1)
    for server, device in enumerate(devices):
        first, gpus = int(starts[server]), int(np.count_nonzero(where == server))
        wired[first:first + gpus] = not (device.nvswitch or not device.nvlink_bytes_per_s)
        inside = slice(first, first + gpus)
        if device.nvswitch or not device.nvlink_bytes_per_s:  # every pair of the server on one link class
            link = server_link(device, (0, 1), intra[server], nvls)
            effective[inside, inside] = bandwidth[inside, inside] * link.efficiency
            latency[inside, inside] = link.launch_s
            index[inside, inside] = len(classes)
            classes.append(link)
        else:
            for a in range(gpus):  # wired directly (a DGX-1): each pair its rings, or PCIe
                for b in range(a + 1, gpus):
                    link = server_link(device, (a, b), intra[server], nvls)
                    for u, v in ((first + a, first + b), (first + b, first + a)):
                        effective[u, v] = bandwidth[u, v] * link.efficiency
                        latency[u, v] = link.launch_s
                        index[u, v] = len(classes)
                    classes.append(link)
        for g in range(first, first + gpus):  # a lone GPU's part of a group over servers (train's group_links.intra_server_link)
            index[g, g] = len(classes)
        alone = server_link(device, (0,), intra[server])  # one GPU alone: train's intra_server_link
        classes.append(alone)
        paired = server_link(device, (0,), intra[server], nvls)  # a domain pair: train's one_domain group
        lone[server] = len(classes) - (paired == alone)
        if paired != alone:
            classes.append(paired)
    if domain is not None and domain.any():  # train's group of two servers of one domain: NVLink (one_domain)
        index[domain] = np.broadcast_to(lone[where][:, None], index.shape)[domain]
        effective[domain] = bandwidth[domain] * np.array([c.efficiency for c in classes])[index[domain]]
        latency[domain] = np.array([c.launch_s for c in classes])[index[domain]]
    np.fill_diagonal(latency, 0.0)
    sends_on, takes_on = channel_links(where, np.arange(len(where)) if on_nic is None else on_nic, domain, wired)
    return effective, latency, PairLinks(tuple(classes), index, where, np.asarray(sharing, dtype=float),
                                         domain if domain is not None and domain.any() else None, network,
                                         sends_on, takes_on, tuple(tori))


def gpu_nics(network: ServerNetwork | None, where: np.ndarray, link: str) -> np.ndarray:
    """Each GPU's NIC (an index over the cluster's NICs), the one its sends to other servers leave on: on
    ``network`` its rail's (GPU g of a server on NIC g // gpus_per_nic, as :func:`network_pairs` reads it); on drawn
    ``[low, high]`` ranges (``network`` None) its server's one link (``link`` ``"shared"``) or its own
    (``"per_gpu_pair"``)."""
    if network is None:
        return where.copy() if link == "shared" else np.arange(len(where))
    local = np.arange(len(where)) - np.searchsorted(where, where)
    return where * network.nics_per_server + local // network.gpus_per_nic


def channel_links(where: np.ndarray, nics: np.ndarray, domain: np.ndarray | None,
                  wired: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(V, V) each: the link a pair's send leaves on and the one it arrives on, as numbers equal where two pairs
    share that link (:meth:`~archsim.collectives.PairLinks.channel_bandwidth`): between servers the sender's NIC
    and the receiver's (``nics``); in a server or an NVLink domain (``domain``) the sender's own link out and the
    receiver's own link in (an NVSwitch or PCIe board's GPU reaches every peer through it), except where its
    server wires the pair's NVLinks to the pair alone (``wired``: a DGX-1), the pair's own."""
    count, gpus = int(nics.max()) + 1, len(where)
    inside = where[:, None] == where[None, :]
    if domain is not None:
        inside = inside | domain
    own = count + gpus + np.arange(gpus)[:, None] * gpus + np.arange(gpus)[None, :]  # a pair's own NVLinks
    gpu = count + np.arange(gpus)
    sends = np.where(inside, np.where(wired[:, None], own, gpu[:, None]), nics[:, None])
    takes = np.where(inside, np.where(wired[:, None], own, gpu[None, :]), nics[None, :])
    return sends.astype(np.int64), takes.astype(np.int64)


def domain_fabric(network: ServerNetwork | None, where: np.ndarray, intra: list[float], chips: list) -> float | None:
    """The link (bytes/s per GPU per direction) a pair of GPUs in two servers of one NVLink domain runs on: the
    servers' one in-server fabric, where ``nvlink_domain`` spans servers of one kind — one chip (``chips``: each
    server's device or catalog name), GPU count and fabric, train's :attr:`GpuCluster.heterogeneous
    <archsim.training.cluster.GpuCluster.heterogeneous>` read the same way, since train runs a domain of mixed
    servers over the NICs. None: no such domain (each server's NVLink its own)."""
    sizes = np.bincount(where)
    if network is None or network.nvlink_domain <= sizes.max() or len(set(chips)) > 1 or \
            len(set(sizes.tolist())) > 1 or len(set(intra)) > 1:
        return None
    return intra[0]


def domain_pairs(network: ServerNetwork | None, where: np.ndarray, fabric: float | None,
                 file_servers: np.ndarray | None = None) -> np.ndarray | None:
    """(V, V) booleans: the GPU pairs of two servers in one NVLink domain (:meth:`archsim.network.ServerNetwork.
    one_domain`, the rule train's groups read, on the file's servers), where :func:`domain_fabric` found one
    (``fabric`` not None); else None. ``file_servers``: each GPU's server as the file numbers it where ``where`` is
    a placement's order (a domain holds the file's servers; None: ``where``'s are)."""
    if network is None or fabric is None:
        return None
    servers = where if file_servers is None else file_servers
    return (where[:, None] != where[None, :]) & network.one_domain(servers[:, None], servers[None, :],
                                                                   int(np.bincount(where).max()))


def board_pairs(bandwidth: np.ndarray, where: np.ndarray, boards: list[str | None], intra: list[float]) -> None:
    """Each in-server pair of a server of directly wired NVLink GPUs (a DGX-1 of V100s) at the link train's
    pipeline hop between them runs on (:func:`archsim.links.nvlink_group`: its NVLink rings' share of the
    fabric, or PCIe where no ring joins them), in place; an NVSwitch or PCIe board's pairs keep the stated fabric,
    which is what that function gives them. A GPU name the catalog lacks is left to train's and plan's own
    refusal."""
    if not any(boards):
        return
    from archsim.devices.device import catalog_device  # only a server naming a catalog GPU reads the catalog

    starts = np.searchsorted(where, np.arange(len(boards)))
    for server, name in enumerate(boards):
        if name is None:
            continue
        try:
            device = catalog_device(name)
        except InputError:
            continue
        if not device.nvlink_bytes_per_s or device.nvswitch:
            continue
        first, gpus = int(starts[server]), int(np.count_nonzero(where == server))
        for a in range(gpus):
            for b in range(a + 1, gpus):
                pair = nvlink_group(device, (a, b), intra[server]).bandwidth
                bandwidth[first + a, first + b] = bandwidth[first + b, first + a] = pair


def torus_pairs(bandwidth: np.ndarray, where: np.ndarray, tori: tuple[tuple[int, ...], ...], devices: list,
                intra: list[float]) -> None:
    """Each in-server pair of a server wired as a torus (``[[servers]] torus``) at one link, in place: the server's
    fabric over its chip's links (:func:`archsim.links.torus_link`: a send between two chips runs on one, as train's
    pipeline hop on the torus), bytes/s per direction. Other servers' pairs keep theirs."""
    for server, dims in enumerate(tori):
        if dims:
            inside = np.flatnonzero(where == server)
            block = np.ix_(inside, inside)
            bandwidth[block] = np.where(bandwidth[block] > 0, intra[server] / devices[server].nvlinks, 0.0)


def network_pairs(network: ServerNetwork, where: np.ndarray, inside: np.ndarray, fabric: float | None = None,
                  file_servers: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each GPU pair's bandwidth (bytes/s, one direction), its min-cut capacity and each GPU's NIC's GPUs, on the
    :class:`~archsim.network.ServerNetwork` train prices its groups over (:func:`archsim.network.read_network`, the same
    object :class:`~archsim.training.cluster.GpuCluster` holds): a pair in a server keeps ``inside``'s entry (its
    server's fabric, a DGX-1's rings: :func:`board_pairs`); a transfer between GPUs of two servers runs at one NIC's
    speed (the sending GPU's rail: alone, it gets the whole NIC, :func:`archsim.links.nic_share`), over the
    oversubscription where the servers sit under different leaves. The k_a·k_b GPU pairs of two NICs share that NIC
    pair's link, so each pair's capacity is its bandwidth / (k_a·k_b). ``where``: each GPU's server, in order.
    Without a ``[network]`` table the network is ``inter_server_gbps``'s: ``"shared"`` one NIC per server,
    ``"per_gpu_pair"`` one NIC per GPU (:mod:`archsim.network`). ``fabric`` (:func:`domain_fabric`): a pair of two
    servers of one NVLink domain runs on it, as train's group of the two does, its capacity the link itself.
    ``file_servers``: each GPU's server as the file numbers it where ``where`` is a server order of its own (a
    placement's): a leaf and an NVLink domain hold the file's servers (None: ``where``'s are)."""
    gpus = np.bincount(where)
    local = np.arange(len(where)) - np.searchsorted(where, where)  # each GPU's index in its server (servers in order)
    rail = local // network.gpus_per_nic
    on_nic = np.minimum(network.gpus_per_nic, gpus[where] - rail * network.gpus_per_nic)  # GPUs sharing its NIC
    nic = network.nic_gbps * 1e9 / 8
    inter = np.broadcast_to(nic_share(nic, on_nic[:, None], alone=True), inside.shape).astype(float)  # one send
    if network.servers_per_leaf:
        leaf = (where if file_servers is None else file_servers) // network.servers_per_leaf
        inter[leaf[:, None] != leaf[None, :]] /= network.oversubscription
    same = where[:, None] == where[None, :]
    links = np.where(same, inside, inter)
    domain = domain_pairs(network, where, fabric, file_servers)
    if domain is not None:
        links[domain], same = fabric, same | domain
    np.fill_diagonal(links, 0.0)
    return links, np.where(same, links, links / np.outer(on_nic, on_nic)), on_nic
