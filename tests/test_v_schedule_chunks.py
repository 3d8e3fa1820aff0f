"""ZB-V and DualPipeV run two model chunks per pipeline rank (rank r holds stages r and 2·PP − 1 − r: the zero-bubble
paper's ZB-V, Qi et al. §6; DeepSeek's DualPipe in its V form, torch's ScheduleDualPipeV), and every output row's ``interleave``
(model chunks per pipeline rank, docs/formats.md) now says 2 for them.

Before the fix train's JSON meta, search's rows and train --runs' rows showed ``interleave 1`` (the ``--interleave``
flag's default) for these schedules: the train and search cases here failed. A row's ``archsim train`` command and
search's timeline of its first row still run (the command states no ``--interleave``: the schedule runs its two)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
GPT2 = str(ROOT / "configs" / "transformers" / "gpt2.json")
CLUSTER = str(ROOT / "configs" / "clusters" / "h100_2_servers.toml")
TRAIN = ["train", GPT2, "--cluster", CLUSTER, "--tp", "4", "--pp", "2", "--dp", "2", "--global-batch", "32",
         "--micro-batch", "1", "--format", "json"]


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("flags", "chunks"), [(["--schedule", "zb-v"], 2), (["--schedule", "dualpipev"], 2),
                                               (["--schedule", "1f1b"], 1), (["--interleave", "3"], 3)])
def test_train_shows_the_chunks_each_rank_runs(capsys, flags, chunks):
    assert main([*TRAIN, *flags]) == 0  # 12 layers: 2 ranks × 3 chunks of 2 layers, or × 2 of 3
    assert _json(capsys)["meta"]["interleave"] == chunks


def test_search_rows_of_v_schedules_show_two_chunks_and_their_commands_run(tmp_path, capsys):
    assert main(["search", GPT2, "--cluster", CLUSTER, "--global-batch", "32", "--schedule", "zb-v", "dualpipev",
                 "--top", "3", "--format", "json"]) == 0
    rows = _json(capsys)["rows"]
    assert rows and {(r["schedule"], r["interleave"]) for r in rows} <= {("zb-v", 2), ("dualpipev", 2)}
    for row in rows[:2]:  # the reproducing line runs, takes no --interleave, and times the row
        words = shlex.split(row["command"])
        assert words[:2] == ["archsim", "train"] and "--interleave" not in words
        assert main([*words[1:], "--format", "json"]) == 0
        assert _json(capsys)["meta"]["iteration_seconds"] == pytest.approx(row["iteration_seconds"], rel=1e-12)
    gantt = tmp_path / "best.html"  # the first row's timeline is built from the row
    assert main(["search", GPT2, "--cluster", CLUSTER, "--global-batch", "32", "--schedule", "zb-v", "--top", "1",
                 "--gantt", str(gantt)]) == 0
    assert gantt.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_runs_rows_of_a_v_schedule_show_two_chunks(tmp_path, capsys):
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch,measured_seconds\n4,2,2,1,32,0.5\n")
    for schedule, chunks in (("zb-v", 2), ("1f1b", 1)):
        assert main(["train", GPT2, "--cluster", CLUSTER, "--runs", str(runs), "--schedule", schedule,
                     "--format", "json"]) == 0
        assert [r["interleave"] for r in _json(capsys)["rows"]] == [chunks]


def test_a_v_schedules_own_two_chunks_may_be_restated_but_no_other_count(capsys):
    """A row's ``interleave`` builds its Parallelism (search's timeline, the rows users rebuild): ``--interleave 2``
    beside zb-v restates the schedule's two chunks and runs the same iteration; 3 is refused as before."""
    assert main([*TRAIN, "--schedule", "zb-v"]) == 0
    alone = capsys.readouterr().out
    assert main([*TRAIN, "--schedule", "zb-v", "--interleave", "2"]) == 0
    assert capsys.readouterr().out == alone
    assert main([*TRAIN, "--schedule", "zb-v", "--interleave", "3"]) == 2
    assert "zb-v runs 2 model chunks a rank by its V shape, not 3: drop --interleave" in capsys.readouterr().err
