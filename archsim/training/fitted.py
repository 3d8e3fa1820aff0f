"""archsim's only fitted constants for GPU training, with how each was fitted and on what.

Collectives (NVLink inside a server): η, α, α₀, γ of
:class:`~archsim.collectives.LinkClass` (:data:`archsim.links.A100_NVLINK`, :data:`archsim.links.V100_NVLINK`:
kept with the link classes below ``spp/`` and ``training/``, so plan and train price a pair of GPUs alike),
fitted by :func:`archsim.training.nccl_fit.fit_link`
to the nccl-tests all-reduce tables of **2, 4 and 8 GPUs** (sizes ≥ 16 MB), once for A100s (NVSwitch)
and once for V100s (DGX-1 hybrid cube-mesh, bandwidth = NVLink rings × one link's); the tables of 3,
5, 6 and 7 GPUs are kept for the check (tests/test_training_collectives.py). Then, those held, NCCL's LL128 protocol's
α₀ and α (:data:`archsim.links.A100_PROTOCOLS`, :data:`archsim.links.V100_PROTOCOLS`) by
:func:`archsim.training.nccl_fit.fit_protocols` on the same tables at every size (tests/test_nccl_protocols.py). Refit
with ``python benchmarks/bench_vtrain_e2e.py --refit``.

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

from archsim.devices.kernel_constants import KernelConstants, one_fraction

NCCL_FIT_GPUS = (2, 4, 8)
NCCL_CHECK_GPUS = (3, 5, 6, 7)
FIT_LAYERS = 16  # the model shape(s) the kernel efficiencies are fitted on


def is_fit_run(layers: int) -> bool:
    """Whether a measured run belongs to the fit part (its model has :data:`FIT_LAYERS` layers)."""
    return layers == FIT_LAYERS


# Tensor-core kernel constants on an A100 (feed and energy_pj act on fp32 only; tensor_energy_pj, the tensor
# cores' power cap, is FITTED's, fitted on DeepBench's fp16 GEMMs): gemm fitted alone on DeepBench's 74
# compute-bound V100 fp16 GEMMs (0.002 grid, seconds MAPE 4.3%); memory, launch_s and host_s then fitted on the
# 16-layer runs with it held (2026-11-29; the joint fit of all four there gave 0.911, 0.749, 33.3 µs, 69.4 µs).
A100_KERNELS = one_fraction(gemm=0.824, memory=0.808, launch_s=32.4e-6, host_s=69.4e-6)


def kernels(gpu_name: str) -> KernelConstants:
    """Kernel efficiencies for a GPU: the A100's fit for every GPU until others are measured.

    ``gemm`` and ``memory`` are fractions of the GPU's own datasheet peaks, so they scale with it;
    ``launch_s`` and ``host_s`` are seconds. On Hopper they are too optimistic (the Hopper check,
    ``benchmarks/bench_hopper_breakdown.py``): measured GEMMs run at 0.70–0.95 of the speed these give,
    reductions (LayerNorm, softmax) 0.26–0.64 of HBM against 0.808, and full recompute costs
    1.6–1.9 ms per checkpointed layer more at micro-batch 1. No allowed data (vTrain's A100 runs,
    NeuSight's five GPUs, DeepBench's) fixes a Hopper constant for them — a host cost per
    checkpointed layer fitted on the A100 runs comes out 0 — so none is added (docs/accuracy.md)."""
    return A100_KERNELS


__all__ = [
    "A100_KERNELS",
    "FIT_LAYERS",
    "NCCL_CHECK_GPUS",
    "NCCL_FIT_GPUS",
    "is_fit_run",
    "kernels",
]
