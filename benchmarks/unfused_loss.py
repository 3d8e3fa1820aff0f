"""Megatron's GPT loss as it runs: the fp32 cast of the logits and the vocabulary-parallel
cross-entropy, one archsim op per CUDA kernel. Not in archsim's model (so it lives beside its benchmark): priced so in place of
:func:`~archsim.training.layer_ops.head_work`'s one fused op each way, it made the A100 runs'
held-out error worse (``benchmarks/bench_unfused_loss.py``; docs/accuracy.md).

With ``fp16_lm_cross_entropy`` off (the default), ``post_language_model_processing`` (and the
pipeline engine's ``CrossEntropy``) calls ``vocab_parallel_cross_entropy(output.float(), labels)``;
``_VocabParallelCrossEntropy`` then runs separate PyTorch ops (microsoft/Megatron-DeepSpeed
``megatron/core/tensor_parallel/cross_entropy.py`` and ``megatron/model/gpt_model.py`` at
f4157bea69f3df8c6cb66f2ebcda66ba03d1288e; NVIDIA/Megatron-LM's at 00611e6eeb0b09b5ee074750956855215ddbd67f
runs the same kernels, the cast inside it and the subtraction in place, same bytes): over the fp32
logits (T tokens × V/t vocabulary entries of this TP rank) a max, a subtraction, an in-place exp, a sum
and an in-place division that keeps the softmax for backward; over the tokens, the target masks and
the gathered target logit (int64 targets; ``x[bool_mask] = 0`` dispatches to one ``masked_fill_``).
Backward: the one-hot subtraction at the targets (index, subtract, index_put), ``mul_`` by the
incoming gradient, and the cast's backward to fp16. The three TP all-reduces (max, target logit,
sum) are :func:`archsim.training.layer_ops.head_work`'s collectives.

Bytes in elements of fp16 training, 2 bytes (an fp32 value 2, an int64 4, a bool ½): (name, per logit, per
token) read plus written. Per logit: 19 forward (38 bytes: cast 2+4, max 4, subtract 4+4, exp 4+4, sum 4,
divide 4+4), 7 backward (14 bytes: multiply 4+4, cast 4+2). Not counted: the loss's mask-weighted
mean over the tokens outside this function and the loss scaling. fp16/bf16 only: in fp32 the counts
would be halved and the casts dropped, as :func:`archsim.training.kernel_bytes.cross_entropy_elements`
does for the shipped fused op.
"""

from __future__ import annotations

from archsim.lowering import TrainingOp

FORWARD = (
    ("to_fp32", 3, 0),            # fp16 logits read, fp32 written
    ("max", 2, 6),                # read; values (fp32) and indices (int64) written per token
    ("sub_max", 4, 2),            # logits − max: read, write; the max read per token
    ("target_lt", 0, 4.5),        # target < start: int64 read, bool written
    ("target_ge", 0, 4.5),        # target ≥ end
    ("target_or", 0, 1.5),        # two bools read, one written
    ("target_clone", 0, 8),       # int64 read, written
    ("target_sub", 0, 8),         # − start
    ("target_fill", 0, 8.5),      # masked_fill_: int64 and bool read, int64 written
    ("arange", 0, 4),             # int64 written
    ("target_gather", 0, 12),     # logits[arange, target]: two int64 indices and fp32 read, fp32 written
    ("target_clone_logit", 0, 4),  # fp32 read, written
    ("target_fill_logit", 0, 4.5),  # masked_fill_: fp32 and bool read, fp32 written
    ("exp", 4, 0),                # in place: read, write
    ("sum", 2, 2),                # read; fp32 sum written per token
    ("log", 0, 4),                # fp32 read, written
    ("loss", 0, 6),               # log − target logit: two read, one written
    ("div", 4, 2),                # in place: read, write; the sum read per token
)
BACKWARD = (
    ("mask_float", 0, 2.5),       # bool read, fp32 written
    ("mask_rsub", 0, 4),          # 1 − mask
    ("arange", 0, 4),
    ("target_gather", 0, 12),     # softmax[arange, target]
    ("target_sub", 0, 6),         # − (1 − mask)
    ("target_scatter", 0, 12),    # index_put_: two int64 indices and fp32 read, fp32 written
    ("mul_grad", 4, 2),           # in place by the loss gradient (fp32, per token)
    ("to_fp16", 3, 0),            # the cast's backward: fp32 read, fp16 written
)


def cross_entropy_ops(tokens: int, vocab: int) -> tuple[tuple[TrainingOp, ...], tuple[TrainingOp, ...]]:
    """(forward, backward) kernels of the loss over ``tokens`` tokens and ``vocab`` logits per token
    on this GPU (the TP rank's share of the padded vocabulary); backward in the order it runs."""

    def ops(table: tuple[tuple[str, float, float], ...], kind: str) -> tuple[TrainingOp, ...]:
        return tuple(TrainingOp(f"cross_entropy.{name}", kind, (),
                                vector_elements=int(round(per_logit * tokens * vocab + per_token * tokens)))
                     for name, per_logit, per_token in table)

    return ops(FORWARD, "F"), ops(BACKWARD, "D")


__all__ = ["BACKWARD", "FORWARD", "cross_entropy_ops"]
