"""Activation memory of Hugging Face's eager modules trained in fp32 (``--implementation pytorch-eager
--dtype fp32``, :mod:`archsim.training.hf_ops`' GPT-2, OPT and BERT), counted from what autograd saves.

Korthikanti et al.'s count is Megatron's layer; PyTorch's eager modules save other tensors, so their bytes
are counted here from the modules' code (transformers' ``GPT2Block``, ``OPTDecoderLayer``, ``BertLayer``):
every value 4 bytes, a dropout mask 1 (``native_dropout`` saves a bool mask in every dtype), each
LayerNorm's mean and rstd 4 bytes each per row. Per token and layer, h hidden and f the MLP's width:

* 8·h values in all three: the two LayerNorms' inputs and outputs (GPT-2, OPT: pre-norm, the outputs
  feed q/k/v and fc1; BERT: post-norm, the layer's input feeds q/k/v and its first norm's output fc1),
  q, k and v (saved by the scores' and context's matmuls) and the output projection's input;
* the MLP's ffn-wide tensors (:func:`activation_kept`): gelu_new written out keeps 5 (fc1's output
  for ``pow``, ``tanh``'s result, 0.5·x and 1 + tanh for the product, its output for fc2), ReLU 1 (its
  result, fc2's input), exact GeLU or SiLU 2 (input and output);
* the two residual dropouts' masks, h bytes each, when the model drops hidden states.

Per score (a·s²·b): the softmax output (4) and, with attention dropout, its mask (1) and output (4),
as Megatron's 9 in fp32; OPT has no attention dropout but saves the masked scores for its clamp
(``torch.max`` at the dtype's minimum: ``maximum`` saves both inputs), 8.

A split backward (zero-bubble orders: I, then W) keeps what the weight gradients read from I to W, as
``torch.distributed.pipelining``'s ``stage_backward_input`` keeps the graph from its saved split points to the
weights (:func:`hf_weight_gradient_bytes`): each weight GEMM's saved input and its output gradient, fp32.
Under full recompute I reruns the block from its checkpoint and those rematerialised tensors are what W reads
(the same bytes, kept as the ZB authors' Megatron keeps them); the rest of the block, the checkpoint included,
is released by I. A checkpoint that reran the block again for W (torch's non-reentrant one, one rerun per
backward call) would hold the checkpoint instead and cost a second rerun: not modelled. Until 2026-12-02 I
released everything in every mode.
"""

from __future__ import annotations

from collections.abc import Sequence

from archsim.choices.devices import ELEMENT_BYTES
from archsim.workload.transformer import TransformerConfig

VALUE_BYTES = ELEMENT_BYTES["fp32"]  # an fp32 element
NORM_STATS_BYTES = 8  # a LayerNorm's mean and rstd, fp32, per row (token)
# ffn-wide tensors the MLP keeps beyond fc1's input, by activation: gelu_new written out (x for pow,
# tanh's result, 0.5·x, 1 + tanh, the output); one-kernel ones their saved input or result and the output
ACTIVATION_KEPT = {"gelu_new": 5, "relu": 1, "tanh": 1, "sigmoid": 1}


def activation_kept(c: TransformerConfig) -> int:
    """ffn-wide fp32 tensors a layer's MLP keeps for its backward, fc2's input included: gelu_new 5, an
    activation whose backward reads its result (ReLU, tanh, sigmoid) 1, one that reads its input 2."""
    return ACTIVATION_KEPT.get(c.mlp_activation, 2)


def hf_token_bytes(c: TransformerConfig) -> float:
    """Bytes one layer keeps per token beyond its s² tensors: 8·h values, the MLP's, two norms' stats and
    the residual dropouts' masks (module docstring)."""
    masks = 2 * c.hidden if c.drops_hidden else 0
    return VALUE_BYTES * (8 * c.hidden + activation_kept(c) * c.ffn) + 2 * NORM_STATS_BYTES + masks


def hf_score_bytes(c: TransformerConfig) -> int:
    """Bytes one layer keeps per attention score: OPT's masked scores and softmax (8); GPT-2's and BERT's
    softmax, with attention dropout its mask and output too (9, else 4)."""
    if c.family == "opt":
        return 2 * VALUE_BYTES
    return 2 * VALUE_BYTES + 1 if c.drops_attention else VALUE_BYTES


def hf_layer_bytes(c: TransformerConfig, micro_batch: int, recompute: str) -> float:
    """One layer's kept bytes for one micro-batch: all of it (``none``), without its s² tensors
    (``selective``), or its fp32 input alone (``full``: gradient checkpointing keeps the block's input)."""
    tokens = c.seq * micro_batch
    if recompute == "full":
        return VALUE_BYTES * tokens * c.hidden
    kept = tokens * hf_token_bytes(c)
    if recompute == "selective":
        return kept
    return kept + hf_score_bytes(c) * c.heads * c.seq * tokens


def hf_embedding_bytes(c: TransformerConfig, micro_batch: int) -> float:
    """The embedding's bytes for one micro-batch: GPT-2's dropout mask (h bytes a token); BERT's LayerNorm
    input and stats and the mask; OPT none (no dropout, :func:`~archsim.training.hf_ops.hf_embedding_work`)."""
    h = c.hidden
    per_token = 0.0 if c.family == "opt" else (h if c.drops_hidden else 0)
    if c.family == "bert":
        per_token += VALUE_BYTES * h + NORM_STATS_BYTES
    return c.seq * micro_batch * per_token


def hf_head_bytes(c: TransformerConfig, micro_batch: int) -> float:
    """The head's bytes for one micro-batch: the final norm's input, output and stats (GPT-2, OPT), or
    BERT's transform (dense input, GeLU input, norm input and output, stats); the fp32 logits s·b·V the
    model's output holds and the log-softmax's result over the shifted (s − 1)·b rows, 4 bytes each."""
    tokens = c.seq * micro_batch
    per_token = VALUE_BYTES * (4 if c.family == "bert" else 2) * c.hidden + NORM_STATS_BYTES
    return tokens * per_token + VALUE_BYTES * c.vocab * (tokens + (c.seq - 1) * micro_batch)


def hf_activation_bytes(c: TransformerConfig, micro_batch: int, layers: int, in_flight: float, recompute: str,
                        first: bool = True, last: bool = True, working: bool = True) -> float:
    """One GPU's activations (eager runs the whole model on one GPU: ``first`` and ``last``): ``in_flight``
    micro-batches' layers, embedding and head, and under recompute, when ``working``, one layer's rerun set
    (``full``: the whole layer but its input, the checkpoint it reruns from, kept already; selective: its s²
    tensors) — once per rank, one layer being rerun at a time
    (:func:`~archsim.training.pipeline_memory.rank_memory` asks it of a rank's first chunk alone)."""
    b = micro_batch
    edges = (hf_embedding_bytes(c, b) if first else 0.0) + (hf_head_bytes(c, b) if last else 0.0)
    kept = in_flight * (layers * hf_layer_bytes(c, b, recompute) + edges)
    if not working:
        return kept
    if recompute == "full":  # less the rerun layer's input: its checkpoint, among ``kept`` already
        return kept + hf_layer_bytes(c, b, "none") - hf_layer_bytes(c, b, "full")
    if recompute == "selective":
        return kept + hf_score_bytes(c) * c.heads * c.seq * c.seq * b
    return kept


def hf_weight_gradient_bytes(c: TransformerConfig, micro_batch: int) -> float:
    """One layer's bytes from I to W for one micro-batch, in every recompute mode: the inputs of the q/k/v
    GEMMs (one tensor), the output projection, fc1 and fc2 (3·h + f per token) and their output gradients
    (3·h + h + f + h), fp32: 4·s·b·(8·h + 2·f) — GPT-2's Conv1D, OPT's and BERT's Linear alike."""
    return VALUE_BYTES * c.seq * micro_batch * (8 * c.hidden + 2 * c.ffn)


def hf_edge_weight_bytes(c: TransformerConfig, micro_batch: int, first: bool, last: bool) -> float:
    """The embedding's and head's bytes from I to W: the embeddings' output gradient (h a token, the tables'
    W scatters it); the LM head's input and the logits' gradient (h + V a token; BERT's transform dense
    its input and output gradient too, 2·h more), fp32."""
    per_token = c.hidden if first else 0
    if last:
        per_token += (3 if c.family == "bert" else 1) * c.hidden + c.vocab
    return VALUE_BYTES * c.seq * micro_batch * per_token


def hf_held_fraction(c: TransformerConfig, micro_batch: int, recompute: str,
                     stages: Sequence[tuple[int, bool, bool]]) -> float:
    """M_W / M_B of one micro-batch on a rank running ``stages`` (layers, first, last each): the bytes its
    layers and edges hold from I to W over those :func:`hf_activation_bytes` keeps per micro-batch."""
    b, held, kept = micro_batch, 0.0, 0.0
    for layers, first, last in stages:
        held += layers * hf_weight_gradient_bytes(c, b) + hf_edge_weight_bytes(c, b, first, last)
        kept += layers * hf_layer_bytes(c, b, recompute) + (hf_embedding_bytes(c, b) if first else 0.0) \
            + (hf_head_bytes(c, b) if last else 0.0)
    return held / kept if kept else 0.0


def hf_rank_fractions(c: TransformerConfig, micro_batch: int, recompute: str, counts: Sequence[int],
                      ranks: Sequence[Sequence[int]]) -> list[float]:
    """:func:`hf_held_fraction` of each rank, ``ranks`` listing its stages (``counts[j]`` layers in stage j)."""
    last = len(counts) - 1
    return [hf_held_fraction(c, micro_batch, recompute, [(counts[j], j == 0, j == last) for j in mine])
            for mine in ranks]


def hf_rank_gains(c: TransformerConfig, micro_batch: int, recompute: str, counts: Sequence[int],
                  ranks: Sequence[Sequence[int]]) -> list[float]:
    """:func:`~archsim.training.held_memory.rank_gains` of the eager layers, in each rank's M_B (edges in it)."""
    from archsim.training.held_memory import rank_gains

    b, last = micro_batch, len(counts) - 1
    out = []
    for mine in ranks:
        edges = sum((hf_embedding_bytes(c, b) if j == 0 else 0.0) + (hf_head_bytes(c, b) if j == last else 0.0)
                    for j in mine)
        out += rank_gains(hf_weight_gradient_bytes(c, b), hf_layer_bytes(c, b, recompute), [edges], counts, [mine])
    return out


__all__ = ["activation_kept", "hf_activation_bytes", "hf_edge_weight_bytes", "hf_embedding_bytes", "hf_head_bytes",
           "hf_held_fraction", "hf_layer_bytes", "hf_rank_fractions", "hf_rank_gains", "hf_score_bytes", "hf_token_bytes",
           "hf_weight_gradient_bytes"]
