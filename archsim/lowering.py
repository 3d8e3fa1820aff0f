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
element operations — documented per kind in :func:`_vector_work` — never zero by accident.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from archsim.errors import InputError
from archsim.modes import MODES, Mode  # one definition; re-exported for the modules that cost

if TYPE_CHECKING:  # in annotations only: `plan` reads --mode's choices without loading layers
    from archsim.workload.layer import Layer, Network

OpKind = Literal["F", "G", "D", "D1", "D2"]


@dataclass(frozen=True)
class Gemm:
    """``count`` independent GEMMs out[m×n] = A[m×k]·B[k×n], run one after another."""

    m: int
    k: int
    n: int
    count: int = 1

    def __post_init__(self) -> None:
        for name in ("m", "k", "n", "count"):
            if getattr(self, name) <= 0:
                raise InputError(f"GEMM dimension must be positive, got {getattr(self, name)}", field=name)

    @property
    def macs(self) -> int:
        return self.m * self.k * self.n * self.count


@dataclass(frozen=True)
class TrainingOp:
    """One training operation of one layer.

    gemms: the systolic-array work (empty for vector-unit layers).
    vector_elements: element operations on the vector unit (non-GEMM layers).
    out_bytes: bytes of the tensor the op produces (activation, weight gradient, δ or its part).
    extra_bytes: bytes a split op must receive beyond the unsplit op's inputs (weight slice,
        partial sums to merge) — LayerPipe's "additional communication".
    """

    layer: str
    kind: str
    gemms: tuple[Gemm, ...]
    vector_elements: int = 0
    out_bytes: int = 0
    extra_bytes: int = 0

    @property
    def macs(self) -> int:
        return sum(g.macs for g in self.gemms)


@dataclass(frozen=True)
class LayerTensors:
    """Bytes a pipeline stage boundary moves around one layer (LayerPipe Table II)."""

    activation_bytes: int  # layer output, sent forward if a stage ends after the layer
    delta_bytes: int  # δ of the layer input, sent backward if a stage starts at the layer
    weight_bytes: int  # the layer's weights (bias excluded)


@dataclass(frozen=True)
class LoweredLayer:
    layer: Layer
    ops: tuple[TrainingOp, ...]
    tensors: LayerTensors

    def op(self, kind: str) -> TrainingOp | None:
        return next((op for op in self.ops if op.kind == kind), None)


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise InputError(f"unknown mode {mode!r}; choose paper or exact", field="mode")
    return mode


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
        ops.append(TrainingOp(layer.name, "F", (), vector_elements=f_el, out_bytes=tensors.activation_bytes))
        if g_el:
            ops.append(TrainingOp(layer.name, "G", (), vector_elements=g_el, out_bytes=tensors.weight_bytes))
        if needs_delta:
            ops.append(TrainingOp(layer.name, "D", (), vector_elements=d_el, out_bytes=tensors.delta_bytes))
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
        delta: tuple[Gemm, ...] = (Gemm(n * e * f, mo, r * s * c),)
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

    pool: every output reads its R×S window (F); D routes each output gradient back over the
    window (the same count). elementwise (add, activation): one op per input element per input
    in F and in D. batchnorm: F = 2 passes (statistics, normalise), G = 2 passes (∂γ, ∂β), D = 3
    passes (the two reductions and the final scale), per element.
    """
    out = batch * layer.output_elements
    if layer.kind == "pool":
        window = layer.filter_h * layer.filter_w
        return out * window, 0, out * window
    if layer.kind == "elementwise":
        work = batch * layer.input_elements * len(layer.inputs)
        return work, 0, work
    if layer.kind == "batchnorm":
        elements = batch * layer.input_elements
        return 2 * elements, 2 * elements, 3 * elements
    raise InputError(f"layer kind {layer.kind!r} has no vector-unit rule", field="Type")


# -- splitting δ into δ′ / δ″ ------------------------------------------------------------------
SplitAxis = Literal["channels", "reduction", "rows"]
SPLIT_AXES: tuple[str, ...] = ("channels", "reduction", "rows")


@dataclass(frozen=True)
class DeltaSplit:
    """δ split by operational parallelism into D1 (stays) and D2 (moves to the next processor).

    ``part`` is how many of ``total`` units D2 takes: channels of δ's output (``channels``), output
    channels of the layer along δ's reduction (``reduction``), or GEMM rows — input pixels of the
    batch (``rows``). D2's ``extra_bytes`` are what the other processor needs in addition: the
    weight slice (all weights for a rows split), and for a reduction split the partial sums to
    merge back.
    """

    d1: TrainingOp | None
    d2: TrainingOp | None
    axis: str
    part: int
    total: int


def split_delta(lowered: LoweredLayer, part: int, axis: SplitAxis = "channels", element_bytes: int = 1) -> DeltaSplit:
    """Give ``part`` units of the layer's δ to D2 and the rest to D1; both are real sub-GEMMs."""
    layer = lowered.layer
    delta = lowered.op("D")
    if delta is None:
        raise InputError(f"layer {layer.name!r} has no δ op to split")
    if not layer.is_gemm or layer.kind == "matmul":
        raise InputError(f"δ of {layer.kind} layer {layer.name!r} is not split (only conv/fc δ is)")
    if axis not in SPLIT_AXES:
        raise InputError(f"unknown split axis {axis!r}; choose one of {', '.join(SPLIT_AXES)}", field="axis")
    if layer.groups > 1 and axis != "rows":
        raise InputError(f"δ of grouped conv {layer.name!r} splits by rows only (each group is its own GEMM)",
                         field="axis")
    if axis == "rows":
        return _split_rows(lowered, part, element_bytes)
    total = layer.channels if axis == "channels" else layer.filters
    if not 0 <= part <= total:
        raise InputError(f"split part must be within 0..{total}, got {part}", field="part")

    def piece(units: int, kind: str) -> TrainingOp | None:
        if units == 0:
            return None
        gemms = tuple(_resize(g, layer, units, axis) for g in delta.gemms)
        out, extra = _piece_bytes(lowered, axis, units, total, element_bytes, kind)
        return replace(delta, kind=kind, gemms=gemms, out_bytes=out, extra_bytes=extra)

    return DeltaSplit(d1=piece(total - part, "D1"), d2=piece(part, "D2"), axis=axis, part=part, total=total)


def split_d2_bytes(lowered: LoweredLayer, part: int, axis: SplitAxis, element_bytes: int = 1) -> tuple[int, int]:
    """(out_bytes, extra_bytes) of the D2 of :func:`split_delta` (0, 0 for part 0), without building
    its sub-GEMMs: what a partition's traffic count reads for every split it places."""
    if part == 0:
        return 0, 0
    return _piece_bytes(lowered, axis, part, delta_split_units(lowered, axis), element_bytes, "D2")


def _piece_bytes(lowered: LoweredLayer, axis: str, units: int, total: int, element_bytes: int,
                 kind: str) -> tuple[int, int]:
    """(out_bytes, extra_bytes) of a split piece taking ``units`` of ``total``: D2 receives the weight
    slice (all weights for rows) and, split along the reduction, sends partial sums of all of δ back."""
    layer, delta = lowered.layer, lowered.op("D")
    out_bytes = delta.out_bytes  # type: ignore[union-attr]
    if axis == "rows":
        return out_bytes * units // total, element_bytes * layer.weight_elements if kind == "D2" else 0
    w_per_unit = layer.filter_h * layer.filter_w * (layer.filters if axis == "channels" else layer.channels)
    if axis == "channels":
        return out_bytes * units // total, w_per_unit * units * element_bytes if kind == "D2" else 0
    # each half yields partial sums of the whole δ
    return out_bytes, (w_per_unit * units * element_bytes + out_bytes) if kind == "D2" else 0


def _resize(gemm: Gemm, layer: Layer, units: int, axis: str) -> Gemm:
    if layer.kind == "fc":
        # fc δ is (rows, M, in_features): channels slice the in_features columns.
        if axis == "channels":
            per = gemm.n // layer.channels
            return replace(gemm, n=per * units)
        return replace(gemm, k=units)
    if axis == "channels":
        return replace(gemm, n=units)
    per_tap = gemm.k // layer.filters
    return replace(gemm, k=per_tap * units)


def delta_split_units(lowered: LoweredLayer, axis: SplitAxis) -> int:
    """How many units a δ split along ``axis`` can hand out (the ``total`` of :func:`split_delta`)."""
    layer = lowered.layer
    if layer.groups > 1 and axis != "rows":
        return 0
    if axis == "channels":
        return layer.channels
    if axis == "reduction":
        return layer.filters
    delta = lowered.op("D")
    return sum(g.m * g.count for g in delta.gemms) if delta is not None else 0


def split_row_gemms(gemms: Sequence[Gemm], part: int) -> tuple[list[Gemm], list[Gemm]]:
    """The rows split, written once: the first ``part`` rows of ``gemms`` (in order: whole copies,
    then part of one) and the rest, as GEMMs. δ's split (:func:`split_delta`) and the coster's
    integer costs (:meth:`~archsim.partition.coster.DeltaCoster.split_cycles`) both read it."""
    first: list[Gemm] = []
    rest: list[Gemm] = []
    need = part
    for g in gemms:
        whole = min(g.count, need // g.m)
        if whole:
            first.append(replace(g, count=whole))
        need -= whole * g.m
        left = g.count - whole
        if left and need:
            first.append(replace(g, m=need, count=1))
            rest.append(replace(g, m=g.m - need, count=1))
            left -= 1
            need = 0
        if left:
            rest.append(replace(g, count=left))
    return first, rest


def _split_rows(lowered: LoweredLayer, part: int, element_bytes: int) -> DeltaSplit:
    """D2 takes the first ``part`` GEMM rows (in GEMM order), D1 the rest; rows split exactly."""
    delta = lowered.op("D")
    assert delta is not None
    total = sum(g.m * g.count for g in delta.gemms)
    if not 0 <= part <= total:
        raise InputError(f"split part must be within 0..{total}, got {part}", field="part")
    first, rest = split_row_gemms(delta.gemms, part)

    def piece(gemms: list[Gemm], units: int, kind: str) -> TrainingOp | None:
        if units == 0:
            return None
        out, extra = _piece_bytes(lowered, "rows", units, total, element_bytes, kind)
        return replace(delta, kind=kind, gemms=tuple(gemms), out_bytes=out, extra_bytes=extra)

    return DeltaSplit(d1=piece(rest, total - part, "D1"), d2=piece(first, part, "D2"), axis="rows", part=part,
                      total=total)
