"""A layer norm is printed as a layer norm: ``archsim cost``'s ``type`` column names each layer's own kind, a
``Type`` the topology CSV reads back to the same kind, and a layer norm (ONNX LayerNormalization, a transformer's
``ln`` rows) is ``layernorm``, not ``batchnorm``. The two are costed alike (γ and β per channel, the same
vector-unit passes), so the kind changes what is printed, not one number."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from onnx import helper

from archsim.cli import main
from archsim.lowering import lower_layer
from archsim.workload import load_onnx
from archsim.workload.builders import to_csv
from archsim.workload.csv_loader import parse_topology
from archsim.workload.layer import Layer
from archsim.workload.layer_types import LAYER_KINDS, canonical_kind
from tests.onnx_models import model, value, weight


def _cost_rows(capsys, network: str) -> list[dict]:
    assert main(["cost", network, "--batch", "2", "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["rows"]


def test_cost_prints_bert_layer_norms_as_layernorm(capsys):
    rows = [row for row in _cost_rows(capsys, "bert_large") if row["layer"] != "TOTAL"]
    norms = {row["layer"]: row["type"] for row in rows if "_ln" in row["layer"]}
    assert len(norms) == 2 * 24  # two LayerNorms in each of BERT-Large's 24 encoder layers
    assert set(norms.values()) == {"layernorm"}
    assert "batchnorm" not in {row["type"] for row in rows}


def test_cost_prints_resnet_batch_norms_as_batchnorm(capsys):
    rows = _cost_rows(capsys, "resnet50")
    bns = {row["type"] for row in rows if row["layer"].endswith(("_bn1", "_bn2", "_bn3", "_down_bn", "bn1"))}
    assert bns == {"batchnorm"}
    assert "layernorm" not in {row["type"] for row in rows}


@pytest.mark.parametrize("network", ["bert_large", "resnet50", "vgg16", "rnn_cell", "layerpipe_sample"])
def test_every_printed_type_reads_back_as_its_layers_kind(capsys, network):
    from archsim.workload import load_network

    kinds = {layer.name: layer.kind for layer in load_network(network).layers}
    for row in _cost_rows(capsys, network):
        if row["layer"] == "TOTAL":
            continue
        assert row["type"] in LAYER_KINDS and canonical_kind(row["type"]) == row["type"] == kinds[row["layer"]]


def _norm_model(op: str):
    """x (N×8×4×4) → op; BatchNormalization takes running mean and variance, LayerNormalization γ and β only."""
    extra = ["mu", "var"] if op == "BatchNormalization" else []
    node = helper.make_node(op, ["x", "g", "b", *extra], ["y"], name="norm")
    inits = [weight("g", 8), weight("b", 8)] + [weight(n, 8) for n in extra]
    if op == "LayerNormalization":  # over the last axis: γ, β of its 4 features
        inits = [weight("g", 4), weight("b", 4)]
    return model([node], [value("x", ["N", 8, 4, 4])], [value("y", ["N", 8, 4, 4])], inits)


@pytest.mark.parametrize(("op", "kind", "channels"), [("LayerNormalization", "layernorm", 4),
                                                      ("BatchNormalization", "batchnorm", 8)])
def test_onnx_norms_keep_their_kind_through_a_topology_csv(op, kind, channels):
    (layer,) = load_onnx(_norm_model(op), name="n").layers
    assert (layer.kind, layer.channels, layer.parameter_count) == (kind, channels, 2 * channels)
    (again,) = parse_topology(to_csv(load_onnx(_norm_model(op), name="n"))).layers
    assert again.kind == kind


@pytest.mark.parametrize("spelling", ["layernorm", "LayerNorm", "layer_norm", "ln", "LayerNormalization"])
def test_layer_norm_spellings(spelling):
    assert canonical_kind(spelling) == "layernorm"


def test_layer_norm_and_batch_norm_cost_alike():
    bn = Layer("n", "batchnorm", 16, 1, 1, 1, 64, 64, inputs=("prev",))  # not the first layer: it has a δ
    ln = replace(bn, kind="layernorm")
    a, b = lower_layer(bn, 4, "exact", 2), lower_layer(ln, 4, "exact", 2)
    assert a.tensors == b.tensors and a.ops == b.ops
    elements = 4 * 16 * 64  # batch × input elements: F 2 passes, G 2, D 3 (docs/concepts.md's vector rule)
    assert [op.vector_elements for op in b.ops] == [2 * elements, 2 * elements, 3 * elements]
    assert ln.parameter_count == bn.parameter_count == 2 * 64
