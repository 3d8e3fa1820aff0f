"""An ONNX reduction's layer row comes from the axes the node names, not from matching extents.

Each model reduces a tensor whose axes have equal extents, so the output's extents alone cannot say which axis
went: the old importer matched them from the last axis and, with ``keepdims=0``, picked the wrong one (its window,
channels and Num Filter were another reduction's). The ``keepdims=0`` cases failed before the fix; the
``keepdims=1`` ones (whose output keeps every axis in place) check that both spellings give one row.

Hand counts, per sample (the batch of 1 is stripped; rank 3 (C, H, W) is H × W × C, rank 2 (S, D) is S × 1 × D):

* (8, 8, 8) reduced over W: an 8 × 8 map of 8 channels, window 1 × 8, 8 channels kept (Num Filter 8);
  output 8 × 1 × 8 = 64 values, each reading 8: 512 = 8·8·8 input elements.
* (8, 8, 8) reduced over H: window 8 × 1, Num Filter 8; output 1 × 8 × 8 = 64, 512 elements read.
* (8, 8, 8) reduced over C: window 1 × 1, Num Filter 1 (every channel into one); output 8 × 8 × 1 = 64, each
  reading 8 channels: 512.
* (6, 6) tokens × features reduced over features (a LayerNorm's mean, with S = D): a 6 × 1 map of 6 channels,
  window 1 × 1, Num Filter 1: 6 outputs reading 6 each, 36 elements.
* (6, 6) reduced over tokens: window 6 × 1, Num Filter 6: 6 outputs reading 6 each, 36.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_models import model, value

from archsim.lowering import lower_network
from archsim.workload import load_onnx
from archsim.workload.onnx_ops import reduced_axes

MAP = [1, 8, 8, 8]  # N, C, H, W
TOKENS = [1, 6, 6]  # N, S, D
# (input, axis of the full tensor, expected row (ifmap H, W, window H, W, channels, Num Filter), input elements)
CASES = [
    (MAP, 3, (8, 8, 1, 8, 8, 8), 512),
    (MAP, 2, (8, 8, 8, 1, 8, 8), 512),
    (MAP, 1, (8, 8, 1, 1, 8, 1), 512),
    (TOKENS, 2, (6, 1, 1, 1, 6, 1), 36),
    (TOKENS, 1, (6, 1, 6, 1, 6, 6), 36),
]


def reduce_model(op: str, shape: list[int], axis: int, keepdims: int, opset: int) -> onnx.ModelProto:
    """One ``op`` node over ``axis``: the ``axes`` attribute where the opset has it, else the second input (an
    initializer): ReduceSum's moved at opset 13, the others' at 18."""
    as_input = opset >= (13 if op == "ReduceSum" else 18)
    inputs, inits, attrs = ["x"], [], {"keepdims": keepdims}
    if op.startswith("Arg"):
        attrs["axis"] = axis
    elif as_input:
        inputs.append("axes")
        inits.append(numpy_helper.from_array(np.array([axis], np.int64), "axes"))
    else:
        attrs["axes"] = [axis]
    gone = axis % len(shape)
    out = [1 if i == gone else n for i, n in enumerate(shape)] if keepdims else \
        [n for i, n in enumerate(shape) if i != gone]
    node = helper.make_node(op, inputs, ["y"], name="r", **attrs)
    y = helper.make_tensor_value_info("y", TensorProto.INT64, out) if op.startswith("Arg") else value("y", out)
    return model([node], [value("x", shape)], [y], inits, opset=opset)


def row_and_work(net) -> tuple[tuple[int, ...], int]:
    layer = net.layers[0]
    row = (layer.ifmap_h, layer.ifmap_w, layer.filter_h, layer.filter_w, layer.channels, layer.filters)
    assert layer.kind == "pool", layer
    return row, lower_network(net, 1, "paper")[0].ops[0].vector_elements


@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("op,opset", [("ReduceMean", 13), ("ReduceMean", 18), ("ReduceSum", 13),
                                      ("ReduceMax", 18), ("ArgMax", 13)])
@pytest.mark.parametrize("shape,axis,row,elements", CASES)
def test_a_reduction_row_is_the_axes_the_node_names(op, opset, keepdims, shape, axis, row, elements):
    """The row and its vector work by the hand counts above, for every spelling of the axes."""
    assert row_and_work(load_onnx(reduce_model(op, shape, axis, keepdims, opset))) == (row, elements)


def test_a_negative_axis_counts_from_the_last():
    """axes=[-1] of (1, 8, 8, 8) is W: the first case's row."""
    assert row_and_work(load_onnx(reduce_model("ReduceMean", MAP, -1, 0, 13)))[0] == CASES[0][2]


@pytest.mark.parametrize("opset", [13, 18])
def test_no_axes_reduce_every_axis(opset):
    """No axes: every axis (the batch of 1 too); per sample (8, 8, 8) → one value reading all 512: window 8 × 8
    over 8 channels into Num Filter 1."""
    node = helper.make_node("ReduceMean", ["x"], ["y"], name="r", keepdims=0)
    net = load_onnx(model([node], [value("x", MAP)], [value("y", [])], opset=opset))
    assert row_and_work(net) == ((8, 8, 8, 8, 8, 1), 512)


def test_noop_with_empty_axes_reduces_nothing():
    """Opset 18, no axes, noop_with_empty_axes=1: the node passes its input through, so no axis is reduced."""
    node = helper.make_node("ReduceMean", ["x"], ["y"], name="r", noop_with_empty_axes=1)
    assert reduced_axes(node, {"noop_with_empty_axes": 1}, "r", {}, 4) == frozenset()
    assert reduced_axes(node, {}, "r", {}, 4) == frozenset({0, 1, 2, 3})


def test_axes_computed_by_the_graph_are_unknown():
    """A non-constant axes input has no value to read: None (the importer then matches extents)."""
    node = helper.make_node("ReduceMean", ["x", "axes"], ["y"], name="r")
    assert reduced_axes(node, {}, "r", {}, 4) is None
    assert reduced_axes(node, {}, "r", {"axes": np.array([-1, 1], np.int64)}, 4) == frozenset({1, 3})
