"""An ONNX reduction over features (the last axis of tokens × features) imports as a pool over the channels:
it reads its n·f input once and writes n values. Before, it was an elementwise row of its input's size, so a
LayerNorm exported as primitive ops (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add) wrote n·f
values per mean and variance, and its CSV failed the shape check at the Add after the variance."""

from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx_models import model, value

from archsim.cli import main
from archsim.lowering import lower_network
from archsim.workload import load_onnx

TOKENS, FEATURES = 6, 8


def layer_norm(keepdims: int = 1) -> onnx.ModelProto:
    """LayerNorm over the last axis of a 1×6×8 input, written out as the primitive ops an exporter emits."""
    def constant(name: str, values) -> onnx.TensorProto:
        return numpy_helper.from_array(np.asarray(values, np.float32), name)

    nodes = [helper.make_node("ReduceMean", ["x"], ["mean"], name="mean", axes=[-1], keepdims=keepdims),
             helper.make_node("Sub", ["x", "mean"] if keepdims else ["x", "mean_k"], ["d"], name="sub"),
             helper.make_node("Pow", ["d", "two"], ["d2"], name="pow"),
             helper.make_node("ReduceMean", ["d2"], ["var"], name="var", axes=[-1], keepdims=1),
             helper.make_node("Add", ["var", "eps"], ["ve"], name="add_eps"),
             helper.make_node("Sqrt", ["ve"], ["std"], name="sqrt"),
             helper.make_node("Div", ["d", "std"], ["n"], name="div"),
             helper.make_node("Mul", ["n", "gamma"], ["ng"], name="scale"),
             helper.make_node("Add", ["ng", "beta"], ["y"], name="shift")]
    inits = [constant("two", 2.0), constant("eps", 1e-5), constant("gamma", np.ones(FEATURES)),
             constant("beta", np.zeros(FEATURES))]
    if not keepdims:  # x.mean(-1) without keepdim, unsqueezed back before the Sub
        nodes.insert(1, helper.make_node("Unsqueeze", ["mean", "last"], ["mean_k"], name="unsqueeze"))
        inits.append(numpy_helper.from_array(np.array([-1], np.int64), "last"))
    return model(nodes, [value("x", [1, TOKENS, FEATURES])], [value("y", [1, TOKENS, FEATURES])], inits)


def test_a_layer_norms_mean_and_variance_write_one_value_per_token():
    """By hand, per sample: each ReduceMean reads 6 × 8 = 48 elements (F and δ) and writes 6, one per token
    (activation bytes at 1 byte an element: 6, before 48); the elementwise rows around them keep their sizes,
    48 (Sub, Pow, Div, Mul, Add) and 6 (the Add of ε, the Sqrt). With and without keepdims alike."""
    for keepdims in (1, 0):
        net = load_onnx(layer_norm(keepdims))
        rows = {layer.name: (layer.kind, layer.ifmap_h, layer.ifmap_w, layer.filter_h, layer.filter_w,
                             layer.channels, layer.filters) for layer in net.layers}
        assert rows["mean"] == rows["var"] == ("pool", TOKENS, 1, 1, 1, FEATURES, 1), rows
        lowered = {item.layer.name: item for item in lower_network(net, 1, "paper")}
        for name in ("mean", "var"):
            assert lowered[name].layer.output_elements == TOKENS
            assert lowered[name].tensors.activation_bytes == TOKENS
            assert lowered[name].ops[0].vector_elements == TOKENS * FEATURES
        written = {name: item.tensors.activation_bytes for name, item in lowered.items() if name not in ("mean", "var")}
        assert written == {"sub": 48, "pow": 48, "add_eps": 6, "sqrt": 6, "div": 48, "scale": 48, "shift": 48}


def test_a_layer_norms_csv_passes_the_shape_check_and_costs_as_the_model(tmp_path, capsys):
    """``archsim import`` writes a CSV that reads back without a note (before: "'var' gives 6×1×8 (48
    elements), but 'add_eps' (elementwise) expects 6×1×1"), and costs every row as the ONNX file does."""
    path, out = tmp_path / "ln.onnx", tmp_path / "ln.csv"
    onnx.save(layer_norm(), path)
    assert main(["import", str(path), "-o", str(out)]) == 0
    assert "note" not in capsys.readouterr().err

    def rows(source) -> list[dict]:
        assert main(["cost", str(source), "--array", "8x8", "--batch", "1", "--format", "json"]) == 0
        return json.loads(capsys.readouterr().out)["rows"]

    direct, imported = rows(path), rows(out)
    assert direct == imported
    assert [row["activation_bytes"] for row in direct if row["layer"] in ("mean", "var")] == [TOKENS, TOKENS]
