"""Memory per GPU: model states, and a stage's activations under the schedule and recomputation.

Model states (mixed-precision Adam): the bytes per parameter a GPU holds at the optimizer step, Megatron-LM's own
table (``docs/api-guide/dist_optimizer.md``): 20 in fp16 — fp16 weight and gradient buffer (4), fp32 main weight,
momentum and variance (12), and the fp32 copy of the gradient the step makes (4) — 18 in bf16, whose buffer is fp32
already (:func:`gradient_bytes`), 16 in fp32 (:func:`state_bytes`). With the distributed optimizer (ZeRO-1) all but
the weight and its gradient buffer are sharded over the d DP ranks: 4 + 16/d, 6 + 12/d and 8 + 8/d, the table's
second column. With FSDP's full sharding (ZeRO-3, ``Parallelism.fsdp``) every state is sharded: 16/d in every dtype —
the fp32 parameter shard, its fp32 gradient and Adam's momentum and variance, 4 each (PyTorch FSDP's
``MixedPrecision`` keeps the sharded parameters in fp32 and casts them to the compute dtype only when it all-gathers
them) — plus the units in flight (:func:`fsdp_unit_bytes`).

Activations: a stage holds one layer's kept activations (:mod:`archsim.training.layer_activations`, Korthikanti et
al.'s table) per layer for every micro-batch it has run forward but not backward; the schedule fixes that count
(1F1B: p − i on stage i; read off the schedule's action order, so interleaved and zero-bubble orders count right),
and one layer's working set in the backward (recomputation's rerun, FlashAttention's buffers) comes on top. The
first stage also keeps the embedding's dropout mask (s·b·h bytes per micro-batch in flight, s·b·h/t with sequence
parallelism, when the model drops hidden states: :func:`embedding_mask_bytes`), the last the fp16 and fp32 logits
of the micro-batch it is on (6·s·b·V/t; in fp32 the logits alone, which the cross-entropy turns into its softmax in
place: 4·s·b·V/t, :func:`logit_bytes`). In fp32 the 2-byte values double; the 1-byte dropout masks and
FlashAttention's fp32 log-sum-exp keep their width (:func:`stage_terms`' ``scale``). Under ``--fp8`` the linear
layers keep their inputs at 1 byte and their fp8 weights beside the states (:mod:`archsim.training.fp8_memory`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from archsim.choices.devices import ELEMENT_BYTES
from archsim.training.eager_ops import check_sharding
from archsim.training.fp8_memory import fp8_kept, fp8_weight_bytes
from archsim.training.hf_memory import hf_activation_bytes
from archsim.training.layer_activations import layer_kept
from archsim.training.layer_ops import embedding_parameters
from archsim.training.moe_ops import etp_kept
from archsim.training.mtp import mtp_config, mtp_kept, mtp_parameters
from archsim.training.parallel import Parallelism, padded_vocab
from archsim.workload.layer_kinds import dense_config
from archsim.workload.layer_parameters import layer_parameters, outer_norm_parameters, replicated_parameters
from archsim.workload.transformer import TransformerConfig

ADAM_STATE_BYTES = 12  # Adam's fp32 states per parameter: the main (fp32) weight, momentum and variance, 4 bytes each
MAIN_GRAD_BYTES = 4  # the fp32 gradient every dtype's Adam steps on
FP32_STATE_BYTES = ADAM_STATE_BYTES + MAIN_GRAD_BYTES  # fp32 Adam's: weight (the main one), gradient, momentum, variance: 16


def gradient_bytes(dtype: str) -> int:
    """Bytes per parameter of the gradient buffer Megatron-LM keeps (``main_grad``) and sends in the DP all-reduce:
    the parameter's own width in fp16 (2) and fp32 (4), and fp32's 4 in bf16 — for --bf16 Megatron sets
    ``accumulate_allreduce_grads_in_fp32`` (bf16 gradients summed in bf16 lose too much), so the buffer, its all-reduce
    (or reduce-scatter) and the tied embedding's all-reduce are fp32 (docs/training.md, "Gradients in bf16")."""
    return 4 if dtype == "bf16" else ELEMENT_BYTES[dtype]


def gradient_dtype(dtype: str, implementation: str = "megatron") -> str:
    """The element type the weight gradients are held and DP all-reduced in, what train's meta states as
    ``gradient_dtype``: Megatron-LM's buffer (:func:`gradient_bytes`), ``fp32`` in bf16 and fp32 and ``fp16`` in fp16;
    ``pytorch-eager``'s (one GPU, no all-reduce) the run's own dtype, copied to fp32 at the step (:func:`state_bytes`)."""
    if implementation == "pytorch-eager":
        return dtype
    return "fp32" if gradient_bytes(dtype) == ELEMENT_BYTES["fp32"] else dtype


def main_grad_copy_bytes(dtype: str) -> int:
    """Bytes per parameter of the fp32 gradient Megatron-LM's step copies out of a narrower buffer: 4 in fp16,
    0 in bf16 and fp32. ``Float16OptimizerWithFloat16Params._copy_model_grads_to_main_grads``
    (``megatron/core/optimizer/optimizer.py``) sets ``main_param.grad = model_param.main_grad.float()``: a new
    fp32 tensor from the fp16 buffer (which, contiguous, stays), the buffer itself when it is fp32 already."""
    return MAIN_GRAD_BYTES if gradient_bytes(dtype) < MAIN_GRAD_BYTES else 0


FSDP_STATE_BYTES = ADAM_STATE_BYTES + MAIN_GRAD_BYTES  # FULL_SHARD, mixed precision: fp32 parameter, gradient, m, v: 16


def fsdp_unit_bytes(dtype: str) -> int:
    """Bytes per parameter of the largest FSDP unit that full sharding holds unsharded at once: its
    parameters all-gathered in the compute ``dtype`` twice (the unit computing and the next one prefetched)
    and one unit's unsharded gradient in the reduce's width (:func:`gradient_bytes`: fp32 in bf16) before
    its reduce-scatter — 8 in bf16, 6 in fp16, 12 in fp32."""
    return 2 * ELEMENT_BYTES[dtype] + gradient_bytes(dtype)


def unsharded_state_bytes(dtype: str) -> int:
    """Model-state bytes per parameter the distributed optimizer leaves on every DP rank: the weight in
    ``dtype`` and its gradient buffer (:func:`gradient_bytes`), which the backward fills whole — 4 in fp16,
    6 in bf16, 8 in fp32, the constant terms of Megatron-LM's table (``docs/api-guide/dist_optimizer.md``)."""
    return ELEMENT_BYTES[dtype] + gradient_bytes(dtype)


def state_bytes(dtype: str, implementation: str = "megatron", shards: int = 1, full: bool = False) -> float:
    """Model-state bytes per parameter a GPU holds at the optimizer step. ``full``: FSDP's full sharding,
    :data:`FSDP_STATE_BYTES` / ``shards`` in every dtype (the transient units apart: :func:`fsdp_unit_bytes`).
    ``shards``: the DP ranks Megatron-LM's distributed optimizer shards the rest over
    (:attr:`~archsim.training.parallel.Parallelism.optimizer_shards`; 1: none) — :func:`unsharded_state_bytes` whole,
    the fp32 main weight, Adam's moments and the step's fp32 gradient copy 1/``shards`` each: 4 + 16/d in fp16,
    6 + 12/d in bf16, 8 + 8/d in fp32, the table's "Distributed optim" column (``pytorch-eager`` has no distributed
    optimizer: refused for ``shards`` > 1). Megatron-LM (``Float16OptimizerWithFloat16Params``,
    ``megatron/core/optimizer/optimizer.py``): the weight in ``dtype``, its gradient buffer (:func:`gradient_bytes`), the step's fp32 gradient copy (:func:`main_grad_copy_bytes`)
    and Adam's fp32 states (main weight, momentum, variance: 12; in fp32 the weight is the main one, 8) —
    20 in fp16, 18 in bf16, 16 in fp32, the rows of Megatron-LM's ``docs/api-guide/dist_optimizer.md`` table.
    Why the step's: the copy lives from the step to the next iteration's ``zero_grad`` (set to None) and is
    counted beside the activations, as the table counts it (it overstates the peak by at most 4 bytes a
    parameter when the activations outweigh it). ``pytorch-eager`` in fp16/bf16 (``benchmarks/train_step.py``,
    ``MixedPrecisionAdam.step``) frees each fp16 gradient once copied to fp32: weight, fp32 gradient and
    Adam's 12 — 18; in fp32 (Hugging Face's modules, PyTorch's Adam) 16."""
    check_sharding(implementation, shards > 1, full)
    if full:
        return FSDP_STATE_BYTES / shards
    if implementation == "pytorch-eager":
        return FP32_STATE_BYTES if dtype == "fp32" else ELEMENT_BYTES[dtype] + MAIN_GRAD_BYTES + ADAM_STATE_BYTES
    whole = FP32_STATE_BYTES if dtype == "fp32" else \
        ELEMENT_BYTES[dtype] + gradient_bytes(dtype) + main_grad_copy_bytes(dtype) + ADAM_STATE_BYTES
    if shards == 1:
        return whole  # the table's first column, as an int: today's figures to the bit
    kept = unsharded_state_bytes(dtype)
    return kept + (whole - kept) / shards


STATE_BYTES_PER_PARAMETER = state_bytes("fp16")  # the default dtype's: 20


def logit_bytes(value_bytes: float) -> float:
    """Bytes per logit the last stage keeps for the vocabulary-parallel cross-entropy, the logits being
    ``value_bytes`` wide: the logits and the fp32 copy ``.float()`` makes of narrower ones (2 + 4 = 6 in
    fp16/bf16); fp32 logits are their own ``.float()``, and ``_VocabParallelCrossEntropy`` turns them into
    the softmax it saves in place (``megatron/core/tensor_parallel/cross_entropy.py``: ``-=``,
    ``torch.exp(..., out=)``, ``div_``): 4. The same rule as :func:`main_grad_copy_bytes`."""
    return value_bytes + (MAIN_GRAD_BYTES if value_bytes < MAIN_GRAD_BYTES else 0)


@lru_cache(maxsize=4096)  # a planned search's rank sizing asks again and again for the same shapes
def layer_parameters_per_gpu(c: TransformerConfig, tp: int, ep: int = 1, etp: int | None = None) -> float:
    """One layer's parameters on one GPU of its TP group: the split weights and column-parallel biases
    / t, plus the replicated norms, router and row-parallel biases; a mixture's experts / (ETP · ``ep``), ETP ``etp`` or t."""
    replicated, experts = replicated_parameters(c), c.experts * 3 * c.hidden * c.expert_ffn if c.moe else 0
    return (layer_parameters(c) - replicated - experts) / tp + replicated + experts / ((etp or tp) * ep)


@dataclass(frozen=True)
class StageMemory:
    """What one GPU of a pipeline stage holds: ``parameters``, how many (a count, not bytes), and the bytes it needs,
    its model ``states`` (parameters, gradients, optimizer states), ``activations`` and their ``total``."""

    parameters: float
    states: float
    activations: float

    @property
    def total(self) -> float:
        return self.states + self.activations


def stage_parameters(c: TransformerConfig, par: Parallelism, layers: int, first: bool, last: bool,
                     head_copy: bool | None = None, dense: int = 0) -> float:
    """Parameters on one GPU of a stage: its layers (``dense`` of them a mixture's dense kind,
    :func:`~archsim.workload.layer_kinds.dense_config`), the embedding on the first stage, the final norm (and, when
    the first and last stages sit on different ranks and embeddings are tied, the LM head's copy of the token table —
    ``head_copy``, default PP > 1) on the last."""
    params = stage_terms(c, par, first, last, head_copy).parameters(layers - dense)
    return params + dense * stage_terms(dense_config(c), par, False, False, head_copy).layer if dense else params


def stage_memory(c: TransformerConfig, par: Parallelism, layers: int, in_flight: float, first: bool, last: bool,
                 head_copy: bool | None = None, states: float = STATE_BYTES_PER_PARAMETER, unit: float = 0.0,
                 scale: float = 1.0, hf: bool = False, working: bool = True) -> StageMemory:
    """Memory of one GPU of a stage holding ``layers`` layers with ``in_flight`` micro-batches' activations (the
    other arguments as :func:`stage_terms`')."""
    return stage_terms(c, par, first, last, head_copy, states, unit, scale, hf, working).memory(layers, in_flight)


def stage_activations(c: TransformerConfig, par: Parallelism, layers: int, in_flight: float, first: bool,
                      last: bool, scale: float = 1.0, hf: bool = False, working: bool = True) -> float:
    """:func:`stage_memory`'s activation bytes alone (a rank's peak reads them at two in-flight counts)."""
    return stage_terms(c, par, first, last, None, 0.0, 0.0, scale, hf, working).activations(layers, in_flight)


@dataclass(frozen=True)
class StageTerms:
    """:func:`stage_memory`'s figures but a stage's layers and micro-batches in flight, read once (:func:`stage_terms`)
    for a planner sizing a rank at many counts: parameters per GPU (a ``layer``'s; ``edges``: embedding, final norm,
    LM-head copy; ``whole``: Switch's), bytes per parameter (``states``, FSDP's ``unit``), per layer beside them
    (``cached``: fp8's weights, :func:`~archsim.training.fp8_memory.fp8_weight_bytes`) and per micro-batch (as
    :func:`~archsim.training.layer_activations.layer_kept`, ``mask``, ``logits``; ``other``: Switch's or Hugging Face's, (layers, in flight) → bytes)."""

    whole: float | None
    layer: float
    edges: tuple[float, ...]
    states: float
    unit: float
    kept: float
    unscaled: float
    working_set: tuple[float, float] | None
    mask: float | None
    logits: float | None
    scale: float
    other: Callable[[int, float], float] | None
    cached: float = 0.0
    mtp_kept: float = 0.0  # the MTP modules' kept activations per micro-batch (last stage: mtp.py), and of them
    mtp_unscaled: float = 0.0  # the masks and log-sum-exp

    def parameters(self, layers: int) -> float:
        """:func:`stage_parameters` of ``layers`` layers."""
        if self.whole is not None:  # one GPU holds it all (parallel.check_fits)
            return self.whole
        params = layers * self.layer
        for edge in self.edges:
            params += edge
        return params

    def activations(self, layers: int, in_flight: float) -> float:
        """:func:`stage_activations` of ``layers`` layers at ``in_flight`` micro-batches."""
        if self.other is not None:
            return self.other(layers, in_flight)
        activations = in_flight * layers * self.kept + in_flight * self.mtp_kept
        fixed = in_flight * layers * self.unscaled + in_flight * self.mtp_unscaled
        if self.working_set is not None:
            activations, fixed = activations + self.working_set[0], fixed + self.working_set[1]
        if self.mask is not None:
            embedding_mask = in_flight * self.mask
            activations, fixed = activations + embedding_mask, fixed + embedding_mask
        activations = activations * self.scale - fixed * (self.scale - 1)  # masks and log-sum-exp unscaled
        if self.logits is not None:
            activations += self.logits
        return activations

    def memory(self, layers: int, in_flight: float) -> StageMemory:
        """:func:`stage_memory` of ``layers`` layers at ``in_flight`` micro-batches."""
        params, activations = self.parameters(layers), self.activations(layers, in_flight)
        held = self.states * params + layers * self.cached
        if not self.unit:
            return StageMemory(params, held, activations)
        largest = max(self.layer if layers else 0.0, params - layers * self.layer)
        return StageMemory(params, held + self.unit * largest, activations)


@lru_cache(maxsize=4096)  # a rank's middle chunks share theirs; a planner sizes each rank at several counts
def stage_terms(c: TransformerConfig, par: Parallelism, first: bool, last: bool, head_copy: bool | None = None,
                states: float = STATE_BYTES_PER_PARAMETER, unit: float = 0.0, scale: float = 1.0, hf: bool = False,
                working: bool = True) -> StageTerms:
    """:class:`StageTerms` of the first and/or last stage or neither (``head_copy``: :func:`stage_parameters`'); ``states``:
    bytes per parameter (:func:`state_bytes`); ``unit``: with FSDP, :func:`fsdp_unit_bytes` per parameter of the largest
    unit (a layer, or the embedding with the final norm and LM head), counted in the states. ``scale``: activations'
    bytes per element over fp16's (2 in fp32); the dropout masks
    (:func:`~archsim.training.layer_activations.layer_mask_bytes`, the embedding's) stay a byte, as Megatron keeps
    them, FlashAttention's log-sum-exp and backward buffers' fp32 4
    (:func:`~archsim.training.layer_activations.layer_lse_bytes`). ``hf``: Hugging Face's fp32 eager modules (:func:`~archsim.training.hf_memory.hf_activation_bytes`). ``working``:
    whether it carries its rank's working set in one layer's backward (recomputation's, FlashAttention's buffers)."""
    b, t, sp = par.micro_batch, par.tp, par.sequence_parallel
    if c.family == "switch":  # fp32 eager only: 4 bytes an fp32 element (its masks counted as ¼ element)
        from archsim.training.hf_switch_ops import switch_activation_elements

        elements = switch_activation_elements(c, b)
        return StageTerms(float(c.parameter_count), 0.0, (), states, 0.0, 0.0, 0.0, None, None, None, scale,
                          lambda layers, in_flight: in_flight * ELEMENT_BYTES["fp32"] * elements)
    head = last and ((par.pp > 1 if head_copy is None else head_copy) or not c.tied_embeddings)  # the LM head's copy
    mtp = last and c.mtp_layers > 0  # the MTP modules, on the last stage (mtp.py): the token table too when untied
    edges = (*([embedding_parameters(c, t)] if first else []), *([outer_norm_parameters(c)] if last else []),
             *([padded_vocab(c.vocab, t) // t * c.hidden] if head else []),  # final norm: RMS γ, LayerNorm γ and β
             *([mtp_parameters(c, layer_parameters_per_gpu(mtp_config(c), t, par.ep, par.etp), t,
                             not c.tied_embeddings and not first)] if mtp else []))
    if hf:  # FSDP's unit is Megatron's alone
        return StageTerms(None, layer_parameters_per_gpu(c, t, par.ep, par.etp), edges, states, 0.0, 0.0, 0.0, None, None, None, scale,
                          lambda layers, in_flight: hf_activation_bytes(c, b, layers, in_flight, par.recompute,
                                                                        first, last, working))
    kept, unscaled, working_set = fp8_kept(c, par, *etp_kept(c, par, *layer_kept(c, b, t, par.recompute, sp,
                                                                                  par.attention, working)))
    extra = (0.0, 0.0)
    if mtp:  # each module's layer kept as the model's last layer's, beside its projection's
        own = mtp_config(c)
        layer, masks, _ = etp_kept(own, par, *layer_kept(own, b, t, par.recompute, sp, par.attention, False))
        extra = (c.mtp_layers * (layer + mtp_kept(c, b, t, par.recompute, sp)), c.mtp_layers * masks)
    logits = 1 + c.mtp_layers if last else 1  # the head's and each module's, held to the backward
    return StageTerms(None, layer_parameters_per_gpu(c, t, par.ep, par.etp), edges, states, unit, kept, unscaled, working_set,
                      embedding_mask_bytes(c, b, t, sp) if first else None,
                      logits * logit_bytes(2 * scale) * c.seq * b * padded_vocab(c.vocab, t) / t if last else None, scale,
                      None, fp8_weight_bytes(c, par), *extra)


def embedding_mask_bytes(c: TransformerConfig, micro_batch: int, tp: int, sequence_parallel: bool) -> float:
    """The first stage's 1-byte embedding-dropout mask: s·b·h, /t under SP (``LanguageModelEmbedding.forward``
    scatters to the sequence-parallel region before it), 0 without hidden dropout; I frees it, no W reads it."""
    return c.seq * micro_batch * c.hidden / (tp if sequence_parallel else 1) if c.drops_hidden else 0.0


__all__ = ["ADAM_STATE_BYTES", "FP32_STATE_BYTES", "FSDP_STATE_BYTES", "STATE_BYTES_PER_PARAMETER", "StageMemory",
           "StageTerms", "embedding_mask_bytes", "fsdp_unit_bytes", "gradient_bytes", "gradient_dtype", "layer_parameters_per_gpu", "logit_bytes",
           "main_grad_copy_bytes", "stage_activations", "stage_memory", "stage_parameters", "stage_terms",
           "state_bytes", "unsharded_state_bytes"]
