"""train's inter_server line and meta say how much slower each group crossing leaves runs, not only that it crosses:
DP 8 over 8 servers, 4 under each leaf, is a ring that sends one server's worth out of a leaf, so at 4:1 its uplinks
(one server's NICs a leaf) carry it at full speed; before, the line said "down to 12.5 across leaves … (across leaves:
dp)", which reads as DP at a quarter of its NICs, while its time is the non-blocking fabric's."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import archsim

MODEL = str(Path(__file__).resolve().parents[1] / "configs" / "transformers" / "gpt3_1.3b.toml")
LEAVES = ('[cluster]\n[network]\nnics_per_server = 8\nnic_gbps = 400\nservers_per_leaf = {per_leaf}\n'
          'oversubscription = {over}\n[[servers]]\ncount = {servers}\ngpus = 8\ngpu = "h100"\n')


def _train(tmp_path, name, **layout):
    path = tmp_path / f"{name}.toml"
    path.write_text(LEAVES.format(**layout.pop("fabric")), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result, _ = archsim.train(MODEL, cluster=str(path), global_batch=16, **layout)
    return result.to_dict()["meta"]


def test_a_ring_one_server_out_of_a_leaf_is_not_slowed(tmp_path):
    """8 servers, 4 a leaf, 4:1: a leaf's uplinks carry 4 × 8 NICs / 4 = one server's NICs, what the ring's one edge out
    of the leaf needs (hand count), so DP runs as on the non-blocking fabric, and the line says so."""
    from archsim.training.table_lines import network_lines

    over = _train(tmp_path, "over", tp=8, dp=8, fabric={"per_leaf": 4, "over": 4, "servers": 8})
    flat = _train(tmp_path, "flat", tp=8, dp=8, fabric={"per_leaf": 4, "over": 1, "servers": 8})
    assert over["breakdown_seconds"]["dp_communication"] == flat["breakdown_seconds"]["dp_communication"]
    inter = over["inter_server"]
    assert inter["leaves_crossed_by"] == ["dp"] and inter["leaves_slowdown"] == {"dp": 1.0}
    assert network_lines(over)["inter_server"].endswith("crossed by dp (across leaves: dp not slowed)")


def test_a_hop_across_leaves_is_slowed_by_the_oversubscription(tmp_path):
    """TP 8 · DP 4 · PP 2 on the same fabric at 2:1: each rank fills one leaf, DP stays under it, and the hop between the
    ranks sends every byte through the uplinks: 2× slower (a 1 GiB send, its latency a rounding error)."""
    meta = _train(tmp_path, "hop", tp=8, dp=4, pp=2, fabric={"per_leaf": 4, "over": 2, "servers": 8})
    inter = meta["inter_server"]
    assert "dp" not in inter["leaves_crossed_by"] and inter["leaves_slowdown"]["pp"] == pytest.approx(2, rel=1e-2)
