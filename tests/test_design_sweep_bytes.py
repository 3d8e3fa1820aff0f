"""A design sweep's byte columns are per iteration, as its cycles and energy: M micro-batches move M × one
micro-batch's activations, δ results and partial sums, but the weights a borrowing processor receives once.

Hand figures: layerpipe_sample (conv1 3→32 channels 5×5 on 224², output 112²; conv2 32→64 5×5, output 56²),
32×32 array, batch 32, 3 processors, paper mode (docs/papers/layerpipe.md, Tables II and III)."""

from __future__ import annotations

import pandas as pd
import pytest

from archsim import api
from archsim.cli import main
from archsim.lowering import lower_layer, piece_weight_bytes, whole_delta_bytes, whole_delta_weight_bytes
from archsim.sweep import cache
from archsim.sweep.spec import load_spec
from archsim.sweep.units import compute_unit
from archsim.workload.layer import Layer

SPEC = ('[sweep]\nnetworks = ["layerpipe_sample"]\narrays = ["32x32"]\ndataflows = ["ws"]\nbatches = [32]\n'
        'processors = [3]\nmethods = ["layerpipe"]\nmode = "paper"\nmicrobatches = [1, 4]\n')
# conv1's output and conv2's output per sample (bytes at 1 byte per element): what crosses the plan's two boundaries
CONV1_OUT, CONV2_OUT = 32 * 112 * 112, 64 * 56 * 56
CONV1_W, CONV2_W = 5 * 5 * 3 * 32, 5 * 5 * 32 * 64
CONV1_IN, CONV2_IN = 3 * 224 * 224, 32 * 112 * 112  # δ of each layer's input, per sample


def _rows(tmp_path, extra: str = "") -> pd.DataFrame:
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC + extra)
    assert main(["sweep", str(spec), "--out", str(tmp_path / "r"), "--quiet"]) == 0
    return pd.read_csv(tmp_path / "r" / "results.csv").set_index("microbatches")


def test_mandatory_and_weight_bytes_per_iteration_at_any_micro_batches(tmp_path) -> None:
    rows = _rows(tmp_path)
    # both plans cut after conv1 and conv2: activation forward and δ back, 32 samples an iteration either way
    mandatory = 2 * 32 * (CONV1_OUT + CONV2_OUT)
    assert mandatory == 38_535_168  # Table II's FP + BP bytes at the two boundaries (archsim's true sizes)
    assert rows.mandatory_comm_bytes.tolist() == [mandatory, mandatory]  # m = 4: one micro-batch's 9,633,792 before
    # a rows split moves a layer's whole weights, once per iteration; no δ result returns (no producer beside it)
    assert rows.additional_comm_bytes.tolist() == [CONV1_W + CONV2_W] * 2
    # cycles were per iteration already: M × the slowest stage of one micro-batch of 8
    plan = api.pipeline(api.profile("layerpipe_sample", array="32x32", batch=8, mode="paper"), processors=3)
    assert rows.iteration_cycles[4] == 4 * plan.max_stage_cost


def test_partial_sums_per_micro_batch_weights_once(tmp_path) -> None:
    rows = _rows(tmp_path, 'split_axes = ["channels", "reduction"]\n')
    plan = api.pipeline(api.profile("layerpipe_sample", array="32x32", batch=8, mode="paper"), processors=3,
                        split_axes="channels,reduction")
    moved = [(op.layer, op.kind, op.split_axis, op.split_part) for s in plan.stages for op in s.ops if op.borrowed]
    assert moved == [("conv1", "D2", "reduction", 10), ("conv2", "D2", "reduction", 34)]
    # a reduction piece of u output channels receives R·S·C·u weight bytes and sends partial sums of all of δ
    weights = 5 * 5 * 3 * 10 + 5 * 5 * 32 * 34
    assert plan.additional_bytes == weights + 8 * (CONV1_IN + CONV2_IN)  # one micro-batch of 8
    iteration = weights + 4 * 8 * (CONV1_IN + CONV2_IN)
    assert rows.additional_comm_bytes[4] == iteration  # 4,443,438 (one micro-batch's) before
    assert rows.additional_comm_bytes[1] == iteration  # batch 32 takes the same split parts
    assert rows.mandatory_comm_bytes.tolist() == [2 * 32 * (CONV1_OUT + CONV2_OUT)] * 2


@pytest.mark.parametrize("m", [1, 2, 4, 8, 16, 32])
def test_iteration_mandatory_bytes_are_m_micro_batches(tmp_path, m) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC.replace("[1, 4]", f"[{m}]").replace("[3]", "[2, 4]")
                    .replace('["layerpipe"]', '["layerpipe", "gpipe"]'))
    rows = compute_unit(load_spec(spec).units()[0])
    profile = api.profile("layerpipe_sample", array="32x32", batch=32 // m, mode="paper")
    for row in rows:
        plan = api.pipeline(profile, processors=int(row["processors"]), method=str(row["method"]))
        assert row["mandatory_comm_bytes"] == m * plan.mandatory_bytes
        assert row["additional_comm_bytes"] >= plan.additional_bytes  # weights once, the rest m times


def test_weight_slices_by_hand() -> None:
    conv2 = Layer("conv2", "conv", 112, 112, 5, 5, 32, 64, stride=2, padding=2)
    lowered = lower_layer(conv2, 8, "paper")
    assert piece_weight_bytes(lowered, "rows", 7, 2) == 2 * CONV2_W  # every row needs all the weights
    assert piece_weight_bytes(lowered, "channels", 3, 1) == 5 * 5 * 64 * 3  # δ's output channels: R·S·K each
    assert piece_weight_bytes(lowered, "reduction", 3, 1) == 5 * 5 * 32 * 3  # the layer's output channels: R·S·C
    assert whole_delta_weight_bytes(lowered, 1, "paper") == CONV2_W
    norm = Layer("bn", "batchnorm", 14, 14, 1, 1, 16, 16, inputs=("conv",))
    exact = lower_layer(norm, 8, "exact", 2)
    # received: x̂ (8·16·14² elements), γ and 1/σ (16 each), 2 bytes apiece; of them γ alone is a weight
    assert whole_delta_bytes(exact, 2, "exact")[1] == 2 * (8 * 16 * 14 * 14 + 2 * 16)
    assert whole_delta_weight_bytes(exact, 2, "exact") == 2 * 16
    assert whole_delta_weight_bytes(lower_layer(norm, 8, "paper", 2), 2, "paper") == 0  # paper moves no such δ


def test_old_micro_batch_cache_entries_not_reused(tmp_path, monkeypatch) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC)
    out = tmp_path / "r"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    entries = sorted((out / "cache").glob("*.json"))
    monkeypatch.setattr(cache, "ITERATION_BYTES", {})  # the names entries had before the bytes were per iteration
    from archsim.sweep.networks import network_digests

    loaded = load_spec(spec)
    before = {u.design.microbatches: cache.cache_file(out, u, network_digests(loaded)) for u in loaded.units()}
    assert before[1] in entries and before[4] not in entries  # m = 1's rows mean what they meant: name kept
