"""docs/training.md's prose figures of pipelined runs (PP 2 to 16, plain 1F1B), which 1F1B's blocking sends, the
default `--p2p megatron` since 2026-12-05, moved: each is today's output of the command the page names, at the digits
it shows. The runs take a few seconds together, so the checks are in the long tier."""

from __future__ import annotations

import json

import pytest
from test_docs import ROOT

from archsim.cli import main

pytestmark = pytest.mark.long


def page() -> str:
    return " ".join((ROOT / "docs" / "training.md").read_text(encoding="utf-8").split())


def seconds(command: str, capsys) -> float:
    capsys.readouterr()
    assert main(command.split() + ["--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["meta"]["iteration_seconds"]


def test_grouped_query_sums_runs(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    run = "train tests/data/hf_configs/{}.json --cluster configs/clusters/h100_2_servers.toml --tp 8 --pp 2 " \
          "--global-batch 16 --seq 4096 --dtype bf16"
    names = ("llama3_8b", "mistral_7b_v0_1", "llama3_1_70b")
    llama, mistral, big = (seconds(run.format(name), capsys) for name in names)
    text = page()
    assert f"takes {llama:.3f} s per iteration" in text
    assert f"`mistral_7b_v0_1.json` in its place {mistral:.3f} s" in text
    assert f"`llama3_1_70b.json` {big:.3f} s" in text


def test_gpt3_175b_with_and_without_the_distributed_optimizer(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    run = ("train configs/transformers/gpt3_175b.toml --cluster configs/clusters/a100_384_servers.toml --tp 8 --pp 8 "
           "--dp 16 --global-batch 1536")
    plain, sharded = seconds(run, capsys), seconds(run + " --distributed-optimizer", capsys)
    text = page()
    assert f"and {plain:.3f} s an iteration; with it 18.1 GiB" in text
    assert f"(4 + 16/16)/20) and {sharded:.3f} s (" in text


def test_device_file_a100_node(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    run = ("train configs/transformers/gpt3_1.3b.toml --cluster configs/clusters/{} --tp 2 --pp 2 --dp 2 "
           "--global-batch 64")
    device, catalog = (seconds(run.format(name), capsys) for name in ("a100_node_device_file.toml", "a100_node.toml"))
    assert device == pytest.approx(catalog, rel=1e-9)  # the page: "both … since"
    assert f"and {device:.3f} s since 1F1B's sends block, the default since 2026-12-05" in page()


DEEPSEEK = ("train deepseek_v3 --cluster configs/clusters/dgx_h100_superpod.toml --tp 2 --pp 16 --dp 32 --ep 8 "
            "--global-batch 4096 --micro-batch 1 --seq 4096 --dtype bf16 --recompute none --sequence-parallel "
            "--distributed-optimizer --dp-overlap bucketed --balance planned")


def test_deepseek_v3_plain_1f1b_rows(capsys, monkeypatch):
    """training.md's DeepSeek-V3 row at PP 16 (without MTP, with it, with the shared expert's overlap) and
    search.md's first row of the 1F1B search, the same layout."""
    monkeypatch.chdir(ROOT)

    def meta(extra: str) -> dict:
        capsys.readouterr()
        assert main(f"{DEEPSEEK} {extra} --format json".split()) == 0
        return json.loads(capsys.readouterr().out)["meta"]

    plain, mtp = meta("--mtp-layers 0"), meta("")
    shared = meta("--mtp-layers 0 --moe-shared-expert-overlap")
    text = page()
    assert f"It takes {plain['iteration_seconds']:.2f} s at MFU {plain['mfu']:.3f} (79.2 GiB a GPU;" in text
    assert f"it takes {mtp['iteration_seconds']:.2f} s at MFU {mtp['mfu']:.3f} (" in text
    assert f"(1F1B is no bar to it): {shared['iteration_seconds']:.2f} s, MFU {shared['mfu']:.3f}, 79.1 GiB" in text
    assert f"EP 8 on plain 1F1B, {plain['iteration_seconds']:.2f} s (" in text
    search = " ".join((ROOT / "docs" / "search.md").read_text(encoding="utf-8").split())
    assert (f"hold more within 80 GB): {plain['iteration_seconds']:.2f} s an iteration, 79.2 GiB a GPU, MFU "
            f"{plain['mfu']:.3f} ({plain['tflops_per_gpu']:.0f} TFLOP/s a GPU, 2026-12-05;") in search


def test_qwen3_235b_nearest_layouts(capsys, monkeypatch):
    """The Qwen3-235B-A22B layouts nearest the published one (PP 32, plain 1F1B) against its 200 TFLOP/s a GPU."""
    monkeypatch.chdir(ROOT)
    run = ("train tests/data/hf_configs/qwen3_235b_a22b.json --cluster configs/clusters/dgx_h100_superpod.toml --tp 2 "
           "--etp 1 --ep 8 --pp 32 --dp 4 --global-batch 2048 --micro-batch 1 --seq 4096 --dtype bf16 --recompute none "
           "--sequence-parallel --distributed-optimizer --dp-overlap bucketed")

    def meta(extra: str) -> dict:
        capsys.readouterr()
        assert main(f"{run} {extra} --format json".split()) == 0
        return json.loads(capsys.readouterr().out)["meta"]

    planned = meta("--balance planned")
    ends = meta("--stage-layers " + ",".join(["2"] + ["3"] * 30 + ["2"]))
    text = page()
    assert (f"{planned['iteration_seconds']:.2f} s an iteration, {planned['tflops_per_gpu']:.0f} TFLOP/s per GPU "
            f"(MFU {planned['mfu']:.2f}), peak memory {planned['peak_memory_gib']:.1f} GiB (2026-12-05;") in text
    assert f"each) {ends['iteration_seconds']:.2f} s, {ends['tflops_per_gpu']:.0f} TFLOP/s (" in text
    ratios = f"{ends['tflops_per_gpu'] / 200:.2f}–{planned['tflops_per_gpu'] / 200:.2f}×"
    assert f"above the published 200 ({ratios}," in text


def test_deepseek_v3_searches_plain_1f1b_rows(capsys, monkeypatch):
    """The rows the DeepSeek-V3 searches rank beside interleaved ones (their `train` lines: the search's row equals
    it, tests/test_search_train_parity.py): TP 4 · PP 32 with ETP 1 without MTP, TP 2 · PP 8 · EP 32 with it."""
    monkeypatch.chdir(ROOT)
    common = ("--global-batch 4096 --micro-batch 1 --seq 4096 --dtype bf16 --recompute none --sequence-parallel "
              "--distributed-optimizer --dp-overlap bucketed --balance planned")
    etp = seconds(f"train deepseek_v3 --cluster configs/clusters/dgx_h100_superpod.toml --tp 4 --pp 32 --dp 8 --ep 8 "
                  f"--etp 1 {common} --mtp-layers 0", capsys)
    second = seconds(f"train deepseek_v3 --cluster configs/clusters/dgx_h100_superpod.toml --tp 2 --pp 8 --dp 64 "
                     f"--ep 32 {common}", capsys)
    text = page()
    assert f"EP 8, ETP 1 first ({etp:.2f} s," in text
    assert f"EP 32 is second ({second:.2f} s;" in text
