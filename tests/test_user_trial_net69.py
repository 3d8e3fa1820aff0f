"""A cluster engineer beyond one server: 4 servers of 8 H100s on 8 × 400 Gb/s rails, a leaf–spine fabric, and 4
servers of 8 A100s on 2 × 200 Gb/s NICs shared; their own cluster TOMLs, the collectives of a size across servers,
train and search. Each test failed before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.parallel import Parallelism

LEAVES = ('[cluster]\n[network]\nnics_per_server = 8\nnic_gbps = 400\n{network}\n'
          '[[servers]]\ncount = 4\ngpus = 8\ngpu = "h100"\n')


def _write(tmp_path: Path, text: str, name: str = "c.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _dp_seconds_and_notes(path: Path) -> tuple[float, tuple[str, ...]]:
    """The DP all-reduce of 1 GB over one GPU per server (TP 8 fills each server, DP 4 over the four), and the
    cluster file's notes."""
    from archsim.collectives import collective_seconds

    cluster = load_gpu_cluster(path)
    par = Parallelism(tp=8, dp=4, global_batch=4)
    return float(collective_seconds("all-reduce", 1e9, 4, cluster.machine(par).links.dp)), cluster.unread


def test_leaves_without_an_oversubscription_are_noted(tmp_path):
    """servers_per_leaf = 2 alone (the engineer's two leaves, the oversubscription forgotten) priced the DP
    all-reduce across the two leaves exactly as one leaf, non-blocking, without a word: the key was read and
    changed nothing. Reference: the documented default oversubscription is 1, so the time is the one-leaf time;
    with 2, the share across leaves halves (docs/formats.md), so it must be slower."""
    plain, none = _dp_seconds_and_notes(_write(tmp_path, LEAVES.format(network=""), "plain.toml"))
    leaves, notes = _dp_seconds_and_notes(_write(tmp_path, LEAVES.format(network="servers_per_leaf = 2"), "l.toml"))
    assert leaves == plain and none == ()
    assert len(notes) == 1 and notes[0].startswith("servers_per_leaf = 2 changes nothing: without oversubscription")
    assert "give oversubscription above 1" in notes[0]
    blocking, stated = _dp_seconds_and_notes(
        _write(tmp_path, LEAVES.format(network="servers_per_leaf = 2\noversubscription = 2"), "b.toml"))
    assert blocking > plain and stated == ()


def test_leaves_of_a_stated_non_blocking_fabric_are_not_noted(tmp_path):
    """The shipped SuperPOD files state their scalable units with oversubscription = 1.0 written out (a
    non-blocking fabric said in so many words): nothing to tell them."""
    _, notes = _dp_seconds_and_notes(
        _write(tmp_path, LEAVES.format(network="servers_per_leaf = 2\noversubscription = 1.0")))
    assert notes == ()
    for name in ("dgx_h100_superpod.toml", "dgx_a100_superpod.toml"):
        assert not any("servers_per_leaf" in note for note in load_gpu_cluster(f"configs/clusters/{name}").unread)
