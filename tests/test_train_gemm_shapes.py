"""``archsim train --format json``'s op rows (and ``archsim.train``'s ``to_dict`` and ``ops``) state each GEMM's shape
as the model costs it on one GPU, out[m×n] = A[m×k]·B[k×n], ``batch`` of them; no other row has the keys. Checked against
shapes derived by hand for a four-layer GPT (hidden 256, 4 heads of 64, seq 128, vocabulary 1000) at TP 2 and a
micro-batch of 2: M = micro_batch · seq = 256 tokens, each linear layer's output (or input) split over TP.

Before: the rows were (piece, name, op, seconds) alone; a GEMM's shape was nowhere in the output."""

from __future__ import annotations

import json

import pytest
from tiny_search import tiny_files

import archsim
from archsim.cli import main

H, S, MB, TP, HEADS = 256, 128, 2, 2, 4
M, HD = MB * S, H // HEADS  # 256 tokens a micro-batch; head dim 64
B = MB * HEADS // TP  # attention's batched GEMMs: one per sample and head on this GPU
VOCAB = 1024 // TP  # Megatron pads 1000 to a multiple of 128 · TP = 256: 1024, split over TP
# (name, op) → (m, n, k, batch): F out = X·W; D (δ) δX = δY·Wᵀ; G (weight gradient) δW = Xᵀ·δY
LINEAR = {"qkv": (H, 3 * H // TP), "proj": (H // TP, H), "fc1": (H, 4 * H // TP), "fc2": (4 * H // TP, H)}
BY_HAND = {**{(name, "F"): (M, n, k, 1) for name, (k, n) in LINEAR.items()},
           **{(name, "D"): (M, k, n, 1) for name, (k, n) in LINEAR.items()},
           **{(name, "G"): (k, n, M, 1) for name, (k, n) in LINEAR.items()},
           # per sample and per head of this GPU's HEADS / TP: scores S = Q·Kᵀ (s×hd · hd×s), δQ = δS·K, δKᵀ = Qᵀ·δS;
           # context O = P·V (s×s · s×hd), δP = δO·Vᵀ, δV = Pᵀ·δO
           ("scores", "F"): (S, S, HD, B), ("scores", "D"): (S, HD, S, B), ("scores.dB", "D"): (HD, S, S, B),
           ("context", "F"): (S, HD, S, B), ("context", "D"): (S, S, HD, B), ("context.dB", "D"): (S, HD, S, B),
           ("lm_head", "F"): (M, VOCAB, H, 1), ("lm_head", "D"): (M, H, VOCAB, 1), ("lm_head", "G"): (H, VOCAB, M, 1)}
FLAGS = ["--tp", str(TP), "--micro-batch", str(MB), "--global-batch", "4", "--attention", "standard",
         "--recompute", "none"]


def _shapes(rows: list[dict]) -> dict[tuple[str, str], tuple]:
    return {(row["name"], row["op"]): tuple(row.get(k) for k in ("m", "n", "k", "batch")) for row in rows}


def test_the_json_rows_state_each_gemms_shape_on_one_gpu(tmp_path, capsys):
    model, cluster = tiny_files(tmp_path)
    assert main(["train", model, "--cluster", cluster, *FLAGS, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    shapes = _shapes(rows)
    for key, shape in BY_HAND.items():
        assert shapes[key] == shape, key
        assert all(type(v) is int for v in shapes[key])  # whole numbers, not 256.0
    for row in rows:  # no GEMM (a norm, a collective, the optimizer): no shape, not a null
        if row["name"].split(".")[0] in ("norm1", "residual1", "bias_gelu", "optimizer", "attn", "mlp", "recompute"):
            assert not {"m", "n", "k", "batch"} & set(row), row
    assert sum("m" in row for row in rows) == len(BY_HAND)  # every GEMM row, each once


@pytest.mark.parametrize("fmt", ["table", "csv"])
def test_the_table_and_csv_keep_their_columns(tmp_path, capsys, fmt):
    model, cluster = tiny_files(tmp_path)
    assert main(["train", model, "--cluster", cluster, *FLAGS, "--format", fmt]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if not line.startswith("#"))
    assert header.replace(",", " ").split()[:5] == ["piece", "name", "op", "seconds", *(["model"] if fmt == "csv" else [])][:5]


def test_the_library_result_states_the_same_shapes(tmp_path):
    model, cluster = tiny_files(tmp_path)
    result, _ = archsim.train(model, cluster=cluster, tp=TP, micro_batch=MB, global_batch=4, attention="standard",
                           recompute="none")
    for rows in (result.to_dict()["rows"], result.ops):
        shapes = _shapes(rows)
        assert {key: shapes[key] for key in BY_HAND} == BY_HAND
    assert "m" not in result.to_frame().columns  # the CSV's columns, as the command prints them
