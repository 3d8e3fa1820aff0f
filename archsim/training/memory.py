"""Memory per GPU: model states and activations under the schedule and recomputation.

Model states (mixed-precision Adam, Rajbhandari et al. 2020 §3.1): 16 bytes per parameter the GPU
holds — fp16 weight (2) and gradient (2), fp32 master weight, momentum and variance (12).

Activations of one transformer layer for one micro-batch, in bytes, with s tokens per sequence,
b sequences, h hidden, a heads, TP degree t (Korthikanti et al. 2022, §4, Table 2):

=============  ==============================  ===========================
recompute      without sequence parallelism    with sequence parallelism
=============  ==============================  ===========================
none           s·b·h·(10 + 24/t + 5·a·s/(h·t))  s·b·h/t·(34 + 5·a·s/h)
selective      s·b·h·(10 + 24/t)               s·b·h/t · 34
full           2·s·b·h (the layer's input)     2·s·b·h/t
=============  ==============================  ===========================

A stage holds one such set per layer for every micro-batch it has run forward but not backward;
the schedule fixes that count (1F1B: p − i on stage i; read off the schedule's action order, so
interleaved and zero-bubble orders count right). Recomputation rematerialises one layer at a time
in the backward: full recompute adds one layer's ``none`` activations, selective one layer's
attention core (5·a·s²·b/t). The first stage also keeps the embedding's dropout mask (s·b·h bytes per
micro-batch in flight), the last the fp16 and fp32 logits of the micro-batch it is on (6·s·b·V/t).

With FlashAttention (``attention = "flash"``) no s² tensor is kept: ``none`` keeps the selective
row's activations plus the fp32 log-sum-exp of every query row (4·a·s·b/t), and selective
recompute has nothing left to recompute (it keeps what ``none`` keeps).
"""

from __future__ import annotations

from dataclasses import dataclass

from archsim.training.layer_ops import embedding_parameters, layer_parameters
from archsim.training.parallel import Parallelism, padded_vocab
from archsim.workload.transformer import TransformerConfig

STATE_BYTES_PER_PARAMETER = 16


def layer_activation_bytes(c: TransformerConfig, micro_batch: int, tp: int, recompute: str,
                           sequence_parallel: bool, attention: str = "standard") -> float:
    """Korthikanti et al.'s per-layer activation bytes (table above); FlashAttention's below it."""
    s, b, h, a, t = c.seq, micro_batch, c.hidden, c.heads, tp
    sbh = s * b * h
    if recompute == "full":
        return 2 * sbh / (t if sequence_parallel else 1)
    if attention == "flash":
        return layer_activation_bytes(c, b, t, "selective", sequence_parallel) + 4 * a * s * b / t
    if recompute == "selective":
        return 34 * sbh / t if sequence_parallel else sbh * (10 + 24 / t)
    if sequence_parallel:
        return sbh / t * (34 + 5 * a * s / h)
    return sbh * (10 + 24 / t + 5 * a * s / (h * t))


def layer_parameters_per_gpu(c: TransformerConfig, tp: int) -> float:
    """One layer's parameters on one GPU of its TP group: the split weights and column-parallel biases
    / t, plus the replicated norms and row-parallel biases."""
    replicated = 2 * c.hidden if c.family == "llama" else 6 * c.hidden  # norms' γ (β), proj and fc2 biases
    return (layer_parameters(c) - replicated) / tp + replicated


@dataclass(frozen=True)
class StageMemory:
    """Bytes one GPU of a pipeline stage needs: parameters held, model states, activations, total."""

    parameters: float
    states: float
    activations: float

    @property
    def total(self) -> float:
        return self.states + self.activations


def stage_parameters(c: TransformerConfig, par: Parallelism, layers: int, first: bool, last: bool,
                     head_copy: bool | None = None) -> float:
    """Parameters on one GPU of a stage: its layers, the embedding on the first stage, the final norm
    (and, when the first and last stages sit on different ranks and embeddings are tied, the LM head's
    copy of the token table — ``head_copy``, default PP > 1) on the last."""
    params = layers * layer_parameters_per_gpu(c, par.tp)
    if first:
        params += embedding_parameters(c, par.tp)
    if last:
        params += 2 * c.hidden
        if (par.pp > 1 if head_copy is None else head_copy) or not c.tied_embeddings:
            params += padded_vocab(c.vocab, par.tp) // par.tp * c.hidden
    return params


def stage_memory(c: TransformerConfig, par: Parallelism, layers: int, in_flight: int, first: bool,
                 last: bool, head_copy: bool | None = None) -> StageMemory:
    """Memory of one GPU of a stage holding ``layers`` layers with ``in_flight`` micro-batches' activations."""
    b, t = par.micro_batch, par.tp
    per_layer = layer_activation_bytes(c, b, t, par.recompute, par.sequence_parallel, par.attention)
    activations = in_flight * layers * per_layer
    if par.recompute == "full":
        activations += layer_activation_bytes(c, b, t, "none", par.sequence_parallel, par.attention)
    elif par.recompute == "selective" and par.attention == "standard":
        activations += 5 * c.heads * c.seq**2 * b / t
    if first:
        activations += in_flight * c.seq * b * c.hidden
    if last:
        activations += 6 * c.seq * b * padded_vocab(c.vocab, t) / t
    params = stage_parameters(c, par, layers, first, last, head_copy)
    return StageMemory(params, STATE_BYTES_PER_PARAMETER * params, activations)


__all__ = ["STATE_BYTES_PER_PARAMETER", "StageMemory", "layer_activation_bytes", "layer_parameters_per_gpu",
           "stage_memory", "stage_parameters"]
