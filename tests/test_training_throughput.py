"""What `archsim train` reports beside the time: MFU, model and hardware TFLOP/s per GPU, tokens/s
(checked against the papers' closed forms, written out here), the one-line warning of a configuration
that does not fit, the Gantt's axis in seconds, and argparse's errors named after the sub-command."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from archsim.cli import main
from archsim.training.throughput import model_flops, recomputed_flops, throughput
from archsim.workload.transformer import TransformerConfig

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
NODE = str(ROOT / "configs" / "clusters" / "a100_node.toml")
# GPT-3 175B as Narayanan et al. 2021 ran it (§5.1, Table 2: 96 layers, hidden 12,288; vocabulary 51,200)
GPT3 = TransformerConfig("gpt3-175b", "gpt", layers=96, hidden=12288, heads=96, vocab=51200, seq=2048,
                         ffn=4 * 12288, kv_heads=96, tied_embeddings=True, positions=2048)


def narayanan_flops(B: int, s: int, l: int, h: int, V: int, recompute: bool) -> float:
    """Narayanan et al. 2021 §5.1: 96·B·s·l·h²·(1 + s/6h + V/16lh) with full recompute; without it the
    forward and backward alone, 72·B·s·l·h²·(1 + s/6h + V/12lh) (Korthikanti et al. 2022, §6)."""
    if recompute:
        return 96 * B * s * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h))
    return 72 * B * s * l * h**2 * (1 + s / (6 * h) + V / (12 * l * h))


@pytest.mark.parametrize("batch", [1, 1536])
def test_flops_are_narayanans_closed_form(batch):
    """archsim counts biases and norms (13·h per layer), the closed form not: 1e-3 covers them."""
    model = model_flops(GPT3, batch)
    full = model + recomputed_flops(GPT3, batch, "full")
    assert model == pytest.approx(narayanan_flops(batch, 2048, 96, 12288, 51200, recompute=False), rel=1e-3)
    assert full == pytest.approx(narayanan_flops(batch, 2048, 96, 12288, 51200, recompute=True), rel=1e-3)


def test_selective_and_flash_recompute_the_attention_gemms():
    """Per layer and sample, each head's QKᵀ is s × d_head × s multiply-adds, 2·s²·d_head FLOPs, and so
    is P·V: selective recompute reruns both (4·s²·h over the heads), FlashAttention-2's backward one QKᵀ
    more (2·s²·h; with flash, selective has no s² tensor to rebuild), counted here head by head."""
    c, B = GPT3, 3
    d_head = c.hidden // c.heads
    one_gemm = sum(2 * c.seq * d_head * c.seq for _ in range(c.heads))  # one QKᵀ over all heads, one sample
    assert recomputed_flops(c, B, "none") == 0
    assert recomputed_flops(c, B, "selective") == pytest.approx(B * c.layers * 2 * one_gemm)
    assert recomputed_flops(c, B, "none", "flash") == pytest.approx(B * c.layers * one_gemm)
    assert recomputed_flops(c, B, "selective", "flash") == pytest.approx(B * c.layers * one_gemm)  # nothing s²


def test_throughput_divides_by_time_and_gpus():
    rates = throughput(GPT3, 1536, "full", 100.0, 1024, 312e12)
    hardware = narayanan_flops(1536, 2048, 96, 12288, 51200, recompute=True)
    assert rates.hardware_tflops_per_gpu == pytest.approx(hardware / 100.0 / 1024 / 1e12, rel=1e-3)
    assert rates.mfu == pytest.approx(rates.tflops_per_gpu * 1e12 / 312e12)
    assert rates.tokens_per_second == 1536 * 2048 / 100.0


def test_train_json_meta_carries_the_rates(capsys):
    assert main(["train", MODEL, "--cluster", NODE, "--tp", "2", "--pp", "2", "--dp", "2", "--global-batch", "16",
                 "--micro-batch", "2", "--recompute", "full", "--attention", "standard", "--format", "json"]) == 0
    captured = capsys.readouterr()
    meta = json.loads(captured.out)["meta"]
    assert captured.err == ""  # it fits: no warning
    seconds, gpus = meta["iteration_seconds"], 8
    c = json.loads(Path(MODEL).read_text())
    h, l, s, V, B = c["n_embd"], c["n_layer"], c["n_positions"], c["vocab_size"], 16
    assert meta["tokens_per_second"] == pytest.approx(B * s / seconds)
    assert meta["tflops_per_gpu"] == pytest.approx(narayanan_flops(B, s, l, h, V, False) / seconds / gpus / 1e12,
                                                   rel=2e-3)
    assert meta["hardware_tflops_per_gpu"] == pytest.approx(
        narayanan_flops(B, s, l, h, V, True) / seconds / gpus / 1e12, rel=2e-3)
    assert meta["mfu"] == pytest.approx(meta["tflops_per_gpu"] / 312, rel=1e-9)  # A100's dense fp16 312 TFLOP/s
    assert set(meta["breakdown_seconds"]) >= {"compute", "recompute", "tp_communication", "dp_communication"}


def test_train_table_prints_the_rates_and_the_breakdown(capsys):
    assert main(["train", MODEL, "--cluster", NODE, "--pp", "2", "--global-batch", "4", "--micro-batch", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = {line[2:].split(":", 1)[0]: line for line in lines if line.startswith("# ")}
    assert {"mfu", "tflops_per_gpu", "hardware_tflops_per_gpu", "tokens_per_second", "breakdown_seconds"} <= set(header)
    assert "compute: " in header["breakdown_seconds"] and "optimizer: " in header["breakdown_seconds"]


def test_a_configuration_that_does_not_fit_says_so_in_one_line(capsys):
    """GPT-3 175B on one 8-GPU server (TP 8): 175e9 × 16 bytes / 8 ≈ 326 GiB per GPU of states alone;
    the result still prints (a what-if tool), exit 0, one stderr line naming the rank and both sizes."""
    assert main(["train", str(ROOT / "configs" / "transformers" / "gpt3_175b.toml"), "--cluster", NODE,
                 "--tp", "8", "--global-batch", "1", "--format", "json"]) == 0
    captured = capsys.readouterr()
    meta = json.loads(captured.out)["meta"]
    assert not meta["fits_memory"]
    assert captured.err.count("\n") == 1 and captured.err.startswith("archsim train: warning: does not fit")
    assert "pipeline rank 0" in captured.err
    assert f"{meta['peak_memory_gib']:.1f} GiB" in captured.err and "80.0 GiB" in captured.err
    assert meta["peak_memory_gib"] > 175e9 * 16 / 8 / 2**30


@pytest.mark.parametrize("argv", [
    ["train", MODEL, "--cluster", NODE, "--pp", "2", "--global-batch", "4"],
    ["search", MODEL, "--cluster", NODE, "--global-batch", "8", "--top", "1", "--schedule", "1f1b", "--refine", "0"],
])
def test_train_and_search_gantt_axis_is_seconds(tmp_path, capsys, argv):
    gantt = tmp_path / "g.html"
    assert main([*argv, "--gantt", str(gantt)]) == 0
    page = gantt.read_text(encoding="utf-8")
    assert '"xaxis":{"title":{"text":"seconds"}' in page.replace(" ", "") and '"text":"cycles"' not in page


@pytest.mark.parametrize("argv, prog", [
    (["train", MODEL, "--cluster", NODE, "--global-batch", "4", "--bogus"], "archsim train"),
    (["train", MODEL, "--cluster", NODE, "--tp", "zero"], "archsim train"),
    (["search", MODEL, "--cluster", NODE], "archsim search"),
    (["no-such-command"], "archsim"),
])
def test_usage_errors_name_the_sub_command(capsys, argv, prog):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"{prog}: error: ") and "error: archsim" not in err


def test_search_table_ends_with_a_readable_pareto_block(capsys):
    assert main(["search", MODEL, "--cluster", NODE, "--global-batch", "16", "--top", "3", "--schedule", "1f1b",
                 "--max-micro-batch", "2", "--refine", "0"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) < 400
    block = out.split("\nPareto front, iteration time against memory per GPU (", 1)[1].splitlines()
    count = int(block[0].split(" ", 1)[0])
    shown = min(count, 10)  # at most 10 listed, the rest counted in one line (tests/test_search_front_block.py)
    more = [f"  {count - shown} more on the front: --format json lists all"] if count > shown else []
    assert count >= 1 and block[shown + 1:] == more and all(line.startswith("  TP") for line in block[1:shown + 1])


def _attention_ops(work):
    names = {"scores", "scores.dB", "context", "context.dB", "flash_attention"}
    return [op for op in (*work.forward, *work.backward) if op.layer in names]


@pytest.mark.parametrize("kv_heads", [32, 8])
def test_flash_attention_flops_and_bytes(kv_heads):
    """FlashAttention-2's forward runs QKᵀ and P·V, its backward those four GEMMs' δ work plus one
    recomputed QKᵀ, each over the blocks its causal kernel computes; none of its HBM traffic grows with s²."""
    from archsim.training.layer_ops import block_work

    c = TransformerConfig("llama-7b-like", "llama", layers=32, hidden=4096, heads=32, vocab=32000, seq=4096,
                          ffn=11008, kv_heads=kv_heads, tied_embeddings=False)
    b, t = 2, 2
    heads, d = c.heads // t, c.hidden // c.heads
    gemm_flops = 2 * c.seq * c.seq * d * b * heads  # one s × d × s product over the GPU's heads
    standard = _attention_ops(block_work(c, b, t))
    flash = _attention_ops(block_work(c, b, t, attention="flash"))
    forward = lambda ops: sum(2 * op.macs for op in ops if op.kind == "F")
    backward = lambda ops: sum(2 * op.macs for op in ops if op.kind != "F")
    # head dim 128 on A100/H100: forward 128 × 64 blocks, backward 64 × 128 (flash-attention's launch
    # templates); causal, query block i of 128 rows reaches keys up to 128·(i + 1): 128²·(1 + 2 + … + 32) of
    # the 4096² products, (s + 128)/2s = 33/64 of the square, and the backward's 64-row blocks over
    # 128-key blocks likewise (the diagonal's half-empty block rows pair up): 33/64
    assert forward(standard) == 2 * gemm_flops and backward(standard) == 4 * gemm_flops
    assert forward(flash) * 64 == 2 * gemm_flops * 33 and backward(flash) * 64 == 5 * gemm_flops * 33
    assert all(op.fused for op in flash) and len(flash) == 2
    longer = _attention_ops(block_work(replace(c, seq=2 * c.seq), b, t, attention="flash"))
    assert [op.vector_elements for op in longer] == [2 * op.vector_elements for op in flash]  # linear in s
    q, kv = c.seq * d * b * heads, c.seq * d * b * max(kv_heads // t, 1)
    assert flash[0].vector_elements == 2 * q + 2 * kv + 2 * c.seq * b * heads  # Q, K, V, O; fp32 log-sum-exp


def test_flash_attention_keeps_no_s_squared_activations():
    from archsim.training.layer_activations import layer_activation_bytes

    c = TransformerConfig("gpt", "gpt", layers=24, hidden=2048, heads=16, vocab=50257, seq=4096, ffn=8192,
                          kv_heads=16)
    s, b, h, a, t = c.seq, 1, c.hidden, c.heads, 2
    # Korthikanti et al. 2022 Table 2 without the 5·a·s²·b/t of the attention core, plus the log-sum-exp
    assert layer_activation_bytes(c, b, t, "none", False, "flash") == s * b * h * (10 + 24 / t) + 4 * a * s * b / t
    assert layer_activation_bytes(c, b, t, "none", False) == s * b * h * (10 + 24 / t + 5 * a * s / (h * t))
    assert layer_activation_bytes(c, b, t, "selective", False, "flash") == \
        layer_activation_bytes(c, b, t, "none", False, "flash")


def test_a_fused_op_is_not_slower_than_its_parts():
    from archsim.devices.device import catalog_device
    from archsim.devices.kernel_ops import op_seconds
    from archsim.training.fitted import A100_KERNELS
    from archsim.training.layer_ops import flash_attention_ops

    fused = flash_attention_ops(2048, 128, 32, 32)
    parts = [op for f in fused for op in (
        *(type(f)(f"{f.layer}.{i}", f.kind, (g,)) for i, g in enumerate(f.gemms)),
        type(f)(f.layer, f.kind, (), vector_elements=f.vector_elements))]
    a100 = catalog_device("a100-80gb")
    assert op_seconds(fused, a100, A100_KERNELS).sum() < op_seconds(parts, a100, A100_KERNELS).sum()


def _long_model(folder: Path, positions: int) -> str:
    """MODEL with a learned position table of ``positions`` (its file's 1,024 refuse a longer --seq)."""
    path = folder / "gpt_1024h_24l_long.json"
    path.write_text(json.dumps({**json.loads(Path(MODEL).read_text()), "n_positions": positions}))
    return str(path)


def test_train_attention_flash_runs_and_is_faster_at_long_sequences(tmp_path, capsys):
    runs = {}
    model = _long_model(tmp_path, 4096)
    for attention in ("standard", "flash"):
        assert main(["train", model, "--cluster", NODE, "--tp", "2", "--global-batch", "4", "--seq", "4096",
                     "--recompute", "none", "--attention", attention, "--format", "json"]) == 0
        runs[attention] = json.loads(capsys.readouterr().out)["meta"]
    assert runs["flash"]["attention"] == "flash"
    assert runs["flash"]["iteration_seconds"] < runs["standard"]["iteration_seconds"]
    assert runs["flash"]["peak_memory_gib"] < runs["standard"]["peak_memory_gib"]
    # the same model FLOPs; flash's hardware FLOPs add its backward's QKᵀ
    assert runs["flash"]["tflops_per_gpu"] * runs["flash"]["iteration_seconds"] == \
        pytest.approx(runs["standard"]["tflops_per_gpu"] * runs["standard"]["iteration_seconds"])


def test_train_and_search_agree_on_a_tp_group_across_servers(capsys):
    """Two 8-GPU servers: TP 16 spans both. train runs it with one warning line, its --sweep runs it,
    search proposes it with the row flagged — all priced over the network, where each all-reduce moves
    at least its whole buffer out of each server through the server's NICs (reduce-scatter and
    all-gather each send half of it): 8 × 400 Gb/s here."""
    cluster = str(ROOT / "configs" / "clusters" / "h100_2_servers.toml")
    assert main(["train", MODEL, "--cluster", cluster, "--tp", "16", "--global-batch", "4", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "archsim train: warning: a TP group spans 2 servers: its all-reduces cross the network\n"
    doc = json.loads(captured.out)
    rows = [r for r in doc["rows"] if "all-reduce" in r["name"]]
    assert rows
    nic_bytes_per_s = 8 * 400e9 / 8
    for r in rows:
        mib = float(r["name"].split(", ")[1].split(" MiB")[0])
        assert r["seconds"] >= mib * 2**20 / nic_bytes_per_s * 0.999  # 3 significant digits in the name
    assert main(["train", MODEL, "--cluster", cluster, "--tp", "8", "--dp", "2", "--global-batch", "4"]) == 0
    assert "warning" not in capsys.readouterr().err
    assert main(["train", MODEL, "--cluster", cluster, "--global-batch", "16", "--sweep", "tp=8,16",
                 "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert not rows[0]["error"] and not rows[1]["error"]
    assert rows[1]["iteration_seconds"] > rows[0]["iteration_seconds"]  # TP 16 pays the network
    assert main(["search", MODEL, "--cluster", cluster, "--global-batch", "16", "--top", "500", "--schedule", "1f1b",
                 "--max-micro-batch", "1", "--refine", "0", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {r["tp_spans_servers"] for r in doc["rows"] if r["tp"] == 16} == {True}
    assert {r["tp_spans_servers"] for r in doc["rows"] if r["tp"] <= 8} == {False}
    assert "tp-straddles-servers" not in doc["meta"]["rejected"]



def test_api_cost_takes_the_dataflow_as_the_cli_does(capsys):
    import archsim

    for dataflow in ("ws", "os", "is"):
        table = archsim.cost("layerpipe_sample", array="32x32", batch=8, dataflow=dataflow)
        assert main(["cost", "layerpipe_sample", "--array", "32x32", "--batch", "8", "--dataflow", dataflow,
                     "--format", "json"]) == 0
        rows = json.loads(capsys.readouterr().out)["rows"]
        by_layer = {r["layer"]: r["F_cycles"] for r in rows}
        assert {r.layer: int(r.F_cycles) for r in table.itertuples()} == {k: by_layer[k] for k in table.layer}
    ws = archsim.cost("layerpipe_sample", array="32x32", batch=8, dataflow="ws").F_cycles.sum()
    assert ws != archsim.cost("layerpipe_sample", array="32x32", batch=8, dataflow="os").F_cycles.sum()


def test_api_train_and_search_are_the_commands(capsys):
    import archsim

    result, rates = archsim.train(MODEL, cluster=NODE, tp=2, pp=2, dp=2, global_batch=16, micro_batch=2,
                                  attention="flash")
    assert main(["train", MODEL, "--cluster", NODE, "--tp", "2", "--pp", "2", "--dp", "2", "--global-batch", "16",
                 "--micro-batch", "2", "--attention", "flash", "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert result.iteration_seconds == meta["iteration_seconds"] and rates.mfu == meta["mfu"]
    assert rates.tokens_per_second == meta["tokens_per_second"]
    found = archsim.search(MODEL, cluster=NODE, global_batch=16, top=3, schedule=["1f1b"], max_micro_batch=2,
                           refine=0)
    assert main(["search", MODEL, "--cluster", NODE, "--global-batch", "16", "--top", "3", "--schedule", "1f1b",
                 "--max-micro-batch", "2", "--refine", "0", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["iteration_seconds"] for r in found.rows] == [r["iteration_seconds"] for r in rows]
    with pytest.raises(TypeError):
        archsim.train(MODEL, NODE, global_batch=16)  # keyword-only, as the flags


def test_search_with_flash_attention_rows_reproduce_on_train(tmp_path, capsys):
    import shlex

    assert main(["search", _long_model(tmp_path, 2048), "--cluster", NODE, "--global-batch", "16", "--top", "2", "--schedule", "1f1b",
                 "--max-micro-batch", "2", "--refine", "2", "--attention", "flash", "--seq", "2048",
                 "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows and all(r["attention"] == "flash" for r in rows)  # 1F1B: its closed form is exact
    for row in rows:
        argv = shlex.split(row["command"])[1:] + ["--seq", "2048", "--format", "json"]
        assert "--attention" in argv and main(argv) == 0
        meta = json.loads(capsys.readouterr().out)["meta"]
        assert meta["iteration_seconds"] == pytest.approx(row["iteration_seconds"], rel=1e-6)


def test_sweep_rows_carry_the_rates_of_single_runs(capsys):
    assert main(["train", MODEL, "--cluster", NODE, "--global-batch", "8", "--sweep", "attention=standard,flash",
                 "--sweep", "tp=2,3", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["attention"], r["tp"]) for r in rows] == [("standard", 2), ("standard", 3), ("flash", 2), ("flash", 3)]
    for row in rows[::2]:
        assert main(["train", MODEL, "--cluster", NODE, "--global-batch", "8", "--tp", "2", "--attention",
                     row["attention"], "--format", "json"]) == 0
        meta = json.loads(capsys.readouterr().out)["meta"]
        assert all(row[k] == meta[k] for k in ("iteration_seconds", "mfu", "tflops_per_gpu",
                                                "hardware_tflops_per_gpu", "tokens_per_second"))
    assert all(r["mfu"] is None and "divide the heads" in r["error"] for r in rows[1::2])  # null (JSON's NaN): no run


def test_interleave_names_the_schedule_it_runs(capsys):
    """`--interleave 2` with the default `--schedule 1f1b` runs Megatron's interleaved 1F1B, but the meta
    (and a sweep's rows) said `1f1b`: the same time as `--schedule interleaved-1f1b`, under the other name."""
    base = ["train", MODEL, "--cluster", NODE, "--pp", "2", "--global-batch", "8", "--format", "json"]
    seconds = {}
    for extra in ([], ["--interleave", "2"], ["--interleave", "2", "--schedule", "interleaved-1f1b"]):
        assert main([*base, *extra]) == 0
        meta = json.loads(capsys.readouterr().out)["meta"]
        seconds[tuple(extra)] = (meta["schedule"], meta["iteration_seconds"])
    plain, interleaved, named = seconds.values()
    assert plain[0] == "1f1b" and interleaved == named and named[0] == "interleaved-1f1b" and plain != named
    assert main([*base, "--sweep", "interleave=1,2"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["schedule"], r["iteration_seconds"]) for r in rows] == [plain, named]


def test_a_sweep_names_its_dtype(capsys):
    """A `--sweep`'s meta named the model and GPU but not `--dtype`, so an fp32 sweep and an fp16 one
    printed the same header over different times."""
    metas = []
    for dtype in ("fp16", "fp32"):
        assert main(["train", MODEL, "--cluster", NODE, "--global-batch", "8", "--attention", "standard",
                     "--dtype", dtype, "--sweep", "tp=1,2", "--format", "json"]) == 0
        metas.append(json.loads(capsys.readouterr().out)["meta"])
    assert [m["dtype"] for m in metas] == ["fp16", "fp32"]


def test_api_search_takes_one_value_where_the_flag_takes_one_or_more():
    """`archsim search --schedule 1f1b` takes one value or several; `archsim.search(schedule="1f1b")` read
    the string as the schedules '1', 'f', '1', 'b' (ValueError: 1), `recompute="none"` as 'n', 'o', …
    and `chunks=2` raised TypeError. One value is a list of one, as `gpus=8` already was."""
    import archsim

    def rows(**one):
        found = archsim.search(MODEL, cluster=NODE, global_batch=16, top=5, max_micro_batch=2, refine=0, **one)
        return [(r["tp"], r["pp"], r["schedule"], r["recompute"], r["interleave"]) for r in found.rows]

    assert rows(schedule="1f1b") == rows(schedule=["1f1b"])
    assert rows(recompute="none", schedule="gpipe") == rows(recompute=["none"], schedule=["gpipe"])
    assert rows(chunks=2, schedule="interleaved-1f1b") == rows(chunks=[2], schedule=["interleaved-1f1b"])
