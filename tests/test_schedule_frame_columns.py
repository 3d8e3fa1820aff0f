"""The timelines of ``archsim.schedule``'s families share columns: a layer-wise pipeline's frame (d1 …, a ``layer``
tag) and a stage schedule's (r0 … or s1 …, ``stage`` and ``rank`` tags) both carry ``device`` (0-based) and
``layers``, so one frame of several policies needs no code per family; their own columns stay."""

import pandas as pd
import pytest

import archsim

COMMON = ["op", "kind", "microbatch", "device", "layers", "start", "end"]


def _frame(policy: str, **keywords) -> pd.DataFrame:
    return archsim.schedule("ffnn8", policy=policy, processors=2, **keywords).timeline.to_frame()


def test_a_layer_wise_and_a_stage_frame_concatenate_on_the_common_columns():
    """ffnn8's 8 alike fc layers on 2 devices: gpipe deals ⌈8/2⌉ = 4 consecutive layers a device, and PipeDream's
    DP (1f1b) splits the chain 4 | 4 too, so device 0 holds fc1–fc4 in both; a stage's forward is its layers'
    forwards back to back, so 1f1b's 0F0 lasts as long as gpipe's F1:0 … F4:0 together."""
    gpipe, stages = _frame("gpipe", microbatches=2), _frame("1f1b", microbatches=2)
    assert {"layer", "processor"} <= set(gpipe.columns) and {"stage", "rank", "processor"} <= set(stages.columns)
    ops = pd.concat([gpipe[COMMON].assign(policy="gpipe"), stages[COMMON].assign(policy="1f1b")], ignore_index=True)
    forwards = ops[(ops.kind == "F") & (ops.microbatch == 0)]
    by_device = forwards.groupby(["policy", "device"]).layers.apply(lambda names: ",".join(names))
    assert by_device[("gpipe", 0)] == by_device[("1f1b", 0)] == "fc1,fc2,fc3,fc4"
    assert by_device[("gpipe", 1)] == by_device[("1f1b", 1)] == "fc5,fc6,fc7,fc8"
    span = forwards.end - forwards.start
    assert span[(forwards.policy == "1f1b") & (forwards.device == 0)].sum() == pytest.approx(
        span[(forwards.policy == "gpipe") & (forwards.device == 0)].sum())


def test_every_family_numbers_its_devices_from_zero():
    """d1, d2 (layer-wise), r0, r1 (published stage schedules) and s1, s2 (their list versions) are devices 0 and 1;
    data parallel's network (its all-reduce ops, kind S) is no device; a flush barrier is no layer's work."""
    expected = {"gpipe": {"d1": 0, "d2": 1}, "1f1b": {"r0": 0, "r1": 1}, "list-1f1b": {"s1": 0, "s2": 1}}
    for policy, devices in expected.items():
        frame = _frame(policy, microbatches=2, unit_costs=True)
        assert dict(zip(frame.processor, frame.device)) == devices
    assert frame.microbatch.notna().all()
    flush = _frame("gpipe", microbatches=2, unit_costs=True).set_index("op").loc["flush"]
    assert flush.layers is None or pd.isna(flush.layers)
    dp = _frame("dp-wfbp", unit_costs=True)
    assert set(dp[dp.processor == "gpu"].device) == {0} and dp[dp.processor == "net"].device.isna().all()
    assert set(dp[dp.kind == "S"].layers) == {f"fc{k}" for k in range(1, 9)}  # each all-reduce names its layer


def test_unit_cost_stages_name_no_layers():
    """--unit-costs prices a stage, whatever its layers (no split is made): its ops' layers are unknown, not guessed."""
    frame = _frame("1f1b", microbatches=2, unit_costs=True)
    assert frame.layers.isna().all() and set(frame.device) == {0, 1}


def test_a_plain_simulation_keeps_its_columns():
    """Only a schedule's timeline adds them: archsim.simulate's frame is its slots and tags as before."""
    profile = archsim.profile("ffnn8")
    plan = archsim.pipeline(profile, processors=2, method="gpipe")
    frame = archsim.simulate(plan, profile, microbatches=2).to_frame()
    assert "device" not in frame.columns and "layers" not in frame.columns
