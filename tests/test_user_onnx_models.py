"""User trial 29: a user's own models exported to ONNX by PyTorch (tests/data/onnx/, made by
tests/data/onnx/user_models.py) through ``archsim import``, each row checked against the module's shapes
worked out by hand (sizes per sample, (H, W, C) as archsim lays them out), the parameter count against
PyTorch's ``sum(p.numel())`` (2,714 and 1,200: counted by hand below, and by torch when the files were made),
and one conv layer's forward cycles on an 8 × 8 weight-stationary array as SCALE-Sim counts them."""

from __future__ import annotations

from pathlib import Path

import pytest

import archsim
from archsim.workload.shipped import load_network

DATA = Path(__file__).resolve().parent / "data" / "onnx"

# (name, kind, ifmap_h, ifmap_w, filter_h, filter_w, channels, filters, stride, padding, inputs)
CNN = [
    ("/stem/Conv", "conv", 16, 16, 3, 3, 3, 8, 2, 1, ("input",)),  # 3→8, stride 2, pad 1: 16×16 → 8×8
    ("/bn/BatchNormalization", "batchnorm", 8, 8, 1, 1, 8, 8, 1, 0, ("/stem/Conv",)),  # kept in training mode
    ("/Relu", "elementwise", 8, 8, 1, 1, 8, 8, 1, 0, ("/bn/BatchNormalization",)),
    ("/c1/Conv", "conv", 8, 8, 3, 3, 8, 8, 1, 1, ("/Relu",)),
    ("/bn1/BatchNormalization", "batchnorm", 8, 8, 1, 1, 8, 8, 1, 0, ("/c1/Conv",)),
    ("/Relu_1", "elementwise", 8, 8, 1, 1, 8, 8, 1, 0, ("/bn1/BatchNormalization",)),
    ("/c2/Conv", "conv", 8, 8, 3, 3, 8, 8, 1, 1, ("/Relu_1",)),
    ("/Add", "elementwise", 8, 8, 1, 1, 8, 8, 1, 0, ("/c2/Conv", "/Relu")),  # the residual: two Inputs
    ("/Relu_2", "elementwise", 8, 8, 1, 1, 8, 8, 1, 0, ("/Add",)),
    ("/pool/MaxPool", "pool", 8, 8, 2, 2, 8, 8, 2, 0, ("/Relu_2",)),
    ("/fc/Gemm", "fc", 1, 1, 1, 1, 128, 10, 1, 0, ("/pool/MaxPool",)),  # flatten (8·4·4 = 128) then 128 → 10
]
# per layer: QKV projection, q and k scaled (q as heads × S × head_dim, k transposed), scores, softmax, P·V,
# output projection, residual, LayerNorm, MLP with GELU written out (opset 17: x · (1 + erf(x / √2)) / 2)
S, D, HEADS, HD, FF = 6, 8, 2, 4, 16


def _encoder_layer(p: str, source: str) -> list[tuple]:
    a = f"{p}/self_attn"
    return [
        (f"{a}/MatMul", "fc", S, 1, 1, 1, D, 3 * D, 1, 0, (source,)),
        (f"{a}/Mul", "elementwise", S, HD, 1, 1, HEADS, HEADS, 1, 0, (f"{a}/MatMul",)),
        (f"{a}/Mul_1", "elementwise", HD, S, 1, 1, HEADS, HEADS, 1, 0, (f"{a}/MatMul",)),
        (f"{a}/MatMul_1", "matmul", S, HD, 1, HD, 1, S, 1, 0, (f"{a}/Mul", f"{a}/Mul_1")),  # q·kᵀ per head
        (f"{a}/Softmax", "elementwise", S, S, 1, 1, HEADS, HEADS, 1, 0, (f"{a}/MatMul_1",)),
        (f"{a}/MatMul_2", "matmul", S, S, 1, S, 1, HD, 1, 0, (f"{a}/Softmax", f"{a}/MatMul")),  # P·v per head
        (f"{a}/Gemm", "fc", S, 1, 1, 1, D, D, 1, 0, (f"{a}/MatMul_2",)),
        (f"{p}/Add", "elementwise", S, 1, 1, 1, D, D, 1, 0, (source, f"{a}/Gemm")),
        (f"{p}/norm1/LayerNormalization", "layernorm", S, 1, 1, 1, D, D, 1, 0, (f"{p}/Add",)),
        (f"{p}/linear1/MatMul", "fc", S, 1, 1, 1, D, FF, 1, 0, (f"{p}/norm1/LayerNormalization",)),
        (f"{p}/Div", "elementwise", S, 1, 1, 1, FF, FF, 1, 0, (f"{p}/linear1/MatMul",)),
        (f"{p}/Erf", "elementwise", S, 1, 1, 1, FF, FF, 1, 0, (f"{p}/Div",)),
        (f"{p}/Add_1", "elementwise", S, 1, 1, 1, FF, FF, 1, 0, (f"{p}/Erf",)),
        (f"{p}/Mul", "elementwise", S, 1, 1, 1, FF, FF, 1, 0, (f"{p}/linear1/MatMul", f"{p}/Add_1")),
        (f"{p}/Mul_1", "elementwise", S, 1, 1, 1, FF, FF, 1, 0, (f"{p}/Mul",)),
        (f"{p}/linear2/MatMul", "fc", S, 1, 1, 1, FF, D, 1, 0, (f"{p}/Mul_1",)),
        (f"{p}/Add_2", "elementwise", S, 1, 1, 1, D, D, 1, 0, (f"{p}/norm1/LayerNormalization", f"{p}/linear2/MatMul")),
        (f"{p}/norm2/LayerNormalization", "layernorm", S, 1, 1, 1, D, D, 1, 0, (f"{p}/Add_2",)),
    ]


ENCODER = _encoder_layer("/enc/layers.0", "input") + _encoder_layer("/enc/layers.1",
                                                                    "/enc/layers.0/norm2/LayerNormalization")


def _rows(network) -> list[tuple]:
    return [(x.name, x.kind, x.ifmap_h, x.ifmap_w, x.filter_h, x.filter_w, x.channels, x.filters, x.stride,
             x.padding, x.inputs) for x in network.layers]


@pytest.mark.parametrize("file, rows", [("small_cnn.onnx", CNN), ("encoder2.onnx", ENCODER)])
def test_rows_are_the_modules_shapes(file, rows):
    assert _rows(load_network(DATA / file)) == rows


def test_heads_repeat_the_attention_matmuls():
    network = load_network(DATA / "encoder2.onnx")
    assert {x.name.rsplit("/", 1)[1]: x.repeat for x in network.layers if x.kind == "matmul"} == \
        {"MatMul_1": HEADS, "MatMul_2": HEADS}


def test_parameters_as_pytorch_counts_them():
    conv = lambda r, c, n: r * r * c * n + n  # a conv's weights and bias
    cnn = conv(3, 3, 8) + 2 * 8 + conv(3, 8, 8) + 2 * 8 + conv(3, 8, 8) + (128 * 10 + 10)
    layer = (D * 3 * D + 3 * D) + (D * D + D) + (D * FF + FF) + (FF * D + D) + 2 * 2 * D
    assert (cnn, 2 * layer) == (2714, 1200)
    assert load_network(DATA / "small_cnn.onnx").parameter_count == cnn
    assert load_network(DATA / "encoder2.onnx").parameter_count == 2 * layer


def test_a_conv_layers_forward_cycles_as_scalesim_counts_them():
    """/c1/Conv at batch 2 on 8 × 8 ws: K = 3·3·8 = 72 filter rows in ⌈72/8⌉ = 9 folds of 8 filters (one column
    fold), T = 8·8·2 = 128 output pixels; SCALE-Sim's ws fold takes 2·8 + 8 + 128 − 2 = 150 cycles and its
    compute cycles are the folds' sum less one: 9 · 150 − 1 = 1,349. The stride-2 stem: K = 27, 4 folds, T = 128."""
    table = archsim.cost(str(DATA / "small_cnn.onnx"), array="8x8", batch=2, mode="exact").table
    cycles = dict(zip(table["layer"], table["F_cycles"]))
    assert (cycles["/c1/Conv"], cycles["/stem/Conv"]) == (9 * 150 - 1, 4 * 150 - 1)


def test_the_encoders_csv_states_the_parts_of_the_projection(tmp_path, capsys):
    """As docs/own-model.md says: q, k and v read a third of the QKV projection each, cut by a Gather; the CSV
    states them as parts 1, 2 and 3 of 3 (``/enc/layers.0/self_attn/MatMul#1/3``) and reads back with its shape
    check. Failed before: import refused the model in one line naming the Gather (followups 28; before that, it
    wrote a CSV that read back only with --shapes off)."""
    from archsim.cli import main
    from archsim.workload.csv_loader import load_topology

    out = tmp_path / "encoder2.csv"
    assert main(["import", str(DATA / "encoder2.onnx"), "-o", str(out)]) == 0
    assert capsys.readouterr().err == f"wrote {out} (36 layers, 1,200 parameters)\n"
    assert "/enc/layers.0/self_attn/MatMul#1/3" in out.read_text(encoding="utf-8")
    read = load_topology(out, shapes="check")
    assert read.layers == load_network(DATA / "encoder2.onnx").layers and len(read.part_reads) == 6


def _seq_first(tmp_path, batch: int | str) -> str:
    """x [batch, 3, 4] → Transpose to [3, batch, 4] → Relu: the sequence-first layout PyTorch's attention exports."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2]), helper.make_node("Relu", ["t"], ["y"])],
        "seq_first", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, batch, 4])])
    path = tmp_path / f"seq_first_{batch}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return str(path)


def test_a_batch_that_does_not_lead_says_how_to_import_per_sample(tmp_path, capsys):
    """User trial 29: a dynamic-batch export given ``--dim N=4`` (or one exported at batch 4) whose attention
    tensors lead with the sequence was refused with 'does not lead with the batch (4)', and no word on what to
    do. Failed before the fix: the line did not say that layers are per sample and the batch goes to --batch."""
    from archsim.cli import main

    assert main(["import", _seq_first(tmp_path, 4), "-o", str(tmp_path / "out.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("archsim import: error: ") and "\n" not in err
    assert "does not lead with the batch (4)" in err and "batch 1" in err and "--batch" in err, err
    # ``--dim N=4`` on the batch is refused before the shapes are read (tests/test_user_trial_ownmodel48.py)
    assert main(["import", _seq_first(tmp_path, "N"), "-o", str(tmp_path / "out.csv"), "--dim", "N=4"]) == 2
    assert "--dim N fixes the batch" in capsys.readouterr().err
    assert not (tmp_path / "out.csv").exists()
    assert main(["import", _seq_first(tmp_path, "N"), "-o", str(tmp_path / "out.csv")]) == 0  # batch 1: per sample
