"""A first layer without δ (``exact`` lowering: the network input needs no gradient) keeps one weight
version: a weight stash exists so that a micro-batch's backward reads the weights its forward used, and
that layer's backward is G alone, which reads δ and the stashed input, never W (LayerPipe §III-A: "delays
between W and δ correspond to weight stashing"; no δ, no such delay). Expected values are hand counts
from the layers' shapes and the stage positions (S − s + 1 for every other stage). These tests failed
before the fix: the closed form and the footprint gave that layer S − s + 1 versions (4 on
layerpipe_sample's first of 4 processors)."""

from __future__ import annotations

import json

from archsim.array.config import ArrayConfig
from archsim.cli import main
from archsim.footprint import partition_footprint
from archsim.partition import build_profile
from archsim.planners import partition
from archsim.policies.pipeline import simulate_partition
from tests.test_first_layer_stash import CONV_FIRST

FOUR = ["pipeline", "layerpipe_sample", "--processors", "4", "--format", "json"]


def rows(capsys, argv: list[str]) -> list[dict]:
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)["rows"]


def test_first_layer_alone_in_exact_mode_keeps_one_version(capsys):
    """conv1 | conv2 | conv3 | conv4: conv1 alone on p1 → 1; the rest S − s + 1 = 3, 2, 1."""
    table = rows(capsys, [*FOUR, "--mode", "exact"])
    assert [r["layers"] for r in table] == ["conv1", "conv2", "conv3", "conv4"]
    assert [r["weight_versions"] for r in table] == [1, 3, 2, 1]


def test_paper_mode_prices_the_first_layer_s_delta_so_it_stashes(capsys):
    """Paper mode computes δ of conv1 (the paper's DFG has D_1, which reads W_1), so conv1 alone on p1 of 4
    stashes S − s + 1 = 4 versions (a guard: it held before the fix and must hold after). p2 runs only
    conv1's δ′ and is slower than every processor with layers, so the plain table states no count (its
    versions grow with the micro-batches: tests/test_borrowed_versions.py); --memory states p1's."""
    table = rows(capsys, [*FOUR, "--mode", "paper"])
    assert table[0]["layers"] == "conv1" and len(table) == 4 and "weight_versions" not in table[0]
    table = rows(capsys, [*FOUR, "--mode", "paper", "--microbatches", "8", "--memory"])
    assert [table[i]["weight_versions"] for i in (0, 2, 3)] == [4, 2, 1]


def test_memory_counts_the_first_layer_s_weights_once(capsys):
    """--memory: p1 (conv1 alone) holds its weights once: peak = weights + gradients + stashed inputs,
    while 4 micro-batches' inputs are still in flight (G reads them)."""
    table = rows(capsys, [*FOUR, "--mode", "exact", "--microbatches", "8", "--memory"])
    first = table[0]
    assert first["weight_bytes"] == 5 * 5 * 3 * 32  # conv1: 5×5 filters, 3 channels, 32 filters, int8
    assert (first["weight_versions"], first["peak_in_flight"]) == (1, 4)
    assert first["peak_memory_bytes"] == (first["weight_bytes"] + first["gradient_bytes"] + first["optimizer_bytes"]
                                          + first["peak_activation_bytes"])
    assert [r["weight_versions"] for r in table[1:]] == [3, 2, 1]


def test_a_stage_with_the_first_layer_and_others_versions_only_the_others():
    """c0 c1 | f0 f1 (exact, 1F1B, 2 stages): stage 0 keeps 2 versions of c1 (its δ reads W) and one of c0.
    Weights, 2-byte elements: c0 3×3×3×4 = 108 → 216 bytes, c1 3×3×4×4 = 144 → 288 bytes."""
    array = ArrayConfig(8, 8, "ws", element_bytes=2)
    profile = build_profile(CONV_FIRST, array, 2, "exact")
    plan = partition(profile, 2, "gpipe")
    run = simulate_partition(plan, profile, 4, "1f1b")
    first = partition_footprint(plan, profile, run.timeline, run.schedule)[0]
    assert (first.weight_bytes, first.weight_versions) == (216 + 288, 2)
    assert first.peak_bytes == (216 + 2 * 288) + (216 + 288) + first.peak_activation_bytes
