"""A systems researcher's trial of the out-of-order backprop, SPP, BPPSA and SPB/Jigsaw parts, new to archsim.

Tests marked "failed before" are defects the trial found (each failed on the code before its fix); the others
are the trial's hand checks, the arithmetic written out in the docstring.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

import archsim

ROOT = Path(__file__).resolve().parents[1]


def _csv_layer_names(path: Path) -> list[str]:
    """The layer names as the topology CSV writes them (its first column), read without archsim."""
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    return [row[0].strip() for row in rows[1:] if row and row[0].strip()]


@pytest.mark.parametrize("policy", ["mp", "gpipe", "ooo-pipe1", "ooo-pipe2"])
@pytest.mark.parametrize("unit_costs", [True, False])
def test_ooo_timeline_names_the_networks_layers(policy, unit_costs):
    """Failed before: the out-of-order pipelines tagged every op's ``layer`` ``l1`` … ``lL`` (to_frame's column,
    the Chrome trace's ``args.layer``) though the network's layers are ``fc1`` … ``fc8``."""
    names = _csv_layer_names(ROOT / "layers" / "ffnn8.csv")
    result = archsim.schedule("ffnn8", policy=policy, processors=2, microbatches=2, unit_costs=unit_costs)
    frame = result.timeline.to_frame()
    assert set(frame["layer"].dropna()) == set(names)  # a flush barrier names no layer
    # F1:0 is the first layer's forward: its tag names that layer
    assert frame.set_index("op").loc["F1:0", "layer"] == names[0]


def test_three_layer_ooo_schedules_by_hand(tmp_path):
    """Three layers (unit F = δ = G, no δ for the first), 2 devices, 1 micro-batch, by hand.

    mp / gpipe (l1, l2 on d1; l3 on d2): F1 F2 on d1 [0, 2), F3 on d2 [2, 3), then layer by layer
    G3 D3 on d2 [3, 5), G2 D2 on d1 [5, 7), G1 [7, 8) → 8.
    ooo-pipe1 (same allocation, δ first): D3 on d2 [3, 4); D2 on d1 [4, 5) beside G3 on d2; G2 [5, 6),
    G1 [6, 7) on d1 → 7.
    ooo-pipe2 (modulo: l1, l3 on d1, l2 on d2): F1 [0, 1) d1, F2 [1, 2) d2, F3 [2, 3) d1, D3 [3, 4) d1,
    D2 [4, 5) d2 beside G3 [4, 5) d1, G1 [5, 6) d1 beside G2 [5, 6) d2 → 6; busy 8 of 2 × 6 → bubble 1/3.
    """
    network = tmp_path / "net3.csv"  # ffnn8's first three layers: a chain fc1 → fc2 → fc3
    network.write_text("".join((ROOT / "layers" / "ffnn8.csv").read_text().splitlines(keepends=True)[:4]))
    got = {policy: archsim.schedule(str(network), policy=policy, processors=2, unit_costs=True)
           for policy in ("mp", "gpipe", "ooo-pipe1", "ooo-pipe2")}
    assert {policy: run.makespan for policy, run in got.items()} == {"mp": 8, "gpipe": 8, "ooo-pipe1": 7,
                                                                      "ooo-pipe2": 6}
    assert got["ooo-pipe2"].row["bubble_fraction"] == pytest.approx(1 / 3)
    frame = got["ooo-pipe2"].timeline.to_frame().set_index("op")
    assert frame.loc["D2:0", "start"] == 4 and frame.loc["D2:0", "processor"] == "d2"
    assert frame.loc["G1:0", "start"] == 5 and frame.loc["G1:0", "processor"] == "d1"


@pytest.mark.parametrize("policy", ["dp-wfbp", "dp-priority", "dp-reverse-k"])
def test_data_parallel_timeline_names_the_networks_layers(policy):
    """Failed before: the data-parallel windows tagged every op's ``layer`` ``l1`` … ``lL``, not the network's."""
    names = _csv_layer_names(ROOT / "layers" / "ffnn8.csv")
    frame = archsim.schedule("ffnn8", policy=policy, processors=4, unit_costs=True).timeline.to_frame().set_index("op")
    assert set(frame["layer"].dropna()) == set(names)
    assert frame.loc["F1", "layer"] == names[0] and frame.loc["S8", "layer"] == names[7]


def test_utilization_series_last_bin_ends_at_the_makespan():
    """Failed before: one 100 s job alone on one GPU keeps it busy to the end, so every 60 s bin of the report's
    utilization plot should read 1; the last bin ran to 120 s, past the makespan, and read 40/60 = 0.67."""
    from archsim.cluster import JobCluster, SimConfig, simulate_trace, summarize
    from archsim.cluster.metrics import utilization_series
    from archsim.cluster.trace import TraceJob

    result = simulate_trace((TraceJob("a", 1, 0.0, 0, "resnet50", 100.0),), JobCluster.uniform(1, 1), "gandiva",
                            SimConfig(interval_s=0))
    assert summarize(result)["utilization"] == pytest.approx(1.0)
    series = utilization_series(result, 60.0)
    assert list(series["time_s"]) == [0.0, 60.0]
    assert list(series["utilization"]) == pytest.approx([1.0, 1.0])


def test_jigsaw_order_of_three_equal_model_jobs_by_hand():
    """SPB + Jigsaw on three one-worker ResNet-50 jobs of 868, 2604 and 1736 iterations, all at 0 s, on one GPU.

    One worker back-propagates every layer, so SPB changes nothing and every task costs one iteration's t
    (measured here from job a run alone). Jigsaw's priority is memory share × task seconds (§3.2), equal for
    all three, so ties go to the earlier job: blocks of ⌈10 s / t⌉ = 87 iterations round-robin a, b, c. a's
    868 = 9·87 + 85 end in round 10: (27·87 + 85) t; c's 1736 = 19·87 + 83 end after b's 20th block:
    (868 + 20·87 + 1736) t; b last: (868 + 2604 + 1736) t — a, c, b.
    """
    import math

    from archsim.cluster import JobCluster, SimConfig, simulate_trace
    from archsim.cluster.trace import TraceJob

    def jobs(*rows):
        return tuple(TraceJob(name, 1, 0.0, iterations, "resnet50", 0.0) for name, iterations in rows)

    cluster, config = JobCluster.uniform(1, 1), SimConfig(interval_s=0, unit_s=10.0)
    alone = simulate_trace(jobs(("a", 868)), cluster, "jigsaw", config).jobs
    t = float(alone.jct_s.iloc[0]) / 868
    assert math.ceil(10.0 / t) == 87
    got = simulate_trace(jobs(("a", 868), ("b", 2604), ("c", 1736)), cluster, "jigsaw", config).jobs.set_index("job_id")
    assert list(got.start_s) == pytest.approx([0.0, 87 * t, 2 * 87 * t])
    assert list(got.end_s) == pytest.approx([(27 * 87 + 85) * t, (868 + 2604 + 1736) * t, (868 + 20 * 87 + 1736) * t])


def test_spp_split_of_a_five_layer_chain_on_two_gpus_against_brute_force(tmp_path):
    """SPP on a PipeDream graph.txt chain of 5 layers (F = 1…5 ms, B = 2F, 4-byte activations, 1 GB of weights
    each) over 2 GPUs joined at 20 Gbit/s (10 a direction), 4 micro-batches, against every plan by hand.

    One stage on both GPUs (data parallel): 2 micro-batches each of 45 ms, then a ring all-reduce of 5 GB at
    10 Gbit/s, 2(k − 1)/k · 5e9 · 8 / 1e10 = 4 s → 4.09 s. Two stages split after layer k: stage times
    s1 = 3·(1 + … + k), s2 = 45 − s1; a two-stage pipeline with free links takes (M − 1)·max + s1 + s2:
    k = 1…4 → 171, 153, 126, 135 ms. The best is k = 3, 126 ms.
    """
    from archsim.partition.graph_txt import load_graph_txt
    from archsim.planners import plan_on_cluster
    from archsim.spp.topology import load_topology_file

    lines = [f"node{i} -- Linear{i} -- forward_compute_time={i}.0, backward_compute_time={2 * i}.0, "
             "activation_size=4.0, parameter_size=1000000000.0" for i in range(1, 6)]
    lines += [f"\tnode{i} -- node{i + 1}" for i in range(1, 5)]
    (tmp_path / "graph.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "two.toml").write_text('[cluster]\nname = "two"\ninter_server_gbps = 10\n'
                                       '[[servers]]\ncount = 1\ngpus = 2\nintra_server_gbps = 20\n')
    m = 4
    brute = {("dp",): 2 * 0.045 + 4.0}
    for k in range(1, 5):
        s1 = 3 * sum(range(1, k + 1)) / 1000
        s2 = 0.045 - s1
        brute[("split", k)] = (m - 1) * max(s1, s2) + s1 + s2
    best = min(brute, key=brute.__getitem__)
    assert best == ("split", 3)
    plan = plan_on_cluster(load_graph_txt(str(tmp_path / "graph.txt")), load_topology_file(tmp_path / "two.toml"),
                           "spp", m)
    assert [stage.layers for stage in plan.stages] == [("node1", "node2", "node3"), ("node4", "node5")]
    assert plan.makespan == pytest.approx(brute[best])
    dp = plan_on_cluster(load_graph_txt(str(tmp_path / "graph.txt")), load_topology_file(tmp_path / "two.toml"),
                         "dp", m)
    assert dp.makespan == pytest.approx(brute[("dp",)], rel=1e-6)


def test_blelloch_scan_of_four_elements_against_the_sequential_product():
    """BPPSA's scan of [∇x₃ l, J₃ᵀ, J₂ᵀ, J₁ᵀ] (4 elements, 3 operators): 2⌈log₂ 4⌉ − 1 = 3 levels (the up-sweep's
    pairs, then two down-sweep levels; the root's up-sweep level is replaced by I), 2 up-sweep products and one
    down-sweep product beside moves with I, and the exclusive scan [I, g, J₃ᵀg, J₂ᵀJ₃ᵀg] by numpy."""
    import numpy as np

    from archsim.bppsa import blelloch_scan
    from archsim.bppsa.scan import IDENTITY

    rng = np.random.default_rng(7)
    g = rng.standard_normal(3)
    j3, j2, j1 = (rng.standard_normal((3, 3)) for _ in range(3))
    run = blelloch_scan([g, j3, j2, j1])
    assert len(run.levels) == 3
    assert sum(step.kind != "id" for step in run.steps) == 3
    assert run.values[0] is IDENTITY
    for got, want in zip(run.values[1:], (g, j3 @ g, j2 @ (j3 @ g))):
        assert np.allclose(np.ravel(got), want)


@pytest.mark.parametrize("value", ["9", "-1", "abc"])
def test_reverse_k_refusals_name_the_flag(value, capsys):
    """Failed before: ``--reverse-k 9`` on ffnn8's 8 layers was refused as "field 'k'", a name the command has no
    flag for (its dest); from Python the range refusal said 'k' too, where the parse refusal said 'reverse_k'."""
    from archsim.cli import main
    from archsim.errors import InputError

    assert main(["schedule", "ffnn8", "--processors", "2", "--policy", "dp-reverse-k", "--unit-costs",
                 "--reverse-k", value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "argument --reverse-k" in err, err
    with pytest.raises(InputError, match="field 'reverse_k'"):
        archsim.schedule("ffnn8", policy="dp-reverse-k", processors=2, unit_costs=True, reverse_k=value)


def test_plan_json_keeps_the_baselines_and_stage_counts_full_precision(tmp_path, capsys):
    """Failed before: ``plan --format json`` (and csv), which keep full precision, wrote the baselines' and each
    stage count's makespans rounded to 4 digits (``dp:0.03704``), so they disagreed with the same plans from
    Python; the table keeps its 4 digits."""
    import json

    from archsim.cli import main
    from archsim.planners import plan_on_cluster
    from archsim.spp.topology import load_topology_file

    cluster = ROOT / "configs" / "clusters" / "testbed_1080ti.toml"
    argv = ["plan", "vgg16", "--only", "conv", "--array", "128x128", "--cluster", str(cluster), "--microbatches", "8",
            "--micro-batch", "4"]
    assert main(argv + ["--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    baselines = meta["baselines_seconds"]
    counts = {c["stages"]: c["makespan_seconds"] for c in meta["stage_counts"]}
    profile = archsim.profile("vgg16", only="conv", array="128x128", batch=4, clock_ghz=1.0)
    topology = load_topology_file(cluster)
    for method in ("dp", "gpipe", "hetpipe"):
        assert baselines[method] == plan_on_cluster(profile, topology, method, 8).makespan
    assert min(counts.values()) == meta["makespan_seconds"]
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert f"dp:{baselines['dp']:.4g};" in table


def test_all_zero_stage_times_are_refused(capsys):
    """Failed before: ``--stage-times 0,0,0`` ran, printing a makespan of 0 and a bubble fraction of 0 (0/0)."""
    from archsim.cli import main
    from archsim.errors import InputError

    assert main(["schedule", "--stages", "2", "--stage-times", "0,0,0", "--microbatches", "2",
                 "--policy", "zb-h1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "argument --stage-times" in captured.err
    with pytest.raises(InputError, match="stage_times"):
        archsim.schedule(stages=2, stage_times="0,0,0", microbatches=2, policy="1f1b")
    assert archsim.schedule(stages=2, stage_times="1,1,0", microbatches=2, policy="1f1b").makespan > 0


@pytest.mark.parametrize("divisor", ["3", "1000"])
def test_width_divisor_refusal_names_the_flag_and_the_widths(divisor, capsys):
    """Failed before: ``bppsa pruned-vgg11 --width-divisor 3`` was refused as "field 'width_divisor'" (the library's
    keyword, not the flag) with "every VGG-11 width" unnamed; VGG-11's convolutions have 64, 128, 256 and 512
    channels (Simonyan and Zisserman, configuration A), so 1, 2, 4, … 64 divide them all."""
    from archsim.cli import main

    assert main(["bppsa", "pruned-vgg11", "--width-divisor", divisor]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "argument --width-divisor" in err and "64, 128, 256, 512" in err, err


def test_a_trace_job_wider_than_the_cluster_names_the_flag(tmp_path, capsys):
    """Failed before: a trace whose jobs need 12 and 64 GPUs on 8 was refused naming the first job but not
    what to change; the synthetic trace's refusal already named --gpus. The widest job sets the figure: 64."""
    from archsim.cli import main

    trace = tmp_path / "jobs.csv"
    trace.write_text("job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
                     "j1,12,0,0,resnet50,100,0\nj2,64,0,0,resnet50,100,0\n")
    assert main(["cluster", "--trace", str(trace), "--gpus", "8"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert "job j1 num_gpu" in captured.err and "give --gpus 64 or more" in captured.err, captured.err


def test_spp_pages_python_route_runs_as_written():
    """Failed before: docs/papers/spp.md's "From Python the same plan is `archsim.planners.plan_on_cluster(…,
    archsim.spp.topology.load_topology_file(CLUSTER), …)`" raised AttributeError after ``import archsim``
    (the package loads no subpackage as an attribute). Every code span of that sentence is run as written (the
    imports it names, then the expression with CLUSTER the testbed's file): the page's 2 stages, conv1_1–conv3_3
    on 5 GPUs and conv4_1–conv5_3 on 3, 17.5 ms."""
    import re

    text = (ROOT / "docs" / "papers" / "spp.md").read_text()
    sentence = text[text.index("17.5 ms vs 20.0 ms"):text.index("(layers priced in seconds")]
    spans = [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", sentence)]
    imports = [span for span in spans if span.startswith(("import ", "from "))]
    expression = next(span for span in spans if "plan_on_cluster(" in span)
    cluster = ROOT / "configs" / "clusters" / "testbed_1080ti.toml"
    # a fresh interpreter: in this one another test's import may already have set archsim.planners
    script = "\n".join(["import archsim", *imports, f"CLUSTER = {str(cluster)!r}", f"plan = {expression}",
                         "print([(s.layers[0], s.layers[-1], s.replicas) for s in plan.stages], plan.makespan)"])
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    stages, makespan = done.stdout.rsplit("] ", 1)
    assert stages + "]" == str([("conv1_1", "conv3_3", 5), ("conv4_1", "conv5_3", 3)])
    assert round(float(makespan) * 1e3, 1) == 17.5


def test_three_layer_ooo_schedules_on_two_microbatches_by_hand(tmp_path):
    """The same three layers, 2 micro-batches, by hand. mp runs one micro-batch at a time: 2 × 8 = 16. gpipe (flush
    after every forward, at 5: d1 F1 F2 of both in [0, 4), d2 F3 at 2 and 4): d2 G3 D3 G3 D3 in [5, 9), d1 G2 D2 G1
    of micro-batch 0 in [7, 10), then of 1 from D3's 9 → 13. ooo-pipe1 (δ first): d2 D3 D3 [5, 7) then G3 G3;
    d1 D2 D2 [6, 8), G2 G2 [8, 10), G1 G1 [10, 12) → 12. ooo-pipe2: d1 holds l1 and l3, 5 ops a micro-batch,
    so 10 is its bound, and it is met."""
    network = tmp_path / "net3.csv"
    network.write_text("".join((ROOT / "layers" / "ffnn8.csv").read_text().splitlines(keepends=True)[:4]))
    got = {policy: archsim.schedule(str(network), policy=policy, processors=2, microbatches=2, unit_costs=True).makespan
           for policy in ("mp", "gpipe", "ooo-pipe1", "ooo-pipe2")}
    assert got == {"mp": 16, "gpipe": 13, "ooo-pipe1": 12, "ooo-pipe2": 10}


@pytest.mark.parametrize(("row", "field"), [
    (("a", 1, 0.0, 0, "resnet50", -5.0), "duration"),
    (("a", 1, -1.0, 0, "resnet50", 5.0), "submit_time"),
    (("a", 0, 0.0, 0, "resnet50", 5.0), "num_gpu"),
    (("a", 1, 0.0, -3, "resnet50", 5.0), "iterations"),
    (("a", 1, float("nan"), 0, "resnet50", 5.0), "submit_time"),
    (("a", 1, 0.0, 0, "resnet50", float("inf")), "duration"),
    (("a", 1, 0.0, 0, "resnet50", 0.0), "duration"),
])
def test_simulate_trace_refuses_rows_the_trace_file_refuses(row, field):
    """Failed before: from Python a job of −5 s (or submitted at −1 s, on 0 GPUs, of −3 iterations, at NaN s)
    ran — the −5 s job as one 0.115 s iteration — where the same row in a trace CSV is refused; docs/api.md says
    the functions raise the commands' InputErrors."""
    from archsim.cluster import JobCluster, simulate_trace
    from archsim.cluster.trace import TraceJob
    from archsim.errors import InputError

    with pytest.raises(InputError, match=field):
        simulate_trace((TraceJob(*row),), JobCluster.uniform(2, 2), "jigsaw")


def test_a_job_spec_submitted_at_nan_is_refused():
    """Failed before: a JobSpec arriving at NaN s was built, and the simulator given it looped for ever."""
    from archsim.cluster.jobs import JobSpec
    from archsim.errors import InputError

    with pytest.raises(InputError, match="submit_s"):
        JobSpec("a", float("nan"), 1, 10, "resnet50", 0.1, 1e9, (0.1,), (1e9,), 1e8)
