"""Layer → training ops: F, G and D (δ) as GEMMs, plus the tensors they move.

Convolutions lower by im2col (DESIGN.md, "Lowering"). With batch N, output E×F, filter R×S,
C input and M output channels, as (rows, reduction, cols) = out[rows×cols] = A[rows×red]·B[red×cols]:

* ``F``: (N·E·F, R·S·C, M)            — batch folds into the GEMM rows.
* ``G``: (R·S·C, N·E·F, M)            — the weight gradient reduces over every output pixel.
* ``D``: ``paper`` mode, (N·H·W, R·S·M, C): LayerPipe's rule — the strided transposed conv is
  costed as a dense convolution over the full input resolution, and the first layer gets a δ too.
  ``exact`` mode: stride-aware — the transposed conv splits into s² phase GEMMs, phase (a, b)
  covering the input pixels h ≡ a, w ≡ b (mod s) and reducing over only the taps that reach them;
  layers fed only by the network input get no δ. For stride 1 both modes give the same GEMM.
* fc layers (a filter that covers the whole input, or 1×1) lower to dense matrix products in both
  modes: D is (N·E·F, M, R·S·C) — for a flattening FC that is (N, M, in_features).
* Grouped convolutions (``groups`` = g; depthwise: g = C) are g independent convolutions of C/g
  input and M/g output channels: every GEMM above with C → C/g and M → M/g, run g times.
  Dilation d keeps R·S taps; the exact δ's phases count the taps r with r·d ≡ a + padding (mod s).
* ``deconv`` (a transposed convolution) is the input gradient of the convolution C it inverts
  (C maps the deconv's output back to its input): F = C's D (the stride-aware phase GEMMs in
  ``exact`` mode, the dense convolution in ``paper`` mode), D = C's F, G = C's G.
* ``matmul`` (activation × activation, out = A·B per instance): F = (M, K, N), D = ∂A = (M, N, K),
  G = ∂B = (K, M, N), each repeated batch × repeat times (no weights: G is B's gradient).

Layers that are not GEMMs run on the array's vector unit (one lane per array column), costed as
element operations — documented per kind in :func:`_vector_work` — never zero by accident; what their unfused
kernels stream through a device's HBM (reads plus writes, ``streamed_elements``) is
:func:`archsim.lowering.streamed.layer_streamed`'s count, the one ``train``'s op lists take.
"""

from __future__ import annotations

from dataclasses import replace

from archsim.errors import InputError
from archsim.lowering.ops import Gemm, LayerTensors, LoweredLayer, TrainingOp, check_mode
from archsim.lowering.streamed import layer_streamed
from archsim.modes import Mode
from archsim.workload.layer import Layer, Network
from archsim.workload.layer_types import NORM_KINDS


def lower_layer(layer: Layer, batch: int, mode: Mode = "exact", element_bytes: int = 1) -> LoweredLayer:
    """Lower one layer at the given batch size (see module docstring for the rules)."""
    check_mode(mode)
    if batch <= 0:
        raise InputError(f"batch must be positive, got {batch}", field="batch")
    if element_bytes <= 0:
        raise InputError(f"element size must be positive, got {element_bytes}", field="element_bytes")
    eb = element_bytes
    tensors = LayerTensors(
        activation_bytes=batch * layer.output_elements * eb,
        delta_bytes=batch * layer.input_elements * eb,
        weight_bytes=layer.weight_elements * eb,
    )
    needs_delta = mode == "paper" or not layer.takes_network_input
    ops: list[TrainingOp] = []
    if layer.is_gemm:
        f, g, d = _gemm_ops(layer, batch, mode)
        ops.append(TrainingOp(layer.name, "F", f, out_bytes=tensors.activation_bytes))
        ops.append(TrainingOp(layer.name, "G", g, out_bytes=(layer.weight_elements * eb if layer.kind != "matmul"
                                                               else _matmul_b_bytes(layer, batch, eb))))
        if needs_delta:
            ops.append(TrainingOp(layer.name, "D", d, out_bytes=tensors.delta_bytes))
    else:
        f_el, g_el, d_el = _vector_work(layer, batch)
        f_hbm, g_hbm, d_hbm = layer_streamed(layer.kind, len(layer.inputs), batch * layer.input_elements,
                                             batch * layer.output_elements, needs_delta)
        ops.append(TrainingOp(layer.name, "F", (), vector_elements=f_el, out_bytes=tensors.activation_bytes,
                              streamed_elements=f_hbm))
        if g_el:
            ops.append(TrainingOp(layer.name, "G", (), vector_elements=g_el, out_bytes=tensors.weight_bytes,
                                  streamed_elements=g_hbm))
        if needs_delta:
            ops.append(TrainingOp(layer.name, "D", (), vector_elements=d_el, out_bytes=tensors.delta_bytes,
                                  streamed_elements=d_hbm))
    return LoweredLayer(layer=layer, ops=tuple(ops), tensors=tensors)


def lower_network(network: Network, batch: int, mode: Mode = "exact", element_bytes: int = 1) -> tuple[LoweredLayer, ...]:
    return tuple(lower_layer(layer, batch, mode, element_bytes) for layer in network.layers)


def _matmul_b_bytes(layer: Layer, batch: int, eb: int) -> int:
    return batch * layer.repeat * layer.ifmap_w * layer.filters * eb


def _gemm_ops(layer: Layer, batch: int, mode: str) -> tuple[tuple[Gemm, ...], tuple[Gemm, ...], tuple[Gemm, ...]]:
    n = batch
    if layer.kind == "deconv":  # the input gradient of the conv it inverts, which runs its backward
        inverse = replace(layer, kind="conv", ifmap_h=layer.ofmap_h, ifmap_w=layer.ofmap_w, channels=layer.filters,
                          filters=layer.channels)
        forward, weight, delta = _gemm_ops(inverse, batch, mode)
        return delta, weight, forward
    if layer.kind == "matmul":
        m, k, cols = layer.ifmap_h, layer.ifmap_w, layer.filters
        count = n * layer.repeat
        return (Gemm(m, k, cols, count),), (Gemm(k, m, cols, count),), (Gemm(m, cols, k, count),)
    e, f = layer.ofmap_h, layer.ofmap_w
    g = layer.groups
    r, s, c, mo = layer.filter_h, layer.filter_w, layer.channels // g, layer.filters // g
    forward = (Gemm(n * e * f, r * s * c, mo, g),)
    weight = (Gemm(r * s * c, n * e * f, mo, g),)
    if layer.kind == "fc":
        delta = (Gemm(n * e * f, mo, r * s * c),)
    elif mode == "paper":
        delta = (Gemm(n * layer.ifmap_h * layer.ifmap_w, r * s * mo, c, g),)
    else:
        delta = _strided_delta(layer, batch)
    return forward, weight, delta


def delta_phases(size: int, kernel: int, stride: int, padding: int, dilation: int = 1) -> list[tuple[int, int]]:
    """(input positions, taps) per phase of a 1-D stride-aware transposed convolution.

    Input position h receives from output e through tap r when h + padding = e·stride + r·dilation,
    so the positions h ≡ a (mod stride) all use the taps with r·dilation ≡ a + padding (mod stride).
    Phases whose tap set is empty (kernel < stride) get no gradient and are dropped.
    """
    phases = []
    for a in range(stride):
        positions = len(range(a, size, stride))
        taps = sum(1 for r in range(kernel) if (r * dilation - a - padding) % stride == 0)
        if positions and taps:
            phases.append((positions, taps))
    return phases


def _strided_delta(layer: Layer, batch: int) -> tuple[Gemm, ...]:
    g = layer.groups
    rows = delta_phases(layer.ifmap_h, layer.filter_h, layer.stride, layer.padding, layer.dilation)
    cols = delta_phases(layer.ifmap_w, layer.filter_w, layer.stride, layer.padding, layer.dilation)
    merged: dict[tuple[int, int], int] = {}
    for hp, ht in rows:
        for wp, wt in cols:
            key = (batch * hp * wp, ht * wt * (layer.filters // g))
            merged[key] = merged.get(key, 0) + g
    return tuple(Gemm(m, k, layer.channels // g, count) for (m, k), count in merged.items())


def _vector_work(layer: Layer, batch: int) -> tuple[int, int, int]:
    """Element operations (F, G, D) for layers that run on the vector unit.

    pool: every output reads its R×S window (F), over every channel where it reduces them to one (a
    reduction over features: Num Filter 1); D routes each output gradient back over the window (the
    same count). elementwise (add, activation): one op per input element per input
    in F and in D. batchnorm and layernorm: F = 2 passes (statistics, normalise), G = 2 passes (∂γ, ∂β), D = 3
    passes (the two reductions and the final scale), per element.
    """
    out = batch * layer.output_elements
    if layer.kind == "pool":
        window = layer.filter_h * layer.filter_w * (layer.channels // layer.filters)
        return out * window, 0, out * window
    if layer.kind == "elementwise":
        work = batch * layer.input_elements * len(layer.inputs)
        return work, 0, work
    if layer.kind in NORM_KINDS:
        elements = batch * layer.input_elements
        return 2 * elements, 2 * elements, 3 * elements
    raise InputError(f"layer kind {layer.kind!r} has no vector-unit rule", field="Type")
