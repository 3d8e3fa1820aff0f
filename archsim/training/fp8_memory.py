"""What Transformer Engine's fp8 recipe (``--fp8``, :mod:`~archsim.training.fp8_ops`) changes in a GPU's memory:
the linear layers' saved inputs at 1 byte an element (:func:`fp8_activation_bytes`, read by the memory's
per-layer figures through :func:`fp8_kept`) and the fp8 weights TE keeps (:func:`fp8_weight_bytes`). Read from
NVIDIA/TransformerEngine (commit d0067d0d: ``module/linear.py``, ``module/layernorm_linear.py``).

**Saved for the backward** (per layer and micro-batch; Korthikanti et al.'s count keeps these tensors at 2 bytes):

* a norm-fed input (QKV's, the dense MLP's first): ``ln_out`` in fp8, column-wise only (``update_usage(rowwise_usage
  =False)``; under sequence parallelism the rank's T/t rows row-wise, gathered again in the backward) in place of
  the 2-byte norm output: 1 byte less per element of its T (T/t) × h;
* the attention projection's input: its fp8 copy, column-wise. Standard attention keeps no other (the context GEMM
  saves its inputs): 1 byte less per element of T × the attention's width on the rank. FlashAttention (and cuDNN's
  fused attention) keeps its output O for its own backward (``save_for_backward(q, k, v, out, ...)``), so the fp8
  copy is kept beside it: 1 byte more per element (TE's ``save_original_input``, which would share O, refuses the
  delayed-scaling quantizer: ``DelayedScaling recipe is not supported with save_original_input``);
* the MLP's second GEMM's input (GELU's or SwiGLU's output): 1 byte less per element of T × ffn/t;
* a mixture's experts: each row's first input (h) and SwiGLU output (f/ETP), 1 byte less each, on the rows the
  rank's experts take (:func:`~archsim.training.moe_ops.routed_rows` × ETP); a shared expert's first input, the
  norm's output the router keeps already in 2 bytes, adds its fp8 copy (1 byte per element of T/t × h), its second
  1 byte less per element of T × f_s/t.

Under full recompute a layer keeps its input alone and these change the rerun layer's working set instead (as
:func:`~archsim.training.moe_ops.etp_kept` treats ETP's rows). The zero-bubble schedules' weight-gradient memory
(``held_memory``) keeps its 2-byte counts.

**Model state.** TE caches each fp8 weight row- and column-wise (``_fp8_workspaces``, kept because Megatron passes
``is_first_microbatch``): 2 bytes per parameter of :func:`~archsim.training.fp8_ops.fp8_weight_parameters` on every
rank, beside the higher-precision weight, whatever the optimizer's sharding (a cache of the module, not a state the
optimizer shards). So fp8 can need more memory than bf16 where activations are few (full recompute, small
micro-batches): the cache outweighs the inputs it halves.
"""

from __future__ import annotations

from archsim.training.fp8_ops import fp8_weight_parameters
from archsim.training.moe_ops import routed_rows, routing_tokens
from archsim.training.parallel import Parallelism
from archsim.workload.transformer import TransformerConfig, layer_widths

CACHED_WEIGHT_BYTES = 2  # TE's fp8 weight, row-wise and column-wise (transposed): 1 byte each


def fp8_activation_bytes(c: TransformerConfig, par: Parallelism) -> float:
    """Bytes a layer keeps for its backward per micro-batch under ``par.fp8``, less those without it (module
    docstring; negative: fewer), on one GPU (``c`` a CP rank's, as the memory's counts take it); 0 without fp8."""
    if par.fp8 is None:
        return 0.0
    tp, sp = par.tp, par.sequence_parallel
    tokens, local = c.seq * par.micro_batch, routing_tokens(c, par.micro_batch, tp, sp)
    w, h = layer_widths(c, tp), c.hidden
    delta = -local * h + (1 if par.attention == "flash" else -1) * tokens * w.attention  # QKV's, projection's inputs
    if not c.moe:
        return delta - local * h - tokens * w.ffn  # the MLP's first and second inputs
    e_tp = par.expert_tp
    delta -= routed_rows(c, local) * e_tp * (h + c.expert_ffn // e_tp)
    if c.shared_expert_ffn:
        delta += local * h - tokens * (c.shared_expert_ffn // tp)
    return delta


def fp8_kept(c: TransformerConfig, par: Parallelism, kept: float, unscaled: float,
             working: tuple[float, float] | None) -> tuple[float, float, tuple[float, float] | None]:
    """A layer's kept activations, their unscaled part and its working set (the memory's per-layer figures) under
    ``par.fp8``: :func:`fp8_activation_bytes` on what is kept, or under full recompute on the rerun layer's working
    set."""
    delta = fp8_activation_bytes(c, par)
    if not delta:
        return kept, unscaled, working
    if par.recompute != "full":
        return kept + delta, unscaled, working
    return kept, unscaled, None if working is None else (working[0] + delta, working[1])


def fp8_weight_bytes(c: TransformerConfig, par: Parallelism) -> float:
    """Bytes one layer's cached fp8 weights take on one GPU (:data:`CACHED_WEIGHT_BYTES` per parameter TE casts);
    0 without ``par.fp8``."""
    if par.fp8 is None:
        return 0.0
    return CACHED_WEIGHT_BYTES * fp8_weight_parameters(c, par.tp, par.ep, par.etp)


__all__ = ["CACHED_WEIGHT_BYTES", "fp8_activation_bytes", "fp8_kept", "fp8_weight_bytes"]
