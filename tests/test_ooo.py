"""Out-of-order backprop across devices against the paper's unit-cost examples (Figs. 5–6) and
exact optima (time-indexed MILP)."""

import pytest
from optimum_reference import optimal_makespan

import archsim
from archsim.cli import main
from archsim.errors import InputError
from archsim.partition import profile_from_costs
from archsim.policies.ooo import flush_phases, layer_chain, lower_bound, ooo_schedule, schedule_metrics, unit_costs
from archsim.sim import validate_timeline


@pytest.mark.parametrize("policy, expected", [("mp", 23), ("ooo-pipe1", 19), ("ooo-pipe2", 16)])
def test_fig5_eight_layers_two_devices(policy, expected):
    """F = D = G = 1, no δ for the first layer, no loss op, no communication (000_… Fig. 5)."""
    problem, timeline = ooo_schedule(unit_costs(8), devices=2, microbatches=1, policy=policy)
    assert validate_timeline(problem, timeline) == []
    assert timeline.makespan == expected


@pytest.mark.parametrize("policy, expected_optimum", [("mp", 19), ("ooo-pipe1", 19), ("ooo-pipe2", 16)])
def test_fig5_greedy_vs_exact_optimum(policy, expected_optimum):
    """mp's allocation admits 19 (fast-forwarding reaches it); ooo-pipe2's 16 is also the critical path."""
    problem, timeline = ooo_schedule(unit_costs(8), 2, 1, policy)
    assert optimal_makespan(problem, int(timeline.makespan)) == expected_optimum
    if policy == "ooo-pipe2":
        assert timeline.makespan == lower_bound(unit_costs(8), 2, 1, policy)


@pytest.mark.parametrize("policy, flush, expected", [("gpipe", True, 83), ("ooo-pipe1", True, 68),
                                                     ("ooo-pipe2", False, 51)])
def test_sixteen_layer_ffnn_four_devices_four_microbatches(policy, flush, expected):
    """GPipe 83; OOO-Pipe1 with flush 68 (83/68 = 1.22×); OOO-Pipe2 without flush, δ above the next
    micro-batch's F, 51 (83/51 = 1.6275, the paper's "1.62×" truncated)."""
    problem, timeline = ooo_schedule(unit_costs(16), 4, 4, policy, flush=flush)
    assert validate_timeline(problem, timeline) == []
    assert timeline.makespan == expected


@pytest.mark.long
def test_ooo_pipe2_without_flush_is_optimal():
    problem, timeline = ooo_schedule(unit_costs(16), 4, 4, "ooo-pipe2", flush=False)
    assert optimal_makespan(problem, int(timeline.makespan), time_limit=120) == 51


@pytest.mark.slow
@pytest.mark.parametrize("policy, expected_optimum", [("gpipe", 68), ("ooo-pipe1", 68)])
def test_flushed_schedules_against_the_optimum(policy, expected_optimum):
    """With a flush the optimum is the forward phase's plus the backward phase's: 28 + 40. OOO-Pipe1
    reaches it; GPipe's conventional order (83) does not."""
    problem, _ = ooo_schedule(unit_costs(16), 4, 4, policy, flush=True)
    forward, backward = flush_phases(problem)
    total = optimal_makespan(forward, 28, time_limit=300) + optimal_makespan(backward, 55, time_limit=300)
    assert total == expected_optimum


def test_modulo_allocation_alternates_devices():
    from archsim.partition.ooo_allocation import device_of
    from archsim.policies.ooo import ALLOCATION

    assert ALLOCATION["ooo-pipe2"] == "modulo" and ALLOCATION["mp"] == "contiguous"
    assert [device_of(l, 8, 2, "modulo") for l in range(8)] == [0, 1, 0, 1, 0, 1, 0, 1]
    assert [device_of(l, 8, 2, "modulo", group=2) for l in range(8)] == [0, 0, 1, 1, 0, 0, 1, 1]
    assert [device_of(l, 8, 2, "contiguous") for l in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [device_of(l, 10, 4) for l in range(10)] == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3]  # 3/3/3/1


def test_metrics_and_stash_memory():
    costs = layer_chain((1.0, 1.0), (1.0, 1.0), (1.0, 1.0), stash_bytes=(10, 20))
    problem, timeline = ooo_schedule(costs, 2, 2, "gpipe")
    metrics = schedule_metrics(problem, timeline)
    assert metrics["peak_activation_bytes"] == 40  # device 2 holds layer 2's input for both micro-batches
    busy = 2 * (2 + 1 + 2)
    assert metrics["bubble_fraction"] == pytest.approx(1 - busy / (2 * metrics["makespan"]))


# a → {b, c} → d: read as a chain, c would wait for b's forward and a's δ for c's alone
DIAMOND = ((0, 1), (0, 2), (1, 3), (2, 3))


@pytest.mark.parametrize("policy", ["mp", "gpipe", "ooo-pipe1", "ooo-pipe2"])
def test_a_branching_profile_is_refused(policy):
    """The paper's pipelines run on a chain (§3, §5.2); a profile whose graph branches was read as
    one and timed with the wrong dependencies, now it is refused, naming the first layer off the chain."""
    ones = [1.0] * 4
    branching = profile_from_costs(list("abcd"), ones, ones, ones, edges=DIAMOND)
    with pytest.raises(InputError, match="layer 'c' reads 'a'"):
        ooo_schedule(branching, 2, 2, policy, flush=policy not in ("mp", "ooo-pipe2"))
    with pytest.raises(InputError, match="layer 'c' reads 'a'"):
        lower_bound(branching, 2, 2, policy)
    chain = profile_from_costs(list("abcd"), ones, ones, ones, edges=((0, 1), (1, 2), (2, 3)))
    assert ooo_schedule(chain, 2, 1, policy)[1].makespan == ooo_schedule(unit_costs(4), 2, 1, policy)[1].makespan


@pytest.mark.parametrize("unit", [[], ["--unit-costs"]])
def test_the_schedule_command_refuses_a_branching_network(unit, capsys):
    """rnn_cell's add reads fc_x and fc_h, which both read the input: exit 2, one line, nothing on
    stdout — with its costs or with unit costs (before, unit costs made any network a chain)."""
    code = main(["schedule", "rnn_cell", "--policy", "ooo-pipe1", "--processors", "2", *unit])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "layer 'add' reads 'fc_x'" in err and "argument NETWORK" in err


def test_ooo_pipe1_without_flush_ranks_delta_above_the_next_forward():
    """2 unit layers on 2 devices, 2 micro-batches, no flush (the module's rule: δ above the next micro-batch's
    F, F above G). Device 2 runs F2:0 [1, 2); at 2 both F2:1 and D2:0 are ready and D2:0 runs [2, 3), F2:1
    [3, 4). With the flush F2:1 runs [2, 3) and D2:0 waits for it. Failed before: ooo-pipe1 ranked F first
    whatever the flag, so --no-flush ran exactly the flushed order (ffnn8 on 4 devices, 4 micro-batches: 34
    both; now 30 without the flush, a valid timeline)."""
    starts = {}
    for flush in (True, False):
        problem, timeline = ooo_schedule(unit_costs(2), 2, 2, "ooo-pipe1", flush=flush)
        assert validate_timeline(problem, timeline) == []
        starts[flush] = {s.op: s.start for s in timeline.slots}
    assert (starts[True]["F2:1"], starts[True]["D2:0"]) == (2, 3)
    assert (starts[False]["D2:0"], starts[False]["F2:1"]) == (2, 3)
    flushed, free = (ooo_schedule(unit_costs(8), 4, 4, "ooo-pipe1", flush=f)[1].makespan for f in (True, False))
    assert (flushed, free) == (34, 30)


def test_bubble_over_the_devices_the_allocation_uses_beside_every_devices_bubble(capsys):
    """ffnn8 under ooo-pipe2 on 16 processors, 1 micro-batch, unit costs: layer l on device l, so 8 devices hold a
    layer and 8 none. By hand: F1–F8 end at 8, δ8 … δ2 run 8–15 (each device its δ before its G), G1 waits for δ2:
    makespan 16; 8 F + 7 δ + 8 G = 23 units of work. bubble_fraction 1 − 23/(16 × 16); over the 8 used devices
    1 − 23/(8 × 16). With every device holding a layer (4 processors) the two agree."""
    with pytest.warns(UserWarning, match="uses 8 of the 16 processors"):
        result = archsim.schedule("ffnn8", policy="ooo-pipe2", processors=16, microbatches=1, unit_costs=True)
    assert result.makespan == 16
    assert result.row["bubble_fraction"] == pytest.approx(1 - 23 / (16 * 16))
    assert result.row["bubble_fraction_used_devices"] == pytest.approx(1 - 23 / (8 * 16))
    full = archsim.schedule("ffnn8", policy="gpipe", processors=4, microbatches=1, unit_costs=True).row
    assert full["bubble_fraction_used_devices"] == pytest.approx(full["bubble_fraction"])
    assert main(["schedule", "ffnn8", "--policy", "ooo-pipe2", "--processors", "16", "--unit-costs",
                 "--format", "csv"]) == 0
    header, row = capsys.readouterr().out.splitlines()[:2]
    assert float(dict(zip(header.split(","), row.split(",")))["bubble_fraction_used_devices"]) == \
        pytest.approx(1 - 23 / (8 * 16))
