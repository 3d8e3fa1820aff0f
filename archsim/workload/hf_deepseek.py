"""Hugging Face ``config.json`` of ``model_type`` ``deepseek_v2`` and ``deepseek_v3`` → a llama-family
:class:`~archsim.workload.transformer.TransformerConfig` with multi-head latent attention (:mod:`archsim.workload.mla`),
routed and shared SwiGLU experts and dense layers (:mod:`archsim.workload.layer_kinds`), as DeepSeek's
``modeling_deepseek.py`` builds them: layer i is a mixture of experts iff ``n_routed_experts`` is set, i ≥
``first_k_dense_replace`` and i % ``moe_layer_freq`` == 0, else a dense SwiGLU MLP of ``intermediate_size``; its
``n_shared_experts`` are one ungated SwiGLU MLP of ``n_shared_experts`` × ``moe_intermediate_size``
(``DeepseekV3MoE.shared_experts``). ``num_nextn_predict_layers``, the multi-token prediction modules DeepSeek-V3
trains (one), is the config's ``mtp_layers`` (priced on the last stage: :mod:`archsim.training.mtp`); they are
not in its parameter count, as DeepSeek-V3's 671B excludes them."""

from __future__ import annotations

from archsim.errors import InputError
from archsim.validate import shown
from archsim.workload.config_checks import ROUTER_SCORES
from archsim.workload.config_fields import EXPERT_ONLY, check_absent_defaults, get_key
from archsim.workload.transformer import TransformerConfig

NAMES = {"layers": "num_hidden_layers", "hidden": "hidden_size", "heads": "num_attention_heads",
         "kv_heads": "num_key_value_heads", "ffn": "intermediate_size", "vocab": "vocab_size",
         "experts": "n_routed_experts", "experts_per_token": "num_experts_per_tok", "expert_ffn": "moe_intermediate_size",
         "shared_expert_ffn": "n_shared_experts", "dense_layers": "first_k_dense_replace"}
# read, or listed as changing no work archsim prices: group-limited routing (n_group, topk_group, topk_method) and the
# expert bias are elementwise work on the T·E scores beside the router's; aux_loss_alpha/seq_aux a few ops on T·E
KEYS = {"num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "intermediate_size",
        "vocab_size", "max_position_embeddings", "tie_word_embeddings", "hidden_act", "attention_dropout",
        "rms_norm_eps", "rope_theta", "rope_scaling", "n_routed_experts", "num_experts_per_tok",
        "moe_intermediate_size", "n_shared_experts", "first_k_dense_replace", "moe_layer_freq", "q_lora_rank",
        "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "scoring_func",
        "routed_scaling_factor", "norm_topk_prob", "topk_method", "n_group", "topk_group", "aux_loss_alpha",
        "seq_aux", "ep_size", "num_nextn_predict_layers", "quantization_config", "attention_bias", "pretraining_tp",
        "rope_interleave", "head_dim"}


def _count(config: dict, key: str, default: int) -> int:
    """A count that may be 0 (``first_k_dense_replace``): ``default`` when absent or null."""
    value = config.get(key)
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InputError(f"expected a whole number >= 0, got {shown(value)}", field=key)
    return value


def deepseek_from_hf(config: dict, name: str) -> TransformerConfig:
    """DeepSeek-V2/V3's shapes (module docstring); the llama reader's activation, dropout and tie rules."""
    from archsim.workload.hf_config import field_activation, field_number  # the llama reader's field rules

    # an absent n_routed_experts, q_lora_rank, … is DeepseekV2/V3Config's default, not none: refused, as Mistral's
    dense_model = "n_routed_experts" in config and config["n_routed_experts"] is None
    kind = str(config.get("model_type", "")).lower()
    check_absent_defaults(config, kind, EXPERT_ONLY if dense_model else frozenset())
    layers, heads = get_key(config, "num_hidden_layers"), get_key(config, "num_attention_heads")
    first, freq = _count(config, "first_k_dense_replace", 0), get_key(config, "moe_layer_freq", 1)
    expert_ffn = get_key(config, "moe_intermediate_size")
    score = config.get("scoring_func", "softmax")
    if score not in ROUTER_SCORES:
        raise InputError(f"scoring_func {shown(score)} is not modelled: archsim prices {' and '.join(ROUTER_SCORES)} routers",
                         field="scoring_func")
    dense = tuple(i for i in range(layers) if i < first or i % freq)
    # no MoE layer where every layer is dense (first_k_dense_replace ≥ layers) or n_routed_experts is null: a dense
    # MLA model, as HF builds it
    routed = len(dense) < layers and config.get("n_routed_experts") is not None
    experts: dict = {} if not routed else {
        "experts": get_key(config, "n_routed_experts"), "experts_per_token": get_key(config, "num_experts_per_tok"),
        "expert_ffn": expert_ffn, "shared_expert_ffn": _count(config, "n_shared_experts", 0) * expert_ffn,
        "shared_expert_gate": False, "dense_layers": dense, "router_score": score,
        "routed_scaling_factor": field_number(config, "routed_scaling_factor", 1.0)}
    return TransformerConfig(
        name, "llama", layers, get_key(config, "hidden_size"), heads, get_key(config, "vocab_size"),
        get_key(config, "max_position_embeddings"), get_key(config, "intermediate_size"),
        get_key(config, "num_key_value_heads", heads), get_key(config, "tie_word_embeddings", False),
        **experts, q_lora_rank=_count(config, "q_lora_rank", 0), kv_lora_rank=get_key(config, "kv_lora_rank"),
        qk_nope_head_dim=get_key(config, "qk_nope_head_dim"), qk_rope_head_dim=get_key(config, "qk_rope_head_dim"),
        v_head_dim=get_key(config, "v_head_dim"), mtp_layers=_count(config, "num_nextn_predict_layers", 0),
        activation=field_activation(config, "hidden_act", "silu", gated=True),
        attention_dropout=field_number(config, "attention_dropout", 0.0))


__all__ = ["KEYS", "NAMES", "deepseek_from_hf"]
