"""What `archsim train` reports beside the time: MFU, model and hardware TFLOP/s per GPU, tokens/s
(checked against the papers' closed forms, written out here), the one-line warning of a configuration
that does not fit, the Gantt's axis in seconds, and argparse's errors named after the sub-command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archsim.cli import main
from archsim.training.throughput import model_flops, recomputed_flops, throughput
from archsim.workload.transformer import TransformerConfig

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
NODE = str(ROOT / "configs" / "clusters" / "a100_node.toml")
# GPT-3 175B as Narayanan et al. 2021 ran it (Table 1: 96 layers, hidden 12,288; vocabulary 51,200)
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
    more (2·s²·h), counted here head by head."""
    c, B = GPT3, 3
    d_head = c.hidden // c.heads
    one_gemm = sum(2 * c.seq * d_head * c.seq for _ in range(c.heads))  # one QKᵀ over all heads, one sample
    assert recomputed_flops(c, B, "none") == 0
    assert recomputed_flops(c, B, "selective") == pytest.approx(B * c.layers * 2 * one_gemm)
    assert recomputed_flops(c, B, "none", "flash") == pytest.approx(B * c.layers * one_gemm)
    assert recomputed_flops(c, B, "selective", "flash") == pytest.approx(B * c.layers * 3 * one_gemm)


def test_throughput_divides_by_time_and_gpus():
    rates = throughput(GPT3, 1536, "full", 100.0, 1024, 312e12)
    hardware = narayanan_flops(1536, 2048, 96, 12288, 51200, recompute=True)
    assert rates.hardware_tflops_per_gpu == pytest.approx(hardware / 100.0 / 1024 / 1e12, rel=1e-3)
    assert rates.mfu == pytest.approx(rates.tflops_per_gpu * 1e12 / 312e12)
    assert rates.tokens_per_second == 1536 * 2048 / 100.0


def test_train_json_meta_carries_the_rates(capsys):
    assert main(["train", MODEL, "--cluster", NODE, "--tp", "2", "--pp", "2", "--dp", "2", "--global-batch", "16",
                 "--micro-batch", "2", "--recompute", "full", "--format", "json"]) == 0
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


def test_train_gantt_axis_is_seconds(tmp_path, capsys):
    gantt = tmp_path / "g.html"
    assert main(["train", MODEL, "--cluster", NODE, "--pp", "2", "--global-batch", "4", "--gantt", str(gantt)]) == 0
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
    assert count >= 1 and len(block) == count + 1 and all(line.startswith("  TP") for line in block[1:])
