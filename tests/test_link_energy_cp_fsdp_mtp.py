"""Link energy of the layouts it refused until 2026-12-05 (``energy_j`` None): context parallelism's K/V exchange,
FSDP's per-unit collectives and MTP modules' collectives, each counted by hand from the documented rule
(archsim.training.context_parallel, context_parallel_a2a, fsdp, mtp: what each sends per GPU) and the wire terms of
a ring of n (an all-gather, reduce-scatter or all-to-all (n − 1)/n · S, an all-reduce 2(n − 1)/n · S, a send S)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_link_energy import FP32, GPT2_PARAMETERS, PJ, cluster, run

import archsim

JOULES_PER_BYTE = 8 * PJ * 1e-12
L, H, HEADS, HEAD_DIM, S = 12, 768, 12, 64, 1024  # GPT-2: multi-head attention, K/V heads = heads
GPT2_LAYER = 12 * H * H + 13 * H  # one layer's weights and biases


def kv(tokens: int) -> int:
    """Bytes of one GPU's K and V for ``tokens`` tokens of one sequence, bf16 (micro-batch 1, TP 1)."""
    return tokens * HEADS * HEAD_DIM * 2 * 2


def links(result) -> float:
    return result.energy_breakdown_j["links"]


def cp_run(tmp_path: Path, cp: int, name: str, **layout):
    return run(tmp_path, PJ, name, dp=1, cp=cp, global_batch=2, micro_batch=1, attention="flash", **layout)


@pytest.mark.parametrize("recompute", ["none", "full"])
def test_cp2_p2p_ring_by_hand(tmp_path, recompute):
    """CP 2, p2p, 2 micro-batches: each layer's forward sends its K/V of s/2 tokens once (CP − 1 steps), the
    backward K/V then dK/dV (2 sends), full recompute the forward's again; the DP group is the 2 CP ranks, a ring
    all-reduce of the fp32 gradients (S each). 2 chips."""
    one = kv(S // 2)
    ring = (1 + (recompute == "full")) * one + 2 * one
    per_chip = 2 * L * ring + GPT2_PARAMETERS * FP32
    result = cp_run(tmp_path, 2, recompute, recompute=recompute)
    assert links(result) == pytest.approx(2 * per_chip * JOULES_PER_BYTE, rel=1e-12)
    assert sum(result.energy_breakdown_j.values()) == pytest.approx(result.energy_j, rel=1e-12)


@pytest.mark.parametrize(("cp_comm", "hierarchy", "forward", "backward"), [
    # p2p: 3 forward steps of K/V of s/4; backward K/V, K/V + dK/dV twice, dK/dV
    ("p2p", None, 3 * kv(S // 4), 6 * kv(S // 4)),
    # all_gather: K and V of s (kv(S)/2 each) gathered, 3/4 of each sent; backward again, and dK, dV scattered
    ("all_gather", None, 2 * 0.75 * kv(S) / 2, 4 * 0.75 * kv(S) / 2),
    # a2a: Q, K, V, O (and dO, dQ, dK, dV) of s/4 tokens at every head, each kv(S // 4)/2, 3/4 of it sent
    ("a2a", None, 4 * 0.75 * kv(S // 4) / 2, 4 * 0.75 * kv(S // 4) / 2),
    # a2a+p2p 2 × 2: the all-to-alls over 2 (1/2 of each sent), the ring over 2 (1 step forward, 2 backward, each
    # K/V of s/2 tokens at half the heads: kv(S // 4))
    ("a2a+p2p", (2, 2), 4 * 0.5 * kv(S // 4) / 2 + kv(S // 4), 4 * 0.5 * kv(S // 4) / 2 + 2 * kv(S // 4)),
])
def test_cp4_exchanges_by_hand(tmp_path, cp_comm, hierarchy, forward, backward):
    """CP 4 on 4 chips, 2 micro-batches, no recompute: each exchange's bytes per layer; the DP group of 4 ring
    all-reduces the fp32 gradients, 2 · 3/4 · S."""
    extra = {"cp_hierarchy": hierarchy} if hierarchy else {}
    result = cp_run(tmp_path, 4, cp_comm.replace("+", "_"), cp_comm=cp_comm, recompute="none", **extra)
    per_chip = 2 * L * (forward + backward) + 1.5 * GPT2_PARAMETERS * FP32
    assert links(result) == pytest.approx(4 * per_chip * JOULES_PER_BYTE, rel=1e-12)


@pytest.mark.parametrize(("reshard", "gathers"), [("after-forward", 2), ("none", 1)])
def test_fsdp_units_by_hand(tmp_path, reshard, gathers):
    """FSDP over DP 2, 2 micro-batches: per micro-batch each layer unit all-gathered in bf16 (again before its
    backward when resharded after the forward), the root (embeddings, final norm) once, every unit's gradients
    reduce-scattered in fp32; a ring of 2 sends half of each buffer. No all-reduce besides."""
    root = GPT2_PARAMETERS - L * GPT2_LAYER
    per_microbatch = (root * 2 + gathers * L * GPT2_LAYER * 2 + GPT2_PARAMETERS * FP32) / 2
    result = run(tmp_path, PJ, reshard, dp=2, global_batch=8, micro_batch=2, fsdp=True, fsdp_reshard=reshard)
    assert links(result) == pytest.approx(2 * 2 * per_microbatch * JOULES_PER_BYTE, rel=1e-12)


def test_fsdp_step_sync_once_a_step_by_hand(tmp_path):
    """``fsdp_grad_sync`` ``step``: every unit gathered and reduce-scattered once, whatever the micro-batches."""
    once = (GPT2_PARAMETERS * 2 + GPT2_PARAMETERS * FP32) / 2
    result = run(tmp_path, PJ, "step", dp=2, global_batch=8, micro_batch=2, fsdp=True, fsdp_reshard="none",
                 fsdp_grad_sync="step")
    assert links(result) == pytest.approx(2 * once * JOULES_PER_BYTE, rel=1e-12)


TINY_LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
              "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 4, "num_hidden_layers": 2,
              "max_position_embeddings": 512, "vocab_size": 1000, "tie_word_embeddings": False,
              "hidden_act": "silu"}


@pytest.mark.parametrize("recompute", ["none", "full"])
def test_mtp_module_collectives_by_hand(tmp_path, recompute):
    """One MTP module, TP 2 without sequence parallelism, one micro-batch of T = 2 × 512 tokens, A = T · h · 2 bytes:
    the module adds its embedding's all-reduce (A), the projection's output all-gather (A/2 sent) and its input
    gradient's all-reduce (2A), the layer's four all-reduces (A each) and the head's logits-gradient all-reduce (A)
    and three cross-entropy all-reduces (T · 4 each); full recompute reruns the projection's and the layer's forward
    ones (A/2 + 2A). A ring of 2 sends S per all-reduce. No DP, no pipeline: nothing else changes. 2 chips."""
    model = tmp_path / "tiny_llama.json"
    model.write_text(json.dumps(TINY_LLAMA))
    tokens = 2 * 512
    a = tokens * 256 * 2
    module = a + a / 2 + 2 * a + 4 * a + a + 3 * tokens * 4 + (a / 2 + 2 * a if recompute == "full" else 0)
    common = {"cluster": cluster(tmp_path, PJ, recompute, 2), "tp": 2, "pp": 1, "dp": 1, "global_batch": 2,
              "micro_batch": 2, "seq": 512, "dtype": "bf16", "sequence_parallel": False, "recompute": recompute}
    with_mtp, without = (archsim.train(str(model), mtp_layers=n, **common)[0] for n in (1, 0))
    assert links(with_mtp) - links(without) == pytest.approx(2 * module * JOULES_PER_BYTE, rel=1e-9)
    assert sum(with_mtp.energy_breakdown_j.values()) == pytest.approx(with_mtp.energy_j, rel=1e-12)
