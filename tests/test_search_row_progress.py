"""``archsim search`` built its rows (the ranked ones, then the Pareto front's: each plans and times its split,
about 1.5 s for docs' 1T search) after the grid's bar had closed, so its last second showed no progress. A bar
now counts each phase's rows on a terminal, drawn once the search has run a second, and never in a pipe."""

from __future__ import annotations

import io
import itertools
import sys
import types

import archsim
import archsim.training.search as search_module
from archsim.cli import main

MODEL = "configs/transformers/gpt_1024h_24l.json"
CLUSTER = "configs/clusters/a100_node.toml"
ARGV = ["search", MODEL, "--cluster", CLUSTER, "--global-batch", "16", "--top", "2", "--schedule", "1f1b",
        "--max-micro-batch", "1", "--refine", "0"]
PHASES = ("build the ranked rows", "build the Pareto front's rows")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _two_seconds_a_reading(monkeypatch) -> None:
    """The search's clock reads 2 s later each time: past the second the row bars wait for (no timing in tests)."""
    clock = itertools.count(step=2.0)
    monkeypatch.setattr(search_module, "time", types.SimpleNamespace(monotonic=lambda: next(clock)))


def test_a_long_search_shows_its_row_building_on_a_terminal(monkeypatch, capsys):
    assert main(ARGV) == 0
    piped = capsys.readouterr()
    _two_seconds_a_reading(monkeypatch)
    assert main(ARGV) == 0
    assert capsys.readouterr().err == ""  # a pipe: no bar, however long the search ran
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(ARGV) == 0
    shown = terminal.getvalue()
    assert all(f"{phase}:" in shown for phase in PHASES) and "row" in shown
    assert capsys.readouterr().out == piped.out  # the same rows either way


def test_a_quick_search_draws_no_row_bar_on_a_terminal(monkeypatch, capsys):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(search_module, "time", types.SimpleNamespace(monotonic=lambda: 0.0))  # no time passes
    assert main(ARGV) == 0
    assert not any(phase in terminal.getvalue() for phase in PHASES)


def test_search_progress_true_draws_the_row_bars_off_a_terminal(capsys):
    archsim.search(MODEL, cluster=CLUSTER, progress=True, global_batch=16, top=2, schedule=["1f1b"],
                   max_micro_batch=1, refine=0)
    err = capsys.readouterr().err
    assert all(phase in err for phase in PHASES)
