"""``archsim import`` of self-attention: a topology CSV states a part of a layer's output (``Inputs``
``NAME#K/N``, docs/formats.md), so the models whose fused QKV projection a Gather, Split or Slice cuts
import, and the CSV costs as the model itself does.

The reference of the round trip is ``archsim cost MODEL.onnx``, which reads the ONNX graph and never the
CSV writer or reader. Before the part syntax, ``import`` refused mha.onnx, encoder2.onnx and
memory_attention.onnx (followups 28 and 30) and the GPT-2-like block below: 4 of the round trips failed.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import onnx
import pytest
from onnx_models import attention, mixed_cnn

from archsim.cli import main
from archsim.errors import InputError
from archsim.workload.csv_loader import parse_topology

DATA = Path(__file__).parent / "data" / "onnx"
SHIPPED = ("mha", "encoder2", "memory_attention", "cross_attention", "small_cnn")
HEADER = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, "
          "Padding, Type, Inputs, Bias, Repeat\n")


def _cycles(argv: list[str], capsys) -> list[tuple]:
    assert main(["cost", *argv, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    return [(r["layer"], r["type"], r["F_cycles"], r["G_cycles"], r["D_cycles"]) for r in rows]


def _round_trip(model: Path, tmp_path: Path, capsys) -> tuple[list[tuple], list[tuple]]:
    out = tmp_path / f"{model.stem}.csv"
    assert main(["import", str(model), "-o", str(out)]) == 0, capsys.readouterr().err
    capsys.readouterr()
    return _cycles([str(model)], capsys), _cycles([str(out)], capsys)


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_onnx_model_costs_the_same_from_its_csv(name, tmp_path, capsys):
    """Failed before for mha, encoder2 (two nn.TransformerEncoderLayer, BERT-like) and memory_attention: import
    refused them, their q, k and v cut from one projection by a Gather."""
    direct, imported = _round_trip(DATA / f"{name}.onnx", tmp_path, capsys)
    assert imported == direct and len(direct) > 1


@pytest.mark.parametrize("build", [attention, mixed_cnn], ids=["split_attention", "mixed_cnn"])
def test_the_built_onnx_models_cost_the_same_from_their_csv(build, tmp_path, capsys):
    """tests/onnx_models.py's: a self-attention block whose QKV projection a Split cuts, and a CNN."""
    model = tmp_path / f"{build.__name__}.onnx"
    onnx.save(build(), model)
    direct, imported = _round_trip(model, tmp_path, capsys)
    assert imported == direct


def test_the_csv_states_q_k_and_v_as_thirds_of_the_projection(tmp_path, capsys):
    """By hand (tests/data/onnx/user_models.py's SelfAttention): the projection 6 × 8 → 24 is cut by three Gathers
    at indices 0, 1, 2 into q, k, v; q and k are scaled (Mul), v read by scores·v: parts 1, 2 and 3 of 3."""
    out = tmp_path / "mha.csv"
    assert main(["import", str(DATA / "mha.onnx"), "-o", str(out)]) == 0
    rows = {r.split(",")[0]: [x.strip() for x in r.split(",")] for r in out.read_text().splitlines()[1:]}
    assert rows["/attn/Mul"][10] == "/attn/MatMul#1/3" and rows["/attn/Mul_1"][10] == "/attn/MatMul#2/3"
    assert rows["/attn/MatMul_2"][10] == "/attn/Softmax;/attn/MatMul#3/3"
    assert capsys.readouterr().err == f"wrote {out} (7 layers, 288 parameters)\n"



def test_a_gpt2_like_block_chunking_its_projection_costs_the_same_from_its_csv(tmp_path, capsys):
    """GPT-2's attention: one Linear d → 3d, ``chunk(3)`` (exported as three Slices), q scaled before q·kᵀ. The
    scaling reads a third of the projection: import refused it before (no CSV entry stated the part)."""
    torch = pytest.importorskip("torch")
    from torch import nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm, self.qkv, self.proj = nn.LayerNorm(16), nn.Linear(16, 48), nn.Linear(16, 16)

        def forward(self, x):
            q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
            scores = torch.softmax((q * 0.25) @ k.transpose(1, 2), dim=-1)
            return x + self.proj(scores @ v)

    model = tmp_path / "block.onnx"
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notices
        torch.onnx.export(Block(), (torch.zeros(1, 6, 16),), str(model), dynamo=False, opset_version=17,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)  # as from_torch
    direct, imported = _round_trip(model, tmp_path, capsys)
    assert imported == direct
    text = (tmp_path / "block.csv").read_text()
    assert "/qkv/MatMul#1/3" in text and "/qkv/MatMul#3/3" in text, text


def _csv(*rows: str) -> str:
    return HEADER + "qkv, 6, 1, 1, 1, 8, 24, 1, 0, fc, input, 1, 1\n" + "".join(row + "\n" for row in rows)


def test_a_part_is_checked_as_its_share_of_the_producer():
    """By hand: qkv gives 6 × 1 × 24 = 144 elements; a third is 48 (6 × 1 × 8), which an fc on 6 rows of 8
    features reads; a half (72) it does not. The whole, read as before, fails too."""
    net = parse_topology(_csv("q, 6, 1, 1, 1, 8, 8, 1, 0, fc, qkv#1/3, 0, 1"))
    assert [(p.layer, p.producer, p.index, p.count) for p in net.part_reads] == [("q", "qkv", 1, 3)]
    assert net.layer("q").inputs == ("qkv",)
    with pytest.raises(InputError, match=r"one of 2 parts of 'qkv' gives 6×1×12 \(72 elements\)") as half:
        parse_topology(_csv("q, 6, 1, 1, 1, 8, 8, 1, 0, fc, qkv#1/2, 0, 1"))
    assert (half.value.where.line, half.value.where.field) == (3, "Inputs")
    with pytest.raises(InputError, match="'qkv' gives 6×1×24"):
        parse_topology(_csv("q, 6, 1, 1, 1, 8, 8, 1, 0, fc, qkv, 0, 1"))
    with pytest.raises(InputError, match="24 channels do not cut into 5 parts"):
        parse_topology(_csv("q, 6, 1, 1, 1, 8, 8, 1, 0, fc, qkv#1/5, 0, 1"))


@pytest.mark.parametrize("entry", ["qkv#4/3", "qkv#0/3", "qkv#1", "qkv#a/3", "qkv#1/3/2", "#1/3", "qkv#-1/3"])
def test_bad_part_syntax_is_one_line_naming_row_and_column(entry):
    with pytest.raises(InputError) as caught:
        parse_topology(_csv(f"q, 6, 1, 1, 1, 8, 8, 1, 0, fc, {entry}, 0, 1"), source="t.csv")
    assert (caught.value.where.line, caught.value.where.field) == (3, "Inputs")
    assert "\n" not in str(caught.value) and "NAME#K/N" in str(caught.value), str(caught.value)


def test_a_producer_is_read_whole_or_as_one_part():
    with pytest.raises(InputError, match="reads 'qkv' more than once") as caught:
        parse_topology(_csv("s, 6, 8, 1, 8, 1, 6, 1, 0, matmul, qkv#1/3;qkv#2/3, 0, 1"))
    assert caught.value.where.line == 3
    with pytest.raises(InputError, match="'nothing', which is not a layer defined above"):
        parse_topology(_csv("q, 6, 1, 1, 1, 8, 8, 1, 0, fc, nothing#1/3, 0, 1"))


def test_a_layer_named_with_a_hash_reads_as_before():
    """An older file's Inputs entry that names a layer is that layer, whatever characters its name holds."""
    text = HEADER + "a#1/3, 6, 1, 1, 1, 8, 8, 1, 0, fc, input, 1, 1\nb, 6, 1, 1, 1, 8, 8, 1, 0, fc, a#1/3, 0, 1\n"
    net = parse_topology(text)
    assert net.layer("b").inputs == ("a#1/3",) and net.part_reads == ()


def test_a_part_no_entry_states_is_still_refused_in_one_line(tmp_path, capsys):
    """A Slice of channels 0..4 of a 6 × 8 → 24 projection (30 of its 144 elements, no one of N equal parts) read
    by a Relu: written as the whole, the CSV would fail its shape check, so import refuses, writing nothing."""
    import numpy as np
    from onnx import helper, numpy_helper
    from onnx_models import model as onnx_model
    from onnx_models import value, weight

    bounds = [numpy_helper.from_array(np.array([v], np.int64), n) for n, v in (("s", 0), ("e", 5), ("a", 2))]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["p"], name="proj"),
             helper.make_node("Slice", ["p", "s", "e", "a"], ["c"], name="cut"),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    path = tmp_path / "uneven.onnx"
    onnx.save(onnx_model(nodes, [value("x", [1, 6, 8])], [value("y", [1, 6, 5])], [weight("w", 8, 24), *bounds]),
              path)
    out = tmp_path / "uneven.csv"
    assert main(["import", str(path), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "node 'cut' (op Slice) hands 'relu' a part of the output of 'proj'" in err, err
    assert not out.exists()


def test_smallnet_reducing_its_tokens_costs_the_same_from_its_csv(tmp_path, capsys):
    """tests/test_torch_import.py's SmallNet ends ``head(x.mean(dim=1))``: 64 tokens of 64 features → 64. Failed
    before: the ReduceMean row stated its 64×1×64 input as its output, so the CSV failed the shape check at
    '/head/Gemm' (import wrote it with a note) while ``cost MODEL.onnx`` accepted it."""
    pytest.importorskip("torch")
    from test_torch_import import SmallNet, torch

    model = tmp_path / "smallnet.onnx"
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notices
        torch.onnx.export(SmallNet(), (torch.zeros(1, 3, 32, 32),), str(model), dynamo=False, opset_version=17,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)  # as from_torch
    out = tmp_path / "smallnet.csv"
    assert main(["import", str(model), "-o", str(out)]) == 0
    assert "note" not in capsys.readouterr().err
    direct, imported = _cycles([str(model)], capsys), _cycles([str(out)], capsys)
    assert imported == direct and any(row[0] == "/ReduceMean" and row[1] == "pool" for row in direct), direct


def test_a_reduction_over_positions_is_a_global_pool_reading_its_input_once():
    """By hand: ReduceMean over 6 tokens of 8 features reads 48 elements and writes 8 (a 6×1 window over a 6×1
    map of 8 channels); ReduceMax over a 4-channel 5×5 map reads 100 and writes 4; ReduceMean over the 8
    features reads 48 and writes 6, one mean per token (a 1×1 window over all 8 channels, Num Filter 1). Before,
    every reduction was elementwise over its input, writing (activation bytes at 1 byte an element) 48 and 100,
    and then the one over features still wrote 48."""
    from onnx import helper
    from onnx_models import model as onnx_model
    from onnx_models import value

    from archsim.lowering import lower_network
    from archsim.workload import load_onnx

    nodes = [helper.make_node("ReduceMean", ["x"], ["t"], name="tokens", axes=[1], keepdims=0),
             helper.make_node("ReduceMean", ["x"], ["f"], name="features", axes=[2], keepdims=1),
             helper.make_node("ReduceMax", ["m"], ["p"], name="map", axes=[2, 3], keepdims=1)]
    net = load_onnx(onnx_model(nodes, [value("x", [1, 6, 8]), value("m", [1, 4, 5, 5])],
                               [value("t", [1, 8]), value("f", [1, 6, 1]), value("p", [1, 4, 1, 1])]))
    rows = {layer.name: (layer.kind, layer.ifmap_h, layer.ifmap_w, layer.filter_h, layer.filter_w, layer.channels,
                         layer.filters) for layer in net.layers}
    assert rows == {"tokens": ("pool", 6, 1, 6, 1, 8, 8), "features": ("pool", 6, 1, 1, 1, 8, 1),
                    "map": ("pool", 5, 5, 5, 5, 4, 4)}
    lowered = {item.layer.name: item for item in lower_network(net, 1, "paper")}
    work = {name: [op.vector_elements for op in item.ops] for name, item in lowered.items()}
    assert work == {"tokens": [48, 48], "features": [48, 48], "map": [100, 100]}
    assert {name: item.tensors.activation_bytes for name, item in lowered.items()} == {
        "tokens": 8, "features": 6, "map": 4}
