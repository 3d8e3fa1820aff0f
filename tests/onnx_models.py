"""Small ONNX models built with onnx.helper (no downloads), for the importer's tests."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def weight(name: str, *shape: int) -> onnx.TensorProto:
    return numpy_helper.from_array(np.zeros(shape, np.float32), name)


def model(nodes, inputs, outputs, initializers=(), opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "test", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def value(name: str, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def mixed_cnn() -> onnx.ModelProto:
    """conv → bn → relu → {depthwise dilated conv, 1×1 conv} → add → concat(add, relu) → maxpool →
    global avgpool → flatten → gemm.

    Input N×8×32×32 with a symbolic batch. Hand counts in tests/test_onnx_import.py.
    """
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c1", "g", "beta", "mu", "var"], ["bn"], name="bn1"),
        helper.make_node("Relu", ["bn"], ["r"], name="relu1"),
        helper.make_node("Conv", ["r", "wdw"], ["dw"], name="dw", pads=[2, 2, 2, 2], dilations=[2, 2], group=16),
        helper.make_node("Conv", ["r", "wpw"], ["pw"], name="pw"),
        helper.make_node("Add", ["dw", "pw"], ["sum"], name="add"),
        helper.make_node("Concat", ["sum", "r"], ["cat"], name="cat", axis=1),
        helper.make_node("MaxPool", ["cat"], ["mp"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["mp"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "wfc", "bfc"], ["y"], name="fc", transB=1),
    ]
    inits = [weight("w1", 16, 8, 3, 3), weight("b1", 16), weight("g", 16), weight("beta", 16), weight("mu", 16),
             weight("var", 16), weight("wdw", 16, 1, 3, 3), weight("wpw", 16, 16, 1, 1), weight("wfc", 10, 32),
             weight("bfc", 10)]
    return model(nodes, [value("x", ["N", 8, 32, 32])], [value("y", ["N", 10])], inits)


def attention(seq: int = 16, d: int = 32, heads: int = 4) -> onnx.ModelProto:
    """One self-attention block on a N×seq×d input: QKV projection (MatMul + bias Add), per-head
    scores and context (batched MatMul), softmax, output projection, residual, LayerNorm."""
    hd = d // heads
    shape4 = numpy_helper.from_array(np.array([0, seq, heads, hd], np.int64), "shape4")
    shape3 = numpy_helper.from_array(np.array([0, seq, d], np.int64), "shape3")
    nodes = [
        helper.make_node("MatMul", ["x", "wqkv"], ["qkv0"], name="qkv"),
        helper.make_node("Add", ["qkv0", "bqkv"], ["qkv1"], name="qkv_bias"),
        helper.make_node("Split", ["qkv1", "splits"], ["q0", "k0", "v0"], name="split", axis=2),
        helper.make_node("Reshape", ["q0", "shape4"], ["q1"], name="rq"),
        helper.make_node("Reshape", ["k0", "shape4"], ["k1"], name="rk"),
        helper.make_node("Reshape", ["v0", "shape4"], ["v1"], name="rv"),
        helper.make_node("Transpose", ["q1"], ["q"], name="tq", perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["k1"], ["kt"], name="tk", perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["v1"], ["v"], name="tv", perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["q", "kt"], ["s"], name="scores"),
        helper.make_node("Softmax", ["s"], ["p"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["ctx"], name="context"),
        helper.make_node("Transpose", ["ctx"], ["ctx1"], name="tc", perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctx1", "shape3"], ["ctx2"], name="rc"),
        helper.make_node("MatMul", ["ctx2", "wo"], ["o"], name="out"),
        helper.make_node("Add", ["o", "x"], ["res"], name="residual"),
        helper.make_node("LayerNormalization", ["res", "gamma", "beta"], ["y"], name="ln", axis=-1),
    ]
    splits = numpy_helper.from_array(np.array([d, d, d], np.int64), "splits")
    inits = [weight("wqkv", d, 3 * d), weight("bqkv", 3 * d), weight("wo", d, d), weight("gamma", d),
             weight("beta", d), shape4, shape3, splits]
    return model(nodes, [value("x", ["batch", seq, d])], [value("y", ["batch", seq, d])], inits)


def with_unknown_op() -> onnx.ModelProto:
    """Relu → NonMaxSuppression (an op archsim does not model) and Relu → Sigmoid: ``--unsupported skip`` keeps
    relu and sig."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("NonMaxSuppression", ["r", "s"], ["n"], name="nms"),
             helper.make_node("Sigmoid", ["r"], ["y"], name="sig")]
    return model(nodes, [value("x", ["N", 1, 4, 4]), value("s", [1, 1, 4])], [value("y", ["N", 1, 4, 4])])
