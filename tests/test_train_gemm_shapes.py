"""``archsim train``'s op rows state each GEMM's shape on one GPU — ``m``, ``n``, ``k`` and ``count``, out[m×n] =
A[m×k]·B[k×n], ``count`` of them — in its JSON, its CSV and ``archsim.train``'s result alike; a row without a GEMM
has none (JSON null, an empty CSV cell). Checked against shapes derived by hand.

Before: the rows were (piece, name, op, seconds) alone; a GEMM's shape was nowhere in the output, so a row could not
be checked against one's own kernel timings.

The tiny GPT: hidden 64, 4 heads of 16, seq 24, vocabulary 1000, micro-batch 2, TP 2. Its GEMMs on one GPU: T = 2 · 24
= 48 tokens; QKV h → 3h/TP = 96, the projection h/TP = 32 → h, fc1 h → 4h/TP = 128, fc2 128 → h; attention's
batched GEMMs one per sample and head of this GPU, 2 · 4 / 2 = 4; the LM head h → 1024 / 2 = 512 (Megatron pads the
vocabulary 1000 to a multiple of 128 · TP). A row states the GEMM it runs: for Y = X·W, F (T, d_out, d_in); D,
δX = δY·Wᵀ, (T, d_in, d_out); G, δW = Xᵀ·δY, (d_in, d_out, T). Sequence parallelism splits the norms and dropouts
over TP, not the GEMMs (their input is all-gathered first), so the shapes are the same with it."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest
from tiny_search import A100_NODE

import archsim
from archsim.cli import main
from archsim.lowering import Gemm
from archsim.outputs import render
from archsim.rows import Rows
from archsim.training.layer_ops import flash_attention_ops
from archsim.training.op_rows import ROW_KEYS, SHAPE_KEYS, one_shape, piece_rows
from archsim.training.piece_cost import PieceCost
from archsim.workload.transformer import TransformerConfig

GPT = """[transformer]
family = "gpt"
layers = 2
hidden = 64
heads = 4
vocab = 1000
seq = 24
"""
T, S, HD, B, V = 48, 24, 16, 4, 512  # tokens, seq, head dim, batched GEMMs (samples × heads on this GPU), vocab / TP


def _linear(d_in: int, d_out: int, tokens: int = T, count: int = 1) -> dict[str, tuple[int, int, int, int]]:
    """F, D and G of Y = X·W, X tokens × d_in, as (m, n, k, count): the GEMM each runs."""
    return {"F": (tokens, d_out, d_in, count), "D": (tokens, d_in, d_out, count), "G": (d_in, d_out, tokens, count)}


# (piece, name, op) → (m, n, k, count), by hand
BY_HAND = {
    **{("layer", name, op): shape for name, (d_in, d_out) in
       {"qkv": (64, 96), "proj": (32, 64), "fc1": (64, 128), "fc2": (128, 64)}.items()
       for op, shape in _linear(d_in, d_out).items()},
    # scores S = Q·Kᵀ (s × hd · hd × s); δQ = δS·K (s × s · s × hd); δKᵀ = Qᵀ·δS (hd × s · s × s)
    ("layer", "scores", "F"): (S, S, HD, B), ("layer", "scores", "D"): (S, HD, S, B),
    ("layer", "scores.dB", "D"): (HD, S, S, B),
    # context O = P·V (s × s · s × hd); δP = δO·Vᵀ (s × hd · hd × s); δV = Pᵀ·δO (s × s · s × hd)
    ("layer", "context", "F"): (S, HD, S, B), ("layer", "context", "D"): (S, S, HD, B),
    ("layer", "context.dB", "D"): (S, HD, S, B),
    **{("head", "lm_head", op): shape for op, shape in _linear(64, V).items()},
}
FLAGS = ["--tp", "2", "--micro-batch", "2", "--global-batch", "4", "--attention", "standard", "--recompute", "none"]


@pytest.fixture
def files(tmp_path) -> tuple[str, str]:
    (tmp_path / "gpt.toml").write_text(GPT)
    (tmp_path / "node.toml").write_text(A100_NODE)
    return str(tmp_path / "gpt.toml"), str(tmp_path / "node.toml")


def _printed(argv: list[str], fmt: str, capsys) -> str:
    capsys.readouterr()
    assert main([*argv, "--format", fmt]) == 0
    return capsys.readouterr().out


def _shapes(rows: list[dict]) -> dict[tuple[str, str, str], tuple]:
    """The GEMM rows' shapes by (piece, name, op); each key once."""
    shaped = [row for row in rows if row["m"] is not None]
    shapes = {(row["piece"], row["name"], row["op"]): tuple(row[k] for k in SHAPE_KEYS) for row in shaped}
    assert len(shapes) == len(shaped)
    return shapes


@pytest.mark.parametrize("sp", [False, True])
def test_the_json_rows_state_each_gemms_shape_on_one_gpu(files, capsys, sp):
    model, cluster = files
    rows = json.loads(_printed(["train", model, "--cluster", cluster, *FLAGS, *(["--sequence-parallel"] if sp else [])],
                               "json", capsys))["rows"]
    assert _shapes(rows) == BY_HAND  # every GEMM row, and no other row, with its shape
    for row in rows:
        assert list(row) == list(ROW_KEYS)
        assert all(type(row[k]) is int for k in SHAPE_KEYS) or all(row[k] is None for k in SHAPE_KEYS), row
    names = {row["name"].split(" ")[0] for row in rows if row["m"] is None}
    assert {"norm1", "softmax", "embedding", "cross_entropy", "optimizer", "attn.all-reduce" if not sp
            else "attn.all-gather"} <= names  # memory-bound ops, collectives and the iteration's steps: none


def test_the_csv_carries_the_json_columns_and_values(files, capsys):
    """The CSV's header starts with the JSON rows' keys, and its cells hold the same values: a shape's whole numbers
    as written (``96``, not ``96.0``), an empty cell where JSON has null; so does ``archsim.train``'s result."""
    model, cluster = files
    argv = ["train", model, "--cluster", cluster, *FLAGS]
    rows = json.loads(_printed(argv, "json", capsys))["rows"]
    header, *cells = list(csv.reader(io.StringIO(_printed(argv, "csv", capsys))))
    assert header[:len(ROW_KEYS)] == list(rows[0]) == list(ROW_KEYS)
    assert len(cells) == len(rows)
    for row, line in zip(rows, cells, strict=True):
        assert line[:3] == [row["piece"], row["name"], row["op"]] and float(line[3]) == row["seconds"]
        assert line[4:len(ROW_KEYS)] == ["" if row[k] is None else str(row[k]) for k in SHAPE_KEYS]
        assert all(cell == "" or cell.isdigit() for cell in line[4:len(ROW_KEYS)]), line  # 96, not 96.0
    result, _ = archsim.train(model, cluster=cluster, tp=2, micro_batch=2, global_batch=4, attention="standard",
                              recompute="none")
    assert result.to_dict()["rows"] == rows
    assert [{k: row[k] for k in ROW_KEYS} for row in result.ops] == rows
    frame = result.to_frame()  # the CSV as pandas reads it: NaN in an empty cell
    for key in SHAPE_KEYS:
        assert [None if math.isnan(v) else int(v) for v in frame[key]] == [row[key] for row in rows]


def test_the_table_shows_the_shapes_as_whole_numbers(files, capsys):
    model, cluster = files
    lines = _printed(["train", model, "--cluster", cluster, *FLAGS], "table", capsys).splitlines()
    header = next(line for line in lines if not line.startswith("#")).split()
    assert header == list(ROW_KEYS)
    qkv = next(line.split() for line in lines if line.split()[1:3] == ["qkv", "F"])
    assert qkv[-4:] == ["48", "96", "64", "1"]
    norm = next(line.split() for line in lines if line.split()[1:3] == ["norm1", "F"])
    assert norm[-4:] == ["nan"] * 4  # no value, as every table shows one


@pytest.mark.parametrize("imbalance,rows", [(None, 48), (1.5, 72)])
def test_a_mixtures_expert_gemms_take_the_tokens_the_router_sends_them(tmp_path, imbalance, rows):
    """A 2-layer mixture (hidden 64, 4 experts of SwiGLU 80, top-2, seq 24) at TP 2 with sequence parallelism, EP 2,
    micro-batch 2: a rank routes its T/TP = 24 tokens to 2 experts each, 48 rows; ETP (TP's) 2 gathers 96 rows for its
    E/EP = 2 local experts, 48 each. The busiest rank at a load imbalance of 1.5 takes ⌈1.5 · 48⌉ = 72 rows before the
    gather, 144 after, 72 each. Each expert's fc1 h → 2·80/ETP = 80, fc2 40 → h, one grouped GEMM of 2; the router
    h → E on the rank's own 24 tokens."""
    c = TransformerConfig("tiny-moe", "llama", 2, 64, 4, 256, 24, 128, 4, False, experts=4, experts_per_token=2,
                          expert_ffn=80)
    (tmp_path / "node.toml").write_text(A100_NODE)
    result, _ = archsim.train(c, cluster=str(tmp_path / "node.toml"), tp=2, dp=2, ep=2, sequence_parallel=True,
                              micro_batch=2, global_batch=4, recompute="none", moe_load_imbalance=imbalance)
    shapes = _shapes(result.to_dict()["rows"])
    for op, shape in _linear(64, 80, rows, 2).items():
        assert shapes[("layer", "experts.fc1", op)] == shape, op
    for op, shape in _linear(40, 64, rows, 2).items():
        assert shapes[("layer", "experts.fc2", op)] == shape, op
    assert shapes[("layer", "router", "F")] == (24, 4, 64, 1)


def test_rows_of_one_name_merge_only_where_their_shapes_agree():
    """By hand: two ops ``a`` F of one shape are one row (seconds and counts summed); a third of another shape keeps
    its own row; an op without a GEMM has none; a fused op of two shapes states none (no one shape is its)."""
    two = flash_attention_ops(256, 64, 2, 2, v_dim=32)[0]  # MLA's kernel: Q·Kᵀ at head dim 64, P·V at 32
    assert one_shape(two.gemms) is None and one_shape(()) is None
    assert one_shape((Gemm(2, 3, 4, 1), Gemm(2, 3, 4, 5))) == Gemm(2, 3, 4, 6)
    piece = PieceCost(7.0, 0.0, 0.0, 0.5, 0.0, 0.0,
                      (("a", "F", 1.0), ("b", "F", 8.0), ("a", "F", 2.0), ("a", "F", 4.0), ("flash", "F", 16.0)),
                      gemms=((Gemm(2, 3, 4, 1),), (), (Gemm(2, 3, 4, 2),), (Gemm(5, 3, 4, 1),), two.gemms))
    rows = [(r["name"], r["op"], r["seconds"], *(r[k] for k in SHAPE_KEYS)) for r in piece_rows("layer", piece)]
    assert rows == [("a", "F", 3.0, 2, 4, 3, 3), ("b", "F", 8.0, None, None, None, None),
                    ("a", "F", 4.0, 5, 4, 3, 1), ("flash", "F", 16.0, None, None, None, None),
                    ("recompute", "B", 0.5, None, None, None, None)]
    with pytest.raises(ValueError, match="2 rows of GEMMs for 1 op rows"):
        PieceCost(1.0, 0.0, 0.0, 0.0, 0.0, 0.0, (("a", "F", 1.0),), gemms=((), ()))


def test_context_parallel_attention_steps_of_two_shapes_keep_two_rows(tmp_path):
    """At CP 2 (p2p, causal; seq 2048, 4 heads of 64, micro-batch 1) a rank's attention runs a causal step over its
    s/CP = 1024 tokens and an unmasked one of two L × L blocks, L = s/(2·CP) = 512, at twice the heads: before, they
    were one row of their summed seconds; a shape states only one of them, so they are two rows, the seconds
    unchanged in sum. Each states the kernel's QKᵀ and PV as one shape (so twice the heads in ``count``), the
    computed Br × Bc = 128 × 128 blocks stacked (FlashAttention-2's forward tiles at head dim 64): the causal step's
    8 · 9 / 2 = 36 blocks of its 8 × 8, 36 · 128 = 4608 rows over 4 heads, the unmasked step's (512/128)² = 16 blocks,
    2048 rows over 8."""
    from archsim.training.cluster_file import single_node
    from archsim.training.iteration import model_pieces
    from archsim.training.parallel import Parallelism

    c = TransformerConfig("gpt-cp", "gpt", 1, 256, 4, 1000, 2048, 1024, 4, True, positions=2048)
    par = Parallelism(1, 1, 1, 1, 1, "none", attention="flash", cp=2)
    machine = single_node("a100-80gb", 2).laid_out(par)[0]
    layer = model_pieces(c, par, machine)["layer"]
    steps = [t for name, kind, t in layer.ops if name == "flash_attention" and kind == "F"]
    rows = [row for row in piece_rows("layer", layer) if row["name"] == "flash_attention" and row["op"] == "F"]
    assert len(steps) == len(rows) == 2
    assert sum(row["seconds"] for row in rows) == pytest.approx(sum(steps), rel=1e-15)
    assert [tuple(row[k] for k in SHAPE_KEYS) for row in rows] == [(4608, 128, 64, 2 * 4), (2048, 128, 64, 2 * 8)]


def test_count_columns_are_whole_numbers_in_every_format():
    """:attr:`Rows.counts`: a column of whole numbers and no value is written as they are, where pandas' DataFrame
    would write 96.0 (its float64); CSV's empty cell, JSON's null, the table's nan where there is none."""
    records = [{"name": "qkv", "m": 48, "seconds": 0.5}, {"name": "norm", "m": None, "seconds": 0.25}]
    rows = Rows.of(records, ("m",))
    assert render(rows, "csv") == "name,m,seconds\nqkv,48,0.5\nnorm,,0.25\n"
    assert json.loads(render(rows, "json"))["rows"] == records
    assert [line.split() for line in render(rows, "table").splitlines()] == [
        ["name", "m", "seconds"], ["qkv", "48", "0.5"], ["norm", "nan", "0.25"]]
    assert "48.0" in render(Rows.of(records), "csv")  # undeclared: pandas' floats, as before
