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

**FP8 parameters** (``--fp8-param-gather``, Megatron-LM; TE's ``fp8_model_init``; NeMo's ``fp8_param_gather``, set
by its ``bf16_with_fp8_mixed`` recipe, which NVIDIA's DGX Cloud Llama 3.1 benchmark runs): the linear layers' weights
are TE ``Float8Tensor``s, "only FP8 copies of its parameters, as opposed to the default behavior where both higher
precision and FP8 copies are present" (TE's ``fp8_model_init``). Per parameter of :func:`fp8_weight_parameters`:
the fp8 weight, 1 byte in Megatron's parameter buffer (``param_dtype = torch.uint8`` for a ``Float8Tensor``,
``distributed_data_parallel.py``), and its transpose, 1 byte (on Hopper, which has no non-TN fp8 GEMM, TE's
``post_all_gather_processing`` makes it after each all-gather and keeps it): :data:`FP8_PARAMETER_BYTES` = 2 in
place of the 16-bit weight (2, counted in :func:`~archsim.training.memory.state_bytes`) and the cached fp8 copy
(:data:`CACHED_WEIGHT_BYTES`, none kept): 2 bytes a parameter less. The gradient buffer (``main_grad``) and the
distributed optimizer's fp32 main weight and moments are unchanged (the main weights fp32, sharded; the step casts
its shard to fp8, ``quantize_param_shard``). Megatron-LM refuses the flag without the distributed optimizer,
whose all-gather after the step then moves each fp8 weight's 1 byte, not 2 (:func:`gathered_parameter_bytes`);
the other parameters (embedding, norms, router, LM head) stay 16-bit there and in memory.
"""

from __future__ import annotations

from archsim.training.fp8_ops import fp8_weight_parameters
from archsim.training.moe_ops import routed_rows, routing_tokens
from archsim.training.parallel import Parallelism
from archsim.workload.transformer import TransformerConfig, layer_widths

CACHED_WEIGHT_BYTES = 2  # TE's fp8 weight, row-wise and column-wise (transposed): 1 byte each
FP8_PARAMETER_BYTES = 2  # --fp8-param-gather: the fp8 weight (1, the parameter buffer's uint8) and its transpose (1)
WEIGHT_BYTES = 2  # the 16-bit weight the model states count per parameter (fp8 runs beside bf16 or fp16 only)
GATHERED_FP8_BYTES = 1  # an fp8 weight's bytes in the distributed optimizer's all-gather


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
    delta -= routed_rows(c, local, par.ep) * e_tp * (h + c.expert_ffn // e_tp)
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
    """Bytes one layer's fp8 weights take on one GPU beside the model states' 16-bit weight: the cached copies
    (:data:`CACHED_WEIGHT_BYTES` per parameter TE casts), or with ``par.fp8_param_gather`` the fp8 weights in its
    place (:data:`FP8_PARAMETER_BYTES` − :data:`WEIGHT_BYTES` a parameter: 0 on Hopper); 0 without ``par.fp8``."""
    if par.fp8 is None:
        return 0.0
    per_parameter = FP8_PARAMETER_BYTES - WEIGHT_BYTES if par.fp8_param_gather else CACHED_WEIGHT_BYTES
    return per_parameter * fp8_weight_parameters(c, par.tp, par.ep, par.etp)


def gathered_parameter_bytes(parameters: float, fp8_parameters: float, weight_bytes: float) -> float:
    """Mean bytes per parameter the distributed optimizer's all-gather moves for ``parameters`` of which
    ``fp8_parameters`` are fp8 weights (``--fp8-param-gather``: :data:`GATHERED_FP8_BYTES` each, the rest
    ``weight_bytes``, the dtype's)."""
    if not parameters or not fp8_parameters:
        return weight_bytes
    return weight_bytes - (weight_bytes - GATHERED_FP8_BYTES) * fp8_parameters / parameters


__all__ = ["CACHED_WEIGHT_BYTES", "FP8_PARAMETER_BYTES", "GATHERED_FP8_BYTES", "WEIGHT_BYTES", "fp8_activation_bytes",
           "fp8_kept", "fp8_weight_bytes", "gathered_parameter_bytes"]
