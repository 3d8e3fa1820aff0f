"""The stage split's dynamic program and PipeDream's optimizer where their problems coincide: a straight
pipeline of alike machines over a chain, no memory limit, activation transfers ignored, every stage
holding at least one layer (the embedding and head cost nothing, so pinning them to the ends binds
nothing). There both solve A(r, j) = min_i max(A(r − 1, i), T(i..j)) and must agree on the optimum and,
with integer costs that tie often, on the split itself (both keep the earliest cut on a tie).
docs/architecture.md says why the two stay separate programs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from archsim.partition.pipedream import pipedream_plan
from archsim.partition.pipedream_tables import Level, PipeDreamOptions
from archsim.partition.profile import profile_from_costs
from archsim.training.parallel import Parallelism
from archsim.training.stage_split import plan_stage_layers
from archsim.workload.transformer import TransformerConfig


def _config(layers: int) -> TransformerConfig:
    return TransformerConfig("tiny", "gpt", layers=layers, hidden=96, heads=6, vocab=5000, seq=64, ffn=384,
                             kv_heads=6, tied_embeddings=True, positions=64)


def _brute(costs: np.ndarray, p: int) -> float:
    """The least slowest stage over every cut of ``costs`` into ``p`` contiguous non-empty stages."""
    n = len(costs)
    return min(max(costs[a:b].sum() for a, b in itertools.pairwise((0, *cuts, n)))
               for cuts in itertools.combinations(range(1, n), p - 1))


@pytest.mark.parametrize("seed", range(12))
def test_the_stage_split_and_pipedream_agree_on_a_straight_chain(seed):
    rng = np.random.default_rng(seed)
    layers = int(rng.integers(4, 10))
    p = int(rng.integers(2, min(layers, 5) + 1))
    costs = rng.integers(1, 6, size=layers).astype(float)  # small integers: exact sums, many ties
    counts = plan_stage_layers(_config(layers), Parallelism(pp=p, global_batch=8), [np.array([0.0, *costs, 0.0])] * p,
                               [np.inf] * p)
    assert counts is not None
    split_bounds = np.cumsum((0, *counts))
    slowest = max(costs[a:b].sum() for a, b in itertools.pairwise(split_bounds))
    assert slowest == _brute(costs, p)

    profile = profile_from_costs([f"layer{k}" for k in range(1, layers + 1)], costs, np.zeros(layers),
                                 np.zeros(layers), unit="seconds")
    plan = pipedream_plan(profile, (Level(p, np.inf),), PipeDreamOptions(straight_pipeline=True))
    assert plan.time_per_stage == slowest
    blocks = [block for block, _ in plan.stages()]
    assert tuple(block.end - block.start for block in blocks) == counts
