"""Asymmetric ONNX padding (TensorFlow "SAME" with stride 2 exports pads [0, 0, 1, 1]): imported as
the padded input it states, checked against ONNX shape inference and a hand-written layer row."""

from __future__ import annotations

import pytest
from onnx import helper, shape_inference

from archsim.api import cost
from archsim.cli import main
from archsim.errors import InputError
from archsim.workload import load_onnx, load_topology
from archsim.workload.csv_loader import parse_topology
from tests.onnx_models import model, value, weight

HEADER = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, " \
         "Padding, Type, Inputs,\n"
CYCLES = ["F_cycles", "G_cycles", "D_cycles", "delta_bytes"]


def _same_conv(pads, op="Conv", kernel=3, size=32):
    """relu → stride-2 op with the given pads (the relu makes the op's δ count in exact mode)."""
    attrs = {"kernel_shape": [kernel, kernel]} if op != "Conv" else {}
    inputs = ["r", "w"] if op == "Conv" else ["r"]
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node(op, inputs, ["y"], name="same", pads=pads, strides=[2, 2], **attrs)]
    inits = [weight("w", 8, 3, kernel, kernel)] if op == "Conv" else []
    return model(nodes, [value("x", [1, 3, size, size])], [value("y", ["n", "c", "h", "w"])], inits)


def _inferred(m, tensor: str) -> list[int]:
    """The tensor's per-sample shape by ONNX's own shape inference (independent of archsim)."""
    graph = shape_inference.infer_shapes(m, strict_mode=True).graph
    for info in list(graph.value_info) + list(graph.output):
        if info.name == tensor:
            return [d.dim_value for d in info.type.tensor_type.shape.dim][1:]
    raise AssertionError(tensor)


def _by_hand(row: str):
    return parse_topology(HEADER + "relu, 32, 32, 1, 1, 3, 3, 1, 0, elementwise, input,\n" + row, source="hand",
                          name="hand")


@pytest.mark.parametrize("mode", ["exact", "paper"])
def test_same_stride2_conv_is_its_padded_input(mode):
    m = _same_conv([0, 0, 1, 1])
    layer = load_onnx(m).layers[-1]
    assert [layer.filters, layer.ofmap_h, layer.ofmap_w] == _inferred(m, "y") == [8, 16, 16]
    # by hand: 32×32 plus one row below and one column right, no symmetric padding (SCALE-Sim's view).
    hand = _by_hand("same, 33, 33, 3, 3, 3, 8, 2, 0, conv, relu,\n")
    got, want = cost(load_onnx(m), batch=4, mode=mode).table, cost(hand, batch=4, mode=mode).table
    assert got[CYCLES].values.tolist() == want[CYCLES].values.tolist()
    assert want["F_cycles"].iloc[-1] > 0 and want["D_cycles"].iloc[-1] > 0


def test_uneven_pads_keep_their_symmetric_part_as_padding():
    m = _same_conv([1, 0, 2, 1], kernel=5)  # rows 1 + 2, columns 0 + 1: Padding 0, input 35 × 33
    layer = load_onnx(m).layers[-1]
    assert (layer.ifmap_h, layer.ifmap_w, layer.padding) == (35, 33, 0)
    assert [layer.filters, layer.ofmap_h, layer.ofmap_w] == _inferred(m, "y") == [8, 16, 15]
    m = _same_conv([1, 1, 2, 2], kernel=5)
    layer = load_onnx(m).layers[-1]
    assert (layer.ifmap_h, layer.ifmap_w, layer.padding) == (33, 33, 1)
    assert [layer.filters, layer.ofmap_h, layer.ofmap_w] == _inferred(m, "y")


def test_same_maxpool_is_its_padded_input():
    m = _same_conv([0, 0, 1, 1], op="MaxPool", kernel=2, size=33)
    layer = load_onnx(m).layers[-1]
    assert (layer.kind, layer.ifmap_h, layer.padding) == ("pool", 34, 0)
    assert [layer.filters, layer.ofmap_h, layer.ofmap_w] == _inferred(m, "y") == [3, 17, 17]


def test_imported_csv_reads_back_with_its_shapes_checked(tmp_path, capsys):
    path = tmp_path / "same.onnx"
    path.write_bytes(_same_conv([0, 0, 1, 1]).SerializeToString())
    out = tmp_path / "same.csv"
    assert main(["import", str(path), "-o", str(out)]) == 0
    assert "shape" not in capsys.readouterr().err
    assert load_topology(out).layers == load_onnx(path).layers


def test_a_declared_input_beyond_any_padding_is_still_a_mismatch():
    # 3×3 filter: at most 2 rows of padding in all; 32 → 35 declares 3 rows no padding explains.
    with pytest.raises(InputError, match="shape mismatch"):
        _by_hand("c, 35, 35, 3, 3, 3, 8, 2, 0, conv, relu,\n")
    with pytest.raises(InputError, match="shape mismatch"):  # Padding 1 already pads both sides
        _by_hand("c, 33, 33, 3, 3, 3, 8, 2, 1, conv, relu,\n")


def test_an_asymmetric_transposed_convolution_is_refused_by_name():
    nodes = [helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="up", pads=[0, 0, 1, 1], strides=[2, 2])]
    m = model(nodes, [value("x", [1, 3, 8, 8])], [value("y", ["n", "c", "h", "w"])], [weight("w", 3, 4, 3, 3)])
    with pytest.raises(InputError, match="node 'up' \\(op ConvTranspose\\): pads=\\[0, 0, 1, 1\\]"):
        load_onnx(m)
