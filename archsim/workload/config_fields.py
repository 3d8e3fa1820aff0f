"""The field readers both model-file dialects share (archsim's ``[transformer]`` TOML in
:mod:`archsim.workload.model_files`, Hugging Face's ``config.json`` in :mod:`archsim.workload.hf_config`):
one rule for a required positive integer or boolean, one for ``head_dim``, one for the model's name."""

from __future__ import annotations

from pathlib import Path

from archsim.errors import InputError
from archsim.validate import did_you_mean, shown_boolean, shown_number
from archsim.workload.transformer import LIMITS


def _misspelt(table: dict, key: str) -> str:
    """`` (the file has X, misspelt?)`` naming a key of ``table`` one slip from the absent ``key``, or ""."""
    slip = did_you_mean(key, [name for name in table if name != key], cutoff=0.9)
    return f" (the file has {slip[15:-2]}, misspelt?)" if slip else ""


def get_key(table: dict, key: str, default=None, *, required: bool = True):
    """``table[key]``: a positive integer, or a boolean for a ``tie…`` key or a boolean default; ``default`` when
    absent or null (refused as missing where there is none and ``required``, naming a key of the table one slip
    from it: ``num_attention_head`` for ``num_attention_heads``)."""
    if key not in table or table[key] is None:
        if default is None and required:
            raise InputError(f"missing key{_misspelt(table, key)}", field=key, missing=True)
        return default
    value = table[key]
    if isinstance(default, bool) or key.startswith("tie"):
        if not isinstance(value, bool):
            raise InputError(f"expected true or false, got {shown_boolean(value)}", field=key)
        return value
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise InputError(f"expected a positive integer, got {shown_number(value)}", field=key)
    return value


# Keys a transformers config class reads, when absent from config.json, as a default of its own that is not what
# archsim reads a null as (MistralConfig: num_key_value_heads=8, where a null is the heads; sliding_window=4096, where
# a null is none; Qwen2Config and Qwen3Config 32 key/value heads, MixtralConfig 8; GemmaConfig and Qwen2MoeConfig 16,
# Qwen3MoeConfig 4, whose null transformers does not read as the heads): refused when absent, so a hand-written
# config.json is not priced as another model than transformers builds from it.
ABSENT_DEFAULTS = {("mistral", "num_key_value_heads"): ("MistralConfig", "8 (a null: the heads)"),
                   ("mistral", "sliding_window"): ("MistralConfig", "4096 (a null: no window)"),
                   ("mixtral", "num_key_value_heads"): ("MixtralConfig", "8 (a null: the heads)"),
                   ("qwen2", "num_key_value_heads"): ("Qwen2Config", "32 (a null: the heads)"),
                   ("qwen3", "num_key_value_heads"): ("Qwen3Config", "32 (a null: the heads)"),
                   ("gemma", "num_key_value_heads"): ("GemmaConfig", "16"),
                   ("qwen2_moe", "num_key_value_heads"): ("Qwen2MoeConfig", "16"),
                   ("qwen3_moe", "num_key_value_heads"): ("Qwen3MoeConfig", "4"),
                   # archsim asks for Qwen3's head_dim (their configs state it); the reading it would otherwise be
                   ("qwen3", "head_dim"): ("Qwen3Config", "128"),
                   ("qwen3_moe", "head_dim"): ("Qwen3MoeConfig", "hidden_size / num_attention_heads"),
                   # DeepSeek: archsim reads these absent as none (a dense MLA model, no query latent, no shared
                   # expert, no dense first layers); DeepseekV2Config and DeepseekV3Config build their defaults
                   ("deepseek_v2", "n_routed_experts"): ("DeepseekV2Config", "64 (a null: no experts, a dense model)"),
                   ("deepseek_v2", "q_lora_rank"): ("DeepseekV2Config", "1536 (a null: no query latent)"),
                   ("deepseek_v2", "n_shared_experts"): ("DeepseekV2Config", "2 (a null or 0: none)"),
                   ("deepseek_v3", "n_routed_experts"): ("DeepseekV3Config", "256 (a null: no experts, a dense model)"),
                   ("deepseek_v3", "q_lora_rank"): ("DeepseekV3Config", "1536 (a null: no query latent)"),
                   ("deepseek_v3", "n_shared_experts"): ("DeepseekV3Config", "1 (a null or 0: none)"),
                   ("deepseek_v3", "first_k_dense_replace"): ("DeepseekV3Config", "3 (a null or 0: none)")}
# Of those, the keys that size experts only: not asked of a DeepSeek config whose n_routed_experts is null (dense)
EXPERT_ONLY = frozenset({"n_shared_experts", "first_k_dense_replace"})


def check_absent_defaults(table: dict, model_type: object, skip: frozenset[str] = frozenset()) -> None:
    """Refuse a key of :data:`ABSENT_DEFAULTS` that ``table`` (a ``config.json`` of ``model_type``) leaves out,
    but those in ``skip`` (keys that size nothing in this config)."""
    for (kind, key), (reader, default) in ABSENT_DEFAULTS.items():
        if kind == model_type and key not in table and key not in skip:
            raise InputError(f"missing key{_misspelt(table, key)}: transformers' {reader} reads it absent as "
                             f"{default}; write the model's", field=key, missing=True)


def head_dim_channels(table: dict, family: str, heads: int, hidden: int, default: int | None = 0) -> int:
    """:attr:`TransformerConfig.kv_channels` from a config's ``head_dim`` (Hugging Face's and the
    ``[transformer]`` TOML's alike): 0 when absent or hidden / heads; heads × head_dim for llama (an
    attention wider or narrower than hidden, Mistral-NeMo, Gemma, Qwen3); refused for the other families,
    whose heads split hidden. ``default``: the head_dim taken when the key is absent (None: required)."""
    head_dim = get_key(table, "head_dim", default, required=default is None)
    if not head_dim or head_dim * heads == hidden:
        return 0
    if head_dim * heads > LIMITS["kv_channels"]:
        raise InputError(f"heads × head_dim ({heads} × {head_dim}) is over {LIMITS['kv_channels']}", field="head_dim")
    if family != "llama":
        raise InputError(f"a head_dim other than hidden / heads ({hidden} / {heads}) is modelled for llama only, "
                         f"not {family}", field="head_dim")
    return head_dim * heads


def file_model_name(path: str | Path) -> str:
    """The name archsim gives the model a Hugging Face config at ``path`` describes (its ``model`` in every
    output): a ``config.json``'s folder (``llama2_7b/config.json``: ``llama2_7b``), any other file's stem."""
    path = Path(path)
    return path.parent.name if path.name == "config.json" else path.stem
