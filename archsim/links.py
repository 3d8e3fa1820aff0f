"""How one pair of GPUs is priced, written once for plan (:func:`archsim.spp.topology.build_topology`) and
train (:class:`archsim.training.cluster.GpuCluster`): what a cluster file's link figures mean in bytes/s, the
link classes (NVLink, a DGX-1's rings, PCIe, a NIC) with their fitted constants (fitted by
:func:`archsim.training.nccl_fit.fit_link`; how: :mod:`archsim.training.fitted`), and a NIC's share.

Below ``spp/`` and ``training/`` alike (docs/architecture.md, "Packages and layering"), so both read one meaning.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from archsim.collectives import LinkClass
from archsim.errors import InputError
from archsim.nccl_protocols import LL128_FRACTION, Protocol
from archsim.nvlink_rings import ring_count
from archsim.torus import torus_rings

if TYPE_CHECKING:
    from archsim.devices.device import Device


def fabric_bytes_per_s(intra_server_gbps: float) -> float:
    """A cluster file's ``intra_server_gbps`` (Gbit/s per GPU, both directions together: an A100's NVLink 3
    is 4800 = 600 GB/s) as the per-direction bytes/s one transfer and the link classes take (the catalog's
    NVLink figure: 300 GB/s for that A100)."""
    return intra_server_gbps * 1e9 / 8 / 2


def nic_share(nic_bytes_per_s, sharing, *, alone: bool):
    """What one GPU's transfer to another server gets of its NIC (bytes/s per direction; a shared
    ``inter_server_gbps`` link is one NIC) that ``sharing`` GPUs use. ``alone``: the transfer runs by itself —
    plan's pipeline sends, one activation at a time — and gets the whole NIC; otherwise every GPU sharing the
    NIC sends at once — train's collectives and pipeline hops, where GPU g of one stage sends to GPU g of the
    next for every g — and each gets its share, NIC / ``sharing``. Numbers or numpy arrays alike."""
    return nic_bytes_per_s if alone else nic_bytes_per_s / sharing


# η, α (s), α₀ (s), γ (s/byte) of NVLink on an A100 server, per direction 300 GB/s (datasheet).
A100_NVLINK = {"efficiency": 0.998, "alpha_s": 3.15e-6, "launch_s": 52.7e-6, "copy_s_per_byte": 1.80e-12}

# η, α (s), α₀ (s), γ (s/byte) of V100 NVLink rings on a DGX-1 (per link 25 GB/s per direction).
V100_NVLINK = {"efficiency": 0.903, "alpha_s": 0.0, "launch_s": 37.9e-6, "copy_s_per_byte": 0.357e-12}

# NCCL's LL128 beside Simple on those NVLinks (archsim.nccl_protocols): its α₀ and α (s) fitted on the same 2-, 4- and
# 8-GPU tables at every size, Simple's constants above held (archsim.training.nccl_fit.fit_protocols). LL is not
# attached: from 1 MB, where the tables start, it is never the fastest, so they cannot fix its latencies.
A100_PROTOCOLS = (Protocol("LL128", LL128_FRACTION, 30.7e-6, 4.50e-6),)
V100_PROTOCOLS = (Protocol("LL128", LL128_FRACTION, 0.08e-6, 7.69e-6),)


def nvlink(bandwidth: float, alpha_s: float | None = None, efficiency: float | None = None) -> LinkClass:
    """The NVLink link class of a server whose GPUs each have ``bandwidth`` bytes/s per direction; ``alpha_s``:
    the per-step latency a device states for its fabric (a device file's ``[links] intra_latency_us``, s),
    None: the fitted one. ``efficiency``: the η a device file states for its fabric (``[links] efficiency``,
    :attr:`~archsim.devices.device.Device.link_efficiency`): its collectives then run at η·bandwidth with no launch
    latency or copy cost beside their steps' — those are NCCL's kernels on NVSwitch GPUs, fitted on nccl-tests,
    not a designer's stated link; None: the NCCL fit whole (a catalog GPU's)."""
    if efficiency is None:
        return replace(_link("nvlink", bandwidth, A100_NVLINK, alpha_s), protocols=A100_PROTOCOLS)
    stated = {**A100_NVLINK, "efficiency": efficiency, "launch_s": 0.0, "copy_s_per_byte": 0.0}
    return _link("nvlink", bandwidth, stated, alpha_s)


def nvlink_group(device: Device, members: tuple[int, ...], bandwidth: float | None = None) -> LinkClass:
    """The link class of a collective over ``members`` (GPU indices within one server) of ``device``:
    NVSwitch servers give every group the GPU's full NVLink bandwidth; a DGX-1 of V100s gives it its
    NVLink rings' (:func:`~archsim.nvlink_rings.ring_count`: over direct NVLinks, or where none close a
    ring with hops through a GPU of the group, as NCCL's PATH_NVB), PCIe where no ring exists or the
    board has no NVLink (a PCIe card). ``bandwidth``: the server's in-server fabric, bytes/s per GPU per
    direction, as its cluster file states it (``intra_server_gbps``, :func:`fabric_bytes_per_s`); None:
    the device's own NVLink (or, on a PCIe card, its PCIe) figure. Each step pays the device's own
    latency where it states one (``intra_latency_s``), else the fitted α; a device file's fabric runs at the
    efficiency it states (:func:`nvlink`)."""
    alpha = device.intra_latency_s
    if not device.nvlink_bytes_per_s:
        return _link("pcie", device.pcie_bytes_per_s if bandwidth is None else bandwidth, V100_NVLINK, alpha)
    fabric = device.nvlink_bytes_per_s if bandwidth is None else bandwidth
    if device.nvswitch:
        return nvlink(fabric, alpha, device.link_efficiency)
    rings = ring_count(tuple(members))
    link = fabric / device.nvlinks  # one NVLink's share of the stated fabric
    if not rings:
        return _link("pcie", device.pcie_bytes_per_s, V100_NVLINK, alpha)
    return replace(_link("nvlink", rings * link, V100_NVLINK, alpha), protocols=V100_PROTOCOLS)  # LL128: NVLink only


def server_link(device: Device, members: tuple[int, ...], bandwidth: float | None = None,
                nvls: bool = False) -> LinkClass:
    """The in-server part of a link as plan's pair matrix and train's groups both price it: ``members`` (GPU indices
    within one server) of two or more on :func:`nvlink_group`; one GPU alone (its part of a group over servers, or a
    pair of two servers of one NVLink domain) on its server's NVLink at ``bandwidth`` (None: the device's own
    NVLink), each step at the device's ``intra_latency_s``. Bytes/s per direction. ``nvls``: the cluster's
    ``[network] nvls`` flag, the switch reducing where :func:`switch_reduces` says so."""
    if len(members) > 1:
        link = nvlink_group(device, members, bandwidth)
    else:
        link = nvlink(device.nvlink_bytes_per_s if bandwidth is None else bandwidth, device.intra_latency_s,
                      device.link_efficiency)
    return replace(link, nvls=True) if switch_reduces(device, nvls) else link


def torus_link(device: Device, dims: Sequence[int], members: Sequence[int], bandwidth: float | None = None) -> LinkClass:
    """The link class of a group of ``members`` (chip indices within one server) on a torus of ``dims`` (chips per
    dimension, ``[[servers]] torus``): the rings it spans (:func:`~archsim.torus.torus_rings`), each over two
    of a chip's links, its ``bandwidth`` one link's — the chip's fabric over its link count (``bandwidth``, bytes/s per chip per
    direction, else the device's own; a device file's ``[links] intra_gbps`` over ``links``: 300 / 6 = 50 GB/s on
    ``tpu_v4_like.toml``) — at the device's step latency and efficiency as its switched fabric (:func:`nvlink`)."""
    fabric = device.fabric_bytes_per_s if bandwidth is None else bandwidth
    base = nvlink(fabric, device.intra_latency_s, device.link_efficiency)
    return replace(base, name="torus", bandwidth=fabric / device.nvlinks, torus=torus_rings(dims, members) or (1,))


def switch_reduces(device: Device, nvls: bool) -> bool:
    """Whether a group's all-reduce on ``device``'s NVLink runs NVLS (NVLink SHARP, the NVSwitch reducing): the
    cluster's ``[network] nvls`` flag on a board whose switch can (the catalog's Hopper boards, ``Device.nvls``).
    The one rule of train's groups and plan's exact classes."""
    return nvls and device.nvls


def check_nvls(nvls: bool, devices: Iterable[Device | None], file: str) -> None:
    """Refuse the cluster file's ``[network] nvls = true`` where a server's board cannot reduce in its switch
    (:func:`switch_reduces` would price it as NVLS nowhere, silently): the one refusal plan, train and search
    read, from :func:`archsim.spp.topology.build_topology`. ``devices``: each server's device (None: it names
    none, nothing to judge)."""
    unable = next((d for d in devices if d is not None and not d.nvls), None)
    if nvls and unable is not None:  # NVLink SHARP is third-generation NVSwitch's (Hopper's)
        raise InputError(f"nvls = true, but the {unable.name}'s links do not reduce in the switch (NVLink SHARP "
                         "needs third-generation NVSwitch: H100 or H200 SXM); write nvls = false", file=file,
                         field="nvls")


def _link(name: str, bandwidth: float, fit: dict[str, float], alpha_s: float | None = None) -> LinkClass:
    """``fit``'s link class at ``bandwidth``; ``alpha_s`` (s), where a device states it, in place of the fitted
    per-step latency: the one place a device's own step latency enters the collective model."""
    alpha = fit["alpha_s"] if alpha_s is None else alpha_s
    return LinkClass(name, bandwidth, fit["efficiency"], alpha, fit["launch_s"], fit["copy_s_per_byte"])


# η of a NIC: the channel speed NCCL's graph search settles on for it (its speedArrayInter: 24 GB/s
# for a 25 GB/s HDR NIC, 48 for 50 GB/s NDR, 12 for 12.5 GB/s), not fitted.
NIC_EFFICIENCY = 0.96


def infiniband(bandwidth: float, alpha_s: float | None = None, efficiency: float | None = None) -> LinkClass:
    """An inter-server link of ``bandwidth`` bytes/s (a group's share of its servers' NICs): not fitted
    (no multi-server tables are shipped; the cited figures check it, tests/data/nccl_multinode.csv);
    η from NCCL's channel speeds, twice NVLink's step latency (or ``alpha_s``, s: a device file's
    ``[links] inter_node_latency_us``), NVLink's launch latency and copy cost. ``efficiency``: the η a device
    file states for its links (``[links] efficiency``, :attr:`~archsim.devices.device.Device.link_efficiency`),
    its NIC then the ideal ring at η·bandwidth with no launch or copy cost beside its steps, as its fabric
    (:func:`nvlink`): an accelerator's inter-chip network is not NCCL's; None: NCCL's (a catalog GPU's, a file's
    naming ``"nccl"``)."""
    nic = {**A100_NVLINK, "efficiency": NIC_EFFICIENCY, "alpha_s": A100_NVLINK["alpha_s"] * 2}
    if efficiency is not None:
        nic = {**nic, "efficiency": efficiency, "launch_s": 0.0, "copy_s_per_byte": 0.0}
    return _link("infiniband", bandwidth, nic, alpha_s)


def device_nic(device: Device, bandwidth: float) -> LinkClass:
    """``device``'s NIC at ``bandwidth`` bytes/s (:func:`infiniband`): its own step latency and link rule, the one
    reading of a device's NIC for train's groups and plan's exact classes."""
    return infiniband(bandwidth, device.inter_node_latency_s, device.link_efficiency)


__all__ = ["A100_NVLINK", "A100_PROTOCOLS", "NIC_EFFICIENCY", "V100_NVLINK", "V100_PROTOCOLS", "check_nvls", "device_nic",
           "fabric_bytes_per_s", "infiniband", "nic_share", "nvlink", "nvlink_group", "torus_link"]
