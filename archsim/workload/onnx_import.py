"""ONNX model → :class:`Network`: checked by ``onnx.checker``, shaped by ONNX shape inference.

Validator, then factory: the model must pass ``onnx.checker`` (well-formed, topologically
sorted — so no cycles — known ops) and strict shape inference with every symbolic dimension
fixed: the batch dimension (the first dimension of the first graph input) becomes 1 unless the
file fixes it, as does that symbol wherever another input states it — layers are per sample and commands apply
``--batch`` at lowering — and any other
symbolic dimension must be given in ``dims`` (``archsim import --dim seq=128``) — that is
:mod:`archsim.workload.onnx_graph`'s job. Then each node
becomes a layer by the rules of :mod:`archsim.workload.onnx_ops`. An op archsim does not model is
an error naming the node and its op type, or with ``unsupported="skip"`` is left out (its
consumers read its producers) and listed in ``Network.notes``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import prod
from pathlib import Path
from types import ModuleType
from typing import Any

from archsim.choices.networks import UNSUPPORTED
from archsim.console import setting
from archsim.errors import InputError
from archsim.validate import check_file_ending
from archsim.workload import onnx_ops as ops
from archsim.workload.layer import NETWORK_INPUT, Layer, Network, PartRead, flattening_conv_note
from archsim.workload.onnx_graph import checked_graph, read_model


def _onnx():
    try:
        import onnx
    except ImportError:  # pragma: no cover - onnx is a dependency; guards a broken install
        raise InputError("reading .onnx files needs the 'onnx' package (pip install onnx)") from None
    return onnx


def load_onnx(model, *, name: str | None = None, unsupported: str = "error",
              dims: dict[str, int] | None = None) -> Network:
    """An ONNX model (a path or an ``onnx.ModelProto``) as a network. Raises :class:`InputError`."""
    if unsupported not in UNSUPPORTED:
        raise InputError(f"unknown --unsupported {unsupported!r}; choose error or skip", field="unsupported")
    onnx = _onnx()
    source = "<onnx model>"
    if isinstance(model, (str, Path)):
        check_file_ending(model, "ONNX file")  # before Path drops a trailing "/"
        model, source = read_model(onnx, Path(model)), str(model)
        name = name or Path(source).stem
    try:
        return _Importer(onnx, model, source, unsupported, dict(dims or {})).run(name or "onnx_model")
    except UnicodeDecodeError:  # protobuf decodes string fields lazily: a corrupted name surfaces here
        raise InputError("invalid ONNX model: a string field is not UTF-8", file=source) from None
    except InputError as exc:
        if exc.where.file is None:
            raise InputError(exc.message, file=source, line=exc.where.line, field=exc.where.field) from None
        raise


@dataclass(frozen=True)
class _Cut:
    """A tensor cut from a bigger one by ``node`` (``'/attn/Gather' (op Gather)``): part ``index`` (from 1; 0
    where the importer cannot number it) of ``count`` equal parts of ``whole`` elements."""

    node: str
    index: int
    count: int
    whole: int


@dataclass
class _Importer:
    onnx: ModuleType  # the onnx package, imported when a model is read
    model: object
    source: str
    unsupported: str
    dims: dict[str, int]
    layers: list[Layer] = field(default_factory=list)
    producers: dict[str, tuple[str, ...]] = field(default_factory=dict)  # tensor → layers that made it
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # full shapes, batch included
    constants: dict[str, tuple[int, ...]] = field(default_factory=dict)  # static tensors' shapes
    names: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    batch: int = 1
    fixed_batch: bool = False
    absorbed: set[int] = field(default_factory=set)  # node indices folded into a previous layer
    parts: dict[str, _Cut] = field(default_factory=dict)  # tensor → how a routing node cut it from a bigger one
    part_reads: list[PartRead] = field(default_factory=list)  # Network.part_reads
    values: dict[str, Any] = field(default_factory=dict)  # small constants' values (a Gather's index)

    def run(self, name: str) -> Network:
        checked = checked_graph(self.onnx, self.model, self.dims)
        graph, self.batch, self.fixed_batch = checked.graph, checked.batch, checked.fixed_batch
        self.shapes.update(checked.shapes)
        self.constants.update(checked.constants)
        self.values.update((t.name, self.onnx.numpy_helper.to_array(t)) for t in graph.initializer if prod(t.dims) <= 16)
        self.producers.update((tensor, (NETWORK_INPUT,)) for tensor in checked.inputs)
        nodes = list(graph.node)
        if not nodes:
            raise InputError("the ONNX graph has no nodes")
        for node in nodes:  # protobuf hands back bytes for a string field that is not UTF-8
            if not all(isinstance(t, str) for t in (node.name, node.op_type, node.domain, *node.input, *node.output)):
                raise UnicodeDecodeError("utf-8", b"", 0, 1, "not UTF-8")
        consumers: dict[str, list[int]] = {}
        for index, node in enumerate(nodes):
            for tensor in node.input:
                consumers.setdefault(tensor, []).append(index)
        for index, node in enumerate(nodes):
            if index not in self.absorbed:
                self._node(index, node, nodes, consumers)
        if not self.layers:
            raise InputError("no node of the ONNX graph maps to a layer (nothing to cost)")
        return Network(name=name, layers=tuple(self.layers), source=self.source, notes=tuple(self.notes),
                       part_reads=tuple(self.part_reads), file_batch=self.batch if self.fixed_batch else None)

    # -- per node ----------------------------------------------------------------------------
    def _node(self, index: int, node, nodes, consumers) -> None:
        name = node.name or f"{node.op_type}_{index}"
        dynamic = [t for t in node.input if t and t in self.producers]
        if node.domain not in ("", "ai.onnx") or node.op_type not in ops.SUPPORTED:
            return self._skip(node, name, dynamic, "op type not modelled by archsim")
        if node.op_type in ops.STATIC or not dynamic:
            for out in node.output:
                self.constants[out] = self.shapes.get(out, ())
            return None
        if node.op_type in ops.ZERO_COST:
            routed = dynamic[:1] if node.op_type in ("Reshape", "Expand", "Tile", "Slice", "Pad") else dynamic
            if node.op_type == "Gather" and node.input[0] in self.constants:
                routed = [t for t in node.input[1:] if t in self.producers]
            self._route(node, self._union(routed))
            self._mark_parts(node, name, routed)
            return None
        attrs = {a.name: self.onnx.helper.get_attribute_value(a) for a in node.attribute}
        try:
            layer = self._layer(node, name, attrs, dynamic, index, nodes, consumers)
        except InputError as exc:
            if self.unsupported == "skip" and exc.where.field == "node":
                return self._skip(node, name, dynamic, exc.message.split(": ", 1)[-1])
            if exc.message.startswith("node "):
                raise
            raise InputError(f"node {name!r} (op {node.op_type}): {exc.message}", field=exc.where.field) from None
        self.layers.append(layer)
        self.names.add(layer.name)
        flattening = flattening_conv_note(layer)
        if flattening:
            self.notes.append(f"node {flattening}")
        self._part_reads(layer, dynamic)
        for out in node.output[:1]:
            self.producers[out] = (layer.name,)
        if index + 1 in self.absorbed:  # a folded bias Add: its output is this layer's output
            self.producers[nodes[index + 1].output[0]] = (layer.name,)
        return None

    def _mark_parts(self, node, name: str, routed: list[str]) -> None:
        """Mark ``node``'s outputs as a part of a layer's output where it cuts one (a Split, Slice or Gather
        of fewer elements than its input), or routes such a part on (a Reshape or Transpose of it): numbered
        (:class:`_Cut`) where a Split cuts equal parts or a Gather takes one index, and the part then only
        changes shape."""
        outs = [out for out in node.output if out]
        sizes = [prod(self.shapes.get(out, ()) or (0,)) for out in outs]
        whole = prod(self.shapes.get(routed[0], ()) or (0,)) if routed else 0
        cut = next((self.parts[t] for t in routed if t in self.parts), None)
        cutting = node.op_type in ("Split", "Slice", "Gather") and routed == [node.input[0]] \
            and any(0 < size < whole for size in sizes)
        if cut is None and cutting:
            where = f"{name!r} (op {node.op_type})"
            for position, (out, size) in enumerate(zip(outs, sizes)):
                self.parts[out] = _Cut(where, self._part_index(node, position, whole, sizes), whole // max(size, 1),
                                       whole)
        elif cut:
            same = len(routed) == 1 and not cutting and all(size == whole for size in sizes)
            self.parts.update((out, cut if same else _Cut(cut.node, 0, cut.count, cut.whole)) for out in outs)

    def _part_index(self, node, position: int, whole: int, sizes: list[int]) -> int:
        """Which of the equal parts (from 1) ``node``'s output ``position`` is, or 0 where it cannot say."""
        size = sizes[position]
        if size <= 0 or whole % size:
            return 0
        if node.op_type == "Split":
            return position + 1 if len(sizes) == whole // size and len(set(sizes)) == 1 else 0
        if node.op_type == "Gather":
            index = self.values.get(node.input[1])
            shape = self.shapes.get(node.input[0], ())
            axis = next((self.onnx.helper.get_attribute_value(a) for a in node.attribute if a.name == "axis"), 0)
            if index is not None and index.ndim == 0 and shape and shape[axis % len(shape)] == whole // size:
                return int(index) % (whole // size) + 1
        if node.op_type == "Slice":
            return self._slice_index(node, whole // size)
        return 0

    def _slice_index(self, node, count: int) -> int:
        """Which of ``count`` equal parts a Slice of one axis, step 1, takes (``torch.chunk``'s export), or 0."""
        shape = self.shapes.get(node.input[0], ())
        starts, axes, steps = (self.values.get(node.input[i]) if len(node.input) > i and node.input[i] else None
                               for i in (1, 3, 4))
        if starts is None or starts.size != 1 or not shape or (steps is not None and int(steps.flat[0]) != 1):
            return 0
        dim = shape[int(axes.flat[0]) % len(shape) if axes is not None and axes.size == 1 else 0]
        start = int(starts.flat[0])
        start = min(max(start + dim if start < 0 else start, 0), dim)
        if dim % count or start % (dim // count):
            return 0
        return start // (dim // count) + 1

    def _part_reads(self, layer: Layer, dynamic: list[str]) -> None:
        """Record the producers ``layer`` reads a part of (:class:`PartRead`): numbered where it reads one part of
        one producer's whole output, cut once."""
        for producer in layer.inputs:
            tensors = [t for t in dynamic if producer in self.producers.get(t, ())]
            cuts = [self.parts[t] for t in tensors if t in self.parts]
            if not cuts:
                continue
            cut = cuts[0]
            whole = next((x.output_elements for x in self.layers if x.name == producer), 0)
            numbered = (len(tensors) == len(cuts) == 1 and len(self.producers[tensors[0]]) == 1
                        and cut.whole == whole * self.batch)  # full shapes hold the batch
            self.part_reads.append(PartRead(layer.name, producer, cut.index if numbered else 0, max(cut.count, 1),
                                            cut.node))

    def _skip(self, node, name: str, dynamic: list[str], why: str) -> None:
        if self.unsupported != "skip":
            raise InputError(f"node {name!r} (op {node.op_type}): {why}; use {setting('unsupported', 'skip')} to "
                             "leave it out", field="node")
        self.notes.append(f"skipped ONNX node {name!r} (op {node.op_type}): {why}")
        self._route(node, self._union(dynamic))

    def _route(self, node, producers: tuple[str, ...]) -> None:
        for out in node.output:
            if out:
                self.producers[out] = producers or (NETWORK_INPUT,)

    def _union(self, tensors: list[str]) -> tuple[str, ...]:
        found: list[str] = []
        for tensor in tensors:
            for producer in self.producers.get(tensor, ()):
                if producer not in found:
                    found.append(producer)
        return tuple(found)

    def _shape(self, node, name: str, tensor: str) -> tuple[int, ...]:
        """Per-sample shape of an activation tensor (batch dimension removed)."""
        shape = self.shapes.get(tensor)
        if shape is None:
            raise InputError(f"node {name!r} (op {node.op_type}): shape of {tensor!r} unknown after shape "
                             f"inference", field="shape")
        if shape and shape[0] == self.batch:
            return shape[1:]
        if self.batch == 1:
            return shape
        if shape and shape[0] % self.batch == 0:
            return (shape[0] // self.batch,) + shape[1:]
        raise InputError(f"node {name!r} (op {node.op_type}): tensor {tensor!r} of shape {list(shape)} does "
                         f"not lead with the batch ({self.batch}), so it cannot be read per sample; give the model at "
                         f"batch 1 (an ONNX file exported so or with its batch left symbolic; for a PyTorch class, "
                         f"{setting('input-shape')}'s first number is the batch: 1,3,224,224) and set the batch with "
                         f"{setting('batch')}", field="shape")

    def _unique(self, name: str) -> str:
        clean = "".join("_" if ch in ',;"\r\n' else ch for ch in name).strip() or "node"
        if clean == NETWORK_INPUT:
            clean = "input_node"
        candidate, n = clean, 1
        while candidate in self.names:
            n += 1
            candidate = f"{clean}_{n}"
        return candidate

    def _layer(self, node, name: str, attrs: dict, dynamic: list[str], index: int, nodes, consumers) -> Layer:
        op = node.op_type
        inputs = self._union(dynamic)
        layer_name = self._unique(name)
        if op == "Gemm" and attrs.get("transA", 0):  # before the shapes, whose batch rule it breaks
            raise ops.unsupported_node(node, name, "transA=1 (the batch would sit in the reduction)")
        out = self._shape(node, name, node.output[0])
        common: dict[str, Any] = {"name": layer_name, "inputs": inputs}  # every Layer's name and inputs
        if op in ("Conv", "ConvTranspose"):
            return self._conv(node, name, attrs, common, out)
        if op in ("Gemm", "MatMul"):
            return self._gemm(node, name, attrs, common, out, index, nodes, consumers)
        if op in ops.POOLS:
            return self._pool(node, name, attrs, common, out)
        if op in ops.NORMS:
            x = self._shape(node, name, node.input[0])
            h, w, c = ops.hwc(x)
            if op == "LayerNormalization":
                axis = attrs.get("axis", -1) % max(len(x), 1) if x else 0
                c = prod(x[axis:]) if x else 1
                h, w = prod(x) // c, 1
            return Layer(kind="layernorm" if op == "LayerNormalization" else "batchnorm", ifmap_h=h, ifmap_w=w, filter_h=1, filter_w=1, channels=c, filters=c,
                         **common)
        if op in ops.REDUCTIONS:
            x, rank = self._shape(node, name, node.input[0]), len(self.shapes[node.input[0]])
            axes = ops.reduced_axes(node, attrs, name, self.values, rank)
            layer = ops.reduction(x, ops.kept_dims(x, out) if axes is None else ops.kept_shape(x, rank, axes), common)
            return replace(layer, operator=op.lower()) if layer.kind == "elementwise" else layer
        h, w, c = ops.hwc(out)
        return Layer(kind="elementwise", ifmap_h=h, ifmap_w=w, filter_h=1, filter_w=1, channels=c, filters=c,
                     operator=op.lower(), **common)

    def _conv(self, node, name: str, attrs: dict, common: dict, out: tuple[int, ...]) -> Layer:
        x = self._shape(node, name, node.input[0])
        weight = self.constants.get(node.input[1]) or self.shapes.get(node.input[1])
        if len(x) != 3 or not weight or len(weight) != 4:
            raise ops.unsupported_node(node, name, f"only 2-D convolutions are modelled (input {list(x)})")
        if node.input[1] in self.producers:
            raise ops.unsupported_node(node, name, "weights computed by the graph (not a constant)")
        c, h, w = x
        stride, pads, dilation = ops.spatial(node, attrs, name, size=(h, w), kernel=(weight[2], weight[3]))
        groups = int(attrs.get("group", 1))
        transposed = node.op_type == "ConvTranspose"
        # the weight's input channels (Conv: (M, C / group, kH, kW); ConvTranspose: (C, M / group, kH, kW)) must be
        # the input's: ONNX's shape inference does not check it, and the layer would be costed on the input's
        # channels with weights the model does not have
        expected = weight[0] if transposed else weight[1] * groups
        if expected != c:
            per_group = f" ({weight[1]} per group × {groups} groups)" if groups > 1 and not transposed else ""
            raise InputError(f"node {name!r} (op {node.op_type}): input has {c} channels, the weight "
                             f"{list(weight)} expects {expected}{per_group}", field="shape")
        if transposed and len(set(pads)) > 1:  # its pads crop the output: no padded input to fold them into
            raise ops.unsupported_node(node, name, f"pads={list(pads)}: a transposed convolution's padding must be "
                                               f"symmetric")
        pad, extra_h, extra_w = ops.fold_pads(pads)
        h, w = h + extra_h, w + extra_w
        if transposed and any(attrs.get("output_padding", [])):
            raise ops.unsupported_node(node, name, f"output_padding={list(attrs['output_padding'])} is not modelled")
        layer = Layer(kind="deconv" if transposed else "conv", ifmap_h=h, ifmap_w=w, filter_h=weight[2],
                      filter_w=weight[3], channels=c, filters=weight[1] * groups if transposed else weight[0],
                      stride=stride, padding=pad, groups=groups, dilation=dilation,
                      bias=len(node.input) > 2 and bool(node.input[2]), **common)
        self._check_out(node, name, layer, out)
        return layer

    def _pool(self, node, name: str, attrs: dict, common: dict, out: tuple[int, ...]) -> Layer:
        x = self._shape(node, name, node.input[0])
        if len(x) != 3:
            raise ops.unsupported_node(node, name, f"only 2-D pooling is modelled (input {list(x)})")
        c, h, w = x
        if node.op_type.startswith("Global"):
            kernel, stride, pad = (h, w), 1, 0
        else:
            kernel = tuple(attrs["kernel_shape"])
            stride, pads, dilation = ops.spatial(node, attrs, name, size=(h, w), kernel=kernel)
            if dilation != 1:
                raise ops.unsupported_node(node, name, "dilated pooling is not modelled")
            pad, extra_h, extra_w = ops.fold_pads(pads)
            h, w = h + extra_h, w + extra_w
        layer = Layer(kind="pool", ifmap_h=h, ifmap_w=w, filter_h=kernel[0], filter_w=kernel[1], channels=c,
                      filters=c, stride=stride, padding=pad, **common)
        self._check_out(node, name, layer, out)
        return layer

    @staticmethod
    def _check_out(node, name: str, layer: Layer, out: tuple[int, ...]) -> None:
        if (layer.filters, layer.ofmap_h, layer.ofmap_w) != tuple(out):
            raise ops.unsupported_node(node, name, f"ONNX output {list(out)} differs from archsim's "
                                               f"{[layer.filters, layer.ofmap_h, layer.ofmap_w]} (ceil_mode?)")

    def _gemm(self, node, name: str, attrs: dict, common: dict, out: tuple[int, ...], index: int, nodes,
              consumers) -> Layer:
        a, b = node.input[0], node.input[1]
        if a in self.producers and b in self.producers:  # activation × activation
            x, y = self._shape(node, name, a), self._shape(node, name, b)
            m = x[-2] if len(x) >= 2 else 1
            k = x[-1]
            n = y[-1] if not attrs.get("transB", 0) else y[-2]
            repeat = prod(out[:-2]) if len(out) > 2 else 1
            return Layer(kind="matmul", ifmap_h=m, ifmap_w=k, filter_h=1, filter_w=k, channels=1, filters=n,
                         repeat=repeat, **common)
        if a in self.producers:
            x, weight = self._shape(node, name, a), self.constants.get(b, ())
            if len(weight) != 2:
                raise ops.unsupported_node(node, name, f"weight operand of rank {len(weight)} (expected a matrix)")
            k, n = (weight[1], weight[0]) if attrs.get("transB", 0) else weight
        else:  # constant × activation: the constant is the weight, the activation's columns are the rows
            x, weight = self._shape(node, name, b), self.constants.get(a, ())
            if len(weight) != 2 or len(x) != 2:
                raise ops.unsupported_node(node, name, "a constant left operand needs two matrices")
            x, (n, k) = (x[1], x[0]), weight
        rows = prod(x[:-1]) if len(x) > 1 else 1
        if (x[-1] if x else 1) != k:
            raise InputError(f"node {name!r} (op {node.op_type}): input has {x[-1] if x else 1} features, "
                             f"the weight expects {k}", field="shape")
        bias = node.op_type == "Gemm" and len(node.input) > 2 and bool(node.input[2])
        if not bias and self._bias_follows(node, index, nodes, consumers, n):
            bias = True
            self.absorbed.add(index + 1)
        return Layer(kind="fc", ifmap_h=rows, ifmap_w=1, filter_h=1, filter_w=1, channels=k, filters=n, bias=bias,
                     **common)

    def _bias_follows(self, node, index: int, nodes, consumers, n: int) -> bool:
        """Is the next node ``Add(this, constant of n elements)`` and this layer's only consumer?"""
        if index + 1 >= len(nodes) or consumers.get(node.output[0], []) != [index + 1]:
            return False
        add = nodes[index + 1]
        if add.op_type != "Add" or len(add.input) != 2:
            return False
        other = add.input[1] if add.input[0] == node.output[0] else add.input[0]
        return other in self.constants and other not in self.producers and prod(self.constants[other]) == n
