"""Follow-ups of the state-sharding trial (31): each defect's test says whether it failed before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archsim.cli import main
from archsim.errors import InputError
from archsim.training.sweep import parse_axis

ROOT = Path(__file__).resolve().parents[1]
GPT3_13 = str(ROOT / "configs" / "transformers" / "gpt3_1.3b.toml")
NODE = str(ROOT / "configs" / "clusters" / "a100_node.toml")


@pytest.mark.parametrize("key", ["sequence_parallel", "distributed_optimizer", "fsdp"])
def test_sweep_booleans_read_as_a_runs_file_reads_them(key):
    """``--sweep fsdp=True,FALSE`` took only lowercase true/false while a runs file's same column takes
    1/0, yes/no in any case: one reading for both (failed before: 'True' was refused)."""
    assert parse_axis(f"{key}=True,FALSE") == (key, (True, False))
    assert parse_axis(f"{key}=1,no") == (key, (True, False))
    assert parse_axis(f"{key}=yes,0") == (key, (True, False))
    with pytest.raises(InputError, match=r"expected true or false \(or 1/0, yes/no, any case\), got 'on'"):
        parse_axis(f"{key}=on")
    with pytest.raises(InputError, match="repeats a value"):
        parse_axis(f"{key}=True,yes")  # two spellings of one value are one point


def test_sweep_and_runs_file_give_the_same_rows(tmp_path, capsys):
    """The same four spellings through both paths: a runs file's fsdp column and ``--sweep fsdp=…`` rows agree
    (failed before: the sweep refused 'True')."""
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch,fsdp\n1,1,4,1,8,True\n1,1,4,1,8,FALSE\n"
                    "1,1,4,1,8,1\n1,1,4,1,8,yes\n", encoding="utf-8")
    assert main(["train", GPT3_13, "--cluster", NODE, "--runs", str(runs), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["fsdp"] for r in rows] == [True, False, True, True]
    for spelling in ("True", "1", "yes"):
        assert main(["train", GPT3_13, "--cluster", NODE, "--dp", "4", "--global-batch", "8",
                     "--sweep", f"fsdp={spelling},FALSE", "--format", "json"]) == 0
        points = json.loads(capsys.readouterr().out)["rows"]
        assert [p["fsdp"] for p in points] == [True, False]
        assert [p["peak_memory_gib"] for p in points] == [rows[0]["peak_memory_gib"], rows[1]["peak_memory_gib"]]


def test_pytorch_eager_refuses_fsdp_as_it_refuses_the_distributed_optimizer(capsys):
    """pytorch-eager models the measured plain-PyTorch loop on one GPU (no FSDP wrapper): ``--fsdp`` was run
    there with FSDP's 16 bytes a parameter in place of the loop's own 18 while ``--distributed-optimizer`` was
    refused; both are refused now, one line each, nothing on stdout (failed before: --fsdp returned 0)."""
    base = ["train", GPT3_13, "--cluster", NODE, "--implementation", "pytorch-eager", "--attention", "standard",
            "--global-batch", "1", "--micro-batch", "1"]
    for flag, word in (("--distributed-optimizer", "Megatron-LM's"), ("--fsdp", "not modelled")):
        assert main([*base, flag]) == 2
        out, err = capsys.readouterr()
        assert out == ""
        assert err.count("\n") == 1
        assert err.startswith(f"archsim train: error: argument {flag}: {flag} ") and word in err
        assert "--implementation pytorch-eager" in err
    assert main([*base, "--fsdp", "--implementation", "megatron", "--attention", "flash"]) == 0  # Megatron's: runs
    capsys.readouterr()


MIXED = str(ROOT / "configs" / "clusters" / "mixed_counts_h100_a100.toml")


def test_mixed_cluster_capacity_is_the_fullest_ranks_own_gpu(capsys):
    """One DGX H100 (80 GB) and two 4-GPU A100 40 GB servers, TP 4 · PP 2 · DP 2: rank 0 on the H100s, rank 1
    on the A100s. At micro-batch 8 without recompute rank 0 holds more GiB, rank 1 more of its own GPU (by hand
    from the per-rank totals: about 15.4/79.2 < 10.5/40), so the capacity beside the peak is the A100's 40 GiB;
    it said the largest GPU's 80 (failed before). Each rank's fits is its total against its own GPU."""
    assert main(["train", GPT3_13, "--cluster", MIXED, "--tp", "4", "--pp", "2", "--dp", "2", "--global-batch",
                 "32", "--micro-batch", "8", "--recompute", "none", "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    ranks = meta["memory_per_rank"]
    assert [r["gpu"] for r in ranks] == ["NVIDIA H100 SXM5 80GB", "NVIDIA A100 SXM4 40GB"]
    # the H100's 79.2 GiB CUDA gave a measured run (gpu_train_measured_h100-80gb-hbm3.csv), the A100's 40 GB as GiB
    assert [r["capacity_gib"] for r in ranks] == [79.2, 40.0]
    assert ranks[0]["total_gib"] > ranks[1]["total_gib"]  # the peak sits on the H100 rank …
    assert ranks[1]["total_gib"] / 40 > ranks[0]["total_gib"] / 79.2  # … the fullest by share on the A100
    assert meta["peak_memory_gib"] == ranks[0]["total_gib"]
    assert meta["memory_capacity_gib"] == 40.0
    assert [r["fits"] for r in ranks] == [r["total_gib"] <= cap for r, cap in zip(ranks, (79.2, 40), strict=True)]
    assert meta["fits_memory"] is all(r["fits"] for r in ranks)


def test_mixed_cluster_does_not_fit_on_its_40_gb_rank(capsys):
    """ZB-6.2B at micro-batch 32 without recompute: 47.4 GiB on the A100 rank, 45.3 on the H100 rank. It does
    not fit (47.4 > 40, the A100's own) and the meta said peak 47.4 beside a capacity of 80, which reads as
    fitting (failed before); now the capacity beside it is the 40 GiB it overflows, and the warning names it."""
    assert main(["train", str(ROOT / "configs" / "transformers" / "zb_6.2b.toml"), "--cluster", MIXED, "--tp", "4",
                 "--pp", "2", "--dp", "2", "--global-batch", "64", "--micro-batch", "32", "--recompute", "none",
                 "--format", "json"]) == 0
    out, err = capsys.readouterr()
    meta = json.loads(out)["meta"]
    assert [r["fits"] for r in meta["memory_per_rank"]] == [True, False]
    assert meta["fits_memory"] is False
    assert meta["peak_memory_gib"] > meta["memory_capacity_gib"] == 40.0
    assert "its NVIDIA A100 SXM4 40GB has 40.0 GiB" in err


def test_search_note_names_a_gpu_count_near_the_one_asked(capsys):
    """GPT-3 175B (96 heads, 96 layers) at batch 1,536 on ``--gpus 40``: 40 = 2³·5 and 5 divides none of 96,
    96, 1,536 (2⁵·3, 2⁹·3), so no split. The note said "e.g. --gpus 3072" (the cluster's most, failed before);
    by hand the nearest count is 36 = TP 4 × PP 3 × DP 3, as 37–39 and 41–44 each have a prime factor other than
    2 and 3 — and a search on 36 passes the rules (its configurations are out of memory, not split-less)."""
    model, cluster = str(ROOT / "configs" / "transformers" / "gpt3_175b.toml"), \
        str(ROOT / "configs" / "clusters" / "a100_384_servers.toml")
    keys = ["search", model, "--cluster", cluster, "--global-batch", "1536"]
    assert main([*keys, "--gpus", "40"]) == 0
    err = capsys.readouterr().err
    assert "no split of them into TP × PP × DP" in err
    assert "e.g. --gpus 36, the count nearest 40 GPUs (of the cluster's 3,072) that has one" in err
    assert "3072" not in err
    assert main([*keys, "--gpus", "36"]) == 0
    err = capsys.readouterr().err
    assert "no split" not in err and "that pass the rules are all out of memory" in err


def test_nearest_passing_against_brute_force():
    """The nearest counts against a brute-force scan of every count in the cluster (ties: both sides)."""
    from archsim.training.search_note import nearest_passing

    for passes in (lambda n: n % 4 == 0, lambda n: n % 3 == 0, lambda n: n in (1, 7), lambda n: n == 1):
        for asked in ([10], [13, 30], [31]):
            if any(passes(a) for a in asked):
                continue  # only asked when none of the counts passes
            admitted = [n for n in range(1, 33) if passes(n)]
            best = min(min(abs(n - a) for a in asked) for n in admitted)
            expected = [n for n in admitted if min(abs(n - a) for a in asked) == best]
            assert nearest_passing(asked, 32, passes) == expected, (asked, expected)
    assert nearest_passing([10], 11, lambda n: n % 4 == 0) == [8]  # 12 is past the cluster's 11
