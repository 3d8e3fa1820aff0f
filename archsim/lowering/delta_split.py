"""Splitting a layer's δ into δ′ (D1, stays) and δ″ (D2, moves to the next processor) by operational
parallelism — along δ's output channels, its reduction, or its GEMM rows — as real sub-GEMMs with
the bytes each part sends (LayerPipe's additional communication)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from archsim.errors import InputError
from archsim.lowering.ops import Gemm, LoweredLayer, TrainingOp, check_mode
from archsim.split_axis import SplitAxis, check_split_axis
from archsim.workload.layer import Layer
from archsim.workload.layer_types import FILTER_KINDS, NORM_KINDS


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
    if layer.kind not in FILTER_KINDS:  # a δ splits along a filter's channels, rows or columns
        raise InputError(f"δ of {layer.kind} layer {layer.name!r} is not split (only conv/fc δ is)")
    check_split_axis(axis, "axis")
    if layer.groups > 1 and axis != "rows":
        raise InputError(f"δ of grouped conv {layer.name!r} splits by rows only (each group is its own GEMM)",
                         field="axis")
    if axis == "rows":
        return _split_rows(lowered, part, element_bytes)
    total = delta_split_units(lowered, axis)
    if not 0 <= part <= total:
        raise InputError(f"split part must be within 0..{total}, got {part}", field="part")

    def piece(units: int, kind: str) -> TrainingOp | None:
        if units == 0:
            return None
        gemms = tuple(_resize(g, layer, units, axis) for g in delta.gemms)
        out, extra = _piece_bytes(lowered, axis, units, total, element_bytes, kind == "D2")
        return replace(delta, kind=kind, gemms=gemms, out_bytes=out, extra_bytes=extra)

    return DeltaSplit(d1=piece(total - part, "D1"), d2=piece(part, "D2"), axis=axis, part=part, total=total)


def split_d2_bytes(lowered: LoweredLayer, part: int, axis: SplitAxis, element_bytes: int = 1) -> tuple[int, int]:
    """(out_bytes, extra_bytes) of the D2 of :func:`split_delta` (0, 0 for part 0), without building
    its sub-GEMMs: what a partition's traffic count reads for every split it places."""
    if part == 0:
        return 0, 0
    return _piece_bytes(lowered, axis, part, delta_split_units(lowered, axis), element_bytes, moved=True)


def split_d1_bytes(lowered: LoweredLayer, part: int, axis: SplitAxis, element_bytes: int = 1) -> tuple[int, int]:
    """(out_bytes, extra_bytes) of the D1 of :func:`split_delta` (its total − ``part`` units) when
    it runs away from the layer's weights (a borrowed δ′): the same piece bytes as a D2's, for
    D1's own units; (0, 0) when D1 is empty. :func:`split_delta`'s D1 stays, so it ships nothing."""
    total = delta_split_units(lowered, axis)
    if part >= total:
        return 0, 0
    return _piece_bytes(lowered, axis, total - part, total, element_bytes, moved=True)


def whole_delta_bytes(lowered: LoweredLayer, element_bytes: int = 1, mode: str = "paper") -> tuple[int, int]:
    """(out_bytes, extra_bytes) of the layer's whole δ run away from its weights (LayerPipe's
    borrowed δ): the piece bytes of a rows split that moves every row — all of δ's output and all
    the weights; (0, 0) for a layer without a δ op. A δ without GEMMs (elementwise, pool,
    batch-norm) moves nothing in ``paper`` mode, as LayerPipe counts only conv/fc δs, and in
    ``exact`` mode its result and the saved tensors it reads (:func:`vector_delta_bytes`)."""
    total = delta_split_units(lowered, "rows")
    if total == 0:
        return vector_delta_bytes(lowered, element_bytes) if check_mode(mode) == "exact" else (0, 0)
    return _piece_bytes(lowered, "rows", total, total, element_bytes, moved=True)


def vector_delta_bytes(lowered: LoweredLayer, element_bytes: int = 1) -> tuple[int, int]:
    """(out_bytes, extra_bytes) of a non-GEMM layer's whole δ run on another processor, by the rule
    a conv's borrowed δ follows: its result (δ of the layer's input) and what it reads that sits
    with the layer's forward, every element at ``element_bytes``; δ of its output is made where it
    runs. Received, per kind (per sample, times the batch):

    * elementwise with one input (ReLU, any activation): the saved input (for ReLU the mask
      1[x > 0]), one element per input element; with several inputs whose operator is ``mul`` (a gate, SiLU's
      x·σ(x)) every operand, one element per input element per input (δ of each is δ times the others); with
      several inputs of another operator or none stated (add, sub, a CSV row without ``Operator``) nothing: δ
      passes through (div, max, where … are read so too, not yet modelled);
    * pool: the window position each output took (max pooling's argmax), one per output element;
    * batchnorm and layernorm (costed alike): x̂, one per input element, and γ and 1/σ, one per channel each; the two reductions
      Σδ and Σδ·x̂ are the δ's own passes (its lowering's three), so nothing more.

    (0, 0) for a GEMM layer (its bytes are :func:`whole_delta_bytes`') or one without a δ op."""
    layer, delta = lowered.layer, lowered.op("D")
    if delta is None or layer.is_gemm:
        return 0, 0
    tensors = lowered.tensors
    if layer.kind == "pool":
        saved = tensors.activation_bytes
    elif layer.kind in NORM_KINDS:
        saved = tensors.delta_bytes + 2 * layer.channels * element_bytes
    elif layer.kind == "elementwise" and len(layer.inputs) == 1:
        saved = tensors.delta_bytes
    elif layer.kind == "elementwise" and layer.operator == "mul":
        saved = len(layer.inputs) * tensors.delta_bytes
    else:
        saved = 0
    return delta.out_bytes, saved


def _piece_bytes(lowered: LoweredLayer, axis: str, units: int, total: int, element_bytes: int,
                 moved: bool) -> tuple[int, int]:
    """(out_bytes, extra_bytes) of a split piece taking ``units`` of ``total``: a piece that runs
    away from the layer's weights (``moved``) receives the weight slice (all weights for rows)
    and, split along the reduction, sends partial sums of all of δ back."""
    out_bytes = lowered.required_op("D").out_bytes
    weights = piece_weight_bytes(lowered, axis, units, element_bytes) if moved else 0
    if axis == "rows" or axis == "channels":
        return out_bytes * units // total, weights
    # each half yields partial sums of the whole δ
    return out_bytes, weights + out_bytes if moved else 0


def piece_weight_bytes(lowered: LoweredLayer, axis: str, units: int, element_bytes: int = 1) -> int:
    """Bytes of the weight slice a split piece of ``units`` along ``axis`` receives where it runs away from the
    layer's weights (all of them for a rows split): the part of its ``extra_bytes`` that does not depend on the
    samples it runs, so a processor borrowing it over M micro-batches receives it once per iteration (the weights
    change only at the iteration's update), while its partial sums and result go once per micro-batch."""
    layer = lowered.layer
    if axis == "rows":
        return element_bytes * layer.weight_elements
    w_per_unit = layer.filter_h * layer.filter_w * (layer.filters if axis == "channels" else layer.channels)
    return w_per_unit * units * element_bytes


def whole_delta_weight_bytes(lowered: LoweredLayer, element_bytes: int = 1, mode: str = "paper") -> int:
    """The weights among :func:`whole_delta_bytes`' ``extra_bytes``: all of a GEMM layer's (a rows split moving
    every row); in ``exact`` mode a batch-norm's γ (one per channel; its 1/σ is the micro-batch's statistic);
    none for another layer or one without a δ op. Bytes, once per iteration however many micro-batches the δ
    runs."""
    layer = lowered.layer
    if lowered.op("D") is None:
        return 0
    if delta_split_units(lowered, "rows") > 0:
        return piece_weight_bytes(lowered, "rows", 0, element_bytes)
    exact = check_mode(mode) == "exact"
    return layer.channels * element_bytes if exact and layer.kind in NORM_KINDS and not layer.is_gemm else 0


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
    """How many units a δ split along ``axis`` can hand out (the ``total`` of :func:`split_delta`, which reads it,
    as the byte counts and the coster do): δ's output channels, the layer's output channels along its reduction,
    or its GEMM rows; 0 for a grouped conv along any axis but rows, and rows of a layer without a δ op."""
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
    total = delta_split_units(lowered, "rows")
    if not 0 <= part <= total:
        raise InputError(f"split part must be within 0..{total}, got {part}", field="part")
    first, rest = split_row_gemms(delta.gemms, part)

    def piece(gemms: list[Gemm], units: int, kind: str) -> TrainingOp | None:
        if units == 0:
            return None
        out, extra = _piece_bytes(lowered, "rows", units, total, element_bytes, kind == "D2")
        return replace(delta, kind=kind, gemms=tuple(gemms), out_bytes=out, extra_bytes=extra)

    return DeltaSplit(d1=piece(rest, total - part, "D1"), d2=piece(first, part, "D2"), axis="rows", part=part,
                      total=total)
