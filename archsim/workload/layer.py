"""Layers and networks: the plain data every later stage reads.

A :class:`Layer` is one row of a topology CSV (a superset of SCALE-Sim's): its geometry, its
kind, and the names of the layers that feed it. A :class:`Network` is an ordered tuple of layers
whose ``inputs`` form a DAG; the order is a valid topological order (checked by the loader).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal, get_args

from archsim.errors import InputError, one_line
from archsim.workload.layer_types import (
    CONV_FC_KINDS,
    CONV_KINDS,
    FILTER_KINDS,
    GEMM_KINDS,
    LAYER_KINDS,
    NORM_KINDS,
    LayerKind,
    spelled_kind,
)

Geometry = Literal["archsim", "scalesim"]
GEOMETRIES: tuple[Geometry, ...] = get_args(Geometry)
NETWORK_INPUT = "input"
"""The name that, in a layer's ``inputs``, stands for the network's input tensor."""

_OPERATOR = re.compile(r"[a-z][a-z0-9_]{0,63}")
"""An elementwise operator's spelling: a lowercase ONNX op type (``leakyrelu``), safe in a CSV field."""


def flattening_conv_note(layer: Layer) -> str | None:
    """What a loader notes of a conv that is an fc in all but its type (SCALE-Sim's format, which has no types,
    writes classifiers so): its filter covers the whole unpadded input, one output pixel, so its δ, lowered as a
    conv's, pads that pixel to the input's size (docs/concepts.md, "Lowering"); None for any other layer."""
    if not (layer.kind == "conv" and layer.padding == 0 and layer.groups == 1 and layer.dilation == 1
            and (layer.filter_h, layer.filter_w) == (layer.ifmap_h, layer.ifmap_w) and layer.filter_h * layer.filter_w > 1):
        return None
    return (f"{layer.name!r} is a conv whose {layer.filter_h}x{layer.filter_w} filter covers its whole unpadded input "
            "(a flattening fc): its δ is costed as a transposed convolution over the zero-padded 1x1 output, up to "
            "R·S times the forward's MACs; Type fc costs the dense product δY·W")


@dataclass(frozen=True)
class Layer:
    """One network layer, per sample (batch is applied at lowering).

    ifmap_h/ifmap_w/channels: input feature map (unpadded). filter_h/filter_w/filters: kernel and
    output channels. stride, padding: the same in both spatial directions.
    kind: conv | fc | matmul | pool | elementwise | batchnorm | layernorm | deconv (:data:`NORM_KINDS`: the two
    normalisations, costed alike).
    ``deconv`` is a transposed convolution (ONNX ConvTranspose, output padding 0): the input
    H×W×C spreads to (H − 1)·stride − 2·padding + dilation·(R − 1) + 1 rows (and columns) of
    Num Filter channels; it is the input gradient of the convolution it inverts.
    For ``matmul`` (activation × activation, e.g. attention scores) the row encodes
    out[M×N] = A[M×K]·B[K×N] exactly as SCALE-Sim's GEMM topology does: ifmap_h = M,
    ifmap_w = K, filter_h = 1, filter_w = K, channels = 1, filters = N; ``repeat`` counts
    independent instances per sample (attention heads).
    bias: whether the layer has a bias vector (parameter counts only).
    inputs: names of producing layers; ``("input",)`` is the network input (one name given as a str is a
    tuple of one, a list a tuple).
    groups: grouped convolution (conv only): ``groups`` independent convolutions, each of
    channels/groups inputs and filters/groups outputs; depthwise is groups = channels.
    dilation: spacing of the filter taps (conv only); the filter spans dilation·(R − 1) + 1
    input pixels but still has R taps.
    operator: which operator an ``elementwise`` row is, as its lowercase ONNX op type (``relu``, ``sigmoid``,
    ``mul`` …): the ONNX importer states it, a topology CSV may in its ``Operator`` column; None (every other
    kind, and a row that does not say) is unknown, read as before it was stated: BPPSA's chain takes it as ReLU,
    LayerPipe's exact δ bytes by its input count alone. No cost of a layer's own ops reads it.
    """

    name: str
    kind: LayerKind
    ifmap_h: int
    ifmap_w: int
    filter_h: int
    filter_w: int
    channels: int
    filters: int
    stride: int = 1
    padding: int = 0
    bias: bool = False
    repeat: int = 1
    inputs: tuple[str, ...] = (NETWORK_INPUT,)
    geometry: Geometry = field(default="archsim", compare=False)
    groups: int = 1
    dilation: int = 1
    operator: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.inputs, tuple):  # one name is a tuple of one, not its characters; a list a tuple
            names = (self.inputs,) if isinstance(self.inputs, str) else tuple(self.inputs)
            object.__setattr__(self, "inputs", names)
        for name in ("ifmap_h", "ifmap_w", "filter_h", "filter_w", "channels", "filters", "stride", "repeat",
                     "groups", "dilation"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise InputError(f"must be a positive integer, got {value!r}", field=name)
        if not isinstance(self.padding, int) or self.padding < 0:
            raise InputError(f"must be a non-negative integer, got {self.padding!r}", field="padding")
        if self.kind not in LAYER_KINDS:
            raise InputError(f"unknown layer type {self.kind!r}", field="Type")
        if self.geometry not in GEOMETRIES:
            raise InputError(f"unknown geometry {self.geometry!r}", field="geometry")
        if self.geometry == "scalesim" and self.padding:
            raise InputError("SCALE-Sim geometry has no padding; set Padding to 0", field="Padding")
        if (self.groups > 1 or self.dilation > 1) and self.kind not in CONV_KINDS:
            raise InputError(f"groups and dilation apply to conv layers only, not {self.kind}", field="groups")
        if self.channels % self.groups or self.filters % self.groups:
            raise InputError(f"groups ({self.groups}) must divide Channels ({self.channels}) and Num Filter "
                             f"({self.filters})", field="groups")
        if self.kind == "deconv":
            if self.ofmap_h <= 0 or self.ofmap_w <= 0:
                raise InputError("padding leaves no output of the transposed convolution", field="padding")
        elif self.span_h > self.ifmap_h + 2 * self.padding or self.span_w > self.ifmap_w + 2 * self.padding:
            raise InputError(
                f"filter {self.filter_h}x{self.filter_w} is larger than the padded input "
                f"{self.ifmap_h + 2 * self.padding}x{self.ifmap_w + 2 * self.padding}", field="Filter Height")
        if self.kind == "matmul" and (self.filter_h != 1 or self.filter_w != self.ifmap_w or self.channels != 1):
            raise InputError("a matmul row is M,K,1,K,1,N (IFMAP Height=M, IFMAP Width=K, Filter Height=1, "
                             "Filter Width=K, Channels=1, Num Filter=N)", field="Filter Width")
        whole = (self.filter_h, self.filter_w, self.padding) == (self.ifmap_h, self.ifmap_w, 0)
        if self.kind == "fc" and (self.filter_h, self.filter_w) != (1, 1) and not whole:
            # lowering costs an fc's δ as a dense product over its rows: right for these two forms only
            raise InputError(f"fc layer {self.name!r} has a {self.filter_h}x{self.filter_w} filter over a "
                             f"{self.ifmap_h}x{self.ifmap_w} input; an fc row's filter is 1x1 (position-wise) or "
                             f"the whole unpadded input (flattening): write a sliding window as a conv",
                             field="Filter Height")
        if self.kind == "fc" and not whole and (self.stride, self.padding) != (1, 0):
            # a position-wise fc's δ rows are its output positions, the input's only at stride 1, Padding 0
            raise InputError(f"fc layer {self.name!r} is 1x1 with stride {self.stride} and Padding {self.padding}; "
                             f"a position-wise fc row reads every input position once (stride 1, Padding 0): "
                             f"write a strided or padded 1x1 as a conv",
                             field="Strides" if self.stride != 1 else "Padding")
        if self.kind == "pool" and self.filters not in (self.channels, 1):
            raise InputError("pool keeps the channel count (Num Filter equal to Channels) or reduces it to one "
                             "(Num Filter 1: each output reads its window over every channel)", field="Num Filter")
        if (self.kind == "elementwise" or self.kind in NORM_KINDS) and self.filters != self.channels:
            raise InputError(f"{self.kind} keeps the channel count: Num Filter must equal Channels",
                             field="Num Filter")
        if not self.inputs:
            raise InputError("a layer needs at least one input", field="Inputs")
        if self.operator is not None:
            if not isinstance(self.operator, str) or not _OPERATOR.fullmatch(self.operator):
                raise InputError(f"an operator is a lowercase ONNX op type (relu, sigmoid, mul …), got "
                                 f"{one_line(repr(self.operator), 40)}", field="operator")
            if self.kind != "elementwise":
                raise InputError(f"an operator names an elementwise row's operator; {self.name!r} is {self.kind}",
                                 field="operator")

    # -- output geometry -------------------------------------------------------------------
    @property
    def span_h(self) -> int:
        """Input rows one filter covers: dilation·(R − 1) + 1."""
        return self.dilation * (self.filter_h - 1) + 1

    @property
    def span_w(self) -> int:
        return self.dilation * (self.filter_w - 1) + 1

    @property
    def ofmap_h(self) -> int:
        return _out_size(self.ifmap_h, self.span_h, self.stride, self.padding, self.geometry, self.kind)

    @property
    def ofmap_w(self) -> int:
        return _out_size(self.ifmap_w, self.span_w, self.stride, self.padding, self.geometry, self.kind)

    @property
    def is_gemm(self) -> bool:
        """Runs on the systolic array (conv, fc, matmul); the rest run on the vector unit."""
        return self.kind in GEMM_KINDS

    @property
    def takes_network_input(self) -> bool:
        return all(name == NETWORK_INPUT for name in self.inputs)

    # -- sizes (elements, per sample) ------------------------------------------------------
    @property
    def input_elements(self) -> int:
        """Elements of the (unpadded) input feature map, per sample (all instances)."""
        return self.ifmap_h * self.ifmap_w * self.channels * self.repeat

    @property
    def output_elements(self) -> int:
        if self.kind == "matmul":
            return self.ifmap_h * self.filters * self.repeat
        return self.ofmap_h * self.ofmap_w * self.filters

    @property
    def weight_elements(self) -> int:
        """Trainable weights excluding bias (filters, FC matrix, or BN's γ and β)."""
        if self.kind in FILTER_KINDS:
            return self.filter_h * self.filter_w * (self.channels // self.groups) * self.filters
        if self.kind in NORM_KINDS:
            return 2 * self.channels
        return 0

    @property
    def parameter_count(self) -> int:
        """Trainable parameters: weights plus bias (what model summaries count)."""
        return self.weight_elements + (self.filters if self.bias and self.kind in FILTER_KINDS else 0)

    @property
    def macs(self) -> int:
        """Forward multiply-accumulates per sample (GEMM layers; 0 for vector-unit layers)."""
        if self.kind == "matmul":
            return self.ifmap_h * self.ifmap_w * self.filters * self.repeat
        if self.kind in CONV_FC_KINDS:
            return (self.ofmap_h * self.ofmap_w * self.filter_h * self.filter_w * (self.channels // self.groups)
                    * self.filters)
        if self.kind == "deconv":  # every input pixel meets every tap, as profilers count (the F op skips
            # the taps that land in the cropped padding)
            return self.ifmap_h * self.ifmap_w * self.filter_h * self.filter_w * (self.channels // self.groups) \
                * self.filters
        return 0


def layer_edges(layers) -> tuple[tuple[int, int], ...]:
    """(producer, consumer) index pairs of ``layers``' graph, in consumer order then each one's ``inputs``
    order: the one statement of it, for a :class:`Network` and for what was lowered from one (the
    network input, and any name not among ``layers``, is no layer)."""
    layers = tuple(layers)
    at = {layer.name: k for k, layer in enumerate(layers)}
    return tuple((at[p], k) for k, layer in enumerate(layers) for p in layer.inputs if p in at)


def _out_size(size: int, kernel: int, stride: int, padding: int, geometry: str, kind: str) -> int:
    if kind == "matmul":
        return size if kernel == 1 else 1
    if kind == "deconv":
        return (size - 1) * stride - 2 * padding + kernel
    if geometry == "scalesim":
        # SCALE-Sim 3.0.0 topology_utils: ceil((H - fh + s) / s), no padding. Integer ceiling: exact
        # for any size (float division overflows past ~1e308 and rounds past 2**53).
        return -(-(size - kernel + stride) // stride)
    return (size + 2 * padding - kernel) // stride + 1


@dataclass(frozen=True)
class PartRead:
    """``layer`` reads one part of ``producer``'s output, not all of it: the ``index``-th (from 1) of ``count``
    equal parts of its channels (q, k and v of a fused QKV projection are parts 1, 2 and 3 of 3), written
    ``producer#index/count`` in a topology CSV's ``Inputs``. Only shape checks read it: costs never do.
    ``index`` 0: a part no CSV entry states (an ONNX Slice, or two parts of one producer read together).
    ``node``: the ONNX routing node that cut it (``'/attn/Gather' (op Gather)``), or "" when read from a CSV."""

    layer: str
    producer: str
    index: int
    count: int
    node: str = ""

    def __post_init__(self) -> None:
        if self.index and not 1 <= self.index <= self.count:
            raise InputError(f"part {self.index} of {self.count}: a part is numbered 1 to its count", field="Inputs")
        if self.count < 1:
            raise InputError(f"a part count must be positive, got {self.count}", field="Inputs")

    @property
    def entry(self) -> str:
        """How a topology CSV's ``Inputs`` states the part (the producer alone for an unstated one)."""
        return f"{self.producer}#{self.index}/{self.count}" if self.index else self.producer


@dataclass(frozen=True)
class Network:
    """An ordered, validated set of layers; ``name`` is the file stem or the builder's name.

    ``notes``: what the loader changed or left out (renamed duplicates, skipped ONNX nodes), one
    line each, for commands to show the user. ``part_reads``: the layers that read a part of a producer's
    output (:class:`PartRead`: an ONNX Split, Slice or Gather cut it, or a CSV's ``NAME#K/N`` says so).
    ``file_batch``: the batch an ONNX file (or a PyTorch class's ``--input-shape``) fixes in its first input, None
    where it states none (a symbolic batch, a CSV): the layers are per sample, so the commands' batch is costed
    instead, and :func:`~archsim.workload.shipped.file_batch_note` says so.
    """

    name: str
    layers: tuple[Layer, ...]
    source: str | None = field(default=None, compare=False)
    notes: tuple[str, ...] = field(default=(), compare=False)
    part_reads: tuple[PartRead, ...] = field(default=(), compare=False)
    file_batch: int | None = field(default=None, compare=False)

    def __repr__(self) -> str:
        """One line, not every layer (a notebook shows a cell's value by its repr): ``.layers`` has them."""
        span = self.layers[0].name if len(self.layers) == 1 else f"{self.layers[0].name} … {self.layers[-1].name}"
        return f"Network(name={self.name!r}, {len(self.layers)} layers: {span})"

    def __post_init__(self) -> None:
        if not self.layers:
            raise InputError("a network needs at least one layer", file=self.source)
        if not isinstance(self.name, str) or not self.name.isprintable():  # names reach outputs and pages
            raise InputError(f"network name has control characters: {one_line(repr(self.name), 80)}",
                             file=self.source, field="name")
        seen: set[str] = set()
        for layer in self.layers:
            if not layer.name.isprintable():
                raise InputError(f"layer name has control characters: {one_line(repr(layer.name), 80)}",
                                 file=self.source, field="Layer name")
            if layer.name in seen or layer.name == NETWORK_INPUT:
                raise InputError(f"duplicate or reserved layer name {layer.name!r}", file=self.source,
                                 field="Layer name")
            for producer in layer.inputs:
                if producer != NETWORK_INPUT and producer not in seen:
                    raise InputError(f"layer {layer.name!r} reads {producer!r}, which is not defined above it",
                                     file=self.source, field="Inputs")
            seen.add(layer.name)
        inputs = {layer.name: layer.inputs for layer in self.layers}
        for part in self.part_reads:
            if part.producer not in inputs.get(part.layer, ()):
                raise InputError(f"part read: layer {part.layer!r} does not read {part.producer!r}",
                                 file=self.source, field="Inputs")

    def parts_of(self, layer: str) -> dict[str, int]:
        """The producers ``layer`` reads a stated part of, each with its part count (see :class:`PartRead`)."""
        return {p.producer: p.count for p in self.part_reads if p.layer == layer and p.index}

    def __len__(self) -> int:
        return len(self.layers)

    def __iter__(self):
        return iter(self.layers)

    @property
    def edges(self) -> tuple[tuple[int, int], ...]:
        """(producer, consumer) layer index pairs of the network's graph (the network input is no layer)."""
        return layer_edges(self.layers)

    def layer(self, name: str) -> Layer:
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(name)

    @property
    def parameter_count(self) -> int:
        return sum(layer.parameter_count for layer in self.layers)

    def only(self, *kinds: str) -> Network:
        """The sub-network of the given kinds (e.g. the conv layers LayerPipe evaluates).

        Inputs that point at dropped layers are re-pointed to the nearest kept producer, so the
        result is again a valid chain/DAG over the kept layers. A kind is spelled as a layer's type is (``linear`` is
        ``fc``); a word no type is spelled so (a layer's name, ``conv2``) is refused naming the kinds, where it was
        dropped unsaid beside a kind the network has, and refused as a kind it lacked when alone.
        """
        unknown = [kind for kind in kinds if spelled_kind(kind) is None]
        if unknown:
            raise InputError(f"{', '.join(map(repr, unknown))}: not a layer kind; kinds are {', '.join(LAYER_KINDS)} "
                             "(layers are chosen by kind, not by name)", field="only")
        wanted = {spelled_kind(kind) for kind in kinds}
        kept = {layer.name for layer in self.layers if layer.kind in wanted}
        if not kept:
            has = ", ".join(dict.fromkeys(layer.kind for layer in self.layers))
            raise InputError(f"network {self.name!r} has no layers of kind {', '.join(kinds)}; its kinds: {has}",
                             field="only")
        by_name = {layer.name: layer for layer in self.layers}

        def resolve(name: str) -> tuple[str, ...]:
            if name == NETWORK_INPUT or name in kept:
                return (name,)
            found: list[str] = []
            for parent in by_name[name].inputs:
                for item in resolve(parent):
                    if item not in found:
                        found.append(item)
            return tuple(found)

        from dataclasses import replace

        layers = []
        for layer in self.layers:
            if layer.name not in kept:
                continue
            inputs: list[str] = []
            for parent in layer.inputs:
                for item in resolve(parent):
                    if item not in inputs:
                        inputs.append(item)
            layers.append(replace(layer, inputs=tuple(inputs)))
        still = {(layer.name, p) for layer in layers for p in layer.inputs}  # a part of a dropped layer is gone
        return Network(name=f"{self.name}[{','.join(kinds)}]", layers=tuple(layers), source=self.source,
                       notes=self.notes, part_reads=tuple(p for p in self.part_reads if (p.layer, p.producer) in still),
                       file_batch=self.file_batch)
