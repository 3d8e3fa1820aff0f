"""An elementwise layer names its operator (``Layer.operator``, the lowercase ONNX op type): the ONNX importer
states it, a topology CSV may (``Operator``), and two readers use it. Until 2026-12-05 every elementwise row was
anonymous: ``bppsa network`` read an ONNX Sigmoid or Tanh as ReLU (a wrong gradient, checked against a wrong
reference), and LayerPipe's exact bytes of a borrowed elementwise product's δ counted it as an add (nothing
received), where δ of each operand is δ times the other. References: finite differences of the operators'
textbook forward (not archsim's), and bytes counted by hand."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import helper
from test_robustness import clean_error

from archsim.cli import main
from archsim.errors import InputError
from archsim.lowering import lower_layer, whole_delta_bytes
from archsim.workload import Layer, load_onnx, load_topology
from tests.onnx_models import model, value, weight

HEADER = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, "
          "Padding, Type, Inputs,")


def _activations(tmp_path, *ops: str) -> str:
    """Conv (1 → 2 channels, 3×3, padding 1) on a 4×4 input, ``ops[0]``, 2×2 max pool stride 2, ``ops[1]``,
    Flatten, Gemm 8 → 3: a chain of n = 5 operators, saved as an ONNX file."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node(ops[0], ["c"], ["a"], name="act1"),
             helper.make_node("MaxPool", ["a"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node(ops[1], ["p"], ["b"], name="act2"),
             helper.make_node("Flatten", ["b"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "wfc"], ["y"], name="fc", transB=1)]
    path = tmp_path / f"{'_'.join(ops).lower()}.onnx"
    onnx.save(model(nodes, [value("x", ["N", 1, 4, 4])], [value("y", ["N", 3])],
                    [weight("w", 2, 1, 3, 3), weight("wfc", 3, 8)]), path)
    return str(path)


def test_the_importer_names_each_elementwise_operator_and_a_csv_keeps_it(tmp_path, capsys):
    path = _activations(tmp_path, "Sigmoid", "Tanh")
    network = load_onnx(path)
    assert {layer.name: layer.operator for layer in network.layers} == {
        "conv": None, "act1": "sigmoid", "pool": None, "act2": "tanh", "fc": None}
    out = tmp_path / "net.csv"
    assert main(["import", path, "--out", str(out)]) == 0
    capsys.readouterr()
    text = out.read_text(encoding="utf-8")
    assert text.splitlines()[0].endswith(" Operator,") and "elementwise, conv, 0, 1, sigmoid," in text
    assert load_topology(out).layers == network.layers  # the operator is part of a layer's equality


def test_a_csv_operator_is_read_in_any_case_and_left_unknown_when_empty(tmp_path):
    path = tmp_path / "ops.csv"
    path.write_text(HEADER + " Operator,\nc, 4, 4, 1, 1, 2, 2, 1, 0, conv, input,\n"
                    "s, 4, 4, 1, 1, 2, 2, 1, 0, elementwise, c, Sigmoid\nr, 4, 4, 1, 1, 2, 2, 1, 0, elementwise, s,\n",
                    encoding="utf-8")
    assert [layer.operator for layer in load_topology(path).layers] == [None, "sigmoid", None]


@pytest.mark.parametrize(("row", "why"), [
    ("c, 4, 4, 1, 1, 2, 2, 1, 0, conv, input, relu", "'c' is conv"),
    ("e, 4, 4, 1, 1, 2, 2, 1, 0, elementwise, input, leaky relu", "lowercase ONNX op type"),
])
def test_a_wrong_operator_is_refused_naming_the_column(tmp_path, row, why):
    path = tmp_path / "bad.csv"
    path.write_text(HEADER + " Operator,\n" + row + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=why) as caught:
        load_topology(path)
    assert caught.value.where.field == "Operator" and caught.value.where.line == 2


def _finite_difference(f, x: np.ndarray, weights: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """∇ of weights·f(x) by central differences, one element of x at a time."""
    grad = np.zeros(x.size)
    for i in range(x.size):
        step = np.zeros(x.size)
        step[i] = h
        grad[i] = (weights @ f(x + step.reshape(x.shape)) - weights @ f(x - step.reshape(x.shape))) / (2 * h)
    return grad


@pytest.mark.parametrize("ops", [("Sigmoid", "Tanh"), ("Tanh", "Sigmoid")])
def test_bppsa_scans_sigmoid_and_tanh_as_themselves(tmp_path, capsys, ops):
    """∇x_1 (the conv's output) from the scan equals central differences through the textbook σ(x) = 1/(1 + e^−x)
    and tanh, written here, around the chain's own pool and fc; read as ReLU (before) it does not. The command's
    own check (scan against plain BP) holds, and each activation's Jacobian stores its diagonal: 32 of 32 × 32
    after the conv, 8 of 8 × 8 after the pool."""
    from archsim.bppsa.chain import network_chain
    from archsim.bppsa.jacobians import scan_input
    from archsim.bppsa.layers import ReLU, forward, forward_chain
    from archsim.bppsa.plain_bp import backprop
    from archsim.bppsa.scan import blelloch_scan

    path = _activations(tmp_path, *ops)
    layers, shape = network_chain(load_onnx(path), seed=3)
    textbook = {"Sigmoid": lambda x: 1 / (1 + np.exp(-x)), "Tanh": np.tanh}
    rng = np.random.default_rng(4)
    activations = forward_chain(layers, rng.standard_normal(shape))
    grad = rng.standard_normal(3)
    scanned = blelloch_scan(scan_input(layers, activations, grad)).gradients()

    def tail(x):  # x_1 → x_5 with the textbook activations
        return forward(layers[4], textbook[ops[1]](forward(layers[2], textbook[ops[0]](x)))).reshape(-1)

    reference = _finite_difference(tail, activations[1], grad)
    assert np.max(np.abs(np.ravel(scanned[-1]) - reference)) < 1e-8
    as_relu = [ReLU() if k in (1, 3) else layer for k, layer in enumerate(layers)]
    relu_grad = backprop(as_relu, forward_chain(as_relu, activations[0]), grad)[-1]
    assert np.max(np.abs(relu_grad - reference)) > 1e-3
    capsys.readouterr()
    assert main(["bppsa", "network", path, "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert meta["gradient_max_abs_diff"] < 1e-12
    assert (meta["jacobian_density"]["act1"], meta["jacobian_density"]["act2"]) == (1 / 32, 1 / 8)


def test_bppsa_refuses_an_operator_without_a_jacobian_naming_it(tmp_path, capsys):
    path = _activations(tmp_path, "Softplus", "Tanh")
    assert "layer 'act1' (elementwise) is softplus, which has no BPPSA Jacobian" in clean_error(
        capsys, "bppsa", "network", path)


# SiLU as exported: x·σ(x) on a 6 × 6 × 3 conv output, a Mul of two activations (the conv and the sigmoid)
BATCH, EB = 4, 2


def _silu(tmp_path) -> str:
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Sigmoid", ["c"], ["s"], name="sig"),
             helper.make_node("Mul", ["c", "s"], ["y"], name="mul")]
    path = tmp_path / "silu.onnx"
    onnx.save(model(nodes, [value("x", ["N", 3, 6, 6])], [value("y", ["N", 3, 6, 6])], [weight("w", 3, 3, 3, 3)]),
              path)
    return str(path)


def test_a_borrowed_elementwise_product_s_delta_receives_both_operands(tmp_path):
    """δ_c = δ·s and δ_s = δ·c: run away from the layer, the δ receives both 6 × 6 × 3 operands, 108 elements a
    sample each, 2 · 4 · 108 · 2 = 1,728 bytes for a batch of 4 at 2 bytes, and sends back δ of its input, 864
    (until 2026-12-05 it received nothing, as an add). Paper mode counts no vector δ, as LayerPipe."""
    mul = load_onnx(_silu(tmp_path)).layer("mul")
    assert (mul.operator, mul.inputs) == ("mul", ("conv", "sig"))
    assert whole_delta_bytes(lower_layer(mul, BATCH, "exact", EB), EB, "exact") == (864, 1_728)
    assert whole_delta_bytes(lower_layer(mul, BATCH, "paper", EB), EB, "paper") == (0, 0)
    for operator in ("add", "sub", None):
        other = Layer(name="o", kind="elementwise", ifmap_h=6, ifmap_w=6, filter_h=1, filter_w=1, channels=3,
                      filters=3, inputs=("conv", "sig"), operator=operator)
        assert whole_delta_bytes(lower_layer(other, BATCH, "exact", EB), EB, "exact") == (864, 0)
