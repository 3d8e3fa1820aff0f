"""``train --sweep fp8_param_gather=false,true`` sweeps Megatron-LM's --fp8-param-gather as the flag sets it: the
point with fp8 weights holds 2 bytes less per fp8 weight (the 16-bit copy and TE's cached fp8 copy replaced by the
fp8 weight and its transpose) and is never heavier; a point without --fp8 cannot take it (Megatron-LM asserts)."""

from __future__ import annotations

import json
from pathlib import Path

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ["train", str(ROOT / "configs" / "transformers" / "gpt2.json"), "--cluster",
         str(ROOT / "configs" / "clusters" / "h100_2_servers.toml"), "--tp", "2", "--dp", "4", "--global-batch", "8",
         "--dtype", "bf16", "--distributed-optimizer", "--format", "json"]


def test_the_axis_sweeps_fp8_weights_as_the_flag_sets_them(capsys):
    assert main([*TRAIN, "--fp8", "hybrid", "--sweep", "fp8_param_gather=false,true"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["fp8_param_gather"] for r in rows] == [False, True] and not any(r.get("error") for r in rows)
    flag = []
    for extra in ([], ["--fp8-param-gather"]):
        assert main([*TRAIN, "--fp8", "hybrid", *extra]) == 0
        flag.append(json.loads(capsys.readouterr().out)["meta"]["peak_memory_gib"])
    assert [r["peak_memory_gib"] for r in rows] == flag and flag[1] < flag[0]


def test_a_point_without_fp8_cannot_take_fp8_weights(capsys):
    assert main([*TRAIN, "--sweep", "fp8_param_gather=false,true"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert not rows[0].get("error") and "--fp8" in rows[1]["error"]
