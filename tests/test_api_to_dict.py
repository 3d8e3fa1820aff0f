"""The Python API's results as data: progress bars on request, and the CLI's JSON documents."""

from __future__ import annotations

import pytest

import archsim
from archsim.errors import InputError

MODEL = "configs/transformers/gpt_1024h_24l.json"
CLUSTER = "configs/clusters/a100_node.toml"
SMALL = {"global_batch": 16, "top": 2, "schedule": ["1f1b"], "max_micro_batch": 1, "refine": 1}


def test_search_progress_true_draws_the_bar_on_stderr_off_a_terminal(capsys):
    archsim.search(MODEL, cluster=CLUSTER, progress=True, **SMALL)
    err = capsys.readouterr().err
    assert "search gpt" in err and "config" in err  # the grid's bar, its description and unit
    assert "re-time in the event simulator" in err  # and the refine's


def test_search_progress_false_and_none_off_a_terminal_draw_nothing(capsys):
    archsim.search(MODEL, cluster=CLUSTER, progress=False, **SMALL)
    archsim.search(MODEL, cluster=CLUSTER, **SMALL)  # None: stderr is captured, not a terminal
    assert capsys.readouterr().err == ""


def test_search_progress_refuses_a_non_bool():
    with pytest.raises(InputError, match="progress"):
        archsim.search(MODEL, cluster=CLUSTER, progress="yes", **SMALL)
