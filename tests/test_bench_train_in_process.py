"""``benchmarks/bench_train_in_process.py`` runs to its end (it broke unnoticed when the event simulator took the
blocking links of Megatron's 1F1B sends as a fourth input): one call each, and the simulation it times alone is
GPT-3 175B's 1F1B problem — 1,536 / 16 = 96 micro-batches a pipeline, each a forward and a backward on each of the
8 ranks: 96 × 8 × 2 = 1,536 ops."""

from __future__ import annotations

import re

import pytest
from benchmark_scripts import load_benchmark


@pytest.mark.long
def test_the_in_process_benchmark_runs_and_times_the_hand_counted_problem(capsys):
    bench = load_benchmark("bench_train_in_process")
    assert bench.main(["--calls", "1"]) == 0
    printed = capsys.readouterr().out
    assert int(re.search(r"simulation alone \(V = 1, (\d+) ops", printed)[1]) == 96 * 8 * 2
    assert "cycle check alone" in printed
