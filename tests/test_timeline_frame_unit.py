"""A timeline's ``to_frame()`` states its times' unit in ``frame.attrs["unit"]`` (its ``start``/``end`` columns keep
their names, which callers index). Failed before: the frame's attrs were empty, so a frame in seconds read as one in
cycles. The units are the inputs' own: a profile built in seconds, unit costs (F = D = G = 1), an array's cycles."""

from __future__ import annotations

import archsim
from archsim.partition.profile import profile_from_costs


def _seconds_profile():
    forward = [1.0, 2.0, 2.0, 1.0]
    return profile_from_costs(["l1", "l2", "l3", "l4"], forward, forward, [0.0, 1.0, 1.0, 1.0],
                              [1e6] * 4, [1e6] * 4, [1e6] * 4, unit="seconds")


def test_a_simulated_plan_in_seconds_says_seconds():
    profile = _seconds_profile()
    plan = archsim.pipeline(profile, processors=2, method="gpipe")
    frame = archsim.simulate(plan, profile, microbatches=2).to_frame()
    assert frame.attrs["unit"] == "seconds"
    assert {"start", "end"} <= set(frame.columns)  # the columns callers index, unchanged


def test_a_simulated_plan_in_cycles_says_cycles():
    profile = archsim.profile("layerpipe_sample", array="32x32", batch=32)
    plan = archsim.pipeline(profile, processors=2, method="pipedream")
    assert archsim.simulate(plan, profile, microbatches=2).to_frame().attrs["unit"] == "cycles"


def test_a_schedule_states_its_unit():
    frame = archsim.schedule("ffnn8", policy="ooo-pipe2", processors=2, unit_costs=True).timeline.to_frame()
    assert frame.attrs["unit"] == "units"
    frame = archsim.schedule(_seconds_profile(), policy="ooo-pipe2", processors=2).timeline.to_frame()
    assert frame.attrs["unit"] == "seconds"


def test_the_transfer_table_says_its_unit_as_the_slot_table_does():
    """``transfers_frame()`` carries ``attrs["unit"]`` as ``to_frame()`` does: seconds for a GPU training run (its
    8 pipeline hops, 4 micro-batches down and back), cycles for an array's plan. Failed before: the transfer table's
    attrs were empty, and a training run's timeline stated no unit at all (its docstring said seconds)."""
    from pathlib import Path

    cluster = Path(__file__).resolve().parents[1] / "configs" / "clusters" / "a100_node.toml"
    result, _ = archsim.train("gpt2", cluster=str(cluster), global_batch=16, tp=2, pp=2, dp=2, micro_batch=2)
    transfers = result.timeline.transfers_frame()
    assert len(transfers) == 8 and transfers.attrs["unit"] == "seconds"
    assert result.timeline.to_frame().attrs["unit"] == "seconds"
    profile = archsim.profile("layerpipe_sample", array="32x32", batch=32)
    plan = archsim.pipeline(profile, processors=2, method="pipedream")
    timeline = archsim.simulate(plan, profile, microbatches=2)
    assert timeline.transfers_frame().attrs["unit"] == timeline.to_frame().attrs["unit"] == "cycles"


def test_a_schedule_in_seconds_says_seconds_in_both_tables():
    frame = archsim.schedule(_seconds_profile(), policy="ooo-pipe2", processors=2).transfers_frame()
    assert frame.attrs["unit"] == "seconds" and list(frame.columns) == ["src", "dst", "link", "bytes", "start", "end"]
