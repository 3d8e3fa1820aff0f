"""``search`` flags it accepted silently and now refuses with one line, nothing written (issue #40): a
many-valued flag's value repeated, ``--chunks`` without a schedule that takes chunks — and the searches that
stay accepted."""

from __future__ import annotations

import pytest
from input_checks_common import GPT2, NODE

import archsim
from archsim.cli import main
from archsim.errors import InputError


# -- search: each value of a many-valued flag once
@pytest.mark.parametrize(("flag", "values"), [("--recompute", ("none", "none")), ("--schedule", ("1f1b", "1f1b")),
                                              ("--chunks", ("2", "4", "2")), ("--gpus", ("8", "8"))])
def test_search_refuses_a_repeated_value(capsys, flag, values):
    """A repeated value enumerated its configurations twice: the same row printed twice among the best."""
    argv = ["search", str(GPT2), "--cluster", str(NODE), "--global-batch", "8", "--refine", "0", flag, *values]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and flag in err and "repeat" in err


def test_the_api_search_refuses_a_repeated_value():
    with pytest.raises(InputError, match="repeat") as caught:
        archsim.search(GPT2, cluster=NODE, global_batch=8, gpus=[4, 4], refine=0)
    assert caught.value.where.field == "gpus"


# -- search --chunks without a schedule that takes chunks did nothing (its default could not be told from a user's)
@pytest.mark.parametrize("schedules", [("1f1b",), ("1f1b", "zb-v", "gpipe")])
def test_search_refuses_chunks_without_an_interleaved_schedule(tmp_path, capsys, schedules):
    out = tmp_path / "out.csv"
    argv = ["search", str(GPT2), "--cluster", str(NODE), "--global-batch", "8", "--gpus", "2",
            "--schedule", *schedules, "--chunks", "8", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "--chunks" in err and "argument --chunks:" in err
    assert not out.exists()


def test_the_api_search_refuses_chunks_without_an_interleaved_schedule():
    with pytest.raises(InputError, match="drop chunks") as caught:  # the keyword, not the flag (followups 25)
        archsim.search(GPT2, cluster=NODE, global_batch=8, gpus=2, schedule="1f1b", chunks=8)
    assert caught.value.where.field == "chunks"


@pytest.mark.parametrize("schedule", ["interleaved-1f1b", "interleaved-zb", "looped-bfs"])
def test_chunks_with_a_schedule_that_takes_them_is_searched(schedule):
    """The schedules that take chunks per rank try exactly the ones given; the default stays 2 and 4."""
    given = archsim.search(GPT2, cluster=NODE, global_batch=8, gpus=2, schedule=["1f1b", schedule], chunks=3,
                           max_micro_batch=1, recompute="full", sequence_parallel="off")
    default = archsim.search(GPT2, cluster=NODE, global_batch=8, gpus=2, schedule=["1f1b", schedule],
                             max_micro_batch=1, recompute="full", sequence_parallel="off")
    # (TP, PP, DP) over 2 GPUs: 3 layouts; 1f1b 1 each, the chunked schedule once per chunk count
    assert given.enumerated == 3 * (1 + 1) and default.enumerated == 3 * (1 + 2)


def test_search_without_chunks_or_interleaving_runs(tmp_path):
    out = tmp_path / "out.csv"
    argv = ["search", str(GPT2), "--cluster", str(NODE), "--global-batch", "8", "--gpus", "2", "--schedule", "1f1b",
            "--max-micro-batch", "1", "--out", str(out)]
    assert main(argv) == 0 and out.exists()
