"""DeepSeek-V2/V3's Megatron-LM arguments: each search row's ``megatron_args`` parsed by a parser built from the flag
names, types and choices of Megatron-LM commit d98e8a64ddf34856e74b24714e3bedb2f5a39553
(``megatron/training/arguments.py``: ``_add_mla_args``' ``--q-lora-rank`` (default None), ``--kv-lora-rank``,
``--qk-head-dim`` ("q_head_dim = qk_head_dim + qk_pos_emb_head_dim": the part without RoPE), ``--qk-pos-emb-head-dim``,
``--v-head-dim``; ``_add_moe_args``' ``--num-experts`` and ``--moe-layer-freq`` (``moe_freq_type``: a list
expression of digits, brackets, ``+`` and ``*`` evaluated, 1 an expert layer); and the flags its
``ArgumentGroupFactory`` makes of ``megatron/core/transformer/transformer_config.py``'s fields:
``multi_latent_attention: bool``, ``moe_shared_expert_intermediate_size: Optional[int]`` (the shared experts' total
width), ``moe_shared_expert_gate: bool``, ``moe_router_topk: int``, ``moe_ffn_hidden_size``,
``moe_router_score_function: Literal['softmax', 'sigmoid', 'sqrtsoftplus']``, ``moe_router_topk_scaling_factor:
Optional[float]``, ``moe_token_dispatcher_type``, ``moe_grouped_gemm``, ``mtp_num_layers: Optional[int]``). The expected values are the models'
config.json fields (huggingface.co/deepseek-ai/DeepSeek-V3 and DeepSeek-V2), read here by hand."""

from __future__ import annotations

import argparse
import re
import shlex

from archsim.training.search_rows import megatron_args
from archsim.training.search_space import Candidate
from archsim.workload.model_files import load_transformer
from tests.test_megatron_args import megatron_parser


def _moe_freq(text: str):
    """Megatron-LM's ``moe_freq_type``: an int, or a list expression (``_eval_pattern``'s character check)."""
    if "[" not in text:
        return int(text)
    if re.search(r"[^,\d\[\]\(\)\+\*]", text):
        raise ValueError(text)
    return eval(text, {"__builtins__": {}})  # Megatron-LM evaluates it so (digits, brackets, + and *)


def deepseek_parser() -> argparse.ArgumentParser:
    p = megatron_parser()
    p.add_argument("--multi-latent-attention", action="store_true")
    p.add_argument("--q-lora-rank", type=int, default=None)
    p.add_argument("--kv-lora-rank", type=int, default=32)
    p.add_argument("--qk-head-dim", type=int, default=128)
    p.add_argument("--qk-pos-emb-head-dim", type=int, default=64)
    p.add_argument("--v-head-dim", type=int, default=128)
    p.add_argument("--num-experts", type=int, default=None)
    p.add_argument("--moe-layer-freq", type=_moe_freq, default=1)
    p.add_argument("--moe-router-topk", type=int, default=2)
    p.add_argument("--moe-ffn-hidden-size", type=int, default=None)
    p.add_argument("--moe-token-dispatcher-type", choices=["allgather", "alltoall", "flex"], default="allgather")
    p.add_argument("--moe-grouped-gemm", action="store_true")
    p.add_argument("--moe-shared-expert-intermediate-size", type=int, default=None)
    p.add_argument("--moe-shared-expert-gate", action="store_true")
    p.add_argument("--moe-router-score-function", choices=["softmax", "sigmoid", "sqrtsoftplus"], default="softmax")
    p.add_argument("--moe-router-topk-scaling-factor", type=float, default=None)
    p.add_argument("--expert-model-parallel-size", type=int, default=1)
    p.add_argument("--mtp-num-layers", type=int, default=None)
    return p


def _parsed(args: str) -> argparse.Namespace:
    words = shlex.split(args)  # as a shell passes the line: the pattern's quotes removed
    flags = [w for w in words if w.startswith("--")]
    assert len(flags) == len(set(flags)), args
    namespace, unknown = deepseek_parser().parse_known_args(words)
    assert not unknown, f"not Megatron-LM flags: {unknown}"
    return namespace


def test_deepseek_v3_rows_carry_mla_the_layer_kinds_and_the_ungated_shared_expert():
    k = Candidate(1, 16, 64, 1, "none", "1f1b", 1, False, stage_layers=(1, *[4] * 15), ep=64)
    ns = _parsed(megatron_args(k, 4096, load_transformer("deepseek_v3"), "bf16"))
    # config.json: q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128
    assert ns.multi_latent_attention and (ns.q_lora_rank, ns.kv_lora_rank) == (1536, 512)
    assert (ns.qk_head_dim, ns.qk_pos_emb_head_dim, ns.v_head_dim) == (128, 64, 128)
    # first_k_dense_replace 3 of num_hidden_layers 61: Megatron's list, 0 dense, 1 MoE
    assert ns.moe_layer_freq == [0] * 3 + [1] * 58 and len(ns.moe_layer_freq) == ns.num_layers == 61
    # n_routed_experts 256, num_experts_per_tok 8, moe_intermediate_size 2048, n_shared_experts 1 (ungated),
    # intermediate_size 18432 (the dense layers'), scoring_func sigmoid, routed_scaling_factor 2.5
    assert (ns.num_experts, ns.moe_router_topk, ns.moe_ffn_hidden_size) == (256, 8, 2048)
    assert ns.moe_shared_expert_intermediate_size == 2048 and not ns.moe_shared_expert_gate
    assert (ns.ffn_hidden_size, ns.moe_router_score_function, ns.moe_router_topk_scaling_factor) == (18432, "sigmoid",
                                                                                                      2.5)
    assert ns.kv_channels is None and not ns.group_query_attention  # MLA's widths are its own
    assert (ns.decoder_first_pipeline_num_layers, ns.decoder_last_pipeline_num_layers) == (1, 4)
    assert ns.mtp_num_layers == 1  # config.json's num_nextn_predict_layers


def test_deepseek_v2_shared_experts_add_up_and_its_router_is_softmax():
    ns = _parsed(megatron_args(Candidate(1, 1, 8, 1, "none", "1f1b", 1, False, ep=8), 64,
                               load_transformer("deepseek_v2"), "bf16"))
    # n_shared_experts 2 × moe_intermediate_size 1536; first_k_dense_replace 1 of 60; routed_scaling_factor 16
    assert ns.moe_shared_expert_intermediate_size == 2 * 1536 and not ns.moe_shared_expert_gate
    assert ns.moe_layer_freq == [0] + [1] * 59
    assert (ns.moe_router_score_function, ns.moe_router_topk_scaling_factor) == ("softmax", 16.0)
