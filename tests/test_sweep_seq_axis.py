"""``train --sweep seq=…`` (and ``archsim.train_sweep(sweep={"seq": […]})``): each point is ``train --seq S`` run
alone, a length past a learned position table is that point's row with train's own refusal, and the meta says no
one length for rows of several."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

import archsim
from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")  # learned positions: 1024 at most
LLAMA = str(ROOT / "tests" / "data" / "hf_configs" / "llama3_8b.json")  # rotary: max_position_embeddings 8192
NODE = str(ROOT / "configs" / "clusters" / "a100_node.toml")
COMMON = ["--cluster", NODE, "--tp", "8", "--global-batch", "4", "--micro-batch", "2"]


def _run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def test_each_point_is_train_at_that_seq():
    code, out, err = _run(["train", MODEL, *COMMON, "--sweep", "seq=256,512,2048", "--format", "json"])
    assert code == 0, err
    document = json.loads(out)
    assert "seq" not in document["meta"] and document["meta"]["axes"] == "seq"
    rows = document["rows"]
    assert [row["seq"] for row in rows] == [256, 512, 2048]
    for row in rows[:2]:
        code, alone, err = _run(["train", MODEL, *COMMON, "--seq", str(row["seq"]), "--format", "json"])
        assert code == 0, err
        meta = json.loads(alone)["meta"]
        shared = [key for key in row if key in meta]
        assert {"seq", "iteration_seconds", "compute_split_seconds", "mfu", "peak_memory_gib", "energy_j"} <= set(shared)
        assert {key: row[key] for key in shared} == {key: meta[key] for key in shared}
    assert rows[0]["iteration_seconds"] < rows[1]["iteration_seconds"]  # the length reached the iteration
    code, _, err = _run(["train", MODEL, *COMMON, "--seq", "2048"])  # past the 1024 positions: train's refusal
    assert code == 2
    assert rows[2]["iteration_seconds"] is None and rows[2]["error"] in err


def test_the_api_takes_the_axis_and_the_rotary_note_is_not_said():
    """The keyword's mapping meets the flag's reader: the same rows. A seq axis sets every point's length, so the
    note that a rotary config's length defaulted to its longest context is not said; a given --seq beside the axis
    is noted as any swept flag is."""
    result = archsim.train_sweep(MODEL, cluster=NODE, tp=8, global_batch=4, micro_batch=2, sweep={"seq": [256, 512]})
    code, out, _ = _run(["train", MODEL, *COMMON, "--sweep", "seq=256,512", "--format", "json"])
    assert code == 0 and result.to_dict()["rows"] == json.loads(out)["rows"]
    code, _, err = _run(["train", LLAMA, "--cluster", NODE, "--tp", "8", "--global-batch", "1", "--dtype", "bf16",
                         "--sweep", "seq=512,1024"])
    assert code == 0, err
    assert "max_position_embeddings" not in err
    code, _, err = _run(["train", LLAMA, "--cluster", NODE, "--tp", "8", "--global-batch", "1", "--dtype", "bf16",
                         "--seq", "512", "--sweep", "seq=512,1024"])
    assert code == 0 and "--seq given beside --sweep" in err


def test_a_bad_length_is_refused_as_the_flag_refuses_it():
    code, out, err = _run(["train", MODEL, *COMMON, "--sweep", "seq=256,0"])
    assert code == 2 and out == "" and "seq: expected a sequence of" in err
    with pytest.raises(archsim.InputError, match="seq: expected a sequence of"):
        archsim.train_sweep(MODEL, cluster=NODE, tp=8, global_batch=4, sweep={"seq": [256, -1]})
