"""An SPP researcher and an out-of-order backprop researcher on a 4-layer network of their own: a plan's Gantt
says its rows are stages and channels (and which GPUs run each stage), and `schedule`'s out-of-order pipelines
say when their layer allocation leaves devices idle, as `pipeline` does."""

from __future__ import annotations

import json
import re

import pytest
from user_files import two_server_cluster, write_user_files

from archsim.cli import main

# fc layers 256 → 1024 → 2048 → 512 → 128: per layer F/G/δ cycles a hand computation of SCALE-Sim's ws folds checks
NETWORK = """Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, Padding, Type, Inputs, Bias, Repeat,
fc1, 1, 1, 1, 1, 256, 1024, 1, 0, fc, input, 1, 1,
fc2, 1, 1, 1, 1, 1024, 2048, 1, 0, fc, fc1, 1, 1,
fc3, 1, 1, 1, 1, 2048, 512, 1, 0, fc, fc2, 1, 1,
fc4, 1, 1, 1, 1, 512, 128, 1, 0, fc, fc3, 1, 1,
"""

# two servers of different fabrics: 2 GPUs at 100 Gb/s (both directions) and 1 at 400, 40 Gb/s between them
CLUSTER = two_server_cluster("het2", 40, (2, 100), (1, 400))


def _files(tmp_path):
    return write_user_files(tmp_path, ("net4.csv", NETWORK), ("het2.toml", CLUSTER))


def _figure(html: str) -> dict:
    """The plotly figure's layout keys a reader sees: the rows axis title and the caption under the chart."""
    title = re.search(r'"yaxis":\{"title":\{"text":"([^"]*)"', html)
    assert title, "no rows axis title"
    return {"rows_title": json.loads(f'"{title.group(1)}"'), "text": html}  # plotly writes "/" as \u002f


def test_plan_gantt_rows_are_stages_and_channels(tmp_path, capsys) -> None:
    """`archsim plan --gantt` draws one row per stage (s1, s2: a stage of 2 replicas is one row), per channel
    between stages (ch1) and per stage all-reduce (ar1), but titled the rows axis "processor", and nothing on the
    page said which GPUs a stage row stands for (fails before the fix). The rows axis now says stage / channel
    and the caption names each stage's layers and GPUs, as the plan's table does (s1: fc1–fc2 on g0 g1)."""
    network, cluster = _files(tmp_path)
    out = tmp_path / "plan.html"
    assert main(["plan", str(network), "--cluster", str(cluster), "--microbatches", "4", "--format", "json",
                 "--gantt", str(out)]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["first_layer"], r["last_layer"], r["devices"]) for r in rows] == [("fc1", "fc2", "g0 g1"),
                                                                                    ("fc3", "fc4", "g2")]
    figure = _figure(out.read_text())
    assert figure["rows_title"] == "stage / channel"
    text = figure["text"]
    assert "s1: fc1–fc2 on g0 g1" in text and "s2: fc3–fc4 on g2" in text
    assert "ch1" in text and "ar1" in text


@pytest.mark.parametrize("flags, used, processors", [
    (["--policy", "ooo-pipe1", "--processors", "6"], 4, 6),  # ⌈4/6⌉ = 1 layer a device: 2 get none
    (["--policy", "gpipe", "--processors", "3"], 2, 3),  # ⌈4/3⌉ = 2 layers a device: 2, 2 and none
    (["--policy", "ooo-pipe2", "--processors", "2", "--group", "4"], 1, 2),  # one group of 4 layers: device 1
])
def test_schedule_ooo_says_when_processors_stay_idle(tmp_path, capsys, flags, used, processors) -> None:
    """The out-of-order paper's allocations (⌈L/P⌉ contiguous layers a device; ooo-pipe2's groups dealt round
    robin) can leave a device without layers. `archsim schedule` ran such a schedule silently, its row saying
    `processors 6` and a bubble fraction counting the idle devices, where `pipeline` notes the same case on
    stderr (fails before the fix: stderr was empty). Counted by hand from the allocation rule."""
    network, _ = _files(tmp_path)
    assert main(["schedule", str(network), "--microbatches", "2", "--format", "json", *flags]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["rows"][0]["processors"] == processors
    notes = captured.err.strip().splitlines()
    assert len(notes) == 1 and notes[0].startswith("archsim schedule: note: "), notes
    idle = processors - used
    assert f"uses {used} of the {processors} processors; {idle} stay{'s' if idle == 1 else ''} idle" in notes[0], \
        notes[0]


@pytest.mark.parametrize("policy", ["mp", "gpipe", "ooo-pipe1", "ooo-pipe2"])
def test_schedule_ooo_on_every_processor_says_nothing(tmp_path, capsys, policy) -> None:
    """4 layers on 2 devices: every allocation gives each device layers, so stderr stays empty."""
    network, _ = _files(tmp_path)
    assert main(["schedule", str(network), "--processors", "2", "--microbatches", "1", "--policy", policy]) == 0
    assert capsys.readouterr().err == ""


def test_plan_rows_give_each_stage_its_times(tmp_path, capsys) -> None:
    """An SPP user checking a plan by hand needs each stage's per-micro-batch times; `plan`'s rows gave its layers
    and GPUs only (fails before: no `microbatch_forward_seconds` column), so the check needed the Chrome trace. Each stage's
    F and B (= G + δ) are its layers' cycles from `archsim cost` (1 GHz) summed by hand and split over its
    replicas; its all-reduce is the ring's 2(r − 1)/r × its weight bytes at its slowest link: g0–g1 inside the
    100 Gb/s server, one direction 50 Gb/s = 6.25e9 B/s."""
    network, cluster = _files(tmp_path)
    assert main(["cost", str(network), "--batch", "4", "--format", "json"]) == 0
    layers = {r["layer"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    f = {name: r["F_cycles"] * 1e-9 for name, r in layers.items()}
    b = {name: (r["G_cycles"] + r["D_cycles"]) * 1e-9 for name, r in layers.items()}
    weights = layers["fc1"]["weight_bytes"] + layers["fc2"]["weight_bytes"]
    assert main(["plan", str(network), "--cluster", str(cluster), "--microbatches", "4", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    first, second = rows
    assert first["microbatch_forward_seconds"] == pytest.approx((f["fc1"] + f["fc2"]) / 2, rel=1e-12)
    assert first["microbatch_backward_seconds"] == pytest.approx((b["fc1"] + b["fc2"]) / 2, rel=1e-12)
    assert first["allreduce_seconds"] == pytest.approx(2 * (2 - 1) / 2 * weights / 6.25e9, rel=1e-12)
    assert second["microbatch_forward_seconds"] == pytest.approx(f["fc3"] + f["fc4"], rel=1e-12)
    assert second["microbatch_backward_seconds"] == pytest.approx(b["fc3"] + b["fc4"], rel=1e-12)
    assert second["allreduce_seconds"] == 0


def test_plan_matches_brute_force_on_a_tiny_heterogeneous_cluster(tmp_path, capsys) -> None:
    """The SPP researcher's brute force (a check, not a defect: it passes before and after): every contiguous
    split of the 4 layers, every order of the 3 GPUs and every contiguous share of them, each priced without
    archsim as §III prices it (a stage M·Σ(F + B)/r plus its ring all-reduce at its slowest link; a channel
    M·(d^f + d^b)/(r·r′·min b)); the least 𝒲 is the plan SPP returns (fc1–fc2 on the 100 Gb/s pair, fc3–fc4
    alone). PE's makespan of every candidate, brute-forced the same way, is least for this plan too."""
    import itertools

    network, cluster = _files(tmp_path)
    assert main(["cost", str(network), "--batch", "4", "--format", "json"]) == 0
    layers = json.loads(capsys.readouterr().out)["rows"][:4]
    F = [r["F_cycles"] * 1e-9 for r in layers]
    B = [(r["G_cycles"] + r["D_cycles"]) * 1e-9 for r in layers]
    act = [r["activation_bytes"] for r in layers]
    dlt = [r["delta_bytes"] for r in layers]
    W = [r["weight_bytes"] for r in layers]
    bw = [[0, 6.25e9, 5e9], [6.25e9, 0, 5e9], [5e9, 5e9, 0]]  # 100 Gb/s both ways in server 1; 40 Gb/s between
    M = 4
    best = None
    for order in itertools.permutations(range(3)):
        for count in (1, 2, 3):
            for cuts in itertools.combinations(range(1, 4), count - 1):
                for shares in itertools.combinations(range(1, 3), count - 1):
                    bounds, split = (0, *cuts, 4), (0, *shares, 3)
                    stages = [(bounds[k], bounds[k + 1], order[split[k]:split[k + 1]]) for k in range(count)]
                    value = 0.0
                    for k, (a, z, gpus) in enumerate(stages):
                        r = len(gpus)
                        slow = min((bw[x][y] for x in gpus for y in gpus if x != y), default=1.0)
                        value = max(value, M * sum(F[a:z] + B[a:z]) / r + 2 * (r - 1) / r * sum(W[a:z]) / slow)
                        if k + 1 < count:
                            nxt = stages[k + 1][2]
                            link = min(bw[x][y] for x in gpus for y in nxt)
                            value = max(value, M * (act[z - 1] + dlt[z]) / (r * len(nxt) * link))
                    key = [(a, z, sorted(gpus)) for a, z, gpus in stages]
                    if best is None or value < best[0] - 1e-15:
                        best = (value, key)
    assert best is not None and best[1] == [(0, 2, [0, 1]), (2, 4, [2])]
    assert main(["plan", str(network), "--cluster", str(cluster), "--microbatches", "4", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["first_layer"], r["last_layer"], r["devices"]) for r in rows] == [("fc1", "fc2", "g0 g1"),
                                                                                    ("fc3", "fc4", "g2")]


@pytest.mark.parametrize("old, new, says", [
    ("inter_server_gbps = 40", "inter_server_gbps = -40", "got '-40'"),
    ("intra_server_gbps = 100", "intra_server_gbps = [-5, 10]", "got '[-5, 10]'"),
    ("intra_server_gbps = 100", "intra_server_gbps = [200, 100]", "low 200 above high 100"),
])
def test_a_bad_bandwidth_is_named_in_the_error(tmp_path, capsys, old, new, says) -> None:
    """A negative bandwidth or a range written high first was refused with `expected a number in [1e-06, 1e+06]
    or a [low, high] range of them`, not saying what the file held nor, for [200, 100], that the range was
    reversed (fails before the fix). The line names the value (and a reversed range's order); exit 2, nothing
    written."""
    network, cluster = _files(tmp_path)
    cluster.write_text(CLUSTER.replace(old, new))
    out = tmp_path / "plan.json"
    assert main(["plan", str(network), "--cluster", str(cluster), "--microbatches", "4", "--out", str(out)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("archsim plan: error: "), lines
    assert says in lines[0], lines[0]
    assert not out.exists()


def _device_orders(trace) -> dict[int, list[str]]:
    events = [e for e in json.loads(trace.read_text())["traceEvents"] if e.get("ph") == "X"]
    orders: dict[int, list[str]] = {}
    for event in sorted(events, key=lambda e: e["ts"]):
        orders.setdefault(event["pid"], []).append(event["name"])
    return orders


def test_ooo_pipe2_action_order_traced_by_hand(tmp_path, capsys) -> None:
    """A check (passes before and after): unit costs, 4 layers dealt modulo to 2 devices (d1: layers 1, 3; d2: 2, 4),
    2 micro-batches, no flush, δ ranked over F over G (§5.2, Fig. 6). Traced by hand: d2 runs D4:0 at t = 4 as soon
    as F4:0 ends, then F4:1 before G4:0; d1 takes D3:0 at 5 and fills with G3:0 and G1:0 while the δ chain moves to
    d2 (D2:0 at 6); layer 1 has no δ; the makespan is 13 units."""
    network, _ = _files(tmp_path)
    trace = tmp_path / "t.json"
    assert main(["schedule", str(network), "--unit-costs", "--processors", "2", "--microbatches", "2",
                 "--policy", "ooo-pipe2", "--format", "json", "--chrome-trace", str(trace)]) == 0
    assert json.loads(capsys.readouterr().out)["rows"][0]["makespan"] == 13
    orders = _device_orders(trace)
    assert orders[1] == ["F1:0", "F1:1", "F3:0", "F3:1", "D3:0", "G3:0", "G1:0", "D3:1", "G3:1", "G1:1"]
    assert orders[2] == ["F2:0", "F2:1", "F4:0", "D4:0", "F4:1", "D2:0", "D4:1", "G4:0", "D2:1", "G2:0", "G4:1",
                         "G2:1"]


def test_ooo_pipe1_iteration_time_from_the_layer_costs(tmp_path, capsys) -> None:
    """A check (passes before and after): one micro-batch of the 4 layers on 2 devices (d1: fc1, fc2; d2: fc3, fc4)
    under gradient fast-forwarding is the forward chain, then δ4, δ3 (d2), δ2 (d1), then d1's G2 and G1 — d2's G4
    and G3 run beside δ2 and end first. From `archsim cost`'s per-layer cycles at batch 32, summed by hand."""
    network, _ = _files(tmp_path)
    assert main(["cost", str(network), "--batch", "32", "--format", "json"]) == 0
    c = {r["layer"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    forward = sum(c[f"fc{i}"]["F_cycles"] for i in range(1, 5))
    chain = forward + c["fc4"]["D_cycles"] + c["fc3"]["D_cycles"] + c["fc2"]["D_cycles"]
    expected = max(chain + c["fc2"]["G_cycles"] + c["fc1"]["G_cycles"],
                   forward + c["fc4"]["D_cycles"] + c["fc3"]["D_cycles"] + c["fc4"]["G_cycles"] + c["fc3"]["G_cycles"])
    assert main(["schedule", str(network), "--processors", "2", "--microbatches", "1", "--policy", "ooo-pipe1",
                 "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"][0]["makespan"] == expected == 905271


def test_v100_testbed_vgg16_pipedreams_optimizer_beats_spp_by_the_papers_own_objective(capsys) -> None:
    """docs/papers/spp.md, beside Table III's V100×4 rows: on one server of 4 V100s (fp32) SPP picks one stage
    for VGG16, and PipeDream's optimizer (`--baselines paper`) is faster. Why, by the paper's own §IV-B: PRM's best
    two-stage plan has a smaller 𝒲 than PipeDream's split (conv1_1–conv4_2 on 3 GPUs, the rest on 1), yet PE runs
    it slower; SPP ranks partitions by 𝒲 and schedules only the best. 𝒲 here is recomputed from PRM's stage
    formula, M·Σ(F + B)/r + all-reduce, on the two splits."""
    from pathlib import Path

    from archsim.cli import build_parser
    from archsim.commands.plan import layer_profile
    from archsim.plan_flags import check_flags
    from archsim.spp.pe_order import pe_finish_time
    from archsim.spp.plan import stage_plans
    from archsim.spp.prm import PRMPlan, channel_time, prm, stage_time
    from archsim.spp.topology import load_topology_file

    cluster = str(Path(__file__).resolve().parents[1] / "configs/clusters/testbed_v100_gpu.toml")
    argv = ["plan", "vgg16", "--cluster", cluster, "--dtype", "fp32", "--microbatches", "8", "--micro-batch", "32",
            "--baselines", "paper", "--format", "json"]
    assert main(argv) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert min((c["makespan_seconds"], c["stages"]) for c in meta["stage_counts"])[1] == 1
    pipedream = meta["baselines_seconds"]["pipedream"]
    assert pipedream < meta["makespan_seconds"]
    args = build_parser(argv).parse_args(argv)
    check_flags(args)
    profile, _, _ = layer_profile(args)
    bw = load_topology_file(cluster).bandwidth
    cut = profile.names.index("relu4_2")  # PipeDream's split: conv1_1 … conv4_2 | relu4_2 … fc8
    theirs = PRMPlan(0.0, ((0, cut), (cut, len(profile))), (3, 1), ((0, 1, 2), (3,)))
    ours = prm(profile, (0, 1, 2, 3), bw, 8, 2)

    def value(plan: PRMPlan) -> float:
        (a, b), (c, d) = plan.stages
        return max(stage_time(profile, 8, a, b, plan.devices[0], bw), stage_time(profile, 8, c, d, plan.devices[1], bw),
                   channel_time(profile, 8, b, plan.devices[0], plan.devices[1], bw))

    assert value(ours) < value(theirs)
    assert pe_finish_time(stage_plans(profile, ours, bw), 8) > pe_finish_time(stage_plans(profile, theirs, bw), 8)
