"""Which kernel a GPU library runs for a convolution op: the mechanisms DeepBench's timings show.

* **Strided δ as s² phase sub-convolutions of one padded shape** (``phase-padded``, the default).
  A stride-s layer's δ splits into s² stride-1 convolutions, one per input phase (h ≡ a, w ≡ b
  mod s), each over ⌈H/s⌉ × ⌈W/s⌉ pixels with a sub-kernel of ⌈R/s⌉ × ⌈S/s⌉ taps; run as one
  batched kernel, every phase takes the largest phase's sub-kernel, so phases with fewer real taps
  multiply zeros (:func:`padded_phase_dgrad`). It sits between the two limits: the exact phase
  GEMMs (``stride-aware``, archsim's ``exact`` lowering) and the implicit GEMM over the output
  gradient with stride − 1 zeros inserted (``zero-insertion``, LayerPipe's ``paper`` δ, s² times the
  exact MACs). For a 1×1 stride-2 layer it equals zero insertion (three of four phases have no
  tap); for 5×5 stride 2 it is 36/25 of the exact MACs, not 4×. Evidence (docs/gpu-validation.md):
  the measured δ/F time ratio of 5×5 stride-2 layers is 0.9–2.3 on every DeepBench GPU, not the
  4 zero insertion needs, while 1×1 stride-2 layers' δ is under-predicted 0.3–0.8× by the exact
  phase GEMMs on every GPU; seconds MAPE of δ falls on 8 of the 10 GPUs.
* **CUDA-core fallback of non-tensor-core shapes.** fp16 tensor-core kernels need channels and
  filters in multiples of 8 (cuDNN 7's rule, NVIDIA's Deep Learning Performance Guide); other layers
  (first layers with 1–3 input channels) run on the FP32 lanes, modeled as the GPU's ``cuda_cores``
  arrays at the same clock. Padding the channels to 8 on tensor cores predicts about the same cost for
  1–3 channels; both are named in the docs. Convolutions only: DeepBench's cuBLAS GEMMs with M = 35
  or 5124 show no such slowdown (their ρ drops from 0.964 to 0.934 on V100 if they fall back too).

* **Winograd forward where the measurement says so.** DeepBench records the forward algorithm
  cuDNN/MIOpen picked. A stride-1 r×r layer run by Winograd F(2×2, r×r) (Lavin & Gray 2016) is
  (2 + r − 1)² independent GEMMs of (N·⌈P/2⌉·⌈Q/2⌉ tiles) × C × K — one per point of the transformed
  tile — instead of the im2col GEMM: 2.25× fewer MACs for 3×3. The transforms (elementwise work) are
  not costed; the tile is Lavin & Gray's smallest, not chosen to match.

* **Split-K weight gradients.** A convolution's G is a GEMM of C·R·S × M outputs over an N·P·Q-long
  reduction; cuDNN's wgrad kernels split that reduction over CTAs, so its op is marked ``split_k``
  and the device model times it with split-K on the tensor tiles too (the SIMT tiles and the arrays
  view split every GEMM already).

* **δ as the device model times it** (:func:`timed_op`, the seconds view only: the arrays view prices
  compute alone). A layer with fewer input channels than the narrowest tile computes δ by col2im —
  one GEMM of the forward's MACs, wide both ways, and a memory-bound scatter (:func:`col2im_dgrad`);
  on the FP32 lanes a 3×3 stride-1 layer's δ runs by Winograd F(2×2, 3×3) (:func:`winograd_dgrad`),
  as the SIMT libraries' forwards of those layers are recorded to.

Nothing here is fitted: each chooses which GEMMs (and which memory-bound kernel) run; the arrays
view costs them as SCALE-Sim does, the device model by :mod:`archsim.devices.kernel_ops`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from archsim.devices.kernels import TILES
from archsim.errors import InputError
from archsim.lowering import Gemm, Mode, TrainingOp, delta_phases, lower_layer
from archsim.workload.layer import Layer
from archsim.workload.layer_types import CONV_KINDS

if TYPE_CHECKING:
    from archsim.validation.gpu import GpuArrays

STRIDED_DGRAD = {
    "phase-padded": "s² phase sub-convolutions in one batched kernel, each (N·⌈H/s⌉·⌈W/s⌉) × (⌈R/s⌉·⌈S/s⌉·K) × C",
    "zero-insertion": "zero insertion: dense transposed conv (N·H·W × R·S·K × C)",
    "stride-aware": "stride-aware phase GEMMs (only the taps that land)",
}
"""How a strided layer's δ runs (:func:`kernel_ops`), as the assumptions table names it."""
DGRAD = tuple(STRIDED_DGRAD)
"""The strided-δ mechanisms; the first is the default."""


def check_dgrad(dgrad: str) -> str:
    if dgrad not in DGRAD:
        raise InputError(f"unknown dgrad {dgrad!r}; choose {' or '.join(DGRAD)}", field="dgrad")
    return dgrad


def kernel_ops(layer: Layer, batch: int, mode: Mode, element_bytes: int, dgrad: str) -> tuple[TrainingOp, ...]:
    """F, D, G of ``layer`` as the library runs them: a strided D as padded phase sub-convolutions
    (:func:`padded_phase_dgrad`), by zero insertion (``paper`` lowering) or stride-aware; a
    convolution's G split over its reduction where that finishes first (``split_k``)."""
    ops = tuple(_split_wgrad(op, layer) for op in lower_layer(layer, batch, mode, element_bytes).ops)
    if check_dgrad(dgrad) == "stride-aware" or mode == "paper" or layer.stride == 1:
        return ops
    if dgrad == "phase-padded":
        return tuple(padded_phase_dgrad(op, layer, batch) for op in ops)
    dense = {op.kind: op for op in lower_layer(layer, batch, "paper", element_bytes).ops}
    return tuple(dense["D"] if op.kind == "D" and "D" in dense else op for op in ops)


def padded_phase_dgrad(op: TrainingOp, layer: Layer, batch: int) -> TrainingOp:
    """δ ``op`` of a strided convolution as s² stride-1 sub-convolutions of one shape, one batched
    kernel: phase (a, b) computes the input pixels h ≡ a, w ≡ b (mod s) — at most ⌈H/s⌉ × ⌈W/s⌉ of
    them — with the sub-kernel of the phases' largest tap count per axis (⌈R/s⌉ × ⌈S/s⌉ undilated),
    so a phase with fewer real taps multiplies zeros and one with none still runs. GEMMs:
    (N·⌈H/s⌉·⌈W/s⌉) × (sub-taps · M/g) × C/g, s² · g of them (fewer phases where H or W < s).
    Other ops (and deconv, fc, stride-1 layers) as they are."""
    if op.kind != "D" or layer.kind != "conv" or layer.stride == 1 or not op.gemms:
        return op
    s, g = layer.stride, layer.groups
    taps = [max(t for _, t in delta_phases(size, kernel, s, layer.padding, layer.dilation))
            for size, kernel in ((layer.ifmap_h, layer.filter_h), (layer.ifmap_w, layer.filter_w))]
    rows = batch * -(-layer.ifmap_h // s) * -(-layer.ifmap_w // s)
    phases = min(s, layer.ifmap_h) * min(s, layer.ifmap_w)
    return replace(op, gemms=(Gemm(rows, taps[0] * taps[1] * (layer.filters // g), layer.channels // g, phases * g),))


NARROWEST_TILE = min(min(tile) for tile in TILES)
"""The narrowest side of any GPU GEMM tile (:data:`archsim.devices.kernels.TILES`; the tensor tiles
are wider): an implicit-GEMM δ with fewer input channels than this wastes most of every tile."""


def timed_op(op: TrainingOp, layer: Layer, batch: int, element_bytes: int, winograd: bool) -> TrainingOp:
    """``op`` (from :func:`kernel_ops`) as the device model times it: a narrow layer's δ by col2im
    (:func:`narrow_dgrad`); where ``winograd`` (kernels on the FP32 lanes — fp32, or an fp16 layer
    that falls back to them — and Winograd not switched off) a 3×3 stride-1 layer's δ by Winograd
    (:func:`winograd_dgrad`); every other op as it is.
    Why not in :func:`kernel_ops`: the arrays view prices compute alone and would count col2im's
    scatter, a memory-bound kernel, as nearly free; its Winograd follows the recorded forwards."""
    if op.kind != "D":
        return op
    if narrow_dgrad(layer):
        return col2im_dgrad(layer, batch, element_bytes)
    return winograd_dgrad(op, layer, batch) if winograd else op


def narrow_dgrad(layer: Layer) -> bool:
    """Whether ``layer``'s δ runs by col2im (:func:`col2im_dgrad`): a one-group convolution with fewer
    input channels than the narrowest tile (:data:`NARROWEST_TILE`) — the implicit-GEMM δ's output
    (N·H·W × C) would fill C columns of a tile at least 32 wide."""
    return layer.kind == "conv" and layer.groups == 1 and layer.channels < NARROWEST_TILE


def col2im_dgrad(layer: Layer, batch: int, element_bytes: int) -> TrainingOp:
    """δ of a convolution by col2im, the data gradient of explicit-GEMM convolution (Caffe's
    im2col/col2im, the non-implicit algorithms GPU libraries also offer): one GEMM columns[C·R·S × N·P·Q] = Wᵀ[C·R·S × M] ·
    δout[M × N·P·Q] — the exact MACs, no zero insertion, an output wide in both directions — then a
    memory-bound col2im kernel that reads the columns and writes δ (N·C·H·W), scatter-adding the
    overlapping taps. Units: elements (``vector_elements`` = elements read + written by col2im)."""
    rows = layer.filter_h * layer.filter_w * layer.channels
    pixels = batch * layer.ofmap_h * layer.ofmap_w
    delta = batch * layer.input_elements
    return TrainingOp(layer.name, "D", (Gemm(rows, layer.filters, pixels),), vector_elements=rows * pixels + delta,
                      out_bytes=delta * element_bytes)


def _split_wgrad(op: TrainingOp, layer: Layer) -> TrainingOp:
    """A convolution's weight gradient as a split-K kernel (``TrainingOp.split_k``): its GEMM has
    C·R·S × M outputs — a few tiles — over an N·P·Q-long reduction, and cuDNN's wgrad kernels split
    that reduction over CTAs. Why here, not on the tensor path for every GEMM: split-K for all
    tensor-core GEMMs leaves vTrain's held-out error where it is (6.38% → 6.40% refitted), so the
    training path keeps the GEMMs it was fitted with (docs/gpu-validation.md)."""
    return replace(op, split_k=True) if op.kind == "G" and layer.kind in CONV_KINDS and op.gemms else op


WINOGRAD_TILE = 2
"""Output tile m of Winograd F(m×m, r×r): Lavin & Gray's F(2×2, 3×3)."""


def runs_winograd(algorithm: object) -> bool:
    """Whether a recorded algorithm name is a Winograd one (cuDNN ``WINOGRAD``/``WINOGRAD_NONFUSED``,
    MIOpen ``ConvolutionFwdAlgoWinograd``)."""
    return isinstance(algorithm, str) and "winograd" in algorithm.lower()


def winograd_forward(op: TrainingOp, layer: Layer, batch: int, tile: int = WINOGRAD_TILE) -> TrainingOp:
    """The forward ``op`` as Winograd F(tile×tile, r×r) GEMMs where the layer allows it (a convolution
    with a square filter, stride 1, no dilation, one group); otherwise ``op`` unchanged."""
    r = layer.filter_h
    if (layer.kind != "conv" or op.kind != "F" or r != layer.filter_w or r < 2 or layer.stride != 1
            or layer.dilation != 1 or layer.groups != 1):
        return op
    tiles = batch * -(-layer.ofmap_h // tile) * -(-layer.ofmap_w // tile)
    points = (tile + r - 1) ** 2
    return replace(op, gemms=(Gemm(tiles, layer.channels, layer.filters, points),))


def tensor_core_shape(layer: Layer) -> bool:
    """Channels and filters both multiples of 8: the shapes cuDNN runs on fp16 tensor cores as they are."""
    return layer.channels % 8 == 0 and layer.filters % 8 == 0


def cuda_core_arrays(arrays: GpuArrays) -> GpuArrays | None:
    """The GPU's FP32 lanes as arrays (same clock, dataflow and split-K), where the fallback applies:
    a tensor-core GPU whose spec lists ``cuda_cores`` and a fallback not switched off."""
    spec = arrays.spec
    if not arrays.cuda_core_fallback or spec.cuda_cores is None or spec.array_unit != "tensor core":
        return None
    per_sm, rows, cols = spec.cuda_cores
    lanes = replace(spec, tensor_cores_per_sm=per_sm, mma_rows=rows, mma_cols=cols, cuda_cores=None,
                    array_unit="FP32 SIMD partition")
    return replace(arrays, spec=lanes, array=replace(arrays.array, rows=rows, cols=cols), count=lanes.arrays)


WINOGRAD_DGRAD_FILTER = 3
"""The filter size whose stride-1 δ the SIMT libraries run by Winograd: cuDNN's fused Winograd data
gradient (``CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD``) takes 3×3 filters at stride 1 only."""


def winograd_dgrad(op: TrainingOp, layer: Layer, batch: int, tile: int = WINOGRAD_TILE) -> TrainingOp:
    """δ ``op`` of a 3×3, stride-1, one-group, undilated convolution as Winograd F(tile×tile, 3×3):
    δ is itself a 3×3 stride-1 convolution (of δout's M channels into C, over the H×W input), so
    (tile + 2)² GEMMs of (N·⌈H/tile⌉·⌈W/tile⌉ tiles) × M × C, transforms not costed; other ops as
    they are. Why: on DeepBench's FP32 GPUs (cuDNN 5–6, MIOpen 1.3) 23–26 of the 30 forwards of these
    layers are recorded as Winograd and their δ is over-predicted about 2× (the 2.25× Winograd saves)
    next to the 1×1 layers' δ; the fp16 tensor-core sheets record no Winograd and show no such gap."""
    r = layer.filter_h
    if (layer.kind != "conv" or op.kind != "D" or r != WINOGRAD_DGRAD_FILTER or layer.filter_w != r
            or layer.stride != 1 or layer.dilation != 1 or layer.groups != 1 or not op.gemms):
        return op
    tiles = batch * -(-layer.ifmap_h // tile) * -(-layer.ifmap_w // tile)
    return replace(op, gemms=(Gemm(tiles, layer.filters, layer.channels, (tile + r - 1) ** 2),))
