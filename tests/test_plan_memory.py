"""plan warns where a stage of the plan it prints cannot hold its weights and their gradients on one GPU: SPP (as
the paper) and its baselines price time alone, so a model larger than the GPUs' memory was planned without a
word. The figures are a 3-layer PipeDream profile's parameter bytes, added by hand."""

import warnings

import pytest

import archsim
from archsim.cli import main

# Three layers: F, B in ms; activation and parameter bytes. Layers 1-2 hold 40 MB + 100 MB of weights, layer 3 20 MB.
PROFILE = """node1 -- Linear(a) -- forward_compute_time=1.000, backward_compute_time=2.000, activation_size=8000000.000, parameter_size=40000000.000
node2 -- Linear(b) -- forward_compute_time=1.000, backward_compute_time=2.000, activation_size=4000000.000, parameter_size=100000000.000
node3 -- Linear(c) -- forward_compute_time=3.000, backward_compute_time=3.000, activation_size=1000000.000, parameter_size=20000000.000
\tnode1 -- node2
\tnode2 -- node3
"""


def _files(tmp_path, memory_gb):
    graph = tmp_path / "graph.txt"
    graph.write_text(PROFILE)
    cluster = tmp_path / "two.toml"
    cluster.write_text(f"[cluster]\ninter_server_gbps = 80\ngpu_memory_gb = {memory_gb}\n\n"
                       "[[servers]]\ncount = 2\ngpus = 1\nintra_server_gbps = 256\n")
    return str(graph), str(cluster)


def test_a_stage_larger_than_the_gpus_memory_is_warned(tmp_path):
    """SPP's plan at 4 micro-batches, 80 Gbit/s: node1–node2 (F 2 ms, B 4 ms) on one GPU, node3 (F 3, B 3) on the
    other, 𝒲 = 4 × 6 = 24 ms, PE 30.8 ms (by hand: forwards end at 8 ms, the last backward starts at 26.8 ms),
    against 40 ms for data parallelism (4 × 12 / 2 + the all-reduce of 160 MB at 10 GB/s, 16 ms). Its first stage
    holds 140 MB of weights and 140 MB of gradients: 0.28 GB, above 0.2 GB."""
    graph, cluster = _files(tmp_path, 0.2)
    with pytest.warns(UserWarning, match=r"SPP's stage 1 \(node1–node2\) holds 0\.28 GB of weights and their "
                                         r"gradients .* than the cluster file's gpu_memory_gb's 0\.2 GB"):
        plan = archsim.plan(graph, cluster=cluster, microbatches=4)
    assert plan.meta["makespan_seconds"] == pytest.approx(0.0308)
    assert plan.meta["stage_counts"][0]["makespan_seconds"] == pytest.approx(0.040)


def test_a_baseline_plan_is_checked_as_printed(tmp_path, capsys):
    """--method dp: each GPU holds all three layers, 2 × 160 MB = 0.32 GB."""
    graph, cluster = _files(tmp_path, 0.2)
    assert main(["plan", graph, "--cluster", cluster, "--microbatches", "4", "--method", "dp"]) == 0
    err = capsys.readouterr().err
    assert "warning: dp's stage 1 (node1–node3) holds 0.32 GB of weights and their gradients" in err
    assert err.count("\n") == 1


def test_a_plan_that_fits_is_not_warned(tmp_path):
    """0.3 GB holds SPP's stages (0.28 GB and 0.04 GB)."""
    graph, cluster = _files(tmp_path, 0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        archsim.plan(graph, cluster=cluster, microbatches=4)

