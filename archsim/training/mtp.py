"""DeepSeek-V3's multi-token prediction (MTP, DeepSeek-AI 2024, arXiv 2412.19437 §2.2) as Megatron-LM trains it
(``--mtp-num-layers``; ``megatron/core/transformer/multi_token_prediction.py``, commit d98e8a6): each of the
``mtp_layers`` modules looks the shifted tokens up in the shared embedding, RMS-normalises them and the previous
depth's hidden states (``enorm``, ``hnorm``), concatenates the two and projects 2h → h (``eh_proj``, a
column-parallel GEMM without bias whose h/t outputs are all-gathered), runs one transformer layer like the model's
last, then its own final norm, the shared LM head and the cross-entropy. Megatron places every MTP module on the
last (virtual) pipeline stage in archsim's layouts (an ``m`` must follow every ``t``, and every stage holds a ``t``:
:mod:`~archsim.training.stage_layout`).

Priced with the pieces archsim has: per module, the last layer's kind's piece, the embedding's, the head's (its final
norm is the module's) and the projection's (:func:`projection_work`), summed into the head piece
(:func:`with_mtp`) so that every reader of the last stage — its times, the breakdown, the planner — runs them
there. The stage holding the module holds its parameters (:func:`mtp_parameters`: the layer, the 2h·h projection
and three norms; the token table too when the stage holds no copy of it) and its activations
(:func:`mtp_kept`), and all-reduces the embedding's gradient with the first stage, as Megatron's
``_allreduce_word_embedding_grads`` does for a model with MTP."""

from __future__ import annotations

from dataclasses import replace

from archsim.console import setting
from archsim.errors import InputError
from archsim.lowering.streamed import streamed_elements
from archsim.training.compute_classes import ClassSeconds
from archsim.training.op_work import Collective, Work, gemm_ops, memory_op, vector_op
from archsim.training.piece_cost import PieceCost
from archsim.workload.layer_kinds import DENSE, LAYER, kind_configs
from archsim.workload.transformer import TransformerConfig

NORMS = 3  # enorm, hnorm and the module's final norm, RMS γ of h each (Megatron's FLOPs count "3 * hidden_size")


def mtp_kind(c: TransformerConfig) -> str:
    """The kind of layer an MTP module runs: the model's last layer's (:mod:`~archsim.workload.layer_kinds`;
    DeepSeek-V3's is a mixture of experts), as Megatron builds it and counts its FLOPs (``last_layer_is_moe``)."""
    return DENSE if c.layers - 1 in c.dense_layers else LAYER


def mtp_config(c: TransformerConfig) -> TransformerConfig:
    """The config an MTP module's transformer layer is built from (:func:`mtp_kind`)."""
    return kind_configs(c)[mtp_kind(c)]


def mtp_rule(c: TransformerConfig, cp: int, fp8: str | None) -> tuple[str, str] | None:
    """(search's rejection code, train's one-line reason) why a layout cannot train ``c``'s MTP modules as archsim
    prices them, or None: context parallelism (Megatron rolls the shifted tokens across CP ranks, an exchange not
    modelled) and fp8 (the module's casts and scaling are not counted). Another op list than Megatron-LM's never
    meets it: PyTorch's eager lists are GPT's, MTP is priced on llama's."""
    if not c.mtp_layers or (cp == 1 and not fp8):
        return None
    code, why = ("mtp-beside-cp", "context parallelism's roll of the shifted tokens across CP ranks") if cp > 1 else \
        ("mtp-beside-fp8", "fp8's casts and scaling in the module")
    return code, f"multi-token prediction is not priced with {why}: give {setting('mtp-layers', 0)}"


def check_mtp(c: TransformerConfig, cp: int, fp8: str | None) -> None:
    """:func:`mtp_rule`'s refusal, in one line."""
    rule = mtp_rule(c, cp, fp8)
    if rule:
        raise InputError(rule[1], field="mtp-layers")


def with_mtp_layers(c: TransformerConfig, layers: int | None) -> TransformerConfig:
    """``c`` training ``layers`` MTP modules (``--mtp-layers``; checked by the config: 0…64, llama family); None: the
    model's own (a DeepSeek config's ``num_nextn_predict_layers``)."""
    return c if layers is None or layers == c.mtp_layers else replace(c, mtp_layers=layers)


def projection_work(c: TransformerConfig, micro_batch: int, tp: int = 1, sequence_parallel: bool = False) -> Work:
    """One MTP module's own ops beside its layer, embedding and head: the two RMS norms on the rank's tokens (T/t
    under sequence parallelism), their concatenation (read and write 2h per token, forward only: ``torch.cat``'s
    backward is a view) and ``eh_proj``, T × 2h · 2h × h/t. With TP > 1 its outputs are all-gathered forward
    (``gather_from_tensor_model_parallel_region``, T·h); the column-parallel input's gradient is all-reduced
    backward (T·2h), or under sequence parallelism the input is all-gathered forward and its gradient
    reduce-scattered backward (T·2h each, the input re-gathered for the weight gradient under the δ GEMM, as the
    layers' column-parallel GEMMs), and the scatter back to T/t all-gathers its gradient (T·h). Elements at 2 bytes."""
    tokens, h = c.seq * micro_batch, c.hidden
    sp = sequence_parallel and tp > 1
    local = tokens // tp if sp else tokens
    forward, backward = [], []
    for name in ("mtp_enorm", "mtp_hnorm"):
        f, d = memory_op(name, *streamed_elements("norm", local * h), ("ln", local, h))
        forward.append(f)
        backward.append(d)
    forward.append(vector_op("mtp_concat", "F", 4 * local * h))
    f, d, g = gemm_ops("mtp_eh_proj", tokens, 2 * h, h // tp)
    ops = Work((*forward, f), (d, g, *backward[::-1]))
    if tp == 1:
        return ops
    out, wide = tokens * h * 2, tokens * 2 * h * 2
    coll_f = (*((Collective("mtp_eh_proj.all-gather", "all-gather", "tp", wide, "F"),) if sp else ()),
              Collective("mtp_eh_proj.gather-output", "all-gather", "tp", out, "F"))
    coll_b = (Collective("mtp_scatter.all-gather", "all-gather", "tp", out, "B"),
              Collective("mtp_eh_proj.regather", "all-gather", "tp", wide, "B", ("mtp_eh_proj",)),
              Collective("mtp_eh_proj.reduce-scatter", "reduce-scatter", "tp", wide, "B")) if sp else \
        (Collective("mtp_eh_proj.all-reduce", "all-reduce", "tp", wide, "B"),)
    return replace(ops, forward_collectives=coll_f, backward_collectives=coll_b)


def summed(parts: list[PieceCost]) -> PieceCost:
    """One piece running ``parts`` one after the other: each figure summed, their rows in order."""
    first = parts[0]
    fields = ("forward", "backward_input", "backward_weight", "recompute", "tp_forward", "tp_backward", "cp_forward",
              "cp_backward", "ep_forward", "ep_backward", "host_forward", "host_backward", "host_recompute",
              "recompute_communication")
    gemms = () if not all(p.gemms for p in parts) else tuple(g for p in parts for g in p.gemms)
    return replace(first, **{name: sum(getattr(p, name) for p in parts) for name in fields},
                   ops=tuple(row for p in parts for row in p.ops), gemms=gemms,
                   classes=sum((p.classes for p in parts), ClassSeconds()))


PROJECTION = "projection"  # a module's own ops beside its layer, embedding and head (projection_work)


def module_parts(c: TransformerConfig) -> tuple[str, ...]:
    """The pieces one MTP module runs, in order, by name: the embedding's lookup, the projection
    (:data:`PROJECTION`), :func:`mtp_kind`'s layer and the head; what :func:`with_mtp` times and link energy counts
    the collectives of (:mod:`archsim.training.link_energy`)."""
    return "embedding", PROJECTION, mtp_kind(c), "head"


def with_mtp(c: TransformerConfig, pieces: dict[str, PieceCost], projection: PieceCost) -> dict[str, PieceCost]:
    """``pieces`` with the head running ``c.mtp_layers`` MTP modules after it, each the last layer's kind's piece
    (its recompute as the layers'), the embedding's lookup, ``projection`` and the head again; rows named
    ``mtp<k>.<row>``. Unchanged without MTP."""
    if not c.mtp_layers:
        return pieces
    head, parts = pieces["head"], {**pieces, PROJECTION: projection}
    modules = []
    for k in range(1, c.mtp_layers + 1):
        for piece in (parts[name] for name in module_parts(c)):
            modules.append(replace(piece, ops=tuple((f"mtp{k}.{name}", kind, t) for name, kind, t in piece.ops)))
    return {**pieces, "head": summed([head, *modules])}


def mtp_parameters(c: TransformerConfig, layer: float, tp: int, table: bool = False) -> float:
    """Parameters one GPU of the MTP stage holds for the modules: each one's layer (``layer``: the parameters one
    GPU holds of :func:`mtp_config`'s layer, split as the layers are; the caller counts it, so this module does not
    climb back to ``memory``), ``eh_proj``'s 2h·h / t and its three norms' γ (replicated); ``table``: the token
    table's rows the rank holds (padded vocabulary / t × h) when the stage holds no copy of it yet (untied embeddings
    off the first stage: Megatron builds the embedding on the MTP stage)."""
    from archsim.training.parallel import padded_vocab

    h = c.hidden
    own = layer + 2 * h * h / tp + NORMS * h
    return c.mtp_layers * own + (padded_vocab(c.vocab, tp) // tp * h if table else 0)


def mtp_kept(c: TransformerConfig, micro_batch: int, tp: int, recompute: str, sequence_parallel: bool) -> float:
    """Bytes per micro-batch one module's projection keeps beside its layer's (the layer's kept as the model's
    layers', :func:`~archsim.training.layer_activations.layer_kept`): the two norms' inputs and ``eh_proj``'s
    2h-wide input, 2 bytes an element (its T/t shard under sequence parallelism, re-gathered for the weight
    gradient); under full recompute Megatron checkpoints the projection with the layer
    (``MultiTokenPredictionLayer._checkpointed_forward``), keeping the embedding's output beside the layer's input."""
    tokens, h = c.seq * micro_batch, c.hidden
    local = tokens // tp if sequence_parallel and tp > 1 else tokens
    if recompute == "full":
        return 2 * local * h
    return 2 * (2 * local * h) + 2 * (2 * local * h)


def flops_parameters(c: TransformerConfig) -> float:
    """Parameters per token the MTP modules' GEMMs count in the model FLOPs beside their layer's (Megatron-LM's
    ``num_floating_point_operations``, ``megatron/training/training.py`` at d98e8a6: "MTP norms and proj",
    3h + 2h² a module; its layer counted as the last layer's kind, its logits with the head's)."""
    return c.mtp_layers * (NORMS * c.hidden + 2 * c.hidden * c.hidden)


__all__ = ["NORMS", "PROJECTION", "check_mtp", "flops_parameters", "module_parts", "mtp_config", "mtp_kept", "mtp_kind",
           "mtp_parameters", "mtp_rule", "projection_work", "summed", "with_mtp", "with_mtp_layers"]
