"""Uneven splits per model chunk (interleaved 1F1B with V chunks, ZB-V, DualPipeV): the planner's split
against brute force over every composition of the layers into PP·V chunks on tiny models (each rank's
F + I + W summed over its chunks, and memory from the published order, as archsim train computes
them), the pipeline order of the chunks, the built schedule checked by the independent validator,
and the even split given explicitly reproducing the default."""

from __future__ import annotations

import itertools
import re
from dataclasses import replace

import numpy as np
import pytest

from archsim.devices.gpu_lookup import gpu
from archsim.errors import InputError
from archsim.policies.stage_orders import published_order
from archsim.sim import validate_timeline
from archsim.training.cluster_file import single_node
from archsim.training.parallel import Parallelism
from archsim.training.pipeline_memory import memories
from archsim.training.run import train
from archsim.training.search_cost import pipeline_seconds
from archsim.training.stage_split import planned_split, stage_layer_counts
from archsim.training.stages import rank_stage_times
from archsim.workload.layer_parameters import layer_parameters
from archsim.workload.transformer import TransformerConfig


def tiny(layers: int, vocab: int = 5000) -> TransformerConfig:
    """Few layers but wide enough that the GPU, not the host, sets each op's time: with vocab 64,000 the
    LM head weighs several layers, with 5,000 a fraction of one."""
    return TransformerConfig("tiny", "gpt", layers=layers, hidden=1024, heads=16, vocab=vocab, seq=1024, ffn=4096,
                             kv_heads=16, tied_embeddings=True, positions=1024)


def compositions(layers: int, parts: int):
    """Every way to write ``layers`` as ``parts`` ordered counts ≥ 1."""
    for cuts in itertools.combinations(range(1, layers), parts - 1):
        bounds = (0, *cuts, layers)
        yield tuple(b - a for a, b in itertools.pairwise(bounds))


def owner(schedule: str, p: int, stages: int) -> list[int]:
    """Rank of each virtual stage, written from the schedules' papers: interleaved, stage s on rank s mod p
    (Narayanan et al. 2021 §2.2); V-shaped, the first p stages down the ranks and the last p back up
    (Qi et al. 2024 §6)."""
    if schedule in ("zb-v", "dualpipev"):
        return [s if s < p else 2 * p - 1 - s for s in range(stages)]
    return [s % p for s in range(stages)]


def plan_counts(c, par, machines, capacities):
    """The planner's layers per chunk (None: nothing fits); its plan places chunk s on rank ``owner``[s]
    and holds every node of the chain once, in order."""
    plan = planned_split(c, par, machines, capacities)
    if plan is None:
        return None
    assert [d for (d,) in plan.devices] == owner(par.schedule, par.pp, len(plan.stages))
    names = [name for stage in plan.stages for name in stage.layers]
    assert names == ["embedding", *(f"layer{k}" for k in range(1, c.layers + 1)), "head"]
    return stage_layer_counts(plan)


def busiest(c, par, split, machines) -> float:
    """The busiest rank's F + I + W per micro-batch over its chunks."""
    times = rank_stage_times(c, replace(par, stage_layers=split), machines)
    work = np.add(np.add(times.forward, times.backward_input), times.backward_weight)
    ranks = owner(par.schedule, par.pp, len(work))
    return max(sum(w for s, w in enumerate(work) if ranks[s] == r) for r in range(par.pp))


def span(c, par, split, machines) -> float:
    """The search's closed-form pipeline span of a split."""
    times = rank_stage_times(c, replace(par, stage_layers=split), machines)
    return pipeline_seconds(par.schedule_name, times, par.pp, par.microbatches, par.chunks)


def brute(c, par, machines, capacities):
    """(least busiest rank, least closed-form span) over every composition that fits each rank's memory
    (from the published order, archsim train's path), each minimised on its own; None when none fits."""
    order = published_order(par.schedule_name, par.pp, par.microbatches, par.chunks)
    fits = [split for split in compositions(c.layers, par.pp * par.chunks)
            if all(m.total <= cap for m, cap in zip(memories(c, replace(par, stage_layers=split), order), capacities))]
    if not fits:
        return None
    return (min(busiest(c, par, split, machines) for split in fits), min(span(c, par, split, machines) for split in fits))


CASES = [("interleaved-1f1b", 2, 2, 7), ("interleaved-1f1b", 2, 2, 9), ("interleaved-1f1b", 3, 2, 9),
         ("interleaved-zb", 2, 3, 8), ("zb-v", 2, 1, 7), ("zb-v", 3, 1, 9), ("dualpipev", 2, 1, 8)]


@pytest.mark.parametrize(("schedule", "p", "v", "layers"), CASES)
def test_planned_chunk_split_is_the_best_composition(schedule, p, v, layers):
    """The busiest rank is the least any composition gives, and so is the search's closed-form span
    (m × the busiest rank, plus for interleaved one chunk's step per hop: the chunks of a rank are
    water-filled)."""
    machine = single_node().machine(Parallelism(pp=p))
    uneven = 0
    for b, recompute, vocab in itertools.product((1, 4), ("none", "full"), (5000, 64000)):
        c = tiny(layers, vocab)
        par = Parallelism(1, p, 1, 4 * p * b, b, recompute, False, v, schedule)
        split = plan_counts(c, par, [machine] * p, [np.inf] * p)
        assert split is not None and len(split) == p * par.chunks and sum(split) == layers and min(split) >= 1
        want = brute(c, par, [machine] * p, [np.inf] * p)
        assert busiest(c, par, split, [machine] * p) == pytest.approx(want[0], rel=1e-12), (b, recompute, split)
        assert span(c, par, split, [machine] * p) == pytest.approx(want[1], rel=1e-12), (b, recompute, split)
        uneven += len(set(split)) > 1
    assert uneven  # the cases exercise uneven splits


@pytest.mark.parametrize(("schedule", "v", "layers"), [("interleaved-1f1b", 2, 9), ("zb-v", 1, 8)])
def test_planned_chunk_split_under_a_memory_limit_is_the_best_that_fits(schedule, v, layers):
    c = tiny(layers, 64000)
    par = Parallelism(1, 2, 1, 8, 2, "none", False, v, schedule)
    machine = single_node().machine(par)
    order = published_order(par.schedule_name, 2, par.microbatches, par.chunks)
    peaks = sorted({max(m.total for m in memories(c, replace(par, stage_layers=split), order))
                    for split in compositions(layers, 2 * par.chunks)})  # each one split's largest rank
    tested = refused = 0
    for capacity in [peaks[0] * (1 - 1e-9), *peaks]:
        want = brute(c, par, [machine] * 2, [capacity] * 2)
        split = plan_counts(c, par, [machine] * 2, [capacity] * 2)
        assert (split is None) == (want is None), capacity
        if want is None:
            refused += 1
            continue
        tested += 1
        assert all(m.total <= capacity for m in memories(c, replace(par, stage_layers=split), order))
        assert busiest(c, par, split, [machine] * 2) == pytest.approx(want[0], rel=1e-12), (capacity, split)
    assert tested >= 3 and refused >= 1


@pytest.mark.parametrize(("schedule", "v"), [("zb-h1", 1), ("zb-h2", 1), ("interleaved-zb", 2), ("zb-v", 1),
                                         ("dualpipev", 1)])
def test_planned_split_sizes_ranks_by_trains_memory_under_full_recompute(schedule, v):
    """Split backwards under full recompute hold M_W = 16 × M_B from I to W (t = 1): each rank's memory is its walk
    with its own share and the working set where it meets the held. At every capacity equal to some split's
    largest rank as archsim train reports it (the published order's walk), the planner finds a split that fits
    when one does, and the best one. Failed before 2026-12-02: the planner sized every rank with a layer's
    M_W / M_B and the working set beside the walk's peak (a layer's M_W − M_B = 30·s·b·h, 30 MiB, over train's
    figure on every rank of this model), and refused the tightest capacity, where the brute force fits a split."""
    c = tiny(8, 64000)
    par = Parallelism(1, 2, 1, 8, 1, "full", False, v, schedule)
    machine = single_node().machine(par)
    order = published_order(par.schedule_name, 2, par.microbatches, par.chunks)
    peaks = sorted({max(m.total for m in memories(c, replace(par, stage_layers=split), order))
                    for split in compositions(c.layers, 2 * par.chunks)})
    for capacity in [peaks[0] * (1 - 1e-9), *peaks]:
        want = brute(c, par, [machine] * 2, [capacity] * 2)
        split = plan_counts(c, par, [machine] * 2, [capacity] * 2)
        assert (split is None) == (want is None), capacity
        if want is None:
            continue
        assert all(m.total <= capacity for m in memories(c, replace(par, stage_layers=split), order))
        assert busiest(c, par, split, [machine] * 2) == pytest.approx(want[0], rel=1e-12), (capacity, split)


def test_planned_chunk_split_on_mixed_gpus_is_the_best_composition():
    """Ranks on an A100 and a V100: interleaved, the slower GPU's chunks get fewer layers in all."""
    a100 = single_node().machine(Parallelism(pp=2))
    v100 = replace(a100, gpu=gpu("v100-32gb"))
    c = tiny(10, 5000)
    for schedule, v in (("interleaved-1f1b", 2), ("zb-v", 1)):
        par = Parallelism(1, 2, 1, 8, 1, "full", False, v, schedule)
        split = plan_counts(c, par, [a100, v100], [np.inf] * 2)
        want = brute(c, par, [a100, v100], [np.inf] * 2)
        assert busiest(c, par, split, [a100, v100]) == pytest.approx(want[0], rel=1e-12), (schedule, split)
        if schedule == "interleaved-1f1b":  # (ZB-V's A100 rank also holds the embedding and the head)
            assert split[0] + split[2] > split[1] + split[3], split


@pytest.mark.parametrize(("schedule", "v", "split"), [("interleaved-1f1b", 2, (1, 3, 2, 1, 1, 2)),
                                                       ("interleaved-zb", 2, (2, 1, 1, 3, 1, 2)),
                                                       ("zb-v", 1, (3, 1, 2, 1, 2, 1)),
                                                       ("dualpipev", 1, (1, 2, 1, 3, 2, 1))])
def test_uneven_chunks_run_where_the_papers_place_them_and_pass_the_validator(schedule, v, split):
    """The schedule built from an uneven chunk split passes the independent validator, each rank is busy
    for m × its chunks' F + I + W (chunks placed as the papers do), and each rank holds its chunks'
    layers' parameters."""
    c = tiny(10, 5000)
    p = 3
    par = Parallelism(1, p, 1, 6, 1, "full", False, v, schedule, split)
    machine = single_node().machine(par)
    result = train(c, par, machine)
    assert validate_timeline(result.run.problem, result.timeline) == []
    times = rank_stage_times(c, par, [machine] * p)
    work = np.add(np.add(times.forward, times.backward_input), times.backward_weight)
    ranks = owner(schedule, p, len(split))
    frame = result.timeline.to_frame()
    assert [ranks[s] for s in frame.stage] == list(frame["rank"])
    for r in range(p):
        busy = float((frame.end - frame.start)[frame["rank"] == r].sum())
        assert busy == pytest.approx(par.microbatches * sum(w for s, w in enumerate(work) if ranks[s] == r),
                                     rel=1e-9)
        layers = sum(n for s, n in enumerate(split) if ranks[s] == r)
        extra = result.memory[r].parameters - layers * layer_parameters(c)
        assert 0 <= extra <= 2 * (c.vocab + c.positions + 2) * c.hidden, (r, extra)  # embedding / head only


@pytest.mark.parametrize(("schedule", "v"), [("1f1b", 2), ("interleaved-zb", 2), ("zb-v", 1), ("dualpipev", 1)])
def test_even_counts_given_explicitly_are_the_default(schedule, v):
    c = tiny(12, 5000)
    par = Parallelism(1, 3, 1, 6, 1, "full", False, v, schedule)
    machine = single_node().machine(par)
    default = train(c, par, machine)
    explicit = train(c, replace(par, stage_layers=(12 // (3 * par.chunks),) * 3 * par.chunks), machine)
    assert explicit.iteration_seconds == default.iteration_seconds
    assert explicit.memory == default.memory and explicit.breakdown == default.breakdown


def test_stage_layers_count_per_model_chunk():
    with pytest.raises(InputError, match=r"PP × chunks = 2 × 2 = 4 counts, got 2"):
        Parallelism(pp=2, global_batch=2, interleave=2, stage_layers=(3, 3))
    with pytest.raises(InputError, match=r"PP × chunks = 2 × 2 = 4 counts, got 2"):
        Parallelism(pp=2, schedule="zb-v", stage_layers=(3, 3))
    with pytest.raises(InputError, match=r"PP = 2 counts, got 4"):
        Parallelism(pp=2, stage_layers=(1, 1, 1, 1))
    # more chunks than layers: nothing to plan
    assert plan_counts(tiny(3), Parallelism(pp=2, schedule="zb-v"), [single_node().machine(Parallelism())] * 2,
                         [np.inf] * 2) is None


@pytest.mark.parametrize(("batch", "refine"), [(4, 0), (16, 10**6)])
def test_search_plans_chunk_splits_and_says_their_gain(batch, refine):
    """Interleaved and ZB-V candidates get the planner's per-chunk split (the best composition, by brute
    force); a row timed in the event simulator (short of a steady state, or re-timed by ``refine``) is
    archsim train's time of its split, and its ``uneven_gain`` is 1 − that / train's time of the even
    split. A row that keeps the even split (its own timing calls the planner's slower) gains 0 and is
    no slower than the planner's split in train."""
    from archsim.training.search import search

    c = tiny(8, 64000)
    cluster = single_node("a100-80gb", 4)
    result = search(c, cluster, batch, 4, micro_batches=(1, 2), recomputes=("full",),
                    schedules=("interleaved-1f1b", "zb-v"), chunks=(2,), sequence_parallel=(False,), top=10**6,
                    refine=refine, balance="planned")
    chunked = [r for r in result.rows if r["pp"] > 1]
    assert {r["schedule"] for r in chunked} == {"interleaved-1f1b", "zb-v"}
    timed = uneven = kept = 0
    for row in chunked:
        split = tuple(int(n) for n in row["stage_layers"].split(","))
        par = Parallelism(row["tp"], row["pp"], row["dp"], batch, row["micro_batch"], "full", False, row["interleave"],
                          row["schedule"])
        machine = cluster.machine(par)
        assert len(split) == row["pp"] * par.chunks
        uneven += len(set(split)) > 1
        if row["schedule"] == "interleaved-1f1b" and len(set(split)) > 1:  # an uneven interleaved split: Megatron-LM
            # states it only as --pipeline-model-parallel-layout, stages in chunk order, 't*n' n layers each
            layout = row["megatron_args"].partition("--pipeline-model-parallel-layout '")[2].partition("'")[0]
            assert tuple(int(n) for n in re.findall(r"t\*(\d+)", layout)) == split, row["megatron_args"]
        assert np.isfinite(row["uneven_gain"])  # PP × chunks divides the 8 layers: the even split runs too
        best = brute(c, par, [machine] * par.pp, [np.inf] * par.pp)[0]
        if busiest(c, par, split, [machine] * par.pp) != pytest.approx(best, rel=1e-12):  # the even split kept
            assert len(set(split)) == 1 and row["uneven_gain"] == 0.0
            kept += 1
            if row["timing"] == "event":
                plan = stage_layer_counts(planned_split(c, par, [machine] * par.pp, [np.inf] * par.pp))
                assert train(c, replace(par, stage_layers=plan), machine).iteration_seconds >= row["iteration_seconds"]
            continue
        if row["timing"] == "event":
            timed += 1
            planned = train(c, replace(par, stage_layers=split), machine).iteration_seconds
            assert row["iteration_seconds"] == pytest.approx(planned, rel=1e-12)
            even = train(c, par, machine).iteration_seconds
            assert row["uneven_gain"] == pytest.approx(1 - planned / even, rel=1e-9, abs=1e-12)
    assert timed >= 2 and uneven >= 2 and kept >= 1


def test_command_line_takes_and_plans_chunk_splits(tmp_path, capsys):
    import json

    from archsim.cli import main

    model = tmp_path / "tiny.toml"
    model.write_text('[transformer]\nname = "tiny"\nfamily = "gpt"\nlayers = 9\nhidden = 1024\nheads = 16\n'
                     'vocab = 64000\nseq = 1024\n')
    cluster = tmp_path / "node.toml"
    cluster.write_text('[cluster]\nname = "node"\n\n[[servers]]\ngpus = 2\nintra_server_gbps = 4800\n'
                       'gpu = "a100-80gb"\n')
    base = ["train", str(model), "--cluster", str(cluster), "--pp", "2", "--global-batch", "8", "--format", "json"]
    assert main([*base, "--interleave", "2", "--stage-layers", "4,5"]) == 2
    err = capsys.readouterr().err
    assert "PP × chunks = 2 × 2 = 4 counts, got 2" in err and len(err.strip().splitlines()) == 1
    assert main([*base, "--schedule", "zb-v", "--stage-layers", "2,2,2,2"]) == 2  # 8 of the 9 layers
    assert "adding up to the model's 9 layers" in capsys.readouterr().err
    assert main([*base, "--schedule", "zb-v", "--stage-layers", "2,3,2,2"]) == 0
    assert json.loads(capsys.readouterr().out)["meta"]["stage_layers"] == "2,3,2,2"
    for extra in (["--interleave", "2"], ["--schedule", "zb-v"], ["--schedule", "dualpipev"]):
        assert main([*base, *extra, "--balance", "planned"]) == 0
        split = json.loads(capsys.readouterr().out)["meta"]["stage_layers"].split(",")
        assert len(split) == 4 and sum(map(int, split)) == 9
