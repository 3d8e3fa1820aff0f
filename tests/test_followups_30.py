"""What the distributed optimizer and the importer left (followups 30), each test failing on the code before its
fix: a search whose every configuration is out of memory says when ``--distributed-optimizer`` would fit some, the
search's JSON meta says the option was on, …"""

from __future__ import annotations

import json
import re
import warnings

import pytest
from test_distributed_optimizer import gpt_13b
from test_docs import ROOT

import archsim
from archsim.cli import main

NODE = str(ROOT / "configs" / "clusters" / "a100_node.toml")  # one server, 8 A100 80GB


def _warned(call) -> tuple[object, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, [str(w.message) for w in caught]


# 1. an all-out-of-memory search names the distributed optimizer where it fits some configuration

# GPT-3 13B on six of the server's GPUs at global batch 48: TP × PP ≤ 2 wherever DP divides 48 (TP and PP
# divide 40 heads and layers: 6 = 2 × 3 or 1 × 6 leaves DP 3 or 6), so each GPU holds at least half the
# model's 12.85·10⁹ parameters: 20 bytes each is 120 GiB, over 80 without the option (the test below by hand).
SIX = {"cluster": NODE, "gpus": 6, "global_batch": 48, "refine": 0, "top": 1, "progress": False}


def hand_sharded_peak_gib() -> float:
    """TP 2 × PP 1 × DP 3, micro-batch 1, full recompute, FlashAttention, sequence parallelism, fp16, the states
    sharded over DP 3: 4 + 16/3 bytes per parameter (Megatron-LM's dist_optimizer.md). Parameters as
    tests/test_distributed_optimizer.py counts them; activations by Korthikanti et al. 2022, Table 2, with sequence
    parallelism (everything over t): each layer's input 2sbh/t, the rematerialised layer 34sbh/t (no 5as²b/t: flash)
    less its input, the checkpoint counted already (34sbh/t until 2026-12-02, 10 MiB over: failed there): 32sbh/t,
    the fp32 log-sum-exp 4as·b/t, the embedding's dropout mask sbh/t (Megatron-LM drops the embeddings after their
    scatter to the sequence-parallel region; sbh before 2026-12-01), the logits 6·s·b·V/t; beside the rerun layer
    its FlashAttention backward's fp32 ``softmax_d`` and ``dq_accum`` (s rows × a/t heads, × head dim 128 for the
    latter: flash_api.cpp ``mha_bwd``; since 2026-12-03)."""
    h, s, a, t, layers, vocab = 5120, 2048, 40, 2, 40, 50432
    parameters = layers * ((12 * h * h + 7 * h) / t + 6 * h) + vocab // t * h + s * h + 2 * h
    activations = layers * 2 * s * h / t + 32 * s * h / t + 4 * a * s / t + s * h / t + 6 * s * vocab / t
    activations += 4 * (s * a / t + s * a / t * 128)
    return ((4 + 16 / 3) * parameters + activations) / 2**30


def _sharded_clause(line: str) -> tuple[int, float]:
    """The note's count of configurations the option fits and its smallest GiB."""
    found = re.search(r"fits ([\d,]+) of them, the smallest at ([\d.]+) GiB a GPU", line)
    assert found, line
    return int(found[1].replace(",", "")), float(found[2])


def test_an_all_out_of_memory_search_names_the_distributed_optimizer_from_python():
    """Failed before: the note said only "give more GPUs … or GPUs with more memory", where
    distributed_optimizer=True fits 70 configurations (81 before 2026-12-02, when zero-bubble orders under full
    recompute came to hold their W's rematerialised GEMM inputs and output gradients from I to W: the 12 gone were
    ZB-H1, ZB-H2 and interleaved ZB 3 each, ZB-V 2, DualPipeV 1, all full recompute, every other row as it was;
    then one DualPipeV full-recompute row back, once the recompute working set was counted where it overlaps what
    the rank holds rather than on top of the walk's peak).
    The count is the sharded search's own, the smallest memory
    its smallest row's and the hand figure (56.8 GiB)."""
    off, said = _warned(lambda: archsim.search(gpt_13b(), **SIX))
    assert off.costed == 0 and off.rejected["out-of-memory"] == 177
    on = archsim.search(gpt_13b(), distributed_optimizer=True, **{**SIX, "top": 1000})
    assert on.costed == 70
    smallest = min(row["peak_memory_gib"] for row in on.rows)
    assert smallest == pytest.approx(hand_sharded_peak_gib(), rel=1e-12)
    (line,) = [text for text in said if text.startswith("no configuration on 6 GPUs fits")]
    assert "distributed_optimizer=True" in line and "--" not in line, line
    assert _sharded_clause(line) == (on.costed, round(smallest, 1))
    assert off.sharded_fits.configurations == 70  # the result says it too, unrounded
    assert off.sharded_fits.smallest_bytes / 2**30 == pytest.approx(hand_sharded_peak_gib(), rel=1e-12)
    # 40 layers split evenly over no PP of 6 GPUs but 1 and 2: balance='planned' admits PP 3 and 6 (it costs 344)
    assert re.search(r"give more GPUs \(gpus=N up to the cluster's 8, or a larger cluster\) or GPUs with more memory; "
                     r"or balance='planned': its uneven stages admit the [\d,]+ configurations refused because "
                     r"PP × chunks does not divide the 40 layers$", line), line


def test_the_command_names_its_flag(tmp_path, capsys):
    model = tmp_path / "gpt3_13b.toml"
    model.write_text("[transformer]\nfamily = \"gpt\"\nlayers = 40\nhidden = 5120\nheads = 40\nvocab = 50257\n"
                     "seq = 2048\n", encoding="utf-8")
    assert main(["search", str(model), "--cluster", NODE, "--gpus", "6", "--global-batch", "48", "--refine", "0",
                 "--top", "1", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["rows"] == []
    (line,) = err.splitlines()
    assert line.startswith("archsim search: note: no configuration on 6 GPUs fits: the 177 that pass the rules")
    assert "; --distributed-optimizer (the optimizer states sharded over DP) fits 70 of them" in line
    assert _sharded_clause(line) == (70, round(hand_sharded_peak_gib(), 1))


def test_the_note_is_unchanged_where_the_option_fits_nothing_or_is_on():
    """Two GPUs at global batch 64: TP 2 or PP 2 at DP 1 holds half the parameters at 20 bytes (120 GiB), TP 1 ×
    DP 2 all 12.85·10⁹ at 4 + 16/2 = 12 bytes (144 GiB): out of memory with the option too, so the note is the one
    before, as it is with the option on."""
    expected = ("no configuration on 2 GPUs fits: the 180 that pass the rules are all out of memory; give more GPUs "
                "(gpus=N up to the cluster's 8, or a larger cluster) or GPUs with more memory")
    keys = {**SIX, "gpus": 2, "global_batch": 64}
    for sharded in (False, True):
        result, said = _warned(lambda on=sharded: archsim.search(gpt_13b(), distributed_optimizer=on, **keys))
        assert result.costed == 0 and result.sharded_fits is None
        assert expected in said, said


# 2. the search's JSON meta says the distributed optimizer was on, as its rows do


def test_the_search_meta_says_the_distributed_optimizer_was_on(capsys):
    """Failed before: the meta had no distributed_optimizer (only the rows and their commands had it). Absent
    when off, as in the rows: the meta's keys as before."""
    model = str(ROOT / "configs" / "transformers" / "gpt3_1.3b.toml")
    argv = ["search", model, "--cluster", NODE, "--global-batch", "64", "--refine", "0", "--top", "1",
            "--schedule", "1f1b", "--max-micro-batch", "1", "--recompute", "none", "--sequence-parallel", "off"]
    assert main([*argv, "--format", "json"]) == 0
    before = json.loads(capsys.readouterr().out)["meta"]
    assert list(before) == ["model", "parameters", "seq", "gpu", "dtype", "gpus", "global_batch", "objective",
                            "balance", "energy_source", "cp", "cp_comm", "enumerated", "costed", "rejected",
                            "identical_rows_dropped", "uneven_gain_first_row", "uneven_gain_max", "intra_server",
                            "inter_server", "pareto"]  # the network's two entries since 2026-12-05, as train's
    assert main([*argv, "--distributed-optimizer", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["meta"]["distributed_optimizer"] is True
    assert [k for k in document["meta"] if k != "distributed_optimizer"] == list(before)
    assert document["rows"][0]["distributed_optimizer"] is True
    assert main([*argv, "--distributed-optimizer"]) == 0
    assert "# distributed_optimizer: True\n" in capsys.readouterr().out
    on = archsim.search(model, cluster=NODE, global_batch=64, refine=0, top=1, schedule="1f1b", max_micro_batch=1,
                        recompute="none", sequence_parallel="off", distributed_optimizer=True)
    assert on.to_dict()["meta"]["distributed_optimizer"] is True


# 3. nn.MultiheadAttention as cross-attention: imported where its q, k and v have projections of their own, refused
# in one line naming the Gather where keys and values share one (as self-attention is)

ONNX = ROOT / "tests" / "data" / "onnx"  # tests/data/onnx/user_models.py's CrossAttention and MemoryAttention
CROSS, MEMORY = ONNX / "cross_attention.onnx", ONNX / "memory_attention.onnx"


def _rows(network) -> dict[str, tuple]:
    return {x.name: (x.kind, x.ifmap_h, x.ifmap_w, x.channels, x.filters, x.repeat, x.bias, x.inputs)
            for x in network.layers}


def test_cross_attention_imports_with_torchs_shapes(tmp_path, capsys):
    """Failed before: "shape of '/attn/MatMul_output_0' unknown after shape inference" (import and cost alike): PyTorch
    slices the in-projection weight by its own shape (Shape → Gather → Div → Slice), and the shape of a weight was
    not folded. By hand, d_model 8, 2 heads of 4, 6 queries and 5 keys and values: three projections with their
    biases, 6 × 8 → 8, 5 × 8 → 8, 5 × 8 → 8; q·kᵀ 6 × 4 · 4 × 5 and scores·v 6 × 5 · 5 × 4, once per head;
    the out-projection 6 × 8 → 8; PyTorch's parameters 3·8·8 + 24 + 8·8 + 8 = 288. The CSV reads back with its
    shape check, to the same layers."""
    from archsim.workload.csv_loader import parse_topology
    from archsim.workload.shipped import load_network

    network = load_network(str(CROSS))
    rows = _rows(network)
    assert [rows[f"/attn/MatMul{n}"][:7] for n in ("", "_1", "_2")] == [
        ("fc", 6, 1, 8, 8, 1, True), ("fc", 5, 1, 8, 8, 1, True), ("fc", 5, 1, 8, 8, 1, True)]
    assert all(rows[f"/attn/MatMul{n}"][7] == ("input",) for n in ("", "_1", "_2"))
    assert rows["/attn/MatMul_3"][:6] == ("matmul", 6, 4, 1, 5, 2)
    assert rows["/attn/MatMul_4"][:6] == ("matmul", 6, 5, 1, 4, 2)
    assert rows["/attn/MatMul_4"][7] == ("/attn/Softmax", "/attn/MatMul_2")  # the scores and the values
    assert rows["/attn/Gemm"][:7] == ("fc", 6, 1, 8, 8, 1, True)
    assert network.parameter_count == 288
    out = tmp_path / "cross.csv"
    assert main(["import", str(CROSS), "-o", str(out)]) == 0
    assert capsys.readouterr().err == f"wrote {out} (9 layers, 288 parameters)\n"  # no note: nothing skipped
    assert _rows(parse_topology(out.read_text(encoding="utf-8"), shapes="check")) == rows
    assert main(["cost", str(CROSS), "--format", "csv"]) == 0


def test_a_decoders_cross_attention_imports_stating_k_and_v_as_halves(tmp_path, capsys):
    """Failed before: the same "unknown after shape inference" line, naming no cause; then a refusal naming the
    Gather. Keys and values from one memory: PyTorch projects it once, 5 × 8 → 16, and cuts k and v apart with a
    Gather; the CSV states them as parts 1 and 2 of 2 (``Inputs`` ``NAME#K/N``) and reads back with its shape
    check, to the same layers."""
    from archsim.workload.csv_loader import parse_topology
    from archsim.workload.shipped import load_network

    out = tmp_path / "memory.csv"
    assert main(["import", str(MEMORY), "-o", str(out)]) == 0
    assert capsys.readouterr().err == f"wrote {out} (8 layers, 288 parameters)\n"
    network = load_network(str(MEMORY))
    rows = _rows(network)
    assert rows["/attn/MatMul_1"][:7] == ("fc", 5, 1, 8, 16, 1, True)  # k and v's projection, together
    read = parse_topology(out.read_text(encoding="utf-8"), shapes="check")
    assert _rows(read) == rows
    assert [(p.layer, p.producer, p.index, p.count) for p in read.part_reads] == [
        ("/attn/Mul_1", "/attn/MatMul_1", 1, 2), ("/attn/MatMul_3", "/attn/MatMul_1", 2, 2)]
    assert main(["cost", str(MEMORY), "--format", "csv"]) == 0
