"""``archsim pipeline --dfg`` and ``archsim.pipeline_dfg``: LayerPipe's pipelined, retimed training DFG of a
plan, reachable by a user. Expected values: the paper's counts worked by hand (a weight loop of layer l in stage
s of S holds 2(S − s + 1) slots, S − s of them delayed gradients), the critical loop's cost summed by hand from
``archsim cost``'s table, and the closed form of ``archsim pipeline``'s weight_versions column (S − s + 1),
a second derivation of the same fact. These tests failed before ``--dfg`` existed (no such flag)."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest

import archsim
from archsim.cli import main

SAMPLE = ["pipeline", "layerpipe_sample", "--processors", "3"]


def run_json(capsys, argv: list[str]) -> dict:
    assert main([*argv, "--format", "json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def dfg_of(capsys, tmp_path: Path, argv: list[str]) -> tuple[dict, dict]:
    """The run's table (JSON) and the DFG it wrote."""
    path = tmp_path / "dfg.json"
    table = run_json(capsys, [*argv, "--dfg", str(path)])
    return table, json.loads(path.read_text(encoding="utf-8"))


def test_the_worked_example_by_hand(capsys, tmp_path):
    """layerpipe_sample on 3 processors (docs/papers/layerpipe.md): conv1 conv2 | conv3 | conv4, S = 3.
    Layer l in stage s: its weight loop holds 2(S − s + 1) slots = 6, 6, 4, 2; the W register is P = 2 of
    them, the rest are delayed gradients S − s = 2, 2, 1, 0 micro-batches; weight versions S − s + 1 = 3, 2, 1
    per processor (conv1 alone holds 1 in exact mode: no δ reads W_conv1 after its F)."""
    _, doc = dfg_of(capsys, tmp_path, SAMPLE)
    layers = {item["layer"]: item for item in doc["layers"]}
    assert [layers[n]["stage"] for n in ("conv1", "conv2", "conv3", "conv4")] == [1, 1, 2, 3]
    assert [layers[n]["weight_loop_delays"] for n in ("conv1", "conv2", "conv3", "conv4")] == [6, 6, 4, 2]
    assert [layers[n]["delayed_gradients"] for n in ("conv1", "conv2", "conv3", "conv4")] == [2, 2, 1, 0]
    assert [layers[n]["weight_versions_needed"] for n in ("conv1", "conv2", "conv3", "conv4")] == [1, 3, 2, 1]
    assert doc["stage_weight_versions_needed"] == [3, 2, 1] and doc["processor_of_stage"] == [1, 2, 3]
    assert doc["slots_per_microbatch"] == 2 and doc["unit"] == "cycles"
    # The critical loop U1 → F1 → F2 → F3 → F4 → loss → D4 → D3 → D2 → G1 → U1 (conv1's weight loop, 6 slots),
    # its cost summed from the cost table: every F, the δs of conv2..conv4 and conv1's G.
    costs = {row["layer"]: row for row in run_json(capsys, ["cost", "layerpipe_sample"])["rows"]}
    loop_cost = (sum(costs[n]["F_cycles"] for n in ("conv1", "conv2", "conv3", "conv4"))
                 + sum(costs[n]["D_cycles"] for n in ("conv2", "conv3", "conv4")) + costs["conv1"]["G_cycles"])
    bound = doc["iteration_bound"]
    assert loop_cost == 24_247_652
    assert bound["loop_cost"] == loop_cost and bound["loop_delays"] == 6
    assert bound["per_slot"] == pytest.approx(loop_cost / 6) and bound["per_microbatch"] == pytest.approx(loop_cost / 3)
    assert set(bound["critical_loop"]) == {"U[conv1]", "F[conv1]", "F[conv2]", "F[conv3]", "F[conv4]", "loss",
                                           "D[conv4]", "D[conv3]", "D[conv2]", "G[conv1]"}
    assert bound["per_microbatch"] < doc["iteration_cycles"]  # a bound: the plan's stages run no faster


def test_every_edge_is_retimed_legally(capsys, tmp_path):
    """Leiserson–Saxe: w_r = w + r(dst) − r(src) ≥ 0 on every edge, ≥ 1 across a pipeline boundary, and the
    inserted delays are P times the training DFG's plus the delayed gradients on G → U."""
    _, doc = dfg_of(capsys, tmp_path, SAMPLE)
    lag = {node["id"]: node["retiming"] for node in doc["nodes"]}
    k = {item["layer"]: item["delayed_gradients"] for item in doc["layers"]}
    for edge in doc["edges"]:
        assert edge["delays_retimed"] == edge["delays_inserted"] + lag[edge["dst"]] - lag[edge["src"]]
        assert edge["delays_retimed"] >= (1 if edge["boundary"] else 0)
        gradient = re.fullmatch(r"G\[(\w+)\]", edge["src"]) and edge["dst"].startswith("U[")
        extra = 2 * k[edge["src"][2:-1]] if gradient else 0
        assert edge["delays_inserted"] == 2 * edge["delays"] + extra
    registers = [e for e in doc["edges"] if e["src"] == e["dst"]]  # the W registers U → U: one micro-batch
    assert len(registers) == 4 and all(e["delays_retimed"] == 2 for e in registers)


def closed_and_derived(capsys, tmp_path, argv):
    """The table's weight_versions (the simulated window's, 16 micro-batches, where the plain table states
    none: a borrower slower than every processor with layers) and the DFG."""
    table, doc = dfg_of(capsys, tmp_path, argv)
    if "weight_versions" not in table["rows"][0]:
        table = run_json(capsys, [*argv, "--microbatches", "16", "--memory"])
        borrowers = set(doc["borrowed_only_processors"])
        return [1 if row["processor"] in borrowers else row["weight_versions"] for row in table["rows"]], doc
    return [row["weight_versions"] for row in table["rows"]], doc


CONFIGS = [[*SAMPLE[:2], "--processors", str(p)] for p in (2, 3, 4)] + \
    [[*SAMPLE[:2], "--processors", "4", "--array", "128x128", "--mode", "paper"]] + \
    [["pipeline", "vgg16", "--only", "conv", "--mode", "paper", "--processors", str(p)] for p in (2, 5, 8, 12)]


@pytest.mark.parametrize("argv", CONFIGS, ids=[" ".join(a[1:]) for a in CONFIGS])
def test_weight_versions_agree_with_the_closed_form(capsys, tmp_path, argv):
    """The DFG's weight versions per processor equal the table's S − s + 1 (shipped networks of LayerPipe's
    evaluation). One difference, stated and named apart (``weight_versions_needed``): a processor running only
    borrowed δ parts is a DFG stage holding 1 version in both, and on the shipped plans its part adds no
    boundary, so the dependences need one version less on each processor before it than the simulated 1F1B
    window holds (it counts the borrower as a stage). A processor holding only a first layer without δ
    (exact mode) keeps 1 in both (the closed form said S − s + 1 before)."""
    closed, doc = closed_and_derived(capsys, tmp_path, argv)
    borrowed_only = doc["borrowed_only_processors"]
    assert doc["processor_of_stage"] == [r for r in range(1, len(closed) + 1) if closed[r - 1]]
    for stage, processor in enumerate(doc["processor_of_stage"], start=1):
        derived = doc["stage_weight_versions_needed"][stage - 1]
        later_borrowers = sum(1 for b in borrowed_only if b > processor)
        expected = 1 if processor in borrowed_only else derived + later_borrowers
        assert closed[processor - 1] == expected, (processor, closed, doc["stage_weight_versions_needed"])
    assert all(doc["stage_weight_versions_needed"][doc["processor_of_stage"].index(b)] == 1 for b in borrowed_only)


def test_the_stated_differences_occur_where_said(capsys, tmp_path):
    """The cases above are real on shipped inputs (else the test above could not fail on them): conv1 alone
    on p1 of 4 in exact mode (1 version in both), and a borrowed-only processor."""
    closed, four = closed_and_derived(capsys, tmp_path, [*SAMPLE[:2], "--processors", "4"])
    assert four["stage_weight_versions_needed"][0] == closed[0] == 1 and [r["processor"] for r in four["layers"]][:1] == [1]
    closed, borrowed = closed_and_derived(capsys, tmp_path, CONFIGS[3])
    assert borrowed["borrowed_only_processors"] == [2] and borrowed["processor_of_stage"] == [1, 2, 3, 4]
    assert borrowed["stage_weight_versions_needed"] == [3, 1, 2, 1] and closed == [4, 1, 2, 1]
    assert main([*CONFIGS[3], "--dfg", str(tmp_path / "again.json")]) == 0
    assert "archsim pipeline: note: --dfg: processors that run only borrowed δ parts (p2)" in capsys.readouterr().err


def test_dot_is_the_same_graph(capsys, tmp_path):
    """A ``.dot`` name gets Graphviz: every node once (a cluster per stage), every edge with its retimed delays."""
    _, doc = dfg_of(capsys, tmp_path, SAMPLE)
    dot = tmp_path / "dfg.dot"
    assert main([*SAMPLE, "--dfg", str(dot)]) == 0
    text = dot.read_text(encoding="utf-8")
    assert text.startswith("digraph training_dfg {") and text.rstrip().endswith("}")
    assert text.count("subgraph cluster_") == doc["dfg_stages"]
    edges = re.findall(r'^\s*"([^"]+)" -> "([^"]+)" \[label="(\d*)D?"', text, re.MULTILINE)
    assert [(s, d, int(w or 0)) for s, d, w in edges] == [(e["src"], e["dst"], e["delays_retimed"])
                                                          for e in doc["edges"]]
    assert len(re.findall(r'^\s*"[^"]+" \[label=', text, re.MULTILINE)) == len(doc["nodes"])
    assert text.count("color=red") == len(doc["iteration_bound"]["critical_loop"])


@pytest.mark.parametrize(("extra", "words"), [
    (["--method", "gpipe"], "--method layerpipe"),
    (["--microbatches", "2", "--schedule", "gpipe"], "flushes"),
])
def test_a_dfg_the_run_cannot_write_is_one_line_and_nothing_written(capsys, tmp_path, extra, words):
    out, dfg = tmp_path / "table.json", tmp_path / "dfg.json"
    assert main([*SAMPLE, *extra, "--dfg", str(dfg), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("archsim pipeline: error:") and words in err
    assert not dfg.exists() and not out.exists()


@pytest.mark.parametrize("target", ["folder", "under a file"])
def test_a_bad_path_is_one_line_and_nothing_written(capsys, tmp_path, target):
    (tmp_path / "file").write_text("x", encoding="utf-8")
    path = tmp_path / ("folder" if target == "folder" else "file/dfg.json")
    if target == "folder":
        path.mkdir()
    out = tmp_path / "table.json"
    assert main([*SAMPLE, "--dfg", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--dfg" in err[0], err
    assert not out.exists() and {p.name for p in tmp_path.iterdir()} <= {"file", "folder"}
    assert (tmp_path / "file").read_text(encoding="utf-8") == "x"


def test_a_device_node_is_written_through_never_replaced(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root (CI runs as root)")
    node = tmp_path / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    before = os.stat(node)
    assert main([*SAMPLE, "--dfg", str(node)]) == 0
    after = os.stat(node)
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]  # no temp file beside it


def test_the_api_gives_the_cli_s_graph(capsys, tmp_path):
    _, doc = dfg_of(capsys, tmp_path, SAMPLE)
    profile = archsim.profile("layerpipe_sample", array="32x32", batch=32)
    plan = archsim.pipeline(profile, processors=3)
    out = tmp_path / "api.json"
    result = archsim.pipeline_dfg(plan, profile, out=out)
    assert list(result.stage_weight_versions_needed()) == doc["stage_weight_versions_needed"]
    assert result.bound.bound == pytest.approx(doc["iteration_bound"]["per_slot"])
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written["edges"] == doc["edges"] and written["layers"] == doc["layers"]
    with pytest.raises(archsim.InputError, match="method='layerpipe'"):
        archsim.pipeline_dfg(archsim.pipeline(profile, processors=3, method="gpipe"), profile)


@pytest.mark.parametrize("argv", [CONFIGS[3], ["pipeline", "vgg16", "--only", "conv", "--mode", "paper",
                                               "--processors", "12"]], ids=["sample-128", "vgg16-12"])
def test_a_borrowed_only_processor_adds_no_boundary_on_these_plans(capsys, tmp_path, argv):
    """Why the DFG's smaller count is the dependences' (archsim/dfg/of_plan.py): a δ part of layer l run on a
    processor of its own crosses one more pipeline boundary only where the layer l feeds its δ to (l − 1)
    is on l's processor. On both shipped cases it is not: conv1 feeds no layer, conv4_3's δ goes to conv4_2
    on p9, conv4_3 is alone on p10 (where it is so, the DFG prices it: tests/test_borrowed_versions.py)."""
    _, doc = dfg_of(capsys, tmp_path, argv)
    borrowed_only = set(doc["borrowed_only_processors"])
    assert borrowed_only
    layers = {item["layer"]: item for item in doc["layers"]}
    order = [item["layer"] for item in doc["layers"]]
    lent = [name for name, item in layers.items() if borrowed_only & set(item["delta_processors"] or ())]
    assert lent in (["conv1"], ["conv4_3"])
    for name in lent:
        position = order.index(name)
        fed = order[position - 1] if position else None
        assert fed is None or layers[fed]["processor"] != layers[name]["processor"]
