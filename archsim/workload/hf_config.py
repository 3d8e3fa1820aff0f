"""Hugging Face ``config.json`` → :class:`~archsim.workload.transformer.TransformerConfig`: gpt2, opt,
llama/mistral, bert and switch_transformers. Every field that changes the work is read, or refused when
set to a value archsim does not model; the fields that change no work are listed in docs/formats.md."""

from __future__ import annotations

from pathlib import Path

from archsim.errors import InputError
from archsim.workload.transformer import ACTIVATIONS, OPT_POSITION_OFFSET, TransformerConfig, _get


def _activation(config: dict, key: str, default: str) -> str:
    """The MLP's activation named by ``key``: one archsim states (``ACTIVATIONS``), else refused — a
    gated one changes the MLP's GEMMs, others run kernels archsim does not list."""
    value = config.get(key)
    if value is None:
        return default
    if value not in ACTIVATIONS:
        raise InputError(f"{key} {value!r} is not modelled: archsim reads gelu_new (GPT-2's) and the one-kernel "
                         f"elementwise activations {', '.join(a for a in ACTIVATIONS if a != 'gelu_new')}; gated "
                         "ones change the MLP's GEMMs, others run kernels it does not list", field=key)
    return str(value)


def from_hf(config: dict, path: Path) -> TransformerConfig:
    kind = str(config.get("model_type", "")).lower()
    name = path.parent.name if path.name == "config.json" else path.stem
    if kind == "gpt2":
        hidden, heads = _get(config, "n_embd"), _get(config, "n_head")
        positions = _get(config, "n_positions", config.get("n_ctx"))
        return TransformerConfig(name, "gpt", _get(config, "n_layer"), hidden, heads, _get(config, "vocab_size"),
                                 positions, _get(config, "n_inner", 4 * hidden), heads,
                                 _get(config, "tie_word_embeddings", True), positions, position_limit=positions,
                                 activation=_activation(config, "activation_function", "gelu_new"))
    if kind == "opt":
        hidden = _get(config, "hidden_size")
        if config.get("do_layer_norm_before", True) is not True or config.get("word_embed_proj_dim", hidden) != hidden:
            raise InputError("OPT with LayerNorms after the blocks or a word_embed_proj_dim other than hidden_size "
                             "(OPT-350m's projections) is not modelled", field="model_type")
        positions = _get(config, "max_position_embeddings")
        return TransformerConfig(name, "opt", _get(config, "num_hidden_layers"), hidden,
                                 _get(config, "num_attention_heads"), _get(config, "vocab_size"), positions,
                                 _get(config, "ffn_dim"), _get(config, "num_attention_heads"),
                                 _get(config, "tie_word_embeddings", True), positions + OPT_POSITION_OFFSET,
                                 position_limit=positions, activation=_activation(config, "activation_function", "relu"))
    if kind in ("llama", "mistral"):
        heads, hidden = _get(config, "num_attention_heads"), _get(config, "hidden_size")
        head_dim = _get(config, "head_dim", 0, required=False)  # Mistral-NeMo's 128 at hidden 5120 over 32 heads
        if head_dim and head_dim * heads != hidden:
            raise InputError(f"{head_dim} is not hidden_size / num_attention_heads ({hidden} / {heads}): attention "
                             "of another width than the model's is not modelled", field="head_dim")
        return TransformerConfig(name, "llama", _get(config, "num_hidden_layers"), hidden, heads,
                                 _get(config, "vocab_size"), _get(config, "max_position_embeddings"),
                                 _get(config, "intermediate_size"), _get(config, "num_key_value_heads", heads),
                                 _get(config, "tie_word_embeddings", False),
                                 sliding_window=_get(config, "sliding_window", required=False) if kind == "mistral" else None,
                                 activation=_activation(config, "hidden_act", "silu"))
    if kind == "bert":
        positions = _get(config, "max_position_embeddings")
        return TransformerConfig(name, "bert", _get(config, "num_hidden_layers"), _get(config, "hidden_size"),
                                 _get(config, "num_attention_heads"), _get(config, "vocab_size"), positions,
                                 _get(config, "intermediate_size"), _get(config, "num_attention_heads"), True,
                                 positions, _get(config, "type_vocab_size", 2), position_limit=positions,
                                 activation=_activation(config, "hidden_act", "gelu"))
    if kind == "switch_transformers":
        return _switch_from_hf(config, name)
    raise InputError(f"model_type {config.get('model_type')!r} is not read; archsim reads gpt2, opt, llama, "
                     f"mistral, bert and switch_transformers configs (or write a [transformer] TOML)",
                     field="model_type")


def _switch_from_hf(config: dict, name: str) -> TransformerConfig:
    """``SwitchTransformersConfig``: equal encoder and decoder depth and sparse step (as its ``__init__``
    derives it: layers // sparse layers when those are given), ReLU FFNs without gate, dropout and router
    jitter on, tied embeddings (the LM head scaled by d_model^-0.5); anything else is refused, not
    mis-modelled."""
    layers = _get(config, "num_layers")
    decoder_layers = _get(config, "num_decoder_layers", layers)
    step = (layers // _get(config, "num_sparse_encoder_layers") if "num_sparse_encoder_layers" in config
            else _get(config, "encoder_sparse_step"))
    decoder_step = (decoder_layers // _get(config, "num_sparse_decoder_layers")
                    if "num_sparse_decoder_layers" in config else _get(config, "decoder_sparse_step"))
    same = (decoder_layers == layers and decoder_step == step and step >= 1 and layers % step == 0
            and config.get("is_gated_act", False) is False
            and str(config.get("feed_forward_proj", "relu")).lower() == "relu"
            and config.get("dropout_rate", 0.1) != 0 and config.get("router_jitter_noise", 0.01) != 0
            and _get(config, "tie_word_embeddings", True))
    if not same:
        raise InputError("Switch Transformers with unequal encoder and decoder depth or sparse step, a depth the "
                         "sparse step does not divide, gated or non-ReLU FFNs, no dropout or router jitter, or "
                         "untied embeddings are not modelled", field="model_type")
    heads = _get(config, "num_heads")
    return TransformerConfig(name, "switch", layers // step, _get(config, "d_model"), heads,
                             _get(config, "vocab_size"), 512, _get(config, "d_ff"), heads, True,
                             experts=_get(config, "num_experts"), expert_capacity=_get(config, "expert_capacity"),
                             sparse_step=step, kv_channels=heads * _get(config, "d_kv"),
                             position_buckets=_get(config, "relative_attention_num_buckets"))
