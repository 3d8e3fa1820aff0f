"""ONNX operators → archsim layers: which op becomes which layer kind, and its geometry.

Every tensor is read *per sample* (the batch dimension is stripped; archsim applies the batch at
lowering) and laid out as (H, W, C) for a layer row:

* rank 3 per sample (C, H, W) — a feature map: H, W, C as they are; for an attention tensor
  (heads, S, S) that is S × S × heads, as ``bert_large`` writes its softmax;
* rank 2 (S, D) — tokens × features: an S×1 map of D channels (position-wise layers);
* rank 1 (F,) — a 1×1 map of F channels; rank ≥ 4: C = first dim, W = last, H = the rest.

Mapping (``KIND_OF``; documented costs, nothing is free by accident):

* ``Conv`` (2-D; groups, depthwise, dilation, stride, padding) → conv. Asymmetric ``pads``
  (TensorFlow "SAME" with stride 2 exports ``[0, 0, 1, 1]``) keep the symmetric part as Padding
  and fold the rest into the declared input (:func:`fold_pads`); pools likewise. ``auto_pad``
  SAME_UPPER / SAME_LOWER is read as the pads ONNX derives (:func:`same_pads`), VALID as none.
* ``ConvTranspose`` (2-D, output padding 0) → deconv: the input gradient of the conv it inverts.
* ``Gemm`` and ``MatMul`` with a constant (weight) operand → fc over the rows of the other operand
  (tokens × batch-free leading dims), with the bias of a directly following ``Add`` of a 1-D
  constant folded in; with two activation operands → matmul (``Repeat`` = the per-sample batch of
  instances, e.g. attention heads).
* ``MaxPool``/``AveragePool``/``GlobalAveragePool``/``GlobalMaxPool`` → pool.
* ``BatchNormalization``, ``InstanceNormalization``, ``GroupNormalization`` → batchnorm,
  ``LayerNormalization`` → layernorm (both γ, β per normalised channel, costed alike; LayerNorm's channel is
  the normalised extent).
* Activations, arithmetic, ``Softmax`` and ``Resize`` → elementwise (one op per element of the
  output per activation operand), the node's op type in lower case its ``operator`` (``Sigmoid`` →
  ``sigmoid``: what BPPSA's chain and LayerPipe's exact δ bytes read; no cost of its own ops does).
* Reductions (``ReduceMean`` … ``ArgMax``) over tokens, map positions or features — each of H, W
  and C whole or reduced to 1 — → pool, a global pooling whose window is the reduced extent
  (``x.mean(dim=1)`` over S tokens of D: S×1 map, window S×1, output 1×1×D; ``x.mean(-1)``, a
  LayerNorm's statistics: window 1×1 over all D channels, Num Filter 1, output S×1×1): it reads its
  whole input once (F = D = the input's elements) and writes its output (:func:`reduction`). The
  reduced axes are the node's own ``axes`` / ``axis``, ``keepdims`` and ``noop_with_empty_axes``
  (:func:`reduced_axes`); they are guessed from the extents only where the graph computes them. A
  reduction pooling cannot state (over part of a rank ≥ 4 tensor's H) stays an elementwise row of
  its input's size: the same F and D, but the row gives its input's shape, not its output's (its operator
  the reduction's op type, ``reducemean``).
* Layout and routing — ``Reshape``, ``Flatten``, ``Transpose``, ``Squeeze``, ``Unsqueeze``,
  ``Concat``, ``Split``, ``Slice``, ``Gather``, ``Expand``, ``Pad``, ``Identity``, ``Dropout``,
  ``Cast`` — cost nothing: archsim models no data movement inside a processor. Their consumers
  read the layers that produced the routed tensors (a ``Concat`` gives its consumer several
  ``Inputs``). ``Gather`` of an embedding table is a lookup: zero cost, and its table is not
  counted as a layer's parameters.
* ``Shape``, ``Constant`` and anything computed from constants only are static (no layer).
"""

from __future__ import annotations

from math import prod

from archsim.errors import InputError
from archsim.workload.layer import Layer

ZERO_COST = frozenset({
    "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Concat", "Split", "Slice", "Gather",
    "GatherElements", "Expand", "Pad", "Identity", "Dropout", "Cast", "CastLike", "Tile", "DepthToSpace",
    "SpaceToDepth",
})
STATIC = frozenset({"Shape", "Size", "Constant", "ConstantOfShape", "Range", "EyeLike"})
ELEMENTWISE = frozenset({
    "Relu", "LeakyRelu", "PRelu", "Elu", "Selu", "Celu", "Gelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh",
    "Softplus", "Softsign", "Mish", "Erf", "Exp", "Log", "Sqrt", "Reciprocal", "Neg", "Abs", "Sign", "Floor",
    "Ceil", "Round", "Clip", "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mean", "Sum", "Where", "Equal",
    "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Softmax", "LogSoftmax", "Sin",
    "Cos", "Resize", "Upsample", "ThresholdedRelu", "Shrink", "Trilu",
})
REDUCTIONS = frozenset({"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2",
                        "ReduceSumSquare", "ReduceLogSumExp", "ArgMax", "ArgMin"})
NORMS = frozenset({"BatchNormalization", "LayerNormalization", "InstanceNormalization", "GroupNormalization"})
POOLS = frozenset({"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"})
GEMMS = frozenset({"Conv", "ConvTranspose", "Gemm", "MatMul"})
SUPPORTED = ZERO_COST | STATIC | ELEMENTWISE | REDUCTIONS | NORMS | POOLS | GEMMS


def hwc(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """A per-sample tensor shape as a layer's (IFMAP Height, IFMAP Width, Channels)."""
    if len(shape) == 0:
        return 1, 1, 1
    if len(shape) == 1:
        return 1, 1, shape[0]
    if len(shape) == 2:
        return shape[0], 1, shape[1]
    if len(shape) == 3:
        return shape[1], shape[2], shape[0]
    return prod(shape[1:-1]), shape[-1], shape[0]


def reduced_axes(node, attrs: dict, name: str, values: dict, rank: int) -> frozenset[int] | None:
    """The axes (0 … ``rank`` − 1 of the whole tensor, batch included) a reduction node reduces, as ONNX defines
    them: ArgMax/ArgMin's ``axis`` (default 0); the others' ``axes``, the second input where given (ReduceSum's
    from opset 13, the rest's from 18; its value from ``values``, the small initializers), else the attribute;
    every axis where none are named, none with ``noop_with_empty_axes=1``. None where the axes input is computed
    by the graph: unknown, and only then are they guessed (:func:`kept_dims`)."""
    if node.op_type in ("ArgMax", "ArgMin"):
        axes = [attrs.get("axis", 0)]
    elif len(node.input) > 1 and node.input[1]:
        if node.input[1] not in values:
            return None
        axes = [int(a) for a in values[node.input[1]].reshape(-1)]
    else:
        axes = list(attrs.get("axes", []))
    if not axes:
        return frozenset() if attrs.get("noop_with_empty_axes", 0) else frozenset(range(rank))
    if any(not -rank <= a < rank for a in axes):
        raise unsupported_node(node, name, f"axes={axes}: outside -{rank}…{rank - 1}")
    return frozenset(a % rank for a in axes)


def kept_shape(x: tuple[int, ...], rank: int, axes: frozenset[int]) -> tuple[int, ...]:
    """Per-sample ``x`` with each reduced axis back as a 1 (its ``keepdims=1`` shape); ``axes`` count the whole
    tensor's ``rank`` axes, so a batch axis stripped from ``x`` shifts them by one (a batch of 1 reduced is no
    per-sample change)."""
    lead = rank - len(x)
    return tuple(1 if i + lead in axes else extent for i, extent in enumerate(x))


def kept_dims(x: tuple[int, ...], out: tuple[int, ...]) -> tuple[int, ...]:
    """``out`` of a reduction of ``x`` with each reduced axis back as a 1 (its ``keepdims=1`` shape), guessed by
    matching ``out``'s extents to ``x``'s from the last axis (``(6, 8)`` → ``(6,)`` is ``(6, 1)``, → ``(8,)`` is
    ``(1, 8)``); ``out`` itself where it has ``x``'s rank or is no such part of it. A guess, wrong where axes
    have equal extents: only for axes computed by the graph (:func:`reduced_axes` gives None)."""
    if len(out) >= len(x):
        return out
    kept, j = [], len(out) - 1
    for extent in reversed(x):
        matched = j >= 0 and out[j] == extent
        kept.append(extent if matched else 1)
        j -= matched
    return tuple(reversed(kept)) if j < 0 else out


def reduction(x: tuple[int, ...], kept: tuple[int, ...], common: dict) -> Layer:
    """A reduction reading per-sample ``x`` into its ``keepdims=1`` shape ``kept`` as a layer row (see the module
    docstring; ``kept`` from :func:`kept_shape`, or :func:`kept_dims` where the axes are unknown).

    A pool whose window is each reduced extent of H and W (stride 1, no padding), over every channel
    where C is reduced too (Num Filter 1), has exactly the output's H, W and C, and its vector work,
    output × window × channels per output, is the input's elements: what the reduction reads once."""
    h, w, c = hwc(x)
    oh, ow, oc = hwc(kept)
    if oc in (1, c) and oh in (1, h) and ow in (1, w) and (oh, ow, oc) != (h, w, c):
        return Layer(kind="pool", ifmap_h=h, ifmap_w=w, filter_h=h // oh, filter_w=w // ow, channels=c, filters=oc,
                     **common)
    return Layer(kind="elementwise", ifmap_h=h, ifmap_w=w, filter_h=1, filter_w=1, channels=c, filters=c, **common)


def spatial(node, attrs: dict, name: str, size: tuple[int, ...], kernel: tuple[int, ...],
            rank: int = 2) -> tuple[int, tuple[int, ...], int]:
    """(stride, pads, dilation) of a 2-D Conv/pool node, or an error naming the node.

    pads are ONNX's (top, left, bottom, right), in input pixels, as written or as ``auto_pad``
    derives them from the input ``size`` and ``kernel`` (taps per axis, :func:`same_pads`);
    :func:`fold_pads` makes them a layer row's geometry."""
    strides = list(attrs.get("strides", [1] * rank))
    dilations = list(attrs.get("dilations", [1] * rank))
    auto_pad = attrs.get("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else str(auto_pad)
    if auto_pad not in ("NOTSET", "", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise unsupported_node(node, name, f"auto_pad={auto_pad}: ONNX's are NOTSET, VALID, SAME_UPPER, SAME_LOWER")
    explicit = auto_pad in ("NOTSET", "")
    if not explicit and "pads" in attrs and (auto_pad != "VALID" or any(attrs["pads"])):
        # ONNX: pads "cannot be used simultaneously with auto_pad"; runtimes differ on which wins
        raise unsupported_node(node, name, f"pads={list(attrs['pads'])} with auto_pad={auto_pad}: ONNX takes one or "
                                       f"the other")
    if auto_pad.startswith("SAME") and node.op_type == "ConvTranspose":  # SAME sets its output, not its input
        raise unsupported_node(node, name, f"auto_pad={auto_pad} on a transposed convolution is not modelled "
                                       f"(write explicit pads)")
    for label, values in (("strides", strides), ("dilations", dilations)):
        if len(set(values)) != 1:
            raise unsupported_node(node, name, f"{label}={values}: archsim models one value for H and W")
    stride, dilation = strides[0], dilations[0]
    for label, value, low in (("strides", stride, 1), ("dilations", dilation, 1)):
        if not low <= value <= MAX_WINDOW:
            raise unsupported_node(node, name, f"{label}={value}: outside {low}…{MAX_WINDOW}")
    if auto_pad.startswith("SAME"):
        pads = list(same_pads(auto_pad, size, kernel, stride, dilation))
    else:
        pads = list(attrs.get("pads", [0] * 2 * rank)) if explicit else [0] * 2 * rank
    if len(pads) != 2 * rank:
        raise unsupported_node(node, name, f"pads={pads}: expected {2 * rank} values (begin and end per axis)")
    for pad in pads:
        if not 0 <= pad <= MAX_WINDOW:
            raise unsupported_node(node, name, f"pads={pad}: outside 0…{MAX_WINDOW}")
    return stride, tuple(pads), dilation


def same_pads(auto_pad: str, size: tuple[int, ...], kernel: tuple[int, ...], stride: int,
              dilation: int) -> tuple[int, ...]:
    """The pads ONNX's ``auto_pad`` SAME_UPPER / SAME_LOWER stands for, as (begins…, ends…) in input pixels.

    ONNX's Conv spec: each axis's output is ceil(in / stride), so its total padding is
    max((ceil(in / stride) − 1)·stride + (k − 1)·dilation + 1 − in, 0); an odd total puts the extra
    pixel at the end (SAME_UPPER) or the start (SAME_LOWER). Written out here so the padded input is
    folded exactly as explicit pads are (:func:`fold_pads`).
    """
    begins, ends = [], []
    for extent, taps in zip(size, kernel):
        total = max((-(-extent // stride) - 1) * stride + (taps - 1) * dilation + 1 - extent, 0)
        low, high = total // 2, total - total // 2
        begins.append(low if auto_pad == "SAME_UPPER" else high)
        ends.append(high if auto_pad == "SAME_UPPER" else low)
    return (*begins, *ends)


def fold_pads(pads: tuple[int, ...]) -> tuple[int, int, int]:
    """ONNX (top, left, bottom, right) pads as (Padding, extra rows, extra columns) of a layer row.

    A row has one symmetric Padding field, so the common part p = min(pads) stays Padding and the
    rest (top + bottom − 2p rows, left + right − 2p columns) is added to the declared input: the
    padded input, hence the output size and every GEMM, is exactly the ONNX one. SCALE-Sim, which
    has no padding, would be given the whole padded input as its IFMAP. The added rows and columns
    count as input positions (δ, input bytes), as they do in SCALE-Sim.
    """
    top, left, bottom, right = pads
    p = min(pads)
    return p, top + bottom - 2 * p, left + right - 2 * p


MAX_WINDOW = 2**16  # largest stride, padding or dilation read: beyond any published network, far from overflow


def unsupported_node(node, name: str, why: str) -> InputError:
    """The error for a node archsim does not model, naming the node and its op; public because the importer
    (:mod:`archsim.workload.onnx_import`) raises it too, and its ``field="node"`` is what
    ``unsupported="skip"`` catches to leave the node out rather than fail."""
    return InputError(f"node {name!r} (op {node.op_type}): {why}", field="node")
