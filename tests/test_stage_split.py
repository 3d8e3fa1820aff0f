"""Uneven pipeline stages: the planner's split against brute force over every contiguous split on tiny
models (homogeneous and mixed GPUs, with and without a memory limit), and the even split as Megatron
places it (embedding on the first stage, LM head on the last)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from archsim.errors import InputError
from archsim.policies.stage_orders import published_order
from archsim.training.cluster_file import single_node
from archsim.training.iteration import model_pieces
from archsim.training.parallel import Parallelism, layers_per_stage
from archsim.training.pipeline_memory import memories
from archsim.training.stage_layout import parse_stage_layers
from archsim.training.stage_split import planned_split, stage_layer_counts
from archsim.training.stages import one_f_one_b_seconds, rank_stage_times, stage_times
from archsim.workload.transformer import TransformerConfig

TINY = TransformerConfig("tiny", "gpt", layers=7, hidden=96, heads=6, vocab=5000, seq=64, ffn=384, kv_heads=6,
                         tied_embeddings=True, positions=64)


def _splits(layers: int, p: int):
    """Every way to cut ``layers`` into ``p`` contiguous stages of at least one layer."""
    for cuts in itertools.combinations(range(1, layers), p - 1):
        bounds = (0, *cuts, layers)
        yield tuple(b - a for a, b in itertools.pairwise(bounds))


def _brute(c, par, machines, capacities):
    """(slowest stage F + I + W, 1F1B closed-form span) of the best split that fits, by enumeration; the
    memory from the published order (archsim train's path), the times from stage_times per machine."""
    best = None
    order = published_order(par.schedule_name, par.pp, par.microbatches, 1)
    for split in _splits(c.layers, par.pp):
        trial = Parallelism(par.tp, par.pp, par.dp, par.global_batch, par.micro_batch, par.recompute,
                            par.sequence_parallel, 1, par.schedule, split)
        if any(m.total > cap for m, cap in zip(memories(c, trial, order), capacities)):
            continue
        times = rank_stage_times(c, trial, machines)
        slowest = max(np.add(np.add(times.forward, times.backward_input), times.backward_weight))
        if best is None or slowest < best[0] - 1e-15:
            best = (slowest, one_f_one_b_seconds(times, par.microbatches))
    return best


def _planned(c, par, machines, capacities):
    plan = planned_split(c, par, machines, capacities)
    if plan is None:
        return None, None
    split = stage_layer_counts(plan)
    trial = Parallelism(par.tp, par.pp, par.dp, par.global_batch, par.micro_batch, par.recompute,
                        par.sequence_parallel, 1, par.schedule, split)
    times = rank_stage_times(c, trial, machines)
    return split, (max(np.add(np.add(times.forward, times.backward_input), times.backward_weight)),
                   one_f_one_b_seconds(times, par.microbatches))


@pytest.mark.parametrize("schedule", ["1f1b", "gpipe"])
def test_planned_split_is_the_best_contiguous_split(schedule):
    machine = single_node().machine(Parallelism(pp=4))
    for p, b, recompute in itertools.product((2, 3, 4), (1, 4), ("none", "full")):
        par = Parallelism(1, p, 1, 8 * b, b, recompute, schedule=schedule)
        split, got = _planned(TINY, par, [machine] * p, [np.inf] * p)
        want = _brute(TINY, par, [machine] * p, [np.inf] * p)
        assert got[0] == pytest.approx(want[0], rel=1e-12), (p, b, recompute, split)
        # one GPU type: the slowest stage decides 1F1B's span, so the split is also the fastest iteration
        assert got[1] == pytest.approx(want[1], rel=1e-12), (p, b, recompute, split)


def test_planned_split_under_a_memory_limit_is_the_best_that_fits():
    machine = single_node().machine(Parallelism(pp=3))
    par = Parallelism(1, 3, 1, 12, 2, "none")
    order = published_order("1f1b", 3, par.microbatches, 1)
    sizes = sorted({m.total for split in _splits(TINY.layers, 3)
                    for m in memories(TINY, Parallelism(1, 3, 1, 12, 2, "none", stage_layers=split), order)})
    tested = 0
    for capacity in sizes[::3]:
        want = _brute(TINY, par, [machine] * 3, [capacity] * 3)
        split, got = _planned(TINY, par, [machine] * 3, [capacity] * 3)
        assert (got is None) == (want is None), capacity
        if want is not None:
            tested += 1
            assert got[0] == pytest.approx(want[0], rel=1e-12), (capacity, split)
    assert tested >= 3


@pytest.mark.parametrize("recompute", ["none", "full"])
def test_planned_zero_bubble_split_under_a_memory_limit_is_the_best_that_fits(recompute):
    """ZB-H1 holds W's inputs from I to W (under full recompute 16 times a layer's checkpoint at t = 1), so a rank's
    memory is not affine in its layers and the planner searches each rank's most layers: 16 layers on 2 stages, one
    rank's GPU as large as that rank's own memory under each split (less a byte: one layer fewer fits) and the
    other's unbounded, against brute force over the 15 splits (train's memory)."""
    from dataclasses import replace

    deep = replace(TINY, layers=16)
    machine = single_node().machine(Parallelism(pp=2))
    par = Parallelism(1, 2, 1, 8, 1, recompute, schedule="zb-h1")
    order = published_order("zb-h1", 2, par.microbatches, 1)
    for rank in (0, 1):
        for split in list(_splits(deep.layers, 2))[1:-1:2]:
            bound = memories(deep, replace(par, stage_layers=split), order)[rank].total
            for capacity in (bound, bound - 1):
                caps = [capacity if r == rank else np.inf for r in range(2)]
                want = _brute(deep, par, [machine] * 2, caps)
                got = _planned(deep, par, [machine] * 2, caps)[1]
                assert got[0] == pytest.approx(want[0], rel=1e-12), (rank, split, capacity)

def test_planned_split_on_mixed_gpus_is_the_best_contiguous_split():
    """Ranks on V100s and A100s (each with its own memory): the planner gives the slower GPU fewer layers."""
    from dataclasses import replace

    from archsim.devices.gpu_lookup import gpu

    a100 = single_node().machine(Parallelism(pp=4))
    v100 = replace(a100, gpu=gpu("v100-32gb"))
    for ranks in ((a100, v100), (v100, a100, a100), (a100, v100, v100, a100)):
        p = len(ranks)
        par = Parallelism(1, p, 1, 16, 2, "full")
        caps = [m.gpu.memory_bytes for m in ranks]
        split, got = _planned(TINY, par, list(ranks), caps)
        want = _brute(TINY, par, list(ranks), caps)
        assert got[0] == pytest.approx(want[0], rel=1e-12), split
    split = stage_layer_counts(planned_split(TINY, Parallelism(1, 2, 1, 16, 2, "full"), [a100, v100], [np.inf] * 2))
    assert split[0] > split[1]


def test_the_planned_split_is_a_partition_of_the_chain():
    """The plan is the one plan type: every node once and in order (the embedding on the first stage,
    the LM head on the last); each stage's total the F + I + W that stage_times gives its rank for the
    plan's layer counts (another path: counts × per-layer pieces); the hops' bytes s·b·h·2/t each way."""
    a100 = single_node("a100-80gb").machine(Parallelism(pp=2))
    v100 = single_node("v100-32gb").machine(Parallelism(pp=2))
    for p, machines in ((3, [a100] * 3), (2, [a100, v100])):
        par = Parallelism(1, p, 1, 8, 2, "full")
        plan = planned_split(TINY, par, machines, [np.inf] * p)
        assert [name for stage in plan.stages for name in stage.layers] == \
            ["embedding", *(f"layer{k}" for k in range(1, TINY.layers + 1)), "head"]
        assert plan.unit == "seconds" and [s.index for s in plan.stages] == list(range(p))
        counts = stage_layer_counts(plan)
        assert sum(counts) == TINY.layers and len(counts) == p
        times = rank_stage_times(TINY, Parallelism(1, p, 1, 8, 2, "full", stage_layers=counts), machines)
        for stage, f, i, w in zip(plan.stages, times.forward, times.backward_input, times.backward_weight):
            assert stage.total_cost == pytest.approx(f + i + w, rel=1e-12)
        assert plan.mandatory_bytes == 2 * (p - 1) * TINY.seq * 2 * TINY.hidden * 2


def test_even_split_puts_the_embedding_first_and_the_head_last():
    machine = single_node().machine(Parallelism(pp=4))
    c = TransformerConfig("tiny8", "gpt", layers=8, hidden=96, heads=6, vocab=5000, seq=64, ffn=384, kv_heads=6,
                          tied_embeddings=True, positions=64)
    par = Parallelism(1, 4, 1, 8, 1, "none")
    pieces = model_pieces(c, par, machine)
    even = stage_times(c, par, machine, pieces)
    assert even == stage_times(c, Parallelism(1, 4, 1, 8, 1, "none", stage_layers=(2, 2, 2, 2)), machine, pieces)
    layer, emb, head = pieces["layer"], pieces["embedding"], pieces["head"]
    two_layers = 2 * (layer.forward + layer.tp_forward)
    assert even.forward[1] == pytest.approx(two_layers) and even.forward[2] == pytest.approx(two_layers)
    assert even.forward[0] == pytest.approx(two_layers + emb.forward + emb.tp_forward)
    assert even.forward[3] == pytest.approx(two_layers + head.forward + head.tp_forward)
    assert layers_per_stage(8, 4) == (2, 2, 2, 2)


def test_bad_stage_layers_are_input_errors():
    with pytest.raises(InputError):
        parse_stage_layers("5,x")
    with pytest.raises(InputError):
        layers_per_stage(7, 2, (3, 3))
    with pytest.raises(InputError):
        Parallelism(pp=2, stage_layers=(1, 2, 3))


MIXED = """[cluster]
name = "mixed"
inter_server_gbps = 200
inter_server_link = "per_gpu_pair"

[[servers]]
gpus = 2
intra_server_gbps = 4800
gpu = "a100-80gb"

[[servers]]
gpus = 2
intra_server_gbps = 2400
gpu = "v100-32gb"
"""


def test_search_on_a_tiny_mixed_cluster_by_brute_force(tmp_path):
    """Two servers (2 × A100 80 GB, 2 × V100 32 GB) and a model wide enough that memory bites: each
    configuration the search keeps is placed on one GPU type per rank, fits each rank's own memory and
    has the split with the smallest slowest stage among all contiguous splits (enumerated here, memory
    from the published order); each it prunes for memory has no split that fits."""
    from archsim.devices.gpu_lookup import gpu
    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.training.search import search
    from archsim.training.search_space import Candidate, rejection

    path = tmp_path / "mixed.toml"
    path.write_text(MIXED)
    cluster = load_gpu_cluster(path)
    c = TransformerConfig("wide", "gpt", layers=8, hidden=8192, heads=64, vocab=5000, seq=256, ffn=32768,
                          kv_heads=64, tied_embeddings=True, positions=256)
    kinds = [gpu("a100-80gb")] * 2 + [gpu("v100-32gb")] * 2
    result = search(c, cluster, 8, (2, 4), micro_batches=(1, 4), recomputes=("none", "full"), schedules=("1f1b",),
                    sequence_parallel=(False,), top=10**6, balance="planned")
    kept = {(r["tp"], r["pp"], r["dp"], r["micro_batch"], r["recompute"]): r for r in result.rows}
    out_of_memory = mixed = 0
    for gpus in (2, 4):
        for tp, pp in itertools.product((1, 2, 4), (1, 2, 4)):
            if gpus % (tp * pp):
                continue
            dp = gpus // (tp * pp)
            for b, recompute in itertools.product((1, 4), ("none", "full")):
                k = Candidate(tp, pp, dp, b, recompute, "1f1b", 1, False)
                if rejection(c, k, 8, 2, uneven=True):
                    assert (tp, pp, dp, b, recompute) not in kept
                    continue
                group = tp * dp
                ranks = [{kinds[i].name for i in range(r * group, (r + 1) * group)} for r in range(pp)]
                if any(len(names) > 1 for names in ranks):
                    mixed += 1
                    assert (tp, pp, dp, b, recompute) not in kept
                    continue
                par = Parallelism(tp, pp, dp, 8, b, recompute)
                machines = [cluster.machine(par, kinds[r * group], r) for r in range(pp)]
                caps = [kinds[r * group].memory_bytes for r in range(pp)]
                want = _brute(c, par, machines, caps)
                row = kept.get((tp, pp, dp, b, recompute))
                if want is None:
                    out_of_memory += 1
                    assert row is None
                    continue
                split = tuple(int(n) for n in row["stage_layers"].split(",")) if row["stage_layers"] else None
                trial = Parallelism(tp, pp, dp, 8, b, recompute, stage_layers=split)
                order = published_order("1f1b", pp, trial.microbatches, 1)
                assert all(m.total <= cap for m, cap in zip(memories(c, trial, order), caps))
                times = rank_stage_times(c, trial, machines)
                slowest = max(np.add(np.add(times.forward, times.backward_input), times.backward_weight))
                assert slowest == pytest.approx(want[0], rel=1e-12), (tp, pp, dp, b, recompute)
    assert result.rejected.get("out-of-memory", 0) == out_of_memory > 0
    assert result.rejected.get("stage-mixes-gpu-types", 0) == mixed > 0
    assert len(kept) == result.costed > 0
