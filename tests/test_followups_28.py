"""What the last round left (followups 28), each test failing on the code before its fix: ``archsim plan
--baselines none`` runs SPP alone, its search alone counted by the guard, …"""

from __future__ import annotations

import json

import pytest
from test_docs import ROOT

from archsim.cli import main


def _said(argv, capsys) -> str:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    return err.strip()


def _json(argv, capsys) -> dict:
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


# 1. plan --baselines none: no baseline runs, and the search guard counts SPP's search alone

PLAN = ["plan", "layerpipe_sample", "--cluster", str(ROOT / "configs" / "clusters" / "testbed_1080ti.toml"),
        "--microbatches", "4", "--max-stages", "2"]  # 4 layers, 4 servers × 2 GPUs
# By hand (tests/test_followups_26.py): SPP's 2 stage counts take (2 − 1) · 4² · 8³ / 4 = 2,048 PRM steps, the
# pipedream-prm baseline's 4 stage counts 3 · 4² · 8³ / 4 = 6,144: 8,192 with the default baselines.
SPP_KEYS = ("method", "cluster", "gpus", "microbatches", "makespan_seconds", "stage_counts", "device_order")


def test_plan_without_baselines_runs_spps_search_alone_with_the_same_plan(capsys):
    """Failed before: --baselines took archsim or paper only (argparse refused none), and a limit of 8,191 steps
    refused SPP's 2,048-step search for the baseline's 6,144, naming no way to leave the baselines out."""
    said = _said([*PLAN, "--max-search-steps", "8191"], capsys)
    assert said.endswith("above the limit of 8,191 steps; give --baselines none to run SPP's search alone (2,048 "
                         "steps), --max-search-steps 8192 to run it anyway, or --max-stages 1 (it bounds SPP's "
                         "search only; the pipedream-prm baseline tries every stage count)"), said
    alone = _json([*PLAN, "--max-search-steps", "2048", "--baselines", "none"], capsys)  # SPP's 2,048 steps fit
    both = _json([*PLAN, "--max-search-steps", "8192"], capsys)
    assert alone["rows"] == both["rows"]
    assert {k: alone["meta"][k] for k in SPP_KEYS} == {k: both["meta"][k] for k in SPP_KEYS}
    assert len(both["meta"]["baselines_seconds"]) == 4
    assert alone["meta"]["baselines_seconds"] == {} and alone["meta"]["baselines"] == "none"
    assert set(alone["meta"]) == set(both["meta"]) | {"baselines"}  # the default's keys, as --baselines paper
    over = _said([*PLAN, "--max-search-steps", "2047", "--baselines", "none"], capsys)  # SPP alone is over
    assert over.endswith("about 2,048 steps (≈1.84e-06 s) and 2.84e-05 GB of tables, above the limit of 2,047 "
                         "steps; give --max-search-steps 2048 to run it anyway, or fewer --max-stages"), over


@pytest.mark.parametrize("method", ["dp", "pipedream-prm"])
def test_plan_refuses_a_baseline_method_without_baselines(capsys, method):
    """Failed before (argparse refused none outright): --method dp --baselines none asks for a baseline and none."""
    said = _said([*PLAN, "--method", method, "--baselines", "none"], capsys)
    assert said == (f"archsim plan: error: argument --baselines: --baselines none runs no baseline, and --method "
                    f"{method} is one: drop --baselines none (or give --baselines paper for the SPP paper's "
                    "configuration)")


def test_the_byte_bound_names_baselines_none_where_the_baselines_tables_cross_it():
    """Failed before (no such advice): 1,000 layers on 64 GPUs, SPP's search up to 2 stages holds 0.164 GB of tables,
    the pipedream-prm baseline's of every stage count 6.46 GB, over the 4 GB bound: leaving the baselines out
    fits (SPP's alone), and where they cannot be left out the advice is as before."""
    from types import SimpleNamespace

    from archsim.errors import InputError
    from archsim.spp.plan import check_search_size

    profile, topology = range(1000), SimpleNamespace(devices=64)  # its length and GPU count are what is sized
    for droppable, advice in ((True, "use --baselines none to run SPP's search alone, or fewer GPUs"),
                              (False, "use fewer GPUs")):
        with pytest.raises(InputError) as refused:
            check_search_size(profile, topology, 2, 10**18, ["pipedream-prm"], droppable=droppable)
        assert "above the 4 GB bound" in refused.value.message
        assert refused.value.message.endswith(f"{advice} (--max-stages bounds SPP's search, not the pipedream-prm "
                                              "baseline's)"), refused.value.message
    check_search_size(profile, topology, 2, 10**18, [], droppable=True)  # SPP's alone fits


RESNET = ["plan", str(ROOT / "tests" / "data" / "pipedream" / "profiles" / "resnet50.txt"), "--cluster",
          str(ROOT / "configs" / "clusters" / "spp_sim.toml"), "--microbatches", "8"]


def test_resnet50_on_spp_sim_is_refused_for_its_baseline_naming_baselines_none(capsys):
    """Failed before: refused naming --max-search-steps and --max-stages only. ResNet-50's graph.txt has 176
    layers and spp_sim 32 GPUs: SPP's 31 stage-count steps of PRM take 31 · 176² · 32³ / 4 = 7,866,417,152 steps,
    under the default 10,000,000,000; the pipedream-prm baseline's as many again."""
    said = _said(RESNET, capsys)
    assert "7,866,417,152 steps" in said and "15,732,834,304 steps in all" in said, said
    assert "give --baselines none to run SPP's search alone (7,866,417,152 steps), --max-search-steps " \
           "15732834304 to run it anyway" in said, said


@pytest.mark.long
def test_resnet50_on_spp_sim_plans_without_baselines(capsys):
    """Failed before: refused (above). With --baselines none SPP's search runs alone (≈ 14 s): its plan is its
    fastest stage count, and no baseline is priced."""
    meta = _json([*RESNET, "--baselines", "none"], capsys)["meta"]
    counts = {c["stages"]: c["makespan_seconds"] for c in meta["stage_counts"]}
    assert len(counts) == 32 and meta["baselines_seconds"] == {}
    assert min(counts.values()) == meta["makespan_seconds"]  # json: full digits


# 2. train --balance planned: the chosen split's iteration, simulated to choose it, is not simulated again

GPT3 = str(ROOT / "configs" / "transformers" / "gpt3_1.3b.toml")
A100_NODE = str(ROOT / "configs" / "clusters" / "a100_node.toml")
# docs/search.md's GPT-3 1.3B rows: at PP 4 × DP 2, interleaved (V = 2), the planner's 3,4,3,3,3,3,3,2 runs; at
# PP 2 × DP 4, ZB-V, the planner's 6,7,6,5 is the slower and 6,6,6,6 runs
TRAIN = ["train", GPT3, "--cluster", A100_NODE, "--global-batch", "64", "--micro-batch", "2", "--balance", "planned",
         "--recompute", "full", "--attention", "standard", "--format", "json"]


@pytest.mark.parametrize(("flags", "runs"), [(["--pp", "4", "--dp", "2", "--interleave", "2"], "3,4,3,3,3,3,3,2"),
                                             (["--pp", "2", "--dp", "4", "--schedule", "zb-v"], "6,6,6,6")])
def test_train_planned_balance_simulates_each_split_once(simulated_actions, capsys, flags, runs):
    """Failed before: three iterations simulated (the even split, the planner's, then the chosen one again),
    where timing the two splits is two; the chosen split's result is the one train prints, as --stage-layers
    gives it."""
    planned = _json([*TRAIN[:-2], *flags], capsys)
    assert len(simulated_actions) == 2 and planned["meta"]["stage_layers"] == runs
    given = [*TRAIN[:-2], *flags]
    given[given.index("--balance"):given.index("--balance") + 2] = ["--stage-layers", runs]
    assert _json(given, capsys)["meta"]["iteration_seconds"] == planned["meta"]["iteration_seconds"]


# 3. the sweep report's boxes by array and by batch: one per method × mode/only where a sweep has several

def _box_sweep(tmp_path, mode: str):
    """The speed-up lines' test sweep (tests/test_followups_27.py) on two arrays: 16x16 and 32x32."""
    from test_followups_27 import _sweep

    return _sweep(tmp_path, mode, mode, arrays='"16x16", "32x32"')


@pytest.mark.parametrize("by", ["array", "batch"])
def test_two_modes_are_two_boxes_per_method(tmp_path, by):
    """Failed before: one box per method and array (or batch), pooling the paper rows with the exact ones."""
    import pandas as pd

    from archsim.report.sweep_report import distribution_figure

    results = pd.concat([_box_sweep(tmp_path, "paper"), _box_sweep(tmp_path, "exact")], ignore_index=True)
    results.to_csv(tmp_path / "results.csv", index=False)  # archsim report takes the joined rows as one sweep
    assert main(["report", str(tmp_path / "results.csv"), "--out", str(tmp_path / "report.html")]) == 0
    figure = distribution_figure(results, "layerpipe_sample", by)
    label = (results["rows"].astype(str) + "x" + results["cols"].astype(str)) if by == "array" else results["batch"]
    expected = {(f"{method}, {mode} mode", str(x)): sorted(part["speedup"])
                for (method, mode, x), part in results.assign(x=label).groupby(["method", "mode", "x"])}
    drawn: dict = {}
    for trace in figure.data:
        for x, y in zip(trace.x, trace.y, strict=True):
            drawn.setdefault((trace.name, str(x)), []).append(float(y))
    assert sorted(drawn) == sorted(expected)
    for key, ys in expected.items():
        assert sorted(drawn[key]) == pytest.approx(ys), key
    assert len(expected) == 2 * 2 * 2 and all(len(ys) == 4 for ys in expected.values())  # 2 batches/arrays × 2 P
    first = "16x16" if by == "array" else "4"
    assert expected["layerpipe, paper mode", first] != pytest.approx(expected["layerpipe, exact mode", first])


# 5. an imported nn.MultiheadAttention: its fused projection cut by a Gather (refused in one line, until the
#    CSV could state a part: tests/test_import_parts.py)

MHA = ROOT / "tests" / "data" / "onnx" / "mha.onnx"  # tests/data/onnx/user_models.py's SelfAttention


def test_multihead_attention_shapes_are_torchs():
    """Why the CSV failed: not a wrong shape. By hand, d_model 8, 2 heads of 4, 6 tokens: the fused in-projection
    is one 6 × 8 → 24 GEMM; q·kᵀ is 6 × 4 · 4 × 6 and scores·v 6 × 6 · 6 × 4, each once per head; PyTorch's
    parameters 3·8·8 + 24 + 8·8 + 8 = 288. The q and k scalings (Mul) read 2 × 6 × 4 = 48 elements each, a third
    of the projection's 144, cut by a Gather (the CSV states it as a part: ``/attn/MatMul#1/3``)."""
    from archsim.workload.shipped import load_network

    network = load_network(str(MHA))
    rows = {x.name: (x.kind, x.ifmap_h, x.ifmap_w, x.channels, x.filters, x.repeat) for x in network.layers}
    assert rows["/attn/MatMul"] == ("fc", 6, 1, 8, 24, 1)
    assert rows["/attn/MatMul_1"] == ("matmul", 6, 4, 1, 6, 2) and rows["/attn/MatMul_2"] == ("matmul", 6, 6, 1, 4, 2)
    assert rows["/attn/Gemm"] == ("fc", 6, 1, 8, 8, 1) and network.parameter_count == 288
    scaled = next(x for x in network.layers if x.name == "/attn/Mul")
    assert scaled.ifmap_h * scaled.ifmap_w * scaled.channels == 48 and scaled.inputs == ("/attn/MatMul",)


def test_multihead_attention_imports_stating_the_parts_the_gathers_cut(tmp_path, capsys):
    """Failed before: import wrote the CSV (exit 0) with a note that reading it back fails its shape check; then
    it refused the model. Now the CSV states the parts (``Inputs`` ``NAME#K/N``): q and k, scaled, read parts 1
    and 2 of the projection's three, scores·v part 3; the CSV reads back with its shape check, to the same layers
    (the round trip of costs: tests/test_import_parts.py)."""
    from archsim.workload.csv_loader import parse_topology
    from archsim.workload.shipped import load_network

    out = tmp_path / "mha.csv"
    assert main(["import", str(MHA), "-o", str(out)]) == 0
    assert capsys.readouterr().err == f"wrote {out} (7 layers, 288 parameters)\n"
    read = parse_topology(out.read_text(encoding="utf-8"), shapes="check")
    assert read.layers == load_network(str(MHA)).layers
    assert [(p.layer, p.index, p.count) for p in read.part_reads] == [
        ("/attn/Mul", 1, 3), ("/attn/Mul_1", 2, 3), ("/attn/MatMul_2", 3, 3)]
