"""Hugging Face ``config.json`` → :class:`~archsim.workload.transformer.TransformerConfig`, for the
``model_type`` values :mod:`archsim.workload.model_files` lists: every field that changes the work is read, or
refused at a value archsim does not model (:data:`FIXED`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from archsim.choices.training import HF_MODEL_TYPES
from archsim.errors import InputError
from archsim.validate import did_you_mean, shown
from archsim.workload.config_fields import check_absent_defaults, file_model_name, get_key, head_dim_channels
from archsim.workload.hf_deepseek import KEYS as DEEPSEEK_KEYS
from archsim.workload.hf_deepseek import NAMES as DEEPSEEK_NAMES
from archsim.workload.hf_deepseek import deepseek_from_hf
from archsim.workload.transformer import ACTIVATIONS, OPT_POSITION_OFFSET, TransformerConfig


@dataclass(frozen=True)
class Fixed:
    """A field archsim models at one setting (``models``, in words): a config that sets it to a value
    ``allowed`` rejects is refused, ``why`` naming the work that would change."""

    key: str
    default: object  # transformers' default, taken when the key is absent or null
    allowed: Callable[[object], bool]
    models: str
    why: str


def _is(expected: object) -> Callable[[object], bool]:
    return lambda value: value == expected


def _on(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


_DROPOUT = "PyTorch runs no dropout kernel at probability 0, and archsim's op lists run one"
_NO_DROPOUT = "archsim's eager op list runs no kernel for it (0 in the published configs)"
_LLAMA = (
    Fixed("attention_bias", False, _is(False), "q, k, v and o without biases", "biases add parameters and gradients"),
    Fixed("mlp_bias", False, _is(False), "gate, up and down without biases", "biases add parameters and gradients"),
    Fixed("pretraining_tp", 1, _is(1), "whole projections",
          "transformers' Llama (the versions that honour it) slices each projection into that many GEMMs"),
)
FIXED: dict[str, tuple[Fixed, ...]] = {  # model_type → the fields it reads at one setting only
    "gpt2": (
        Fixed("add_cross_attention", False, _is(False), "a decoder without cross-attention",
              "a cross-attention sub-layer and its LayerNorm in every block"),
        Fixed("scale_attn_weights", True, _is(True), "scores scaled by 1/√d", "the eager list's scale kernel would not run"),
        Fixed("scale_attn_by_inverse_layer_idx", False, _is(False), "one scale of the scores",
              "the scores divided by the layer's index too: one more kernel over them"),
        Fixed("reorder_and_upcast_attn", False, _is(False), "the scores as one fp16/fp32 matmul",
              "fp32 scores by baddbmm: other kernels and bytes"),
        *(Fixed(key, 0.1, _on, "dropout on", _DROPOUT) for key in ("attn_pdrop", "resid_pdrop", "embd_pdrop")),
    ),
    "opt": (
        Fixed("enable_bias", True, _is(True), "biases on every Linear", "no biases: fewer parameters and gradients"),
        Fixed("layer_norm_elementwise_affine", True, _is(True), "LayerNorms with γ and β",
              "LayerNorms without their parameters"),
        Fixed("_remove_final_layer_norm", False, _is(False), "the final LayerNorm", "the final LayerNorm removed"),
        Fixed("layerdrop", 0.0, _is(0), "every layer run", "layers skipped at random"),
        Fixed("dropout", 0.1, _on, "residual dropout on", _DROPOUT),
        Fixed("attention_dropout", 0.0, _is(0), "no attention dropout", _NO_DROPOUT),
        Fixed("activation_dropout", 0.0, _is(0), "no activation dropout", _NO_DROPOUT),
    ),
    "llama": _LLAMA,
    "qwen3": (  # Qwen3Attention: q, k, v and o biases all follow attention_bias
        Fixed("attention_bias", False, _is(False), "q, k, v and o without biases", "biases add parameters and gradients"),
        Fixed("use_sliding_window", False, _is(False), "full attention in every layer",
              "a sliding window on the layers past max_window_layers: fewer scores there"),
    ),
    "gemma": (
        Fixed("attention_bias", False, _is(False), "q, k, v and o without biases", "biases add parameters and gradients"),
    ),
    "qwen2": (
        Fixed("use_sliding_window", False, _is(False), "full attention in every layer",
              "a sliding window on the layers past max_window_layers: fewer scores there"),
    ),
    "bert": (
        Fixed("add_cross_attention", False, _is(False), "no cross-attention",
              "a cross-attention sub-layer in every layer"),
        Fixed("position_embedding_type", "absolute", _is("absolute"), "learned absolute positions",
              "relative positions add a distance embedding and two einsums per layer"),
        Fixed("chunk_size_feed_forward", 0, _is(0), "the FFN on all tokens at once",
              "the FFN run in chunks: more, smaller kernels"),
        Fixed("hidden_dropout_prob", 0.1, _on, "dropout on", _DROPOUT),
        Fixed("attention_probs_dropout_prob", 0.1, _on, "dropout on", _DROPOUT),
    ),
    "mixtral": (
        Fixed("router_jitter_noise", 0.0, _is(0), "a router without jitter",
              "a multiplicative noise kernel on the router's input in training"),
    ),
    "qwen3_moe": (
        Fixed("attention_bias", False, _is(False), "q, k, v and o without biases", "biases add parameters and gradients"),
        Fixed("use_sliding_window", False, _is(False), "full attention in every layer",
              "a sliding window on the layers past max_window_layers: fewer scores there"),
        Fixed("decoder_sparse_step", 1, _is(1), "every layer sparse", "dense MLP layers between the sparse ones"),
        Fixed("mlp_only_layers", [], lambda value: value == [], "every layer sparse", "dense MLP layers at those indices"),
    ),
    "qwen2_moe": (  # Qwen2MoeAttention: q, k and v with biases, o without, as Qwen2's
        Fixed("use_sliding_window", False, _is(False), "full attention in every layer",
              "a sliding window on the layers past max_window_layers: fewer scores there"),
        Fixed("decoder_sparse_step", 1, _is(1), "every layer sparse", "dense MLP layers between the sparse ones"),
        Fixed("mlp_only_layers", [], lambda value: value == [], "every layer sparse", "dense MLP layers at those indices"),
    ),
    **{kind: (*_LLAMA[:1], Fixed("pretraining_tp", 1, _is(1), "whole projections", "sliced projections"))
       for kind in ("deepseek_v2", "deepseek_v3")},
    "switch_transformers": (
        Fixed("router_bias", False, _is(False), "a router without bias", "a bias on every router's Linear"),
    ),
}


def check_fixed(config: dict, kind: str) -> None:
    """Refuse a field of :data:`FIXED` set to work archsim does not model (one line: field, value, why)."""
    for rule in FIXED.get(kind, ()):
        value = config.get(rule.key)
        value = rule.default if value is None else value
        if not rule.allowed(value):
            raise InputError(f"{rule.key} {shown(value)} is not modelled ({rule.why}); archsim models {rule.models}",
                             field=rule.key)


# A gated unit's name → its gate's activation, as transformers writes it: ACT2FN has no "swiglu", "geglu" or
# "reglu", and a gated MLP (Llama's, Gemma's) names the gate's function ("silu") in hidden_act.
_GATED_UNITS = {"swiglu": "silu", "geglu": "gelu", "reglu": "relu"}


def field_activation(config: dict, key: str, default: str, *, gated: bool = False) -> str:
    """The MLP's activation named by ``key``: one archsim states (``ACTIVATIONS``), else refused — in an
    MLP ``gated`` already (Llama's) a gated unit's name with the gate's name to write instead; elsewhere a
    gated one changes the MLP's GEMMs, others run kernels archsim does not list."""
    value = config.get(key)
    if value is None:
        return default
    gate = _GATED_UNITS.get(value.lower()) if gated and isinstance(value, str) else None
    if gate is not None:
        kind = config.get("model_type")
        raise InputError(f"{key} {shown(value)} is not a Hugging Face activation name: {kind}'s MLP is gated already "
                         f'(activation(gate) · up), and its gate\'s activation is written {key} "{gate}"', field=key)
    if value not in ACTIVATIONS:
        raise InputError(f"{key} {shown(value)} is not modelled: archsim reads gelu_new (GPT-2's) and the one-kernel "
                         f"elementwise activations {', '.join(a for a in ACTIVATIONS if a != 'gelu_new')}; gated "
                         "ones change the MLP's GEMMs, others run kernels it does not list", field=key)
    return str(value)


def field_number(config: dict, key: str, default: float) -> float:
    """A real-valued field (transformers' default when absent or null); its range is checked by
    :class:`TransformerConfig`, which names the field."""
    value = config.get(key)
    if value is None:
        return default
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise InputError(f"expected a number, got {shown(value)}", field=key)
    return value


_LLAMA_NAMES = {"layers": "num_hidden_layers", "hidden": "hidden_size", "heads": "num_attention_heads",
                "kv_heads": "num_key_value_heads", "ffn": "intermediate_size", "vocab": "vocab_size",
                "kv_channels": "head_dim"}
# TransformerConfig's field → the config.json key it was read from, per model_type: a check of the built
# config (heads must divide hidden, …) then names the key the user's file has, not the [transformer] TOML's
HF_NAMES: dict[str, dict[str, str]] = {
    "gpt2": {"layers": "n_layer", "hidden": "n_embd", "heads": "n_head", "ffn": "n_inner", "vocab": "vocab_size"},
    "opt": {"layers": "num_hidden_layers", "hidden": "hidden_size", "heads": "num_attention_heads", "ffn": "ffn_dim",
            "vocab": "vocab_size"},
    **{kind: _LLAMA_NAMES for kind in ("llama", "mistral", "qwen2", "qwen3", "gemma")},
    "mixtral": {**_LLAMA_NAMES, "experts": "num_local_experts", "experts_per_token": "num_experts_per_tok",
                "expert_ffn": "intermediate_size"},
    "qwen3_moe": {**_LLAMA_NAMES, "experts": "num_experts", "experts_per_token": "num_experts_per_tok",
                  "expert_ffn": "moe_intermediate_size"},
    "qwen2_moe": {**_LLAMA_NAMES, "experts": "num_experts", "experts_per_token": "num_experts_per_tok",
                  "expert_ffn": "moe_intermediate_size", "shared_expert_ffn": "shared_expert_intermediate_size"},
    "bert": {"layers": "num_hidden_layers", "hidden": "hidden_size", "heads": "num_attention_heads",
             "ffn": "intermediate_size", "vocab": "vocab_size", "type_vocab": "type_vocab_size"},
    **{kind: DEEPSEEK_NAMES for kind in ("deepseek_v2", "deepseek_v3")},
}


def from_hf(config: dict, path: Path) -> TransformerConfig:
    """The config's shapes, and its ``torch_dtype`` as written where it is a string (metadata: what the
    checkpoint is stored in, which :func:`config_dtype_note` states; ``dtype`` is its name since transformers 4.56)."""
    stated = config.get("torch_dtype", config.get("dtype"))
    try:
        shapes = _shapes(config, path)
    except InputError as exc:
        names = HF_NAMES.get(str(config.get("model_type", "")).lower(), {})
        if type(exc) is not InputError or exc.where.field not in names:
            raise
        raise exc.at(file=exc.where.file, line=exc.where.line, field=names[exc.where.field]) from None
    return replace(shapes, torch_dtype=stated if isinstance(stated, str) else "")


def _shapes(config: dict, path: Path) -> TransformerConfig:
    kind = str(config.get("model_type", "")).lower()
    name = file_model_name(path)
    check_fixed(config, kind)
    if kind == "gpt2":
        hidden, heads = get_key(config, "n_embd"), get_key(config, "n_head")
        positions = get_key(config, "n_positions", config.get("n_ctx"))
        return TransformerConfig(name, "gpt", get_key(config, "n_layer"), hidden, heads, get_key(config, "vocab_size"),
                                 positions, get_key(config, "n_inner", 4 * hidden), heads,
                                 get_key(config, "tie_word_embeddings", True), positions, position_limit=positions,
                                 activation=field_activation(config, "activation_function", "gelu_new"))
    if kind == "opt":
        hidden = get_key(config, "hidden_size")
        if config.get("do_layer_norm_before", True) is not True or config.get("word_embed_proj_dim", hidden) != hidden:
            raise InputError("OPT with LayerNorms after the blocks or a word_embed_proj_dim other than hidden_size "
                             "(OPT-350m's projections) is not modelled", field="model_type")
        positions = get_key(config, "max_position_embeddings")
        return TransformerConfig(name, "opt", get_key(config, "num_hidden_layers"), hidden,
                                 get_key(config, "num_attention_heads"), get_key(config, "vocab_size"), positions,
                                 get_key(config, "ffn_dim"), get_key(config, "num_attention_heads"),
                                 get_key(config, "tie_word_embeddings", True), positions + OPT_POSITION_OFFSET,
                                 position_limit=positions, activation=field_activation(config, "activation_function", "relu"))
    if kind in GEMMA_LATER:
        raise InputError(f"model_type {kind!r} is not read: {GEMMA_LATER[kind]} are not modelled (archsim reads "
                         "Gemma 1, model_type 'gemma')", field="model_type")
    if kind in MOE_UNREAD:
        raise InputError(_moe_refusal(config, kind), field="model_type")
    experts, qwen_moe = {}, kind in ("qwen2_moe", "qwen3_moe")
    if kind in MOE_READ:  # Mixtral is Mistral's layer, Qwen3-MoE Qwen3's, Qwen2-MoE Qwen2's, with routed SwiGLU experts
        experts = {field: get_key(config, HF_NAMES[kind][field]) for field in ("experts", "experts_per_token", "expert_ffn")}
        if "shared_expert_ffn" in HF_NAMES[kind]:  # Qwen2-MoE's shared expert, beside the routed ones
            experts["shared_expert_ffn"] = get_key(config, HF_NAMES[kind]["shared_expert_ffn"])
        kind = MOE_READ[kind]
    if kind in ("llama", "mistral", "qwen2", "qwen3", "gemma"):
        check_absent_defaults(config, config.get("model_type"))  # Mistral's num_key_value_heads 8, not the heads
        heads, hidden = get_key(config, "num_attention_heads"), get_key(config, "hidden_size")
        gemma = kind == "gemma"
        # Mistral-NeMo's 128 at hidden 5120 over 32 heads; GemmaConfig's default 256; Qwen3's configs state it
        head_dim = {"gemma": 256, "qwen3": None}.get(kind, 0)
        return TransformerConfig(name, "llama", get_key(config, "num_hidden_layers"), hidden, heads,
                                 get_key(config, "vocab_size"), get_key(config, "max_position_embeddings"),
                                 # Qwen MoE's layers are all routed (FIXED: decoder_sparse_step 1, no mlp_only_layers),
                                 # so its intermediate_size sizes no work: absent, the expert width stands in (TP's check)
                                 get_key(config, "intermediate_size", experts.get("expert_ffn") if qwen_moe else None),
                                 get_key(config, "num_key_value_heads", heads), get_key(config, "tie_word_embeddings", gemma),
                                 kv_channels=head_dim_channels(config, "llama", heads, hidden, head_dim),
                                 sliding_window=get_key(config, "sliding_window", required=False) if kind == "mistral" else None,
                                 activation=_gemma_activation(config) if gemma else field_activation(config, "hidden_act", "silu", gated=True),
                                 attention_dropout=field_number(config, "attention_dropout", 0.0),
                                 partial_rotary_factor=field_number(config, "partial_rotary_factor", 1.0),
                                 qkv_bias=kind == "qwen2", qk_norm=kind == "qwen3", scaled_embeddings=gemma, **experts)
    if kind == "bert":
        positions = get_key(config, "max_position_embeddings")
        return TransformerConfig(name, "bert", get_key(config, "num_hidden_layers"), get_key(config, "hidden_size"),
                                 get_key(config, "num_attention_heads"), get_key(config, "vocab_size"), positions,
                                 get_key(config, "intermediate_size"), get_key(config, "num_attention_heads"), True,
                                 positions, get_key(config, "type_vocab_size", 2), position_limit=positions,
                                 activation=field_activation(config, "hidden_act", "gelu"))
    if kind == "switch_transformers":
        return _switch_from_hf(config, name)
    if kind in ("deepseek_v2", "deepseek_v3"):
        return deepseek_from_hf(config, name)
    reads = f"archsim reads {', '.join(HF_MODEL_TYPES)} configs (or write a [transformer] TOML)"
    if config.get("model_type") is None:  # not "model_type None": a config.json states its type by this key
        raise InputError(f"missing key: the model's type ({reads})", field="model_type", missing=True)
    raise InputError(f"model_type {config.get('model_type')!r} is not read"
                     f"{did_you_mean(kind, HF_MODEL_TYPES)}; {reads}", field="model_type")



# The keys each model_type's reader above takes, its FIXED keys aside, and those docs/formats.md lists as
# changing no work; a key in none of them is not read, and unread_fields names it (a note, not a refusal:
# most are metadata, but one may be work archsim lacks — a llama-typed config's num_local_experts).
_METADATA = {"model_type", "architectures", "transformers_version", "torch_dtype", "dtype", "bos_token_id",
             "eos_token_id", "pad_token_id", "sep_token_id", "decoder_start_token_id", "use_cache", "initializer_range",
             "_name_or_path", "id2label", "label2id", "task_specific_params"}
_LLAMA_KEYS = {"num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "intermediate_size",
               "vocab_size", "max_position_embeddings", "tie_word_embeddings", "hidden_act", "hidden_activation",
               "head_dim", "attention_dropout", "partial_rotary_factor", "sliding_window", "max_window_layers",
               "rms_norm_eps", "rope_theta", "rope_scaling", "add_cross_attention", "attention_bias"}
KNOWN_KEYS: dict[str, set[str]] = {
    "gpt2": {"n_layer", "n_embd", "n_head", "vocab_size", "n_positions", "n_ctx", "n_inner", "tie_word_embeddings",
             "activation_function", "layer_norm_epsilon", "summary_type", "summary_use_proj", "summary_activation",
             "summary_proj_to_labels", "summary_first_dropout"},
    "opt": {"num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size", "max_position_embeddings",
            "ffn_dim", "tie_word_embeddings", "activation_function", "do_layer_norm_before", "word_embed_proj_dim",
            "init_std", "add_cross_attention"},
    **{kind: _LLAMA_KEYS for kind in ("llama", "mistral", "qwen2", "qwen3", "gemma")},
    # the router's load-balancing loss is run whatever its coefficient (Megatron's aux_loss), its logits' output
    # and Qwen3-MoE's renormalised top-k probabilities are a few elementwise ops on T·k values
    "mixtral": _LLAMA_KEYS | {"num_local_experts", "num_experts_per_tok", "router_aux_loss_coef", "output_router_logits"},
    "qwen3_moe": _LLAMA_KEYS | {"num_experts", "num_experts_per_tok", "moe_intermediate_size", "router_aux_loss_coef",
                                "output_router_logits", "norm_topk_prob"},
    "qwen2_moe": _LLAMA_KEYS | {"num_experts", "num_experts_per_tok", "moe_intermediate_size", "router_aux_loss_coef",
                                "output_router_logits", "norm_topk_prob", "shared_expert_intermediate_size"},
    "bert": {"num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "vocab_size",
             "max_position_embeddings", "type_vocab_size", "hidden_act", "layer_norm_eps", "is_decoder",
             "classifier_dropout"},
    "switch_transformers": {"num_layers", "num_decoder_layers", "num_sparse_encoder_layers",
                            "num_sparse_decoder_layers", "encoder_sparse_step", "decoder_sparse_step", "is_gated_act",
                            "feed_forward_proj", "dropout_rate", "router_jitter_noise", "tie_word_embeddings",
                            "num_heads", "d_model", "vocab_size", "d_ff", "num_experts", "expert_capacity", "d_kv",
                            "relative_attention_num_buckets", "relative_attention_max_distance", "layer_norm_epsilon",
                            "initializer_factor", "router_dtype", "router_z_loss_coef", "router_aux_loss_coef"},
    **{kind: DEEPSEEK_KEYS for kind in ("deepseek_v2", "deepseek_v3")},
}


def unread_fields(config: dict) -> list[str]:
    """The keys of a read ``config.json`` that archsim neither reads, refuses at some value, nor lists as
    changing no work (sorted); [] for a model_type it does not read (refused elsewhere)."""
    kind = str(config.get("model_type", "")).lower()
    if kind not in KNOWN_KEYS:
        return []
    known = KNOWN_KEYS[kind] | _METADATA | {rule.key for rule in FIXED.get(kind, ())}
    return sorted(key for key in config if key not in known)


# Gemma 2 and 3's work Gemma 1's model lacks: refused by name, not read as Gemma 1
_GEMMA3 = ("its local (sliding-window) and global attention layers, the norms after each attention and MLP block, "
           "and its q and k norms")
GEMMA_LATER = {
    "gemma2": "its alternating local (sliding-window) and global attention layers, the norms after each attention "
              "and MLP block, and the attention and final logit soft-capping",
    "gemma3": _GEMMA3,
    "gemma3_text": _GEMMA3,
}


# Sparse mixture-of-experts decoders: model_type → the fields naming the routed experts and the experts per
# token. A router and each expert's MLP on its share of the tokens are work archsim's Llama layer lacks, so they
# are refused by name rather than reported as "not read" (or mistaken for their dense attention shape).
MOE_EXPERTS = {
    "mixtral": ("num_local_experts", "num_experts_per_tok"),
    "phimoe": ("num_local_experts", "num_experts_per_tok"),
    "qwen2_moe": ("num_experts", "num_experts_per_tok"),
    "qwen3_moe": ("num_experts", "num_experts_per_tok"),
    "olmoe": ("num_experts", "num_experts_per_tok"),
    "deepseek_v2": ("n_routed_experts", "num_experts_per_tok"),
    "deepseek_v3": ("n_routed_experts", "num_experts_per_tok"),
}


# The mixture-of-experts model_types read (→ the dense model_type whose layer they share: routed SwiGLU experts
# in every layer's MLP; Qwen2-MoE's sigmoid-gated shared expert beside them), and why each other one is refused
MOE_READ = {"mixtral": "mistral", "qwen3_moe": "qwen3", "qwen2_moe": "qwen2"}  # DeepSeek's: hf_deepseek.py
MOE_UNREAD = {
    "phimoe": "its SparseMixer router and LayerNorms with biases",
    "olmoe": ("its q and k RMS norms over the whole projection (a·d and kv·d wide, not per head as Megatron-Core's "
              "--qk-layernorm) and clip_qkv"),
}


def _moe_refusal(config: dict, kind: str) -> str:
    """One line: a mixture-of-experts ``model_type`` archsim does not read, its experts as the config states
    them, and the work it has that archsim does not model."""
    stated = ", ".join(f"{key} {config[key]}" for key in MOE_EXPERTS[kind] if config.get(key) is not None)
    return (f"model_type {kind!r} is a sparse mixture-of-experts model{f' ({stated})' if stated else ''}: "
            f"{MOE_UNREAD[kind]} are not modelled (archsim reads the mixture-of-experts "
            f"{', '.join(MOE_READ)}, deepseek_v2, deepseek_v3 and switch_transformers)")


def _gemma_activation(config: dict) -> str:
    """GemmaMLP's gate activation: ``hidden_activation``, else gelu_pytorch_tanh (transformers' GemmaMLP
    ignores the older ``hidden_act``, google/gemma-7b's "gelu", and warns). Gemma's GeGLU is the SwiGLU
    MLP's three GEMMs with a gelu gate; the activation is costed as the same elementwise ops."""
    return field_activation(config, "hidden_activation", "gelu_pytorch_tanh", gated=True)


def _switch_from_hf(config: dict, name: str) -> TransformerConfig:
    """``SwitchTransformersConfig``: equal encoder and decoder depth and sparse step (as its ``__init__``
    derives it: layers // sparse layers when those are given), ReLU FFNs without gate, dropout and router
    jitter on, tied embeddings (the LM head scaled by d_model^-0.5); anything else is refused, not
    mis-modelled."""
    layers = get_key(config, "num_layers")
    decoder_layers = get_key(config, "num_decoder_layers", layers)
    step = (layers // get_key(config, "num_sparse_encoder_layers") if "num_sparse_encoder_layers" in config
            else get_key(config, "encoder_sparse_step"))
    decoder_step = (decoder_layers // get_key(config, "num_sparse_decoder_layers")
                    if "num_sparse_decoder_layers" in config else get_key(config, "decoder_sparse_step"))
    same = (decoder_layers == layers and decoder_step == step and step >= 1 and layers % step == 0
            and config.get("is_gated_act", False) is False
            and str(config.get("feed_forward_proj", "relu")).lower() == "relu"
            and config.get("dropout_rate", 0.1) != 0 and config.get("router_jitter_noise", 0.01) != 0
            and get_key(config, "tie_word_embeddings", True))
    if not same:
        raise InputError("Switch Transformers with unequal encoder and decoder depth or sparse step, a depth the "
                         "sparse step does not divide, gated or non-ReLU FFNs, no dropout or router jitter, or "
                         "untied embeddings are not modelled", field="model_type")
    heads = get_key(config, "num_heads")
    return TransformerConfig(name, "switch", layers // step, get_key(config, "d_model"), heads,
                             get_key(config, "vocab_size"), 512, get_key(config, "d_ff"), heads, True,
                             experts=get_key(config, "num_experts"), expert_capacity=get_key(config, "expert_capacity"),
                             sparse_step=step, kv_channels=heads * get_key(config, "d_kv"),
                             position_buckets=get_key(config, "relative_attention_num_buckets"))
