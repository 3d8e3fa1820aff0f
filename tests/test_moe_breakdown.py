"""The EP all-to-alls as their own breakdown entry (``ep_communication``), against a hand count: a small mixture
of experts at TP 1 (no TP collective at all) whose entry is its layers × micro-batches × four all-to-alls (dispatch
and combine forward, their gradients backward), each of the rank's tokens × k × h × 2 bytes on the EP group."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import archsim
from archsim.collectives import collective_seconds
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.parallel import Parallelism

CLUSTER = Path(__file__).resolve().parents[1] / "configs" / "clusters" / "h100_2_servers.toml"
LAYERS, H, K, SEQ = 2, 256, 2, 128
SMALL_MOE = {"model_type": "mixtral", "num_hidden_layers": LAYERS, "hidden_size": H, "num_attention_heads": 4,
             "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1024, "max_position_embeddings": 512,
             "num_local_experts": 8, "num_experts_per_tok": K}


def _config(tmp_path) -> Path:
    path = tmp_path / "small_moe.json"
    path.write_text(json.dumps(SMALL_MOE))
    return path


@pytest.mark.parametrize("ep", [2, 4])
def test_ep_communication_is_the_priced_all_to_alls(tmp_path, ep):
    keys = {"cluster": CLUSTER, "dp": 4, "global_batch": 8, "seq": SEQ}
    result, _ = archsim.train(_config(tmp_path), ep=ep, **keys)
    one = SEQ * K * H * 2  # a rank's 128 tokens routed twice, 256 wide, 2 bytes each
    link = load_gpu_cluster(CLUSTER).machine(Parallelism(dp=4, ep=ep, global_batch=8)).links.ep
    microbatches = 8 // 4
    expected = LAYERS * microbatches * 4 * float(collective_seconds("all-to-all", one, ep, link))
    assert result.breakdown["ep_communication"] == pytest.approx(expected, rel=1e-12)
    assert result.breakdown["tp_communication"] == 0.0  # TP 1: the all-to-alls used to be counted here
    rows = [r for r in result.ops if r["piece"] == "layer" and r["name"].startswith(("moe.dispatch", "moe.combine"))]
    assert LAYERS * microbatches * sum(r["seconds"] for r in rows) == pytest.approx(expected, rel=1e-12)
    # the iteration is its parts: the entry is carved out of the pipeline's span, not added to it
    assert sum(result.breakdown.values()) == pytest.approx(result.iteration_seconds, rel=1e-12)


def test_no_ep_communication_entry_at_ep_1_nor_on_a_dense_model(tmp_path):
    result, _ = archsim.train(_config(tmp_path), cluster=CLUSTER, dp=4, global_batch=8, seq=SEQ)
    assert "ep_communication" not in result.breakdown
