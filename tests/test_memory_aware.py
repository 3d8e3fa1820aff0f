"""The cycle engine's memory-aware costs reach the partitioners and the pipeline/schedule commands."""

import json

import numpy as np
import pytest

from archsim import cli
from archsim.array.config import ArrayConfig
from archsim.array.costing import cost_network
from archsim.partition import build_profile
from archsim.partition.coster import DeltaCoster
from archsim.workload import load_network

ARRAY = ArrayConfig(16, 16, "ws", ifmap_sram_kb=4, filter_sram_kb=4, ofmap_sram_kb=4, bandwidth=(4,),
                    user_bandwidth=True)


def test_profile_carries_the_cycle_engine_costs():
    network = load_network("ffnn8")
    profile = build_profile(network, ARRAY, 4, "exact", engine="cycle")
    table = cost_network(network, ARRAY, 4, "exact", engine="cycle")
    assert np.array_equal(profile.forward, table.F_cycles)
    assert np.array_equal(profile.weight_grad, table.G_cycles)
    assert np.array_equal(profile.delta, table.D_cycles)
    analytic = build_profile(network, ARRAY, 4, "exact")
    assert (profile.total >= analytic.total).all() and profile.total.sum() > analytic.total.sum()  # stalls add


def test_delta_split_costs_under_the_cycle_engine_are_the_sub_gemms_own():
    profile = build_profile(load_network("ffnn8"), ARRAY, 4, "exact", engine="cycle")
    coster = DeltaCoster.of(profile)
    units = coster.split_units(3, "channels")
    d1, d2 = coster.split_cycles(3, "channels", units // 2)
    _, c1, c2 = coster.split_cost(3, "channels", units // 2)
    assert (d1, d2) == (c1, c2) and d1 > 0 and d2 > 0


def test_pipeline_command_plans_on_memory_aware_costs(capsys):
    base = ["pipeline", "ffnn8", "--mode", "paper", "--processors", "2", "--method", "pipedream", "--batch", "4", "--array", "16x16",
            "--format", "json"]
    assert cli.main(base) == 0
    analytic = json.loads(capsys.readouterr().out)
    assert cli.main(base + ["--engine", "cycle", "--bandwidth", "4", "--sram-kb", "4"]) == 0
    cycle = json.loads(capsys.readouterr().out)
    rows = lambda doc: doc["rows"] if isinstance(doc, dict) else doc
    assert sum(r["total_cycles"] for r in rows(cycle)) > sum(r["total_cycles"] for r in rows(analytic))
    profile = build_profile(load_network("ffnn8"), ARRAY, 4, "paper", engine="cycle")
    assert sum(r["total_cycles"] for r in rows(cycle)) == pytest.approx(float(profile.total.sum()))


def test_multistream_refuses_the_cycle_engine(capsys):
    code = cli.main(["schedule", "ffnn8", "--policy", "multistream", "--processors", "1", "--engine", "cycle"])
    assert code == 2 and "engine" in capsys.readouterr().err
