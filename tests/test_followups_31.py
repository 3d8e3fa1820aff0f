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
        assert err.startswith(f"archsim train: error: field '{flag[2:]}': {flag} ") and word in err
        assert "--implementation pytorch-eager" in err
    assert main([*base, "--fsdp", "--implementation", "megatron", "--attention", "flash"]) == 0  # Megatron's: runs
    capsys.readouterr()
