"""Memory per processor: stash peaks read off simulated schedules against the papers' counts, the
training DFG's stash depths, and a brute-force sweep over time."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archsim.array.config import ArrayConfig
from archsim.cli import main
from archsim.dfg import pipeline as dfg_pipeline
from archsim.errors import InputError
from archsim.footprint import check_capacity, partition_footprint, stash_profile
from archsim.partition import build_profile
from archsim.planners import partition
from archsim.policies import zero_bubble as zb
from archsim.policies.pipeline import simulate_partition
from archsim.policies.stage_profile import StageProfile
from archsim.workload import load_network

M_B = 7  # bytes of one micro-batch's activations on a stage


@pytest.mark.parametrize("p", [2, 3, 4, 6])
# The published orders name torch's actions: B a full backward (1F1B), I the input gradient, W the weights.
@pytest.mark.parametrize("schedule, release, first_stage", [("1f1b", "B", lambda p: p), ("zb-h1", "I", lambda p: p),
                                                            ("zb-h2", "I", lambda p: 2 * p - 1)])
def test_zero_bubble_paper_activation_peaks(p: int, schedule: str, release: str, first_stage) -> None:
    """Qi et al. (ICLR 2024) Table: 1F1B and ZB-H1 hold p·M_B at the first stage, ZB-H2 (2p − 1)·M_B."""
    _, timeline = zb.zb_schedule(StageProfile.uniform(p, 1.0, 1.0, 1.0, activation=M_B), 3 * p, schedule)
    peaks = stash_profile(timeline, lambda tag: M_B, (release,))
    assert peaks["r0"].peak_activation_bytes == first_stage(p) * M_B
    assert peaks["r0"].peak_in_flight == first_stage(p)
    assert peaks[f"r{p - 1}"].peak_in_flight == 1  # the last stage runs each micro-batch's backward at once


@settings(max_examples=25, deadline=None)
@given(p=st.integers(2, 4), m=st.integers(1, 8), schedule=st.sampled_from(["list-zb-h1", "list-zb-h2"]),
       costs=st.lists(st.integers(1, 9), min_size=12, max_size=12), sizes=st.lists(st.integers(0, 50), min_size=4,
                                                                                   max_size=4))
def test_stash_peak_equals_brute_force_over_time(p, m, schedule, costs, sizes) -> None:
    """The event sweep equals sampling every instant an op starts: Σ sizes of the stashes live then."""
    profile = StageProfile(tuple(costs[:p]), tuple(costs[4:4 + p]), tuple(costs[8:8 + p]))
    problem, timeline = zb.zb_schedule(profile, m, schedule)
    size_of = lambda tag: sizes[int(tag["stage"]) - 1] * (1 + int(tag["microbatch"]))
    peaks = stash_profile(timeline, size_of, ("D",))  # the list variants tag the input gradient D (archsim's name)
    tags = {op.id: dict(op.tags) for op in problem.ops}
    intervals: dict[str, list[tuple[float, float, int]]] = {}
    for slot in timeline.slots:
        tag = tags[slot.op]
        if tag["kind"] == "F":
            end = next(s.end for s in timeline.slots if s.op == f"I{tag['stage']}:{tag['microbatch']}")
            intervals.setdefault(slot.processor, []).append((slot.start, end, size_of(tag)))
    for processor, items in intervals.items():
        brute = max(sum(size for start, end, size in items if start <= t < end) for t, _, _ in items)
        assert peaks[processor].peak_activation_bytes == brute


def test_gpipe_stashes_every_microbatch_and_pipedream_versions_match_the_dfg() -> None:
    network = load_network("ffnn8")
    profile = build_profile(network, ArrayConfig(32, 32), 8, "paper")
    microbatches, stages = 6, 4
    gpipe = partition(profile, stages, "gpipe")
    run = simulate_partition(gpipe, profile, microbatches)
    index = {name: k for k, name in enumerate(profile.names)}
    for memory, stage in zip(partition_footprint(gpipe, profile, run.timeline, run.schedule), gpipe.stages):
        # GPipe: M · M_B, M_B = the stage's layers' input activations
        assert memory.peak_activation_bytes == microbatches * sum(int(profile.stash_bytes[index[n]])
                                                                  for n in stage.layers)
        assert memory.weight_versions == 1
    plan = partition(profile, stages, "pipedream")
    run = simulate_partition(plan, profile, microbatches)
    memory = partition_footprint(plan, profile, run.timeline, run.schedule, optimizer="adam")
    stage_of = {name: s for s, stage in enumerate(plan.stages, start=1) for name in stage.layers}
    derived = dfg_pipeline(list(profile.names), stage_of)
    depth = {stage_of[item.layer]: item.weight_versions for item in derived.layers}
    for s, item in enumerate(memory, start=1):
        assert item.weight_versions == depth[s] == stages - s + 1
        assert item.optimizer_bytes == 2 * item.weight_bytes and item.gradient_bytes == item.weight_bytes
        assert item.peak_bytes == (item.weight_bytes * item.weight_versions + 3 * item.weight_bytes
                                   + item.peak_activation_bytes)


def test_capacity_is_a_clean_error(capsys) -> None:
    network = load_network("ffnn8")
    profile = build_profile(network, ArrayConfig(32, 32), 8, "paper")
    plan = partition(profile, 2, "pipedream")
    run = simulate_partition(plan, profile, 4)
    memory = partition_footprint(plan, profile, run.timeline, run.schedule)
    check_capacity(memory, max(m.peak_bytes for m in memory))
    with pytest.raises(InputError, match="p1"):
        check_capacity(memory, memory[0].peak_bytes - 1)
    assert main(["pipeline", "ffnn8", "--processors", "2", "--memory"]) == 2
    assert "--microbatches" in capsys.readouterr().err


def test_a_plan_over_capacity_prints_its_table_and_warns_as_train_does(capsys) -> None:
    """``pipeline --capacity-gb`` is a what-if like ``train``: the table, ``fits_memory``, one stderr line, exit 0."""
    argv = ["pipeline", "ffnn8", "--processors", "2", "--method", "pipedream", "--microbatches", "4", "--format", "json"]
    assert main([*argv, "--capacity-gb", "1e-6"]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    peaks = [row["peak_memory_bytes"] for row in doc["rows"]]
    assert not doc["meta"]["fits_memory"] and doc["meta"]["memory_capacity_bytes"] == 1000
    worst = max(peaks)  # one capacity for all: the worst ratio is the largest peak
    assert err == (f"archsim pipeline: warning: does not fit: processor p{peaks.index(worst) + 1} needs "
                   f"{worst / 2**30:.3g} GiB, its memory (--capacity-gb) has {1000 / 2**30:.3g} GiB "
                   "(2 of 2 processors do not fit)\n")
    assert main([*argv, "--capacity-gb", "1"]) == 0  # 1 GB holds both (MB each): no warning
    out, err = capsys.readouterr()
    assert json.loads(out)["meta"]["fits_memory"] and err == ""
    assert main([*argv, "--capacity-gb", str((min(peaks) + max(peaks)) / 2e9)]) == 0  # only the larger one is over
    assert "does not fit" in capsys.readouterr().err and peaks[0] != peaks[1]


def optimizer_choices() -> tuple[str, ...]:
    from archsim import cli

    sub = next(a for a in cli.build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    return tuple(next(a for a in sub.choices["pipeline"]._actions if a.dest == "optimizer").choices)


def test_the_optimizer_flag_offers_the_one_list(monkeypatch):
    """pipeline --optimizer's choices are the keys of the one table footprint prices, an optimizer added there is
    offered; the states are the documented ones (sgd none, momentum 1×, adam 2× the weights)."""
    from archsim.choices import partitions

    assert partitions.OPTIMIZER_STATES == {"sgd": 0, "momentum": 1, "adam": 2}
    assert optimizer_choices() == ("sgd", "momentum", "adam")
    monkeypatch.setitem(partitions.OPTIMIZER_STATES, "lion", 1)
    assert optimizer_choices() == ("sgd", "momentum", "adam", "lion")
