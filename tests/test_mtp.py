"""DeepSeek-V3's multi-token prediction (archsim.training.mtp). References: the module's definition in DeepSeek-V3's
technical report (arXiv 2412.19437 §2.2: the shared embedding, two RMS norms, a 2h → h projection of their
concatenation, one transformer block, the shared output head) with each weight counted here by hand from the
Hugging Face modules' shapes (``modeling_deepseek.py``: MLA's q_a/q_b/kv_a/kv_b/o projections and two latent norms,
the layer's two norms, the router's h·E weight, experts and shared expert of three h·f matrices each); Megatron-LM's
``num_floating_point_operations`` (``megatron/training/training.py``, commit d98e8a6), read for the MFU's convention:
6 FLOPs per parameter per token of the module's layer (as the last layer's kind: its k routed and shared experts,
its attention core), its norms and projection (3h + 2h²) and the logits again; and archsim itself with MTP off for
the equivalences and properties (the same iteration when the feature is off, whichever way it is turned off)."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path

import pytest

import archsim
from archsim.errors import InputError
from archsim.training.throughput import model_flops
from archsim.workload.model_files import load_transformer

ROOT = Path(__file__).resolve().parents[1]
NODE = str(ROOT / "configs" / "clusters" / "a100_node.toml")  # 8 A100s
H, HEADS, V, S = 256, 4, 1000, 512
Q_LORA, KV_LORA, NOPE, ROPE, VDIM = 64, 32, 32, 16, 32
E, K, F_E, F_DENSE = 8, 2, 128, 512
# a tiny DeepSeek-V3 as its config.json is written: 4 layers, the first dense, then MoE (the last one too)
TINY = {"model_type": "deepseek_v3", "num_hidden_layers": 4, "first_k_dense_replace": 1, "moe_layer_freq": 1,
        "hidden_size": H, "intermediate_size": F_DENSE, "moe_intermediate_size": F_E, "num_attention_heads": HEADS,
        "num_key_value_heads": HEADS, "n_routed_experts": E, "n_shared_experts": 1, "num_experts_per_tok": K,
        "scoring_func": "sigmoid", "routed_scaling_factor": 2.5, "q_lora_rank": Q_LORA, "kv_lora_rank": KV_LORA,
        "qk_nope_head_dim": NOPE, "qk_rope_head_dim": ROPE, "v_head_dim": VDIM, "hidden_act": "silu",
        "vocab_size": V, "max_position_embeddings": S, "tie_word_embeddings": False, "num_nextn_predict_layers": 1}


def _model(tmp_path: Path, **fields) -> str:
    path = tmp_path / "tiny_v3.json"
    path.write_text(json.dumps({**TINY, **fields}))
    return str(path)


def _attention() -> int:
    """MLA's weights, by hand: q_a (h → q_lora), its norm, q_b (→ heads·(nope + rope)), kv_a (h → kv_lora + rope), its
    norm, kv_b (kv_lora → heads·(nope + v)), o (heads·v → h)."""
    return (H * Q_LORA + Q_LORA + Q_LORA * HEADS * (NOPE + ROPE) + H * (KV_LORA + ROPE) + KV_LORA
            + KV_LORA * HEADS * (NOPE + VDIM) + HEADS * VDIM * H)


def test_the_hf_config_trains_its_own_modules_and_the_flag_overrides(tmp_path):
    assert load_transformer("deepseek_v3").mtp_layers == 1  # config.json: "num_nextn_predict_layers": 1
    assert load_transformer("deepseek_v2").mtp_layers == 0  # DeepSeek-V2's has none
    assert load_transformer(_model(tmp_path, num_nextn_predict_layers=2)).mtp_layers == 2
    assert load_transformer("llama3_8b").mtp_layers == 0


def test_model_flops_add_one_module_as_megatron_counts_it(tmp_path):
    """Per token, 6 × (the MoE layer's active weights: attention, two norms, k routed and one shared expert; the
    module's three norms and 2h² projection; the LM head's V·h), plus the attention core's 6·heads·(qk + v)·s."""
    on = load_transformer(_model(tmp_path))
    off = replace(on, mtp_layers=0)
    batch = 3
    active = _attention() + 2 * H + K * 3 * H * F_E + 3 * H * F_E
    per_token = 6 * (active + 3 * H + 2 * H * H + V * H) + 6 * HEADS * ((NOPE + ROPE) + VDIM) * S
    assert model_flops(on, batch) - model_flops(off, batch) == pytest.approx(batch * S * per_token, rel=1e-12)


@pytest.mark.parametrize(("pp", "table"), [(1, 0), (2, 1024 * H)])
def test_the_last_stage_holds_the_module_s_weights(tmp_path, pp, table):
    """The MoE block (attention, two norms, router h·E, 8 experts and the shared one), the projection's 2h·h, three
    norms; at PP 2 the untied token table too (1,000 rows padded to 1,024), which the first stage holds at PP 1."""
    block = _attention() + 2 * H + H * E + E * 3 * H * F_E + 3 * H * F_E
    common = {"cluster": NODE, "pp": pp, "dp": 8 // pp, "global_batch": 8, "dtype": "bf16", "recompute": "none",
              "seq": S}
    on, _ = archsim.train(_model(tmp_path), **common)
    off, _ = archsim.train(_model(tmp_path), mtp_layers=0, **common)
    assert on.memory[-1].parameters - off.memory[-1].parameters == block + 2 * H * H + 3 * H + table
    assert on.memory[0].parameters == off.memory[0].parameters or pp == 1


def test_off_is_the_model_without_it_bit_for_bit(tmp_path):
    """--mtp-layers 0 on a config that trains one = the same config with num_nextn_predict_layers 0: every figure;
    and a model without MTP prices the same whether or not the keyword is given."""
    common = {"cluster": NODE, "pp": 2, "dp": 2, "tp": 2, "ep": 2, "global_batch": 8, "dtype": "bf16",
              "sequence_parallel": True, "recompute": "selective", "seq": S}
    flagged, speed = archsim.train(_model(tmp_path), mtp_layers=0, **common)
    written, speed_written = archsim.train(_model(tmp_path, num_nextn_predict_layers=0), **common)
    assert flagged.to_dict() == written.to_dict() and speed == speed_written
    llama = {"cluster": NODE, "pp": 2, "dp": 4, "global_batch": 8}
    assert archsim.train("llama3_8b", mtp_layers=0, seq=512, **llama)[0].to_dict() == \
        archsim.train("llama3_8b", seq=512, **llama)[0].to_dict()


def test_a_layout_with_m_at_the_end_is_the_default_placement(tmp_path):
    common = {"cluster": NODE, "pp": 2, "dp": 4, "global_batch": 8, "dtype": "bf16", "seq": S}
    by_layout, speed = archsim.train(_model(tmp_path), stage_layers="Et*3|t,mL", **common)
    by_counts, speed_counts = archsim.train(_model(tmp_path), stage_layers=[3, 1], **common)
    assert by_layout.to_dict() == by_counts.to_dict() and speed == speed_counts
    with pytest.raises(InputError, match="has 0 MTP layers \\(m\\), the model trains 1"):
        archsim.train(_model(tmp_path), stage_layers="Et*3|tL", **common)


@pytest.mark.parametrize(("pp", "tp", "recompute", "sp", "more"), [
    (1, 1, "none", False, {}), (2, 2, "full", True, {}), (4, 1, "selective", False, {}), (2, 4, "none", True, {}),
    (2, 1, "none", False, {"ep": 4, "distributed_optimizer": True}),  # the experts' states over their own group
    (2, 1, "full", False, {"schedule": "gpipe"}), (2, 1, "none", False, {"interleave": 2}),
])
def test_more_modules_never_run_faster_nor_hold_less(tmp_path, pp, tp, recompute, sp, more):
    common = {"cluster": NODE, "pp": pp, "tp": tp, "dp": 8 // (pp * tp), "global_batch": 16, "dtype": "bf16",
              "recompute": recompute, "sequence_parallel": sp, "seq": S, **more}
    runs = [archsim.train(_model(tmp_path), mtp_layers=n, **common) for n in (0, 1, 2, 3)]
    for (before, slow), (after, speed) in itertools.pairwise(runs):
        assert after.iteration_seconds > before.iteration_seconds
        assert all(a.total >= b.total for a, b in zip(after.memory, before.memory))
        assert after.memory[-1].total > before.memory[-1].total
        assert speed.tokens_per_second < slow.tokens_per_second


@pytest.mark.parametrize(("settings", "message"), [
    ({"cp": 2, "dp": 1}, "context parallelism's roll"),
    ({"fp8": "hybrid", "cluster": str(ROOT / "configs" / "clusters" / "h100_2_servers.toml")}, "fp8's casts"),
])
def test_what_is_not_priced_is_refused_in_one_line(settings, message):
    """On Llama (MLA refuses CP itself), its MTP modules asked for by the keyword."""
    common = {"cluster": NODE, "pp": 2, "dp": 1, "global_batch": 4, "dtype": "bf16", "seq": 512, **settings}
    with pytest.raises(InputError, match=message) as caught:
        archsim.train("llama3_8b", mtp_layers=1, **common)
    assert "\n" not in str(caught.value) and "mtp_layers=0" in str(caught.value)
    archsim.train("llama3_8b", mtp_layers=0, **common)  # without MTP it prices


def test_search_rejects_the_layouts_train_refuses_and_prices_the_rest_as_train():
    """Llama 3 8B with one module asked for: CP 2 rejected by train's rule, every row its command's train."""
    found = archsim.search("llama3_8b", cluster=NODE, global_batch=16, seq=512, dtype="bf16", cp=[1, 2], top=3,
                           schedule="1f1b", max_micro_batch=2, mtp_layers=1)
    assert found.to_dict()["meta"]["rejected"]["mtp-beside-cp"] > 0 and found.to_dict()["meta"]["mtp_layers"] == 1
    assert found.rows and all(row["cp"] == 1 and "--mtp-layers 1" in row["command"] for row in found.rows)
    assert all("--mtp-num-layers 1" in row["megatron_args"] for row in found.rows)
    row = found.rows[0]
    ran, _ = archsim.train("llama3_8b", cluster=NODE, global_batch=16, seq=512, dtype="bf16", tp=row["tp"],
                           pp=row["pp"], dp=row["dp"], micro_batch=row["micro_batch"], recompute=row["recompute"],
                           sequence_parallel=row["sequence_parallel"], attention=row["attention"], mtp_layers=1)
    assert row["iteration_seconds"] == pytest.approx(ran.iteration_seconds, rel=1e-9, abs=0)
