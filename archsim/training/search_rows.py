"""What a search row carries besides its time: the model FLOPs of its MFU, Megatron-LM's arguments and the
``archsim train`` line that reproduces it (the front of the rows is :mod:`archsim.training.search_front`'s)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from archsim.choices.training import DEFAULT_P2P
from archsim.policies.stage_orders import megatron_group
from archsim.training.parallel import interleave_flag
from archsim.training.search_space import Candidate
from archsim.training.stage_layout import megatron_layout
from archsim.workload.transformer import TransformerConfig

MEGATRON_GELUS = ("gelu", "gelu_new", "gelu_pytorch_tanh")  # GPT activations Megatron-LM's default MLP runs (its
# fused bias-GeLU is the tanh form, gelu_new's; unfused it is erf's): no flag. Any other GPT activation has none.
MEGATRON_DROPOUT = 0.1  # Megatron-LM's default --attention-dropout and --hidden-dropout


def megatron_args(k: Candidate, global_batch: int, c: TransformerConfig, dtype: str) -> str:
    """Megatron-LM's arguments for the configuration (``pretrain_gpt.py``) of model ``c`` trained in ``dtype``:
    the layout's flags, then the model's (:func:`megatron_model_args`; empty where Megatron-LM cannot build the
    model priced); with its
    precision flag, ``--fp16`` or ``--bf16`` (given neither, Megatron-LM trains in fp32: the run priced only
    under ``dtype`` fp32); empty for a schedule Megatron-LM does not run (it has 1F1B and interleaved
    1F1B). An uneven split is the first and the last stage's layer counts
    (``--decoder-first-pipeline-num-layers``, ``--decoder-last-pipeline-num-layers``; Megatron splits the rest
    evenly) where those state it (one chunk per rank, the middle stages equal), else the whole split as
    ``--pipeline-model-parallel-layout`` (:func:`~archsim.training.stage_layout.megatron_layout`, which ``--stage-layers`` reads back). With ``k.distributed_optimizer``
    ``--use-distributed-optimizer``; with ``k.fp8`` ``--fp8-format`` (and ``--fp8-param-gather``); interleaved
    where PP does not divide the micro-batches, ``--microbatch-group-size-per-virtual-pipeline-stage`` N, the group
    archsim runs (:func:`~archsim.policies.stage_orders.megatron_group`: Megatron-LM's default PP refuses them); with ``k.fsdp`` the layout's flags only, no
    command that runs it: FSDP is PyTorch's (its row's ``fsdp`` is true)."""
    split = k.stage_layers or ()
    model = megatron_model_args(c)
    if k.schedule not in ("1f1b", "interleaved-1f1b") or not model:
        return ""
    uneven = len(set(split)) > 1
    first_last = uneven and k.interleave == 1 and len(set(split[1:-1])) <= 1  # Megatron's even middle
    args = [f"--tensor-model-parallel-size {k.tp}", f"--pipeline-model-parallel-size {k.pp}",
            f"--micro-batch-size {k.micro_batch}", f"--global-batch-size {global_batch}"]
    if dtype in ("fp16", "bf16"):
        args.append(f"--{dtype}")
    if k.fp8:  # Transformer Engine's, delayed scaling: Megatron-LM's default --fp8-recipe
        args.append(f"--fp8-format {k.fp8}" + (" --fp8-param-gather" if k.fp8_param_gather else ""))
    if k.recompute != "none":
        args.append(f"--recompute-granularity {k.recompute}")
        if k.recompute == "full":
            args.append("--recompute-method uniform --recompute-num-layers 1")
    if k.sequence_parallel:
        args.append("--sequence-parallel")
    if k.cp > 1:  # Megatron-LM spells TransformerEngine's all_gather "allgather"; p2p its default
        comm = {"all_gather": " --cp-comm-type allgather", "a2a": " --cp-comm-type a2a"}.get(k.cp_comm, "")
        if k.cp_hierarchy:  # a2a+p2p and its levels, A then P
            comm = f" --cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes {k.cp_hierarchy[0]} {k.cp_hierarchy[1]}"
        args.append(f"--context-parallel-size {k.cp}{comm}")
    if k.ep > 1:
        args.append(f"--expert-model-parallel-size {k.ep}")
    if k.etp is not None:  # Megatron-LM's default is TP's
        args.append(f"--expert-tensor-parallel-size {k.etp}")
    if k.attention == "flash":  # Megatron Core with Transformer Engine runs a fused attention without it
        args.append("--use-flash-attn")
    if k.dp_overlap == "bucketed":
        args.append("--overlap-grad-reduce")
    if k.distributed_optimizer:
        args.append("--use-distributed-optimizer")
    if k.grad_accumulation == "unfused":
        args.append("--no-gradient-accumulation-fusion")
    if k.interleave > 1 and not uneven:  # the layout states the chunks itself (Megatron takes one of the two)
        args.append(f"--num-layers-per-virtual-pipeline-stage {c.layers // (k.pp * k.interleave)}")
    group = megatron_group(k.pp, global_batch // (k.dp * k.micro_batch))
    if k.interleave > 1 and group != k.pp:  # Megatron-LM's default group (PP) refuses m off a multiple of PP
        args.append(f"--microbatch-group-size-per-virtual-pipeline-stage {group}")
    if first_last:
        args.append(f"--decoder-first-pipeline-num-layers {split[0]} --decoder-last-pipeline-num-layers {split[-1]}")
    elif uneven:
        args.append(f"--pipeline-model-parallel-layout {shlex.quote(megatron_layout(split, c.mtp_layers))}")
    return " ".join([*args, model])


def megatron_model_args(c: TransformerConfig) -> str:
    """Megatron-LM's flags for the model ``c`` as archsim prices it (at its ``seq``), flag names as
    Megatron-LM core_v0.15.0's ``megatron/training/arguments.py`` (commit 0d7e02b) spells them, and
    d98e8a6's, which generates most from ``TransformerConfig``'s fields: the shape, and those of
    ``--group-query-attention --num-query-groups``, ``--kv-channels`` (head_dim), Llama's ``--position-embedding-type
    rope`` (``--rotary-percent``), ``--normalization RMSNorm``, ``--swiglu``, ``--disable-bias-linear``
    (``--add-qkv-bias``, ``--qk-layernorm``), ``--untie-embeddings-and-output-weights``, ``--window-size W−1,0``
    (a query's key window, itself included), and ``--attention-dropout``, ``--hidden-dropout`` where the dropout
    priced is not Megatron's default 0.1 (Llama's none: 0.0) — each only when the model needs it. One rule:
    empty ("") where Megatron-LM cannot build the model priced — a family its ``pretrain_gpt.py`` does not
    train (OPT, BERT, Switch), an activation without a flag (a GPT's but GeLU, a gated MLP's but SiLU: Gemma's GeGLU), Gemma's √hidden-scaled
    embeddings, a learned position table shorter than the sequence (Megatron asserts
    ``max_position_embeddings ≥ seq_length``). No vocabulary flag: Megatron pads the tokenizer's vocabulary
    itself (``--make-vocab-size-divisible-by`` 128 × TP, as archsim prices it); data, tokenizer, optimizer,
    learning rate and RoPE's base are the user's (they change no work priced). DeepSeek-V2/V3 (d98e8a6):
    ``--multi-latent-attention --q-lora-rank --kv-lora-rank --qk-head-dim`` (the no-RoPE part)
    ``--qk-pos-emb-head-dim --v-head-dim``, ``--moe-layer-freq`` for its dense first layers, the ungated shared
    experts' ``--moe-shared-expert-intermediate-size``, ``--moe-router-score-function sigmoid`` and
    ``--moe-router-topk-scaling-factor``."""
    llama = c.family == "llama"
    if (c.family not in ("gpt", "llama") or c.scaled_embeddings
            or c.mlp_activation not in (("silu", "swish") if llama else MEGATRON_GELUS)
            or (not llama and c.seq > c.positions)):
        return ""
    args = [f"--num-layers {c.layers}", f"--hidden-size {c.hidden}", f"--num-attention-heads {c.heads}",
            f"--ffn-hidden-size {c.ffn}", f"--seq-length {c.seq}",
            f"--max-position-embeddings {c.seq if llama else c.positions}"]
    if c.mla:  # MLA's widths (its heads' own: no --kv-channels, no query groups)
        args += ["--multi-latent-attention", *([f"--q-lora-rank {c.q_lora_rank}"] if c.q_lora_rank else []),
                 f"--kv-lora-rank {c.kv_lora_rank}", f"--qk-head-dim {c.qk_nope_head_dim}",
                 f"--qk-pos-emb-head-dim {c.qk_rope_head_dim}", f"--v-head-dim {c.v_head_dim}"]
    elif c.hidden % c.heads or c.head_dim != c.hidden // c.heads:
        args.append(f"--kv-channels {c.head_dim}")
    if c.kv_heads < c.heads and not c.mla:
        args.append(f"--group-query-attention --num-query-groups {c.kv_heads}")
    if llama:
        args += ["--position-embedding-type rope", "--normalization RMSNorm", "--swiglu", "--disable-bias-linear"]
        if c.partial_rotary_factor != 1:
            args.append(f"--rotary-percent {float(c.partial_rotary_factor)!r}")
        args += [flag for flag, on in (("--add-qkv-bias", c.qkv_bias), ("--qk-layernorm", c.qk_norm)) if on]
    if c.moe:  # archsim's mixture of experts (training/moe_ops.py): the alltoall dispatcher, grouped GEMMs, dropless
        args += [f"--num-experts {c.experts}", f"--moe-router-topk {c.experts_per_token}",
                 f"--moe-ffn-hidden-size {c.expert_ffn}", "--moe-token-dispatcher-type alltoall", "--moe-grouped-gemm"]
        if c.moe_expert_capacity_factor is not None:  # or capped, as train --moe-expert-capacity-factor runs it
            args.append(f"--moe-expert-capacity-factor {float(c.moe_expert_capacity_factor)!r}")
            args += ["--moe-pad-expert-input-to-capacity"] if c.moe_pad_expert_input_to_capacity else []
        if c.shared_expert_ffn:  # Qwen2-MoE's sigmoid-gated shared expert (moe_ops.py); DeepSeek's ungated
            args += [f"--moe-shared-expert-intermediate-size {c.shared_expert_ffn}",
                     *(["--moe-shared-expert-gate"] if c.shared_expert_gate else [])]
        if c.dense_layers:  # the layer kinds (layer_kinds.py): 0 a dense layer, 1 an MoE one, as runs
            args.append(f"--moe-layer-freq '({moe_layer_pattern(c)})'")
        args += overlap_flags(c)
        if c.router_score != "softmax":  # DeepSeek-V3's sigmoid router, its routed scaling
            args.append(f"--moe-router-score-function {c.router_score}")
        if c.routed_scaling_factor != 1:
            args.append(f"--moe-router-topk-scaling-factor {float(c.routed_scaling_factor)!r}")
    if not c.tied_embeddings:
        args.append("--untie-embeddings-and-output-weights")
    if c.mtp_layers:  # DeepSeek-V3's multi-token prediction (training/mtp.py)
        args.append(f"--mtp-num-layers {c.mtp_layers}")
    if c.sliding_window is not None:
        args.append(f"--window-size {c.sliding_window - 1},0")
    for flag, stated, on in (("--attention-dropout", c.attention_dropout, c.drops_attention),
                             ("--hidden-dropout", c.hidden_dropout, c.drops_hidden)):
        p = stated if stated is not None else (MEGATRON_DROPOUT if on else 0.0)
        if p != MEGATRON_DROPOUT:
            args.append(f"{flag} {float(p)!r}")
    return " ".join(args)


def moe_layer_pattern(c: TransformerConfig) -> str:
    """Megatron-LM's ``--moe-layer-freq`` list expression of ``c``'s layer kinds, as runs: ``[0]*3+[1]*58``."""
    from itertools import groupby

    from archsim.workload.layer_kinds import DENSE, layer_kinds

    runs = [(int(kind != DENSE), len(list(run))) for kind, run in groupby(layer_kinds(c))]
    return "+".join(f"[{bit}]*{n}" for bit, n in runs)


def overlap_flags(c: TransformerConfig) -> list[str]:
    """The all-to-all overlaps ``c`` runs with (training/moe_overlap.py), as Megatron-LM's flags, which are train's."""
    return [flag for flag, on in (("--overlap-moe-expert-parallel-comm", c.overlap_moe_expert_parallel_comm),
                                  ("--moe-shared-expert-overlap", c.moe_shared_expert_overlap)) if on]


# one flag of a row's train line and its value as archsim.train's keyword of that name takes it: an int, a float, a
# text, True for a switch (a store_true flag, written bare), a tuple for a flag of several values (--cp-hierarchy A P)
Setting = tuple[str, "int | float | str | bool | tuple[int, ...]"]


@dataclass(frozen=True)
class RowContext:
    """What a search's ``archsim train`` lines say beside each row's own settings: the search's global batch, its
    dtype, ``seq`` as given (None: the config's), ``--moe-load-imbalance`` (None: uniform) and the model's
    flags (``overlaps``: :func:`overlap_flags` as switches, ``--mtp-layers`` with its count)."""
    global_batch: int
    dtype: str = "fp16"
    seq: int | None = None
    imbalance: float | None = None
    overlaps: tuple[Setting, ...] = ()


def train_settings(row: dict, context: RowContext) -> tuple[Setting, ...]:
    """The flags of the ``archsim train`` line that reproduces search row ``row`` (model and cluster aside), in the
    line's order, each with its value typed as :func:`archsim.train`'s keyword of the same name takes it (a
    default left out, as the line leaves it out): what :func:`train_command` writes and
    :meth:`~archsim.training.search_result.SearchResult.train_keywords` passes, one list for both."""
    settings: list[Setting] = [
        ("--tp", row["tp"]), ("--pp", row["pp"]), ("--dp", row["dp"]), ("--global-batch", context.global_batch),
        ("--micro-batch", row["micro_batch"]), ("--recompute", row["recompute"]), ("--schedule", row["schedule"]),
        ("--attention", row.get("attention", "standard"))]
    if context.seq is not None:
        settings.append(("--seq", context.seq))
    if context.dtype != "fp16":
        settings.append(("--dtype", context.dtype))
    if row.get("fp8"):
        settings += [("--fp8", row["fp8"]), *([("--fp8-param-gather", True)] if row.get("fp8_param_gather") else [])]
    for flag, key, default in (("--dp-overlap", "dp_overlap", "none"), ("--grad-accumulation", "grad_accumulation", "fused"),
                               ("--p2p", "p2p", DEFAULT_P2P)):
        if row.get(key, default) != default:
            settings.append((flag, row[key]))
    settings += [(flag, True) for flag, key in (("--distributed-optimizer", "distributed_optimizer"), ("--fsdp", "fsdp"))
                 if row.get(key)]
    for flag, key, default in (("--fsdp-reshard", "fsdp_reshard", "after-forward"),
                               ("--fsdp-grad-sync", "fsdp_grad_sync", "micro-batch")):
        if row.get(key, default) != default:
            settings.append((flag, row[key]))
    if row.get("cp", 1) > 1:
        settings.append(("--cp", row["cp"]))
        if row.get("cp_comm", "p2p") != "p2p":
            settings.append(("--cp-comm", row["cp_comm"]))
        levels = _cp_levels(row.get("cp_hierarchy"))
        if levels:
            settings.append(("--cp-hierarchy", levels))
    if row.get("ep", 1) > 1:
        settings.append(("--ep", row["ep"]))
    if row.get("etp", row["tp"]) != row["tp"]:
        settings.append(("--etp", row["etp"]))
    if context.imbalance is not None:  # a router's statistic, no Megatron-LM flag: train's alone
        settings.append(("--moe-load-imbalance", float(context.imbalance)))
    settings += context.overlaps
    if interleave_flag(row["schedule"], row["interleave"]) > 1:  # a V schedule's 2 chunks are its name's
        settings.append(("--interleave", row["interleave"]))
    for flag, key in (("--stage-layers", "stage_layers"), ("--placement", "placement")):
        if row.get(key):  # "none" is the row's empty text
            settings.append((flag, row[key]))
    if row["sequence_parallel"]:
        settings.append(("--sequence-parallel", True))
    return tuple(settings)


def setting_words(flag: str, value) -> str:
    """One setting as the train line writes it: a switch bare, several values spaced, a float as Python's repr."""
    if value is True:
        return flag
    if isinstance(value, tuple):
        return " ".join([flag, *map(str, value)])
    return f"{flag} {float(value)!r}" if isinstance(value, float) else f"{flag} {value}"


def train_command(model: str, cluster: str, row: dict, context: RowContext) -> str:
    """The ``archsim train`` line that reproduces a row of a search, with what ``context`` says beside every row (its
    global batch, dtype, ``seq``, ``--moe-load-imbalance`` and overlaps: :class:`RowContext`): its flags
    :func:`train_settings`'; the paths shell-quoted, so the line runs as pasted (a path with a space stays one
    word)."""
    return " ".join([f"archsim train {shlex.quote(model)} --cluster {shlex.quote(cluster)}",
                     *(setting_words(flag, value) for flag, value in train_settings(row, context))])


def _cp_levels(cell: str | None) -> tuple[int, int] | None:
    """A row's ``cp_hierarchy`` ("4 2", a2a+p2p's A P) as Parallelism takes it (None: not a2a+p2p)."""
    if not cell:
        return None
    a, p = (int(n) for n in cell.split())
    return a, p


def row_layout(cluster, global_batch: int, r: dict):
    """(Parallelism, cluster in the row's server order) of search row ``r``, as ``archsim train`` runs its
    ``command``: what the first row's host times, timelines and the meta's network links are read on."""
    from archsim.training.parallel import Parallelism

    split = tuple(int(n) for n in r["stage_layers"].split(",")) if r["stage_layers"] else None
    par = Parallelism(r["tp"], r["pp"], r["dp"], global_batch, r["micro_batch"], r["recompute"],
                      r["sequence_parallel"], r["interleave"], r["schedule"], split, r["attention"], r["dp_overlap"],
                      r["grad_accumulation"], r.get("distributed_optimizer", False), r.get("fsdp", False),
                      r.get("cp", 1), r.get("cp_comm") or "p2p", r.get("fsdp_reshard") or "after-forward",
                      r.get("fsdp_grad_sync") or "micro-batch", _cp_levels(r.get("cp_hierarchy")), ep=r.get("ep", 1),
                      etp=None if r.get("etp", r["tp"]) == r["tp"] else r["etp"], fp8=r.get("fp8"),
                      fp8_param_gather=r.get("fp8_param_gather", False), p2p=r.get("p2p") or DEFAULT_P2P)
    if r.get("placement"):
        cluster = cluster.reordered(tuple(int(n) for n in r["placement"].split(",")))
    return par, cluster


__all__ = ["RowContext", "Setting", "megatron_args", "megatron_model_args", "moe_layer_pattern", "overlap_flags",
           "row_layout", "setting_words", "train_command", "train_settings"]
