"""ONNX ``auto_pad``: SAME_UPPER / SAME_LOWER on a Conv or pool imported as the explicit pads ONNX's
operator spec derives (per axis the output is ceil(in / stride) and the total padding
max((out − 1)·stride + (k − 1)·dilation + 1 − in, 0), the odd pixel at the end for UPPER, at the start
for LOWER); VALID is no padding. Each case is checked against ONNX's own shape inference and against
a twin model that writes the same pads explicitly (pads worked out by hand below)."""

from __future__ import annotations

import pytest
from onnx import helper, shape_inference

from archsim.api import cost
from archsim.cli import main
from archsim.errors import InputError
from archsim.workload import load_onnx, load_topology
from tests.onnx_models import model, value, weight

CYCLES = ["F_cycles", "G_cycles", "D_cycles", "delta_bytes"]


def _net(op="Conv", size=(32, 32), kernel=3, stride=2, dilation=1, **pad_attrs):
    """relu → one Conv (8 filters) or pool over a 3-channel map (the relu makes the op's δ count)."""
    attrs = {"strides": [stride, stride], **pad_attrs}
    if op == "Conv":
        attrs["dilations"] = [dilation, dilation]
    else:
        attrs["kernel_shape"] = [kernel, kernel]
    inputs = ["r", "w"] if op in ("Conv", "ConvTranspose") else ["r"]
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node(op, inputs, ["y"], name="op", **attrs)]
    inits = [weight("w", 8, 3, kernel, kernel)] if op == "Conv" else \
        [weight("w", 3, 8, kernel, kernel)] if op == "ConvTranspose" else []
    return model(nodes, [value("x", [1, 3, *size])], [value("y", ["n", "c", "h", "w"])], inits)


def _inferred(m) -> list[int]:
    """The op's per-sample output shape by ONNX's own shape inference (independent of archsim)."""
    graph = shape_inference.infer_shapes(m, strict_mode=True).graph
    return [d.dim_value for d in graph.output[0].type.tensor_type.shape.dim][1:]


def _cycles(m, mode: str) -> list:
    return cost(load_onnx(m), batch=4, mode=mode).table[CYCLES].values.tolist()


# (op, size, kernel, stride, dilation, auto_pad, explicit twin pads [top, left, bottom, right], output H, W)
CASES = [
    # 32 → 16: total (16 − 1)·2 + 3 − 32 = 1, at the end (UPPER) or the start (LOWER)
    ("Conv", (32, 32), 3, 2, 1, "SAME_UPPER", [0, 0, 1, 1], 16, 16),
    ("Conv", (32, 32), 3, 2, 1, "SAME_LOWER", [1, 1, 0, 0], 16, 16),
    # H 31 → 16: total 15·2 + 4 − 31 = 3 (1 + 2); W 32 → 16: total 15·2 + 4 − 32 = 2 (1 + 1)
    ("Conv", (31, 32), 4, 2, 1, "SAME_UPPER", [1, 1, 2, 1], 16, 16),
    ("Conv", (31, 32), 4, 2, 1, "SAME_LOWER", [2, 1, 1, 1], 16, 16),
    # dilation 2, 3×3 spans 5: 20 → 20 needs 19 + 5 − 20 = 4, symmetric
    ("Conv", (20, 20), 3, 1, 2, "SAME_UPPER", [2, 2, 2, 2], 20, 20),
    # stride 4 with a 1×1 filter: 32 → 8, (8 − 1)·4 + 1 − 32 < 0, no padding at all
    ("Conv", (32, 32), 1, 4, 1, "SAME_UPPER", [0, 0, 0, 0], 8, 8),
    ("MaxPool", (33, 33), 3, 2, 1, "SAME_UPPER", [1, 1, 1, 1], 17, 17),
    ("AveragePool", (33, 33), 2, 2, 1, "SAME_LOWER", [1, 1, 0, 0], 17, 17),
    ("MaxPool", (33, 33), 2, 2, 1, "SAME_UPPER", [0, 0, 1, 1], 17, 17),
]


@pytest.mark.parametrize("op, size, kernel, stride, dilation, auto_pad, pads, out_h, out_w", CASES)
def test_same_auto_pad_is_the_explicit_pads_onnx_derives(op, size, kernel, stride, dilation, auto_pad, pads,
                                                         out_h, out_w):
    auto = _net(op, size, kernel, stride, dilation, auto_pad=auto_pad)
    twin = _net(op, size, kernel, stride, dilation, pads=pads)
    layer = load_onnx(auto).layers[-1]
    channels = 8 if op == "Conv" else 3
    assert [layer.filters, layer.ofmap_h, layer.ofmap_w] == _inferred(auto) == _inferred(twin) \
        == [channels, out_h, out_w]
    assert load_onnx(auto).layers == load_onnx(twin).layers
    for mode in ("exact", "paper"):
        assert _cycles(auto, mode) == _cycles(twin, mode)


def test_same_upper_stride_2_conv_costs_its_padded_input():
    # 32×32 padded one row below and one column right: a 33×33 input, Padding 0, F and D both costed
    layer = load_onnx(_net(auto_pad="SAME_UPPER")).layers[-1]
    assert (layer.ifmap_h, layer.ifmap_w, layer.padding, layer.stride) == (33, 33, 0, 2)
    table = cost(load_onnx(_net(auto_pad="SAME_UPPER")), batch=4, mode="exact").table
    assert table["F_cycles"].iloc[-1] > 0 and table["D_cycles"].iloc[-1] > 0


def test_valid_is_no_padding():
    auto, twin = _net(auto_pad="VALID"), _net()
    layer = load_onnx(auto).layers[-1]
    assert (layer.ifmap_h, layer.padding) == (32, 0)
    assert [layer.filters, layer.ofmap_h, layer.ofmap_w] == _inferred(auto) == [8, 15, 15]
    assert load_onnx(auto).layers == load_onnx(twin).layers


@pytest.mark.parametrize("auto_pad, pads", [("SAME_UPPER", [0, 0, 1, 1]), ("SAME_LOWER", [0, 0, 0, 0]),
                                            ("VALID", [1, 1, 1, 1])])
def test_pads_beside_auto_pad_are_refused_by_name(auto_pad, pads):
    # ONNX: pads "cannot be used simultaneously with auto_pad"; which one a runtime follows is not defined
    with pytest.raises(InputError, match=f"node 'op' \\(op Conv\\): pads=\\[{', '.join(map(str, pads))}\\] "
                                         f"with auto_pad={auto_pad}"):
        load_onnx(_net(auto_pad=auto_pad, pads=pads))


def test_explicit_zero_pads_beside_valid_agree_and_load():
    assert load_onnx(_net(auto_pad="VALID", pads=[0, 0, 0, 0])).layers == load_onnx(_net()).layers


def test_same_on_a_transposed_convolution_is_refused_by_name():
    with pytest.raises(InputError, match="node 'op' \\(op ConvTranspose\\): auto_pad=SAME_UPPER"):
        load_onnx(_net("ConvTranspose", (8, 8), auto_pad="SAME_UPPER"))


def test_imported_csv_reads_back_with_its_shapes_checked(tmp_path, capsys):
    path = tmp_path / "same.onnx"
    path.write_bytes(_net(size=(31, 32), kernel=4, auto_pad="SAME_LOWER").SerializeToString())
    out = tmp_path / "same.csv"
    assert main(["import", str(path), "-o", str(out)]) == 0
    assert "shape" not in capsys.readouterr().err
    assert load_topology(out).layers == load_onnx(path).layers
