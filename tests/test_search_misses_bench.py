"""The helpers of benchmarks/bench_search_misses.py (variants tried for issue #38, not adopted) against
hand computations: the max-plus stream of a queued pass, the nccl-tests interpolation, and the
run-ahead variant's layer time on a host-bound forward and a GPU-bound backward."""

from __future__ import annotations

import math

import numpy as np
import pytest
from benchmark_scripts import ROOT, load_benchmark

from archsim.training import iteration
from archsim.training.cluster_file import single_node
from archsim.training.nccl_fit import read_nccl_tables
from archsim.training.parallel import Parallelism
from archsim.workload.transformer import TransformerConfig

bench = load_benchmark("bench_search_misses")
TABLES = read_nccl_tables(ROOT / "tests" / "data" / "e2e" / "nccl_allreduce", "a100")


def test_queued_pass_by_hand():
    """Host every 0.5 s; kernels 1.0, 0.1, 3.0 s: issued at 0.5, 1.0, 1.5; done at 1.5, 1.6, 4.6."""
    assert bench.queued_pass([("a", 1.0), ("b", 0.1), ("c", 3.0)], [], "F", 0.5) == pytest.approx(4.6)


def test_queued_pass_places_the_collective_after_its_layer():
    """Forward: the attention all-reduce follows the projection. proj 1 s, fc2 1 s, the all-reduce 2 s,
    host 0.1 s: proj done at 1.1, the all-reduce (issued at 0.2) at 3.1, fc2 (issued at 0.3) at 4.1 — the
    same total as at the end here, so a host of 2 s tells them apart: proj issued at 2 done at 3, the
    all-reduce issued at 4 done at 6, fc2 issued at 6 done at 7 (at the end: fc2 at 5, the all-reduce 8)."""
    ops, colls = [("proj", 1.0), ("fc2", 1.0)], [("attn.all-reduce", 2.0)]
    assert bench.queued_pass(ops, colls, "F", 0.1) == pytest.approx(4.1)
    assert bench.queued_pass(ops, colls, "F", 2.0) == pytest.approx(7.0)
    assert bench.queued_pass(ops, [("other.all-reduce", 2.0)], "F", 2.0) == pytest.approx(8.0)


def test_nccl_seconds_at_and_between_the_table_sizes():
    """At a table size: the mean of its two runs (a100_AR_GPU8: 1 MiB 92,790 and 92,150 ns; 2 MiB 93,250
    and 92,970 ns); at their geometric midpoint the geometric mean of the two; past the largest
    (1 GiB: 8,193,000 and 8,196,400 ns) in proportion to the bytes."""
    one, two = (92790 + 92150) / 2e9, (93250 + 92970) / 2e9
    assert bench.nccl_seconds(TABLES, 2**20, 8) == pytest.approx(one)
    assert bench.nccl_seconds(TABLES, 2**20 * math.sqrt(2), 8) == pytest.approx(math.sqrt(one * two))
    assert bench.nccl_seconds(TABLES, 2**31, 8) == pytest.approx(2 * (8193000 + 8196400) / 2e9)
    assert bench.nccl_seconds(TABLES, 2**19, 8) == pytest.approx(one)  # below the table: its smallest time


def test_run_ahead_layer_is_the_max_of_the_sums():
    """With full recompute a layer under run-ahead takes max(2·GPU_f + GPU_b, 2·host_f + host_b), each
    from the stored model's own op rows and host counts (13 forward ops and 19 backward, 2 TP all-reduces
    each way); in a layer whose forward is host-bound and backward GPU-bound (hidden 2,048, TP 4,
    micro-batch 2) that is less than the stored sum of each pass's max."""
    c = TransformerConfig("t", "gpt", 2, 2048, 16, 50257, 1024, 8192, 16, True, 1024)
    par = Parallelism(4, 1, 1, 2, 2, "full", False)
    machine = single_node().machine(par)
    iteration.clear_model_cache()
    stored = iteration.model_pieces(c, par, machine)["layer"]
    with bench.run_ahead():
        merged = iteration.model_pieces(c, par, machine)["layer"]
    iteration.clear_model_cache()
    gpu_f = sum(t for _, k, t in stored.ops if k == "F")
    gpu_b = sum(t for _, k, t in stored.ops if k in "DGB")
    h = machine.efficiency.host_s
    host_f, host_b = h * (13 + 2), h * (19 + 2)
    assert gpu_f < host_f and gpu_b > host_b  # mixed bounds
    expected = max(2 * gpu_f + gpu_b, 2 * host_f + host_b)

    def total(p):
        return p.forward + p.tp_forward + p.recompute + p.backward_input + p.backward_weight + p.tp_backward

    assert total(merged) == pytest.approx(expected)
    assert total(stored) == pytest.approx(2 * host_f + gpu_b)  # forward and recompute at the host, backward at the GPU
    assert total(merged) < total(stored)
    assert np.isclose(merged.recompute, merged.forward + merged.tp_forward)
