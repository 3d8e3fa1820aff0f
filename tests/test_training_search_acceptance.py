"""archsim search against measurement: vTrain's single-node A100 runs grouped by (model, GPUs, global
batch), the search held to the runs' settings and to the configurations measured in each group."""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim.training.cluster_file import single_node
from archsim.training.measured import read_measured
from archsim.training.search_acceptance import fractions, group_outcomes
from archsim.training.search_space import peak_memory_bytes

RUNS = Path(__file__).parent / "data" / "e2e" / "vtrain_single_node_shown.csv"


@pytest.fixture(scope="module")
def outcomes():
    return group_outcomes(read_measured(RUNS))


def test_every_group_is_ranked_in_full(outcomes):
    assert len(outcomes) > 100
    for o in outcomes:  # nothing measured is pruned: each group's configurations all come back ranked
        assert len(o.ranked) == o.configurations


def test_top3_holds_the_measured_best_in_80pct_of_groups(outcomes):
    """The issue's bar, on all groups and on the groups of the models the kernel constants were not
    fitted on (12, 20 and 24 layers)."""
    assert fractions(outcomes)["best_in_top3"] >= 0.8
    assert fractions([o for o in outcomes if o.held_out])["best_in_top3"] >= 0.8


@pytest.mark.xfail(strict=True, reason="115 of 137 groups (83.9%; 118 before NCCL's LL128), not 90%: 18 of the 22 misses have "
                   "their measured best at TP 2 micro-batch 4 (hidden 1024) or TP 4 micro-batch 2 (hidden 2048), the 512-wide-shard "
                   "cells, which archsim predicts 18-27% slow. Measured they cost less than cells with the same GEMM "
                   "FLOPs, attention and op count per GPU (TP 4 mb 2 h2048: 2.82 ms per layer and micro-batch against "
                   "3.45 at TP 2 mb 1), below archsim's host floor; neither the fused-softmax rule nor tile waves "
                   "separate them, and no mechanism that can be stated without a per-op profile does "
                   "(docs/accuracy.md, the worst 5%; benchmarks/bench_shard_cells.py)")
def test_first_choice_within_5pct_of_the_measured_best_in_90pct_of_groups(outcomes):
    assert fractions(outcomes)["first_within_5pct"] >= 0.9


def test_no_measured_run_is_marked_out_of_memory():
    """Every measured run ran on an 80 GB A100, so archsim must not call any of them too big."""
    capacity = single_node("a100-80gb").gpu.memory_bytes
    runs = read_measured(RUNS)
    assert max(peak_memory_bytes(r.config(), r.parallelism()) for r in runs) <= capacity
