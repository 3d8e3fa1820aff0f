"""archsim's only fitted constants for GPU training, with how each was fitted and on what.

Collectives (NVLink inside a server): η, α, α₀, γ of
:class:`~archsim.collectives.LinkClass`, fitted by :func:`archsim.training.nccl_fit.fit_link`
to the nccl-tests all-reduce tables of **2, 4 and 8 GPUs** (sizes ≥ 16 MB), once for A100s (NVSwitch)
and once for V100s (DGX-1 hybrid cube-mesh, bandwidth = NVLink rings × one link's); the tables of 3,
5, 6 and 7 GPUs are kept for the check (tests/test_training_collectives.py). Refit with
``python benchmarks/bench_vtrain_e2e.py --refit``.

GPU kernels on tensor cores (:data:`A100_KERNELS`, the one constants type of the kernel model,
:class:`~archsim.devices.kernel_constants.KernelConstants`, with one HBM fraction for every memory-bound class:
:func:`~archsim.devices.kernel_constants.one_fraction`), fitted in two steps by
``benchmarks/bench_vtrain_e2e.py --refit``: (1) gemm alone on DeepBench's compute-bound V100 fp16
GEMMs, each timed alone (:func:`archsim.validation.gemm_rate.fit_on_deepbench`): large GEMMs tell the
tensor rate apart from the host and gap time the iterations trade it against; (2) with gemm held,
memory, launch_s and host_s on the measured Megatron-DeepSpeed iterations of the
**16-layer models only** (hidden 1,024 and 2,048; :func:`is_fit_run`) through the tensor-core GEMM
path (:func:`~archsim.devices.kernels.tensor_path`); the 12-, 20- and 24-layer models are never seen
by the fit, and their error is the one archsim reports. fp32 ops on a catalog GPU take the kernel
model's own fit on NeuSight's kernels instead (:data:`archsim.devices.kernel_constants.FITTED`).

No other constant is fitted: every other figure is a datasheet value (:mod:`archsim.devices.catalog`)
or a count of FLOPs, bytes and kernels.
"""

from __future__ import annotations

from archsim.collectives import LinkClass
from archsim.devices.kernel_constants import KernelConstants, one_fraction

NCCL_FIT_GPUS = (2, 4, 8)
NCCL_CHECK_GPUS = (3, 5, 6, 7)
FIT_LAYERS = 16  # the model shape(s) the kernel efficiencies are fitted on


def is_fit_run(layers: int) -> bool:
    """Whether a measured run belongs to the fit part (its model has :data:`FIT_LAYERS` layers)."""
    return layers == FIT_LAYERS


# η, α (s), α₀ (s), γ (s/byte) of NVLink on an A100 server, per direction 300 GB/s (datasheet).
A100_NVLINK = {"efficiency": 0.998, "alpha_s": 3.15e-6, "launch_s": 52.7e-6, "copy_s_per_byte": 1.80e-12}

# η, α (s), α₀ (s), γ (s/byte) of V100 NVLink rings on a DGX-1 (per link 25 GB/s per direction).
V100_NVLINK = {"efficiency": 0.903, "alpha_s": 0.0, "launch_s": 37.9e-6, "copy_s_per_byte": 0.357e-12}

# Tensor-core kernel constants on an A100 (feed and energy_pj act on fp32 only; tensor_energy_pj, the tensor
# cores' power cap, is FITTED's, fitted on DeepBench's fp16 GEMMs): gemm fitted alone on DeepBench's 74
# compute-bound V100 fp16 GEMMs (0.002 grid, seconds MAPE 4.3%); memory, launch_s and host_s then fitted on the
# 16-layer runs with it held (2026-11-29; the joint fit of all four there gave 0.911, 0.749, 33.3 µs, 69.4 µs).
A100_KERNELS = one_fraction(gemm=0.824, memory=0.808, launch_s=32.4e-6, host_s=69.4e-6)


def nvlink(bandwidth: float, alpha_s: float | None = None) -> LinkClass:
    """The NVLink link class of a server whose GPUs each have ``bandwidth`` bytes/s per direction; ``alpha_s``:
    the per-step latency a device states for its fabric (a device file's ``[links] intra_latency_us``, s),
    None: the fitted one."""
    return _link("nvlink", bandwidth, A100_NVLINK, alpha_s)


def nvlink_group(device, members: tuple[int, ...], bandwidth: float | None = None) -> LinkClass:
    """The link class of a collective over ``members`` (GPU indices within one server) of ``device``:
    NVSwitch servers give every group the GPU's full NVLink bandwidth; a DGX-1 of V100s gives it its
    NVLink rings' (:func:`~archsim.training.nvlink_rings.ring_count`), PCIe where no ring exists or the
    board has no NVLink (a PCIe card). ``bandwidth``: the server's in-server fabric, bytes/s per GPU per
    direction, as its cluster file states it (``intra_server_gbps``, :func:`archsim.links.fabric_bytes_per_s`); None:
    the device's own NVLink (or, on a PCIe card, its PCIe) figure. Each step pays the device's own
    latency where it states one (``intra_latency_s``), else the fitted α."""
    alpha = device.intra_latency_s
    if not device.nvlink_bytes_per_s:
        return _link("pcie", device.pcie_bytes_per_s if bandwidth is None else bandwidth, V100_NVLINK, alpha)
    fabric = device.nvlink_bytes_per_s if bandwidth is None else bandwidth
    if device.nvswitch:
        return nvlink(fabric, alpha)
    from archsim.training.nvlink_rings import ring_count

    rings = ring_count(tuple(members))
    link = fabric / device.nvlinks  # one NVLink's share of the stated fabric
    return _link("nvlink" if rings else "pcie", rings * link if rings else device.pcie_bytes_per_s, V100_NVLINK,
                 alpha)


def _link(name: str, bandwidth: float, fit: dict[str, float], alpha_s: float | None = None) -> LinkClass:
    """``fit``'s link class at ``bandwidth``; ``alpha_s`` (s), where a device states it, in place of the fitted
    per-step latency: the one place a device's own step latency enters the collective model."""
    alpha = fit["alpha_s"] if alpha_s is None else alpha_s
    return LinkClass(name, bandwidth, fit["efficiency"], alpha, fit["launch_s"], fit["copy_s_per_byte"])


# η of a NIC: the channel speed NCCL's graph search settles on for it (its speedArrayInter: 24 GB/s
# for a 25 GB/s HDR NIC, 48 for 50 GB/s NDR, 12 for 12.5 GB/s), not fitted.
NIC_EFFICIENCY = 0.96


def infiniband(bandwidth: float, alpha_s: float | None = None) -> LinkClass:
    """An inter-server link of ``bandwidth`` bytes/s (a group's share of its servers' NICs): not fitted
    (no multi-server tables are shipped; the cited figures check it, tests/data/nccl_multinode.csv);
    η from NCCL's channel speeds, twice NVLink's step latency (or ``alpha_s``, s: a device file's
    ``[links] inter_node_latency_us``), NVLink's launch latency and copy cost."""
    nic = {**A100_NVLINK, "efficiency": NIC_EFFICIENCY, "alpha_s": A100_NVLINK["alpha_s"] * 2}
    return _link("infiniband", bandwidth, nic, alpha_s)


def kernels(gpu_name: str) -> KernelConstants:
    """Kernel efficiencies for a GPU: the A100's fit for every GPU until others are measured.

    ``gemm`` and ``memory`` are fractions of the GPU's own datasheet peaks, so they scale with it;
    ``launch_s`` and ``host_s`` are seconds. On Hopper they are too optimistic (the Hopper check,
    ``benchmarks/bench_hopper_breakdown.py``): measured GEMMs run at 0.70–0.95 of the speed these give,
    reductions (LayerNorm, softmax) 0.26–0.64 of HBM against 0.808, and full recompute costs
    1.6–1.9 ms per checkpointed layer more at micro-batch 1. No allowed data (vTrain's A100 runs,
    NeuSight's five GPUs, DeepBench's) fixes a Hopper constant for them — a host cost per
    checkpointed layer fitted on the A100 runs comes out 0 — so none is added (docs/training.md)."""
    return A100_KERNELS


__all__ = [
    "A100_KERNELS",
    "A100_NVLINK",
    "FIT_LAYERS",
    "NCCL_CHECK_GPUS",
    "NCCL_FIT_GPUS",
    "NIC_EFFICIENCY",
    "V100_NVLINK",
    "infiniband",
    "is_fit_run",
    "kernels",
    "nvlink",
    "nvlink_group",
]
