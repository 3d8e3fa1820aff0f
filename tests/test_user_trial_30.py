"""A teaching assistant's notebook: the five papers' systems from Python alone (``import archsim``), every
number shown to students checked by hand. Tests marked "failed before" are defects that trial found (each
failed on the code before its fix); the others are the notebook's hand checks, the arithmetic written out.
"""

from __future__ import annotations

import math
import tomllib
import warnings
from pathlib import Path

import numpy as np
import pytest

import archsim
from archsim import Layer, Network
from archsim.errors import InputError

TINY_CNN = Network("tinycnn", (
    Layer("c1", "conv", 32, 32, 3, 3, 3, 16, padding=1),
    Layer("c2", "conv", 32, 32, 3, 3, 16, 32, stride=2, padding=1, inputs=("c1",)),
    Layer("c3", "conv", 16, 16, 3, 3, 32, 64, padding=1, inputs=("c2",)),
    Layer("fc", "fc", 16, 16, 16, 16, 64, 10, inputs=("c3",)),
))


def ws_cycles(m: int, k: int, n: int, rows: int = 32, cols: int = 32) -> int:
    """docs/concepts.md's weight-stationary formula: ⌈K/R⌉⌈N/C⌉ · (2R + C + M − 2) − 1."""
    return math.ceil(k / rows) * math.ceil(n / cols) * (2 * rows + cols + m - 2) - 1


def test_layerpipe_costs_by_the_scalesim_formula():
    """Hand check. c3 at batch 8: output 16×16, 3×3×32 → 64. F = (N·E·F, R·S·C, M) = (2048, 288, 64):
    ⌈288/32⌉·⌈64/32⌉·(64 + 32 + 2048 − 2) − 1 = 9·2·2142 − 1 = 38,555; G = (288, 2048, 64):
    ⌈2048/32⌉·2·(64 + 32 + 288 − 2) − 1 = 128·382 − 1 = 48,895; fc's δ = (N, M, in) = (8, 10, 16384):
    ⌈10/32⌉·⌈16384/32⌉·(64 + 32 + 8 − 2) − 1 = 512·102 − 1 = 52,223."""
    result = archsim.cost(TINY_CNN, array="32x32", batch=8, dataflow="ws")
    c3 = result.table.set_index("layer").loc["c3"]
    assert ws_cycles(2048, 288, 64) == 38_555 == c3["F_cycles"]
    assert ws_cycles(288, 2048, 64) == 48_895 == c3["G_cycles"]
    assert ws_cycles(8, 10, 16384) == 52_223 == result.table.set_index("layer").loc["fc", "D_cycles"]
    assert result.table.set_index("layer").loc["c1", "D_cycles"] == 0  # exact mode: nothing reads the input's δ


def test_layerpipe_plan_read_from_python_against_pipedream():
    """Hand check. Four layers on four processors: PipeDream's only contiguous split is one layer each, so its
    iteration is the largest layer total (c3: 38,555 + 48,895 + 38,555 = 126,005 cycles). LayerPipe's stages
    are the sums of their ops (δ′ and δ″ real sub-GEMMs, each ≤ its whole δ plus fold overhead), its iteration
    the slowest stage, below PipeDream's."""
    profile = archsim.profile(TINY_CNN, array="32x32", batch=8)
    pipedream = archsim.pipeline(profile, processors=4, method="pipedream")
    totals = profile.forward + profile.weight_grad + profile.delta
    assert pipedream.max_stage_cost == max(totals) == 126_005
    layerpipe = archsim.pipeline(profile, processors=4, method="layerpipe")
    frame = layerpipe.to_frame()
    for stage, row in zip(layerpipe.stages, frame.itertuples()):
        assert row.total_cycles == pytest.approx(sum(op.cost for op in stage.ops))
    assert layerpipe.max_stage_cost == frame["total_cycles"].max() < pipedream.max_stage_cost
    split = {(op.layer, op.kind): op for stage in layerpipe.stages for op in stage.ops if op.kind in ("D1", "D2")}
    # c3's δ (stride 1) is the GEMM (N·H·W, R·S·M, C) = (2048, 576, 32): 18 · (64 + 32 + 2048 − 2) − 1 = 38,555;
    # split on its rows, δ″ takes split_part rows and δ′ the rest, each paying the 18 folds' fill again
    d1, d2 = split[("c3", "D1")], split[("c3", "D2")]
    assert (d1.split_axis, d2.split_axis) == ("rows", "rows") and d2.borrowed and not d1.borrowed
    assert ws_cycles(2048, 576, 32) == 38_555 == profile.delta[2]
    assert d1.cost == ws_cycles(2048 - d2.split_part, 576, 32) and d2.cost == ws_cycles(d2.split_part, 576, 32)


def test_out_of_order_schedules_have_a_python_entry_point():
    """Failed before: the out-of-order backprop pipelines ran only from ``archsim schedule``
    (``archsim.schedule`` did not exist, and docs/api.md named no Python route). Hand trace, 4 layers on 2
    devices, F = D = G = 1, no δ for layer 1: mp runs the 11 ops one after another (4 F + 3 D + 4 G = 11);
    ooo-pipe1 (l1, l2 on d1) runs F1–F4 (0–4), D4, D3 on d2 (4–6), D2 on d1 (6–7) beside G4 on d2, then G2,
    G3 (7–8) and G1 (8–9): 9; ooo-pipe2 (l1, l3 on d1) runs D4 (4–5), D3 ∥ G4 (5–6), D2 ∥ G3 (6–7),
    G1 ∥ G2 (7–8): 8."""
    from archsim.policies.ooo import layer_chain

    chain = layer_chain([1.0] * 4, [1.0] * 4, [1.0] * 4)
    makespans = {policy: archsim.schedule(chain, policy=policy, processors=2).makespan
                 for policy in ("mp", "ooo-pipe1", "ooo-pipe2")}
    assert makespans == {"mp": 11, "ooo-pipe1": 9, "ooo-pipe2": 8}
    frame = archsim.schedule(chain, policy="ooo-pipe2", processors=2).timeline.to_frame()
    order = [f"{kind}{layer[1:]}" for kind, layer in
             zip(*(frame.sort_values(["start", "processor"])[c] for c in ("kind", "layer")))]
    assert order == ["F1", "F2", "F3", "F4", "D4", "D3", "G4", "G3", "D2", "G1", "G2"]
    # Fig. 5 (the paper): 8 layers on 2 devices give 23, 19 and 16 units
    assert [archsim.schedule("ffnn8", policy=policy, processors=2, unit_costs=True).makespan
            for policy in ("mp", "ooo-pipe1", "ooo-pipe2")] == [23, 19, 16]


def test_schedule_refuses_as_the_command_does():
    """Failed before (no ``archsim.schedule``): ``group`` beside a contiguous allocation, and a device left idle
    warned as ``archsim schedule`` notes it (1f1b, once refused here, runs now: tests/test_schedule_api.py)."""
    with pytest.raises(InputError) as caught:
        archsim.schedule("ffnn8", policy="gpipe", processors=2, group=2)
    assert caught.value.where.field == "group"
    with pytest.warns(UserWarning, match="uses 4 of the 5 processors; 1 stays idle"):
        archsim.schedule("ffnn8", policy="gpipe", processors=5, unit_costs=True)  # ⌈8/5⌉ = 2 layers a device


def test_a_misspelt_keyword_is_one_input_error_naming_the_nearest():
    """Failed before: docs/api.md says a keyword no function takes is an ``InputError`` naming it and the
    nearest valid one, but ``archsim.cost(..., batchh=3)`` raised Python's ``TypeError``."""
    with pytest.raises(InputError, match="did you mean 'batch'") as caught:
        archsim.cost(TINY_CNN, batchh=3)
    assert caught.value.where.field == "batchh"
    with pytest.raises(InputError, match="did you mean 'processors'"):
        archsim.schedule("ffnn8", policy="gpipe", procesors=2)


CLUSTER = """
[cluster]
name = "tiny"
inter_server_gbps = 8
[[servers]]
count = 2
gpus = 1
intra_server_gbps = 80
"""


def test_a_profile_in_cycles_on_a_cluster_file_is_refused():
    """Failed before: ``archsim.profile`` (cycles) planned on a cluster file (bytes per second) gave a plan
    whose makespan added compute cycles to transfer seconds and called the sum cycles, with no word."""
    from archsim.planners import plan_on_cluster
    from archsim.spp.topology import build_topology

    topology = build_topology(tomllib.loads(CLUSTER), file="tiny")
    with pytest.raises(InputError, match="clock_ghz") as caught:
        plan_on_cluster(archsim.profile(TINY_CNN, batch=8), topology, "spp", 2)
    assert caught.value.where.field == "profile"


def test_profile_prices_seconds_at_a_clock():
    """Failed before (``clock_ghz`` was no keyword of ``archsim.profile``). Hand check: c3's F is 38,555
    cycles (above), at 2 GHz 38,555 / 2e9 s = 1.92775e-5 s, as ``archsim plan --clock-ghz 2`` prices it."""
    profile = archsim.profile(TINY_CNN, array="32x32", batch=8, clock_ghz=2.0)
    assert profile.unit == "seconds"
    assert profile.forward[2] == pytest.approx(38_555 / 2e9, rel=1e-12)


def test_spp_plan_against_brute_force_over_splits():
    """Hand check. Two GPUs on two servers, 8 Gbit/s between them: 1e9 B/s a transfer. One micro-batch of a
    4-layer chain (seconds: F = G = 1, 2, 2, 1; δ = –, 1, 1, 1; 15 s in all). Pipelines run the chain end to
    end plus the boundary's activation and δ: split after l1 15 + (4 + 4) = 23, after l2 15 + (1 + 1) = 17,
    after l3 15 + (3 + 3) = 21; data parallel halves the compute and all-reduces 12 GB of weights,
    2·(2 − 1)/2 · 12e9 / 1e9: 7.5 + 12 = 19.5. Brute force: split after l2, 17 s."""
    from archsim.partition.profile import profile_from_costs
    from archsim.planners import plan_on_cluster
    from archsim.spp.topology import build_topology

    topology = build_topology(tomllib.loads(CLUSTER), file="tiny")
    forward, delta = [1.0, 2.0, 2.0, 1.0], [0.0, 1.0, 1.0, 1.0]
    activation, delta_bytes = [4e9, 1e9, 3e9, 0], [0, 4e9, 1e9, 3e9]
    profile = profile_from_costs(["l1", "l2", "l3", "l4"], forward, forward, delta, activation, delta_bytes,
                                 [3e9] * 4, unit="seconds")
    total = sum(forward) * 2 + sum(delta)
    candidates = {f"split {k}": total + (activation[k - 1] + delta_bytes[k]) / 1e9 for k in (1, 2, 3)}
    candidates["dp"] = total / 2 + 2 * (2 - 1) / 2 * sum([3e9] * 4) / 1e9
    assert candidates == {"split 1": 23, "split 2": 17, "split 3": 21, "dp": 19.5}
    plan = plan_on_cluster(profile, topology, "spp", 1)
    assert [stage.layers for stage in plan.stages] == [("l1", "l2"), ("l3", "l4")]
    assert plan.makespan == pytest.approx(min(candidates.values()))
    assert plan_on_cluster(profile, topology, "dp", 1).makespan == pytest.approx(candidates["dp"])


def test_bppsa_scan_equals_a_numpy_backprop_and_counts_its_levels():
    """Hand check. An RNN h_t = tanh(W_x x_t + W_h h_{t−1} + b) over T = 7 steps; BPTT by hand:
    ∇h_{t−1} = W_hᵀ((1 − h_t²) ⊙ ∇h_t). The scan's 7 gradients equal it; Algorithm 1 on n + 1 = 8 elements
    runs 2⌈log₂ 8⌉ − 1 = 5 levels (up 4 + 2 pairs, down 1 + 2 + 4: 13 ◇) against the linear scan's 7."""
    from archsim.bppsa import RNNCell, blelloch_scan, linear_scan, rnn_forward, rnn_scan_input

    rng = np.random.default_rng(1)
    w_x, w_h, b = rng.standard_normal((3, 2)), rng.standard_normal((3, 3)), rng.standard_normal(3)
    xs, grad_last = rng.standard_normal((7, 2)), rng.standard_normal(3)
    h, states = np.zeros(3), []
    for x in xs:
        h = np.tanh(w_x @ x + w_h @ h + b)
        states.append(h)
    reference = [grad_last]
    for t in range(6, 0, -1):
        reference.append(w_h.T @ ((1 - states[t] ** 2) * reference[-1]))
    cell = RNNCell(w_x, w_h, b)
    hs = rnn_forward(cell, xs, np.zeros(3))
    assert np.allclose(hs, states)
    elements = rnn_scan_input(cell, hs, grad_last)
    scan = blelloch_scan(elements)
    assert len(scan.gradients()) == 7
    assert all(np.allclose(np.ravel(a), r) for a, r in zip(scan.gradients(), reference))
    assert (len(scan.levels), len(scan.steps)) == (5, 4 + 2 + 1 + 2 + 4)
    assert len(linear_scan(elements).levels) == 7


def test_gang_schedulers_jcts_by_hand():
    """Hand check. Two one-GPU machines; a: 1 worker × 10 iterations of 1 s, b: 1 × 5 of 2 s, c: 2 × 4 of 1 s,
    all at 0, admitted at once (interval 0). Tiresias (2D-LAS, no service yet: arrival order) runs a and b
    to 10 s, then c on both GPUs to 14. Gandiva packs two jobs a GPU, each at half speed: c (with a and b)
    ends at 2·4 = 8; a and b have done 4 s by then, and end 6 s later, at 14."""
    from archsim.cluster import JobCluster, JobSpec, SimConfig, simulate

    jobs = [JobSpec("a", 0.0, 1, 10, "m", 1.0, 1e9, (0.8,), (1e9,), 1e6),
            JobSpec("b", 0.0, 1, 5, "m", 2.0, 1e9, (1.5,), (1e9,), 1e6),
            JobSpec("c", 0.0, 2, 4, "m", 1.0, 1e9, (0.6, 0.9), (1e9, 1e9), 1e6)]
    cluster, config = JobCluster((1, 1)), SimConfig(interval_s=0, unit_s=0)
    tiresias = simulate(jobs, cluster, "tiresias", config).jobs.set_index("job_id")["jct_s"]
    assert tiresias.to_dict() == {"a": 10.0, "b": 10.0, "c": 14.0}
    gandiva = simulate(jobs, cluster, "gandiva", config).jobs.set_index("job_id")["jct_s"]
    assert gandiva.to_dict() == {"a": 14.0, "b": 14.0, "c": 8.0}


def test_gantt_figure_takes_a_timeline_as_write_gantt_does():
    """Failed before: ``gantt_figure(timeline)`` raised AttributeError ('Timeline' has no ``columns``) where
    ``write_gantt`` takes a Timeline or its frame; a notebook draws the figure, it does not write a page."""
    from archsim.report.gantt import gantt_figure

    timeline = archsim.schedule("ffnn8", policy="ooo-pipe2", processors=2, unit_costs=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        figure = gantt_figure(timeline, "ffnn8: ooo-pipe2", unit="units")
    bars = sum(len(trace.x) for trace in figure.data)
    assert bars == len(timeline.timeline.to_frame()) == 8 + 7 + 8  # F, δ (none for layer 1) and G of 8 layers


def test_a_plan_in_seconds_names_its_columns_in_seconds():
    """Failed before: an SPP plan's ``to_frame()`` (a profile in seconds) headed its columns
    ``assigned_cycles``, ``borrowed_cycles`` and ``total_cycles`` over seconds. Hand check: split after l2 (above),
    one replica each: stage 1 runs F, G of l1 and F, G, δ of l2, 1 + 1 + 2 + 2 + 1 = 7 s per micro-batch."""
    from archsim.partition.profile import profile_from_costs
    from archsim.planners import plan_on_cluster
    from archsim.spp.topology import build_topology

    forward = [1.0, 2.0, 2.0, 1.0]
    profile = profile_from_costs(["l1", "l2", "l3", "l4"], forward, forward, [0.0, 1.0, 1.0, 1.0],
                                 [4e9, 1e9, 3e9, 0], [0, 4e9, 1e9, 3e9], [3e9] * 4, unit="seconds")
    frame = plan_on_cluster(profile, build_topology(tomllib.loads(CLUSTER), file="tiny"), "spp", 1).to_frame()
    assert {"assigned_seconds", "borrowed_seconds", "total_seconds"} <= set(frame.columns)
    assert not any(column.endswith("_cycles") for column in frame.columns)
    assert frame["assigned_seconds"].iloc[0] == pytest.approx(7.0)
    cycles = archsim.pipeline(archsim.profile(TINY_CNN, batch=8), processors=2, method="pipedream").to_frame()
    assert "total_cycles" in cycles.columns  # what archsim pipeline prints, unchanged


def test_profile_takes_the_network_keywords_cost_takes():
    """Failed before: ``archsim.profile("vgg16", only="conv")`` was refused (``archsim.pipeline`` and ``plan``
    take ``--only``; ``archsim.cost`` takes ``only``), so a notebook could not plan VGG16's conv layers as the
    papers' pages do. Hand check: VGG16 has 13 conv layers (2 + 2 + 3 + 3 + 3)."""
    profile = archsim.profile("vgg16", only="conv", array="32x32", batch=1)
    assert len(profile.names) == 2 + 2 + 3 + 3 + 3
    cost = archsim.cost("vgg16", only="conv", array="32x32", batch=1)
    assert list(profile.forward) == list(cost["F_cycles"])


def test_spp_from_python_is_archsim_plans_plan(capsys):
    """The api page's SPP example against the command it stands for (docs/papers/spp.md: 17.5 ms, conv1_1–conv3_3
    on 5 GPUs and conv4_1–conv5_3 on 3): ``archsim plan``'s printed makespan and stages are the reference."""
    import json

    from archsim.cli import main
    from archsim.planners import plan_on_cluster
    from archsim.spp.topology import load_topology_file

    cluster = str(Path(__file__).resolve().parents[1] / "configs" / "clusters" / "testbed_1080ti.toml")
    assert main(["plan", "vgg16", "--only", "conv", "--array", "128x128", "--cluster", cluster,
                 "--microbatches", "8", "--micro-batch", "4", "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    seconds = archsim.profile("vgg16", only="conv", array="128x128", batch=4, clock_ghz=1.0)
    plan = plan_on_cluster(seconds, load_topology_file(cluster), "spp", 8)
    assert plan.makespan == pytest.approx(printed["meta"]["makespan_seconds"], rel=1e-12)
    assert [(s.layers[0], s.layers[-1], s.replicas) for s in plan.stages] == \
        [(row["first_layer"], row["last_layer"], row["replicas"]) for row in printed["rows"]]


def test_a_layers_inputs_given_as_one_name_or_a_list():
    """Failed before: ``Layer(..., inputs="c1")`` (one name, not a tuple of one) was read as its characters,
    refused as "layer 'c2' reads 'c', which is not defined above it" though c1 is; a list was kept as a list
    (an unhashable field of a frozen dataclass). One name is a tuple of one, as the API's keywords read it."""
    first = Layer("c1", "conv", 8, 8, 3, 3, 3, 4, padding=1)
    as_text = Layer("c2", "conv", 8, 8, 3, 3, 4, 4, padding=1, inputs="c1")
    as_list = Layer("c2", "conv", 8, 8, 3, 3, 4, 4, padding=1, inputs=["c1"])
    assert as_text.inputs == as_list.inputs == ("c1",)
    assert hash(as_list) == hash(as_text)
    assert Network("n", (first, as_text)).edges == ((0, 1),)


def test_a_job_cluster_of_a_count_and_a_trace_of_no_jobs_are_one_input_error():
    """Failed before: ``JobCluster(2)`` (a count where the machines' sizes go) raised "TypeError: 'int' object is
    not iterable", and ``simulate([], …)`` numpy's "zero-size array to reduction operation"; a list of sizes
    was kept as a list. Each is now one line naming the field."""
    from archsim.cluster import JobCluster, simulate

    with pytest.raises(InputError, match=r"JobCluster.uniform") as caught:
        JobCluster(2)
    assert caught.value.where.field == "machine_sizes"
    assert JobCluster([2, 1]).machine_sizes == (2, 1)
    with pytest.raises(InputError, match="no jobs") as caught:
        simulate([], JobCluster((1,)), "jigsaw")
    assert caught.value.where.field == "jobs"


def test_plan_on_cluster_refuses_a_count_in_one_line():
    """Failed before: ``plan_on_cluster(profile, 2, "spp", 4)`` (a processor count, as ``archsim.pipeline``
    takes) raised an AttributeError from inside; it names what to give instead."""
    from archsim.planners import plan_on_cluster

    seconds = archsim.profile(TINY_CNN, batch=8, clock_ghz=1.0)
    with pytest.raises(InputError, match=r"Topology.flat\(2\)") as caught:
        plan_on_cluster(seconds, 2, "spp", 4)
    assert caught.value.where.field == "cluster"


def test_simulate_docstring_names_every_schedule_it_runs():
    """Failed before: ``archsim.simulate``'s docstring named ``gpipe``, ``1f1b`` or ``layerpipe``, while it runs
    (and its refusal lists) ``gpipe-newest-first`` and ``1f1b-window`` too (docs/concepts.md's variants)."""
    from archsim.policies.pipeline import SCHEDULES

    assert all(f"``{name}``" in archsim.simulate.__doc__ for name in SCHEDULES)
    profile = archsim.profile(TINY_CNN, batch=8)
    plan = archsim.pipeline(profile, processors=2, method="pipedream")
    assert archsim.simulate(plan, profile, microbatches=2, schedule="1f1b-window").makespan > 0


def test_schedule_refuses_array_keywords_beside_a_profile():
    """A profile carries its costs: ``archsim.schedule(profile, array="8x8")`` would ignore the array without a
    word (new function; refused in one line, as ``array_config`` refuses an ArrayConfig beside a .cfg)."""
    profile = archsim.profile(TINY_CNN, batch=8)
    with pytest.raises(InputError, match="profile carries its costs") as caught:
        archsim.schedule(profile, policy="gpipe", processors=2, array="8x8")
    assert caught.value.where.field == "array"


def test_jigsaw_on_a_job_alone_by_hand():
    """Hand check. A job alone on its GPUs: Jigsaw runs its SPB tasks, an iteration ending with its slowest
    worker's task (a: 10 × 0.8 = 8 s; c: 4 × max(0.6, 0.9) = 3.6 s); without SPB every task is the full one
    (10 × 1.0 = 10 s, 4 × 1.0 = 4 s)."""
    from archsim.cluster import JobCluster, JobSpec, SimConfig, simulate

    config = SimConfig(interval_s=0, unit_s=0)
    one = JobSpec("a", 0.0, 1, 10, "m", 1.0, 1e9, (0.8,), (1e9,), 1e6)
    two = JobSpec("c", 0.0, 2, 4, "m", 1.0, 1e9, (0.6, 0.9), (1e9, 1e9), 1e6)
    for job, cluster, spb, full in ((one, JobCluster((1,)), 8.0, 10.0), (two, JobCluster((1, 1)), 3.6, 4.0)):
        assert simulate([job], cluster, "jigsaw", config).column("jct_s")[0] == pytest.approx(spb, rel=1e-12)
        assert simulate([job], cluster, "jigsaw-nospb", config).column("jct_s")[0] == pytest.approx(full, rel=1e-12)
