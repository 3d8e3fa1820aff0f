"""A search row's MFU is over the GPUs' peak at the search's dtype, as train's is: in fp32 the FP32 lanes'
peak (an A100's 19.5 TFLOP/s, not its 312 fp16 tensor-core TFLOP/s), and a GPU with no fp16 peak (the
GTX 1080 Ti) is searched in fp32 as train runs it, not refused for want of an fp16 peak."""

from __future__ import annotations

import pytest

import archsim
from archsim.training.throughput import model_flops
from archsim.workload.model_files import load_transformer
from tests.tiny_search import A100_NODE, tiny_files

GTX_1080_TI = """[cluster]
[[servers]]
gpus = 2
gpu = "gtx-1080-ti"
"""
MIXED_FP32 = """[cluster]
inter_server_gbps = 200
inter_server_link = "per_gpu_pair"

[[servers]]
gpus = 2
gpu = "h100"

[[servers]]
gpus = 2
gpu = "a100-40gb"
"""
SMALL = {"global_batch": 8, "top": 3, "schedule": ["1f1b"], "max_micro_batch": 1, "refine": 0,
         "recompute": ["none"], "sequence_parallel": "off", "attention": "standard", "progress": False}


def _train_mfu(model, cluster, row, dtype):
    """What ``archsim train`` says of the row's configuration."""
    _, rates = archsim.train(model, cluster=cluster, tp=row["tp"], pp=row["pp"], dp=row["dp"], global_batch=8,
                             micro_batch=row["micro_batch"], recompute=row["recompute"], schedule=row["schedule"],
                             attention="standard", dtype=dtype)
    return rates.mfu


def test_fp32_search_mfu_is_over_the_fp32_peak(tmp_path):
    model, cluster = tiny_files(tmp_path, A100_NODE)
    found = archsim.search(model, cluster=cluster, dtype="fp32", **SMALL)
    flops = model_flops(load_transformer(model), 8)
    assert found.rows  # the checks below are in a loop over them (before, an empty search passed)
    for row in found.rows:
        gpus = row["tp"] * row["pp"] * row["dp"]
        # the A100's datasheet FP32 peak, 19.5 TFLOP/s (its fp16 tensor-core peak is 16 × that)
        assert row["mfu"] == pytest.approx(flops / (row["iteration_seconds"] * gpus * 19.5e12), rel=1e-12)
        assert row["mfu"] == pytest.approx(_train_mfu(model, cluster, row, "fp32"), rel=1e-9)


def test_search_runs_on_a_gpu_without_an_fp16_peak(tmp_path):
    model, cluster = tiny_files(tmp_path, GTX_1080_TI)
    found = archsim.search(model, cluster=cluster, dtype="fp32", **SMALL)
    assert found.rows
    for row in found.rows:
        assert row["mfu"] == pytest.approx(_train_mfu(model, cluster, row, "fp32"), rel=1e-9)


def test_mixed_cluster_fp32_search_mfu_matches_train(tmp_path):
    model, cluster = tiny_files(tmp_path, MIXED_FP32)
    # ranks of two GPU types: the closed form is exact on equal ranks only, so the rows are re-timed by
    # the event simulator, as train times them
    found = archsim.search(model, cluster=cluster, dtype="fp32", gpus=4, **{**SMALL, "refine": 3})
    assert found.rows
    flops = model_flops(load_transformer(model), 8)
    for row in found.rows:
        # every rank's own GPU at fp32: the H100 SXM's 66.9 and the A100's 19.5 TFLOP/s, two GPUs each
        assert row["mfu"] == pytest.approx(flops / (row["iteration_seconds"] * 4 * (66.9e12 + 19.5e12) / 2),
                                           rel=1e-12)
        assert row["mfu"] == pytest.approx(_train_mfu(model, cluster, row, "fp32"), rel=1e-9)


def test_fp32_search_memory_is_trains(tmp_path):
    """fp32 activations take twice fp16's bytes: a search row's peak memory is what ``archsim train`` gives
    for its configuration, in fp32 as in fp16 (the fit filter and the row both read it)."""
    model, cluster = tiny_files(tmp_path, A100_NODE)
    for dtype in ("fp32", "fp16"):
        found = archsim.search(model, cluster=cluster, dtype=dtype, **{**SMALL, "top": 50, "max_micro_batch": 2})
        assert {row["pp"] for row in found.rows} >= {1, 2}
        for row in found.rows:
            result, _ = archsim.train(model, cluster=cluster, tp=row["tp"], pp=row["pp"], dp=row["dp"], global_batch=8,
                                      micro_batch=row["micro_batch"], recompute=row["recompute"],
                                      schedule=row["schedule"], attention="standard", dtype=dtype)
            assert row["peak_memory_gib"] == pytest.approx(result.peak_memory_gib, rel=1e-9), (dtype, row)
