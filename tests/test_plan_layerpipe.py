"""``archsim plan --method layerpipe``: LayerPipe's Algorithm 1 laid on a cluster's devices, scheduled by SPP's PE.

References: Algorithm 1's own plan on as many processors (``archsim pipeline``'s partition face, on the profile in
cycles) for the stages; a hand-worked PE timeline for the hop cost; the refusal line for a cluster of mixed devices.
"""

import itertools
from pathlib import Path

import numpy as np
import pytest

from archsim.errors import InputError
from archsim.partition import build_profile, profile_from_costs
from archsim.planners import partition, plan_on_cluster
from archsim.spp.profiles import profile_from_network
from archsim.spp.topology import Topology

CLUSTERS = Path(__file__).resolve().parents[1] / "configs" / "clusters"


def joined(devices: int, bandwidth: float, latency: float = 0.0) -> Topology:
    """``devices`` on one server, every pair at ``bandwidth`` bytes per second."""
    link = np.full((devices, devices), float(bandwidth))
    np.fill_diagonal(link, 0.0)
    return Topology("joined", (0,) * devices, link, latency=latency, unit="seconds")


def hand_profile():
    """l0 (F 1, G 1, no δ), l1 (F 2, G 2, δ 1), l2 (F 1, G 1, δ 1), seconds; l0's output 60 bytes, l1's 100."""
    return profile_from_costs(["l0", "l1", "l2"], [1.0, 2.0, 1.0], [1.0, 2.0, 1.0], [0.0, 1.0, 1.0],
                              activation_bytes=[60, 100, 0], delta_bytes=[0, 60, 100], weight_bytes=[10, 10, 10],
                              unit="seconds")


def ops_of(plan):
    return [(stage.layers, sorted((op.layer, op.kind, op.borrowed) for op in stage.ops)) for stage in plan.stages]


def test_a_borrowed_deltas_result_crosses_back_beside_the_boundarys_gradient():
    """On 2 devices Algorithm 1 (T_p relaxed from 5 until l0 fits, at 6) puts l2 and l1's borrowed δ on the second
    device, l0 and l1 on the first. Per micro-batch: stage 1 F = 1 + 2 = 3, B = G0 + G1 = 3; stage 2 F + B =
    1 + (1 + 1 + 1) = 4. At 50 B/s the forward hop is l1's 100-byte output, 2 s; the backward one the gradient l2's δ
    sends (100 bytes) and the one l1's borrowed δ made there (60 bytes): 160 / 50 = 3.2 s.
    One micro-batch: 3 + 2 + 4 + 3.2 + 3 = 15.2 s. Two, in PE's order (F F on stage 1; the channel cf0, cf1, cb0,
    cb1): F0 0–3, F1 3–6, cf0 3–5, cf1 6–8, FB0 5–9, FB1 9–13, cb0 9–12.2, cb1 13–16.2, B0 12.2–15.2,
    B1 16.2–19.2 s."""
    profile = hand_profile()
    plan = plan_on_cluster(profile, joined(2, 50.0), "layerpipe", 1)
    assert ops_of(plan) == [
        (("l0", "l1"), [("l0", "F", False), ("l0", "G", False), ("l1", "F", False), ("l1", "G", False)]),
        (("l2",), [("l1", "D", True), ("l2", "D", False), ("l2", "F", False), ("l2", "G", False)])]
    assert plan.devices == ((0,), (1,))
    assert plan.makespan == pytest.approx(15.2)
    assert plan.boundary_costs == pytest.approx((2.0 + 3.2,))
    assert plan_on_cluster(profile, joined(2, 50.0), "layerpipe", 2).makespan == pytest.approx(19.2)
    # free links: the stages alone, 3 + 4 + 3
    assert plan_on_cluster(profile, joined(2, float("inf")), "layerpipe", 1).makespan == pytest.approx(10.0)
    # each send whose bytes are not 0 pays the pair's latency: two sends, 0.5 s each
    assert plan_on_cluster(profile, joined(2, 50.0, latency=0.5), "layerpipe", 1).makespan == pytest.approx(16.2)


@pytest.fixture(scope="module")
def sample():
    from archsim.api import load_network
    from archsim.array.config import ArrayConfig

    return load_network("layerpipe_sample"), ArrayConfig(32, 32, "ws")


@pytest.mark.parametrize("microbatches", [1, 3, 8])
def test_slower_links_never_shorten_the_iteration(sample, microbatches):
    """The hand profile on 2 devices, and the sample network priced on the array on 5 (its split δs and borrowed
    results crossing four links), at falling link speeds (bytes per second)."""
    network, array = sample
    for profile, devices, speeds in (
            (hand_profile(), 2, [float("inf"), 1e6, 500.0, 50.0, 20.0, 5.0, 1.0]),
            (profile_from_network(network, array, 4, "exact"), 5, [float("inf"), 1e13, 1e11, 3e10, 1e10, 1e9])):
        times = [plan_on_cluster(profile, joined(devices, speed), "layerpipe", microbatches).makespan
                 for speed in speeds]
        assert all(a <= b for a, b in itertools.pairwise(times)), times
        assert times[-1] > times[0]


@pytest.mark.parametrize("processors", [2, 3, 4, 6])
@pytest.mark.parametrize("clock_ghz", [1.0, 1.3])
def test_on_free_or_fast_links_the_stages_are_pipelines(sample, processors, clock_ghz):
    """Plan's profile (seconds, priced on the array at a clock) gives Algorithm 1's plan of ``archsim pipeline``'s
    profile (cycles) on as many processors: the same layers per stage and the same ops, δ′/δ″ splits and borrowed δs
    included, whatever the links (they enter the schedule, not the split)."""
    from dataclasses import replace

    network, array = sample
    cycles = build_profile(network, array, 4, "exact")
    seconds = profile_from_network(network, replace(array, clock_hz=clock_ghz * 1e9), 4, "exact")
    expected = partition(cycles, processors, "layerpipe")
    for cluster in (Topology.flat(processors), joined(processors, 1e30)):
        plan = plan_on_cluster(seconds, cluster, "layerpipe", 4)
        assert ops_of(plan) == ops_of(expected)
        assert plan.devices == tuple((d,) for d in range(len(expected.stages)))
        per_cycle = 1 / (clock_ghz * 1e9)
        assert [s.total_cost for s in plan.stages] == pytest.approx([s.total_cost * per_cycle for s in expected.stages])
    assert any(op.kind in ("D1", "D2") for stage in expected.stages for op in stage.ops) or processors < 4


def test_devices_of_different_types_are_refused_in_one_line():
    """Algorithm 1's T_p = T_tot / N_p is for identical processors: a cluster of mixed devices is refused, naming
    what splits stages by each GPU's speed."""
    cluster = Topology("mixed", (0, 0), np.array([[0.0, 1.0], [1.0, 0.0]]), device_types=("h100", "a100"))
    with pytest.raises(InputError, match=r"identical processors; this cluster's devices are of 2 types \(a100, "
                                         r"h100\).*train --balance planned") as caught:
        plan_on_cluster(hand_profile(), cluster, "layerpipe", 2)
    assert "\n" not in str(caught.value)
    same = Topology("same", (0, 0), np.array([[0.0, 50.0], [50.0, 0.0]]), device_types=("h100", "h100"))
    assert plan_on_cluster(hand_profile(), same, "layerpipe", 1).makespan == pytest.approx(15.2)


def test_the_command_refuses_a_cluster_of_mixed_devices_before_planning(capsys):
    from archsim.cli import main

    code = main(["plan", "layerpipe_sample", "--cluster", str(CLUSTERS / "mixed_h100_a100_v100.toml"),
                 "--microbatches", "2", "--method", "layerpipe"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert "the servers name different devices" in captured.err and captured.err.count("\n") == 1


def test_the_command_and_the_library_print_layerpipes_makespan_beside_spps(capsys, tmp_path):
    """``plan --method layerpipe`` prints its makespan row as a baseline's, the idle GPUs noted; archsim.plan takes
    the same method."""
    import json
    import warnings

    import archsim
    from archsim.cli import main

    cluster = tmp_path / "four.toml"
    cluster.write_text('[cluster]\nname = "four"\n[[servers]]\ncount = 1\ngpus = 4\nintra_server_gbps = 800\n')
    code = main(["plan", "layerpipe_sample", "--cluster", str(cluster), "--microbatches", "4", "--method",
                 "layerpipe", "--format", "json"])
    captured = capsys.readouterr()
    assert code == 0
    (row,) = json.loads(captured.out)["rows"]
    assert row["method"] == "layerpipe" and row["makespan_seconds"] > 0 and row["spp_makespan_seconds"] > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = archsim.plan("layerpipe_sample", cluster=cluster, microbatches=4, method="layerpipe")
    assert result.to_dict()["rows"] == [row]


def test_a_timeline_output_is_refused_beside_hetpipe(capsys, tmp_path):
    """layerpipe's timeline is written since 2026-12-05 (tests/test_user_trial_sched69.py); hetpipe's pipelines, one
    per server, and the all-reduce across them are no one schedule."""
    from archsim.cli import main

    out = tmp_path / "g.html"
    code = main(["plan", "layerpipe_sample", "--cluster", str(CLUSTERS / "spp_sim.toml"), "--microbatches", "2",
                 "--method", "hetpipe", "--gantt", str(out)])
    assert code == 2 and "hetpipe gives its makespan only" in capsys.readouterr().err and not out.exists()


def test_baselines_none_beside_layerpipe_runs_it_as_under_archsims(capsys, tmp_path):
    """--baselines none runs none of SPP's baselines; LayerPipe is not one of them (its plan then raised a
    ValueError on config 'none')."""
    import json

    from archsim.cli import main

    cluster = tmp_path / "four.toml"
    cluster.write_text('[cluster]\nname = "four"\n[[servers]]\ncount = 1\ngpus = 4\nintra_server_gbps = 800\n')
    rows = []
    for extra in ([], ["--baselines", "none"]):
        assert main(["plan", "layerpipe_sample", "--cluster", str(cluster), "--microbatches", "4", "--method",
                     "layerpipe", "--format", "json", *extra]) == 0
        rows.append(json.loads(capsys.readouterr().out)["rows"])
    assert rows[0] == rows[1]


def test_gpus_left_without_a_stage_are_noted(sample, capsys):
    """Algorithm 1 on spp_sim's 32 GPUs makes as many stages as on 32 processors of the array (pipeline's plan, at
    plan's default 4 samples a micro-batch), and the rest stay idle, said as gpipe's are."""
    from archsim.cli import main

    network, array = sample
    used = len(partition(build_profile(network, array, 4, "exact"), 32, "layerpipe").stages)
    assert used < 32
    assert main(["plan", "layerpipe_sample", "--cluster", str(CLUSTERS / "spp_sim.toml"), "--microbatches", "2",
                 "--method", "layerpipe"]) == 0
    assert f"layerpipe's plan uses {used} of the 32 GPUs; {32 - used} stay idle" in capsys.readouterr().err


def test_algorithm_1s_target_is_named_in_the_profiles_unit():
    """The note states T_p = T_tot / N_p in the unit the profile's costs are in: (2 + 4 + 6) s over 2 processors is
    6 seconds, not 6 cycles (a profile in seconds, as plan's cluster profiles are)."""
    profile = profile_from_costs(["a", "b", "c"], [1.0, 2.0, 3.0], [0.5, 1.0, 1.5], [0.5, 1.0, 1.5], unit="seconds")
    notes = partition(profile, 2, "layerpipe").notes
    assert any(note.startswith("target T_p = 6 seconds after 0 relaxation") for note in notes), notes
    cycles = profile_from_costs(["a", "b", "c"], [1, 2, 3], [1, 1, 1], [1, 1, 2])
    assert any(note.startswith("target T_p = ") and " cycles after " in note  # relaxed past 13 / 2: whole layers
               for note in partition(cycles, 2, "layerpipe").notes)
