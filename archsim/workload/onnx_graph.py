"""An ONNX model's graph made ready to map to layers: read (size-capped), its large weights dropped,
its symbolic input dimensions fixed, checked by onnx's checker, and its shapes inferred — with
constant folding until no shape arithmetic is left — so every tensor the importer reads has a
static, bounded shape (:mod:`archsim.workload.onnx_import` maps the nodes)."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import TYPE_CHECKING

from archsim.console import keyed, setting
from archsim.errors import InputError
from archsim.validate import read_bytes, shown
from archsim.workload.onnx_fold import fold_constants

if TYPE_CHECKING:
    import onnx  # annotations only: imported when a model is read

MAX_DIMENSION = 2**31 - 1
MAX_ELEMENTS = 2**50  # beyond this, byte counts overflow the int64 arithmetic downstream
MAX_BYTES = 2**31  # protobuf's own limit for one message
MAX_FOLD_ROUNDS = 4  # shape inference ⇄ constant folding until no shape arithmetic is left


def read_model(onnx, path: Path):
    """The ``onnx.ModelProto`` in ``path``, or an error naming the file."""
    data = read_bytes(path, "ONNX file", max_bytes=MAX_BYTES)  # weights make ONNX files the one larger cap
    if not data:  # protobuf decodes no bytes as an empty model, which would read as a graph without inputs
        raise InputError("empty file, not an ONNX model", file=str(path))
    try:
        return onnx.load_model_from_string(data)
    except Exception as exc:  # protobuf's DecodeError and friends: the file is not an ONNX model
        raise InputError(f"not an ONNX model ({type(exc).__name__})", file=str(path)) from None


SMALL_CONSTANT = 4096  # initializers up to this many elements keep their values (shape arithmetic needs them)


def _light(onnx, model):
    """A copy of ``model`` without large weight values: large initializers become typed graph
    inputs, so checking and shape inference need not copy hundreds of MB of weights."""
    graph = model.graph
    light = onnx.GraphProto(name=graph.name)
    light.node.extend(graph.node)
    light.input.extend(graph.input)
    light.output.extend(graph.output)
    light.value_info.extend(graph.value_info)
    listed = {v.name for v in graph.input}
    for tensor in graph.initializer:
        if prod(tensor.dims) <= SMALL_CONSTANT:
            light.initializer.append(tensor)
        elif tensor.name not in listed:
            light.input.append(onnx.helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims)))
    out = onnx.ModelProto(ir_version=model.ir_version, producer_name=model.producer_name, domain=model.domain,
                          model_version=model.model_version)
    out.opset_import.extend(model.opset_import)
    out.functions.extend(model.functions)
    out.graph.CopyFrom(light)
    return out


def first_line(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return text[:300] + ("…" if len(text) > 300 else "")


@dataclass(frozen=True)
class CheckedGraph:
    """The checked, shape-inferred graph; ``batch``: the first input's batch dimension; ``shapes``:
    every tensor with a static shape (batch included); ``constants``: the initializers' shapes;
    ``inputs``: the graph inputs that are not initializers; ``fixed_batch``: whether the file fixes that batch
    (a number, not a symbol set to 1 here)."""

    graph: onnx.GraphProto
    batch: int
    shapes: dict[str, tuple[int, ...]]
    constants: dict[str, tuple[int, ...]]
    inputs: tuple[str, ...]
    fixed_batch: bool = False


def checked_graph(onnx, model, dims: dict[str, int]) -> CheckedGraph:
    """``model``'s graph with the symbolic input dimensions ``dims`` fixed (the first input's first,
    the batch, is 1 and not ``dims``'s to set, as is a dimension of its symbol on another input: layers are per
    sample; another input's symbolic first dimension of another symbol is refused naming both), checked and
    shape-inferred; an InputError for anything else."""
    light = _light(onnx, model)
    graph = light.graph
    initializers = {t.name: tuple(t.dims) for t in model.graph.initializer}
    inputs = [v for v in graph.input if v.name not in initializers]
    if not inputs:
        raise InputError("the ONNX graph has no inputs")
    symbolic = {dim.dim_param or f"{value.name}[{axis}]" for value in model.graph.input
                for axis, dim in enumerate(value.type.tensor_type.shape.dim) if not dim.HasField("dim_value")}
    unused = sorted(set(dims) - symbolic)
    if unused:  # a typo would otherwise change nothing, silently
        raise InputError(f"{setting('dim')} {shown(unused[0])} names no symbolic dimension of the model's inputs"
                         + (f" (it has {', '.join(sorted(symbolic))})" if symbolic else " (it has none)"),
                         field="dim")
    batch_dim = _batch_dim(inputs[0])
    for index, value in enumerate(inputs):
        tensor_type = value.type.tensor_type
        if not tensor_type.HasField("shape"):
            raise InputError(f"graph input {value.name!r} has no shape", field="input")
        for axis, dim in enumerate(tensor_type.shape.dim):
            if dim.HasField("dim_value"):
                if dim.dim_value <= 0 and (index, axis) != (0, 0):  # the batch's 0 is named below
                    raise InputError(f"graph input {shown(value.name)} fixes dimension {axis} at {dim.dim_value}: "
                                     "an empty tensor, nothing to cost; export the model at its real size",
                                     field="input")
                continue
            label = dim.dim_param or f"{value.name}[{axis}]"
            if label in dims and index == 0 and axis == 0:  # read per sample: a value here changed no cost
                raise InputError(f"{keyed('dim', label)} fixes the batch, the first dimension of graph input "
                                 f"{shown(value.name)}, but layers are read per sample: leave it out and give the "
                                 f"batch with {setting('batch', placeholder='N')}", field="dim")
            if label in dims:
                dim.dim_value = dims[label]
            elif index == 0 and axis == 0 or (batch_dim and dim.dim_param == batch_dim):
                dim.dim_value = 1  # the batch (its symbol wherever it stands is one size): layers are per sample
            elif axis == 0 and batch_dim is not None:  # another input's own batch would be costed at its --dim
                batch_label = batch_dim or f"{inputs[0].name}[0]"
                raise InputError(f"graph input {shown(value.name)} dimension 0 ({label!r}) is symbolic and not the "
                                 f"batch of the first graph input {shown(inputs[0].name)} ({batch_label!r}): "
                                 f"if it is the batch too, name both dimensions alike in the export, or give "
                                 f"{keyed('dim', label, placeholder='1')} (layers are per sample); otherwise fix it "
                                 f"with {keyed('dim', label, placeholder='VALUE')}", field="input")
            else:
                raise InputError(f"graph input {value.name!r} dimension {axis} ({label!r}) is symbolic; "
                                 f"fix it with {keyed('dim', label, placeholder='VALUE')}", field="input")
    first = inputs[0].type.tensor_type.shape.dim
    batch = first[0].dim_value if len(first) else 1
    if len(first) and batch <= 0:  # a batch of 0 would make every per-sample shape 0 / 0
        raise InputError(f"graph input {shown(inputs[0].name)} fixes its batch dimension at 0; give a batch of at "
                         "least 1 (or leave it symbolic)", field="input")
    shapes: dict[str, tuple[int, ...]] = {}
    try:
        onnx.checker.check_model(light)
        for _ in range(MAX_FOLD_ROUNDS):
            light = onnx.shape_inference.infer_shapes(light, check_type=True, strict_mode=True, data_prop=True)
            _read_shapes(light.graph, shapes)
            if not fold_constants(onnx, light, shapes):
                break
    except InputError:
        raise
    except Exception as exc:  # ValidationError, InferenceError, protobuf errors: the model is invalid
        raise InputError(f"invalid ONNX model: {first_line(exc)}") from None
    graph = light.graph
    for tensor in graph.initializer:
        initializers.setdefault(tensor.name, tuple(tensor.dims))
    constants = {name: checked_shape(name, shape) for name, shape in initializers.items()}
    return CheckedGraph(graph, batch, shapes, constants, tuple(value.name for value in inputs),
                        fixed_batch=bool(len(first)) and batch_dim is None)


def _batch_dim(first) -> str | None:
    """The first graph input's batch symbol (its first dimension's ``dim_param``; ``""`` where it has none), or
    None where that dimension is fixed or absent: another input's dimension of the same symbol is the batch too."""
    shape = first.type.tensor_type.shape.dim if first.type.tensor_type.HasField("shape") else ()
    return None if not shape or shape[0].HasField("dim_value") else shape[0].dim_param


def _read_shapes(graph, shapes: dict[str, tuple[int, ...]]) -> None:
    for value in list(graph.input) + list(graph.value_info) + list(graph.output):
        tensor_type = value.type.tensor_type
        if value.type.HasField("tensor_type") and tensor_type.HasField("shape") and all(
                d.HasField("dim_value") for d in tensor_type.shape.dim):
            dims = tuple(d.dim_value for d in tensor_type.shape.dim)
            shapes[value.name] = checked_shape(value.name, dims)


def checked_shape(tensor: str, shape: tuple[int, ...]) -> tuple[int, ...]:
    """``shape``, or an error when a dimension or the element count passes archsim's bounds."""
    if any(d < 0 or d > MAX_DIMENSION for d in shape) or prod(shape) > MAX_ELEMENTS:
        raise InputError(f"tensor {tensor!r} has shape {list(shape)}: dimensions must lie in 0..{MAX_DIMENSION} "
                         f"and a tensor hold at most 2**50 elements", field="shape")
    return shape
