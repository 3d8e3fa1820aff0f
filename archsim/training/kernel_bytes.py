"""What Megatron's memory-bound kernels read and write where the training dtype changes it, in elements of
that dtype: the unit of :attr:`~archsim.lowering.TrainingOp.vector_elements`, which
:mod:`archsim.devices.kernel_ops` prices at the dtype's element size. Why: a 1-byte mask, an fp32 value and
the casts to and from fp32 are the same bytes whatever the training dtype, but a different number of its
elements, and in fp32 training the casts do not run (:mod:`archsim.training.layer_ops` builds the ops).
"""

from __future__ import annotations

from archsim.choices.devices import ELEMENT_BYTES


def dtype_elements(nbytes: float, dtype: str) -> float:
    """``nbytes`` bytes as elements of the training dtype ``dtype``, the unit memory-bound ops count in
    (:attr:`~archsim.lowering.TrainingOp.vector_elements`): a 1-byte mask is ½ element in fp16/bf16, ¼ in fp32."""
    return nbytes / ELEMENT_BYTES[dtype]


def unfused_softmax(dtype: str) -> tuple[tuple[str, float, float], ...]:
    """Megatron's softmax when its fused kernel does not apply (``FusedScaleMaskSoftmax.forward_torch_softmax``),
    (kernel, forward, backward elements of ``dtype`` per score): scale (read, write fp32: 4 + 4 bytes), mask (a
    masked fill: read, the bool mask, write: 4 + 1 + 4), softmax (read, write; backward read y and dy, write dx),
    the backward each kernel's gradient; in fp16/bf16 the scores are cast to fp32 first and the probabilities
    back (read x, write 4 bytes; and back), five kernels each way, in fp32 none (``input_in_float16`` off): three."""
    x = ELEMENT_BYTES[dtype]
    kernels = [("softmax.scale", 8, 8), ("softmax.mask", 9, 9), ("softmax", 8, 12)]
    if dtype != "fp32":
        kernels = [("softmax.to_fp32", x + 4, 4 + x), *kernels, ("softmax.to_fp16", 4 + x, x + 4)]
    return tuple((name, dtype_elements(f, dtype), dtype_elements(d, dtype)) for name, f, d in kernels)


def cross_entropy_elements(dtype: str) -> tuple[float, float]:
    """(forward, backward) elements of ``dtype`` per logit of the fused vocabulary-parallel cross-entropy
    (:func:`~archsim.training.layer_ops.head_work`): forward the logits' cast to fp32 (read x, write 4 bytes; none in fp32), a max (read 4),
    the exponentials (read 4, write 4) and their sum (read 4): 22 bytes in fp16/bf16, 16 in fp32; backward
    softmax − one-hot times the loss gradient in place on the kept fp32 softmax (read 4, write 4; the
    gradient's cast back to fp16/bf16 not counted)."""
    cast = 0 if dtype == "fp32" else ELEMENT_BYTES[dtype] + 4
    return dtype_elements(cast + 4 + 8 + 4, dtype), dtype_elements(8, dtype)




def fused_softmax(seq: int, attention_batches: int, dtype: str = "fp16") -> bool:
    """Whether Megatron's fused scale-mask-softmax kernel runs (one kernel each way) for ``seq`` tokens,
    ``attention_batches`` = micro-batch × heads per TP rank, training in ``dtype``: its warp-per-row kernel
    needs 16 < key length ≤ 2048, query length and attention batches multiples of 4
    (``FusedScaleMaskSoftmax``'s ``custom_kernel_constraint`` in the Megatron-DeepSpeed the measured runs
    used; vTrain's model copies it) and half-precision scores: Megatron-LM's ``megatron/model/fused_softmax.py``
    invokes the kernel only ``if self.input_in_fp16``, Megatron-Core's ``is_kernel_available``
    (``megatron/core/fusions/fused_softmax.py``) only with ``self.input_in_float16`` (fp16 or bf16). Otherwise PyTorch runs :func:`unfused_softmax`'s kernels in fp32 —
    e.g. 16 heads over TP 8 at micro-batch 1 (2 attention batches), or any shape under ``--dtype fp32``.
    The other fused kernels the list assumes have no dtype condition and run in fp32 too: bias-GeLU and
    bias-dropout-add are ``jit_fuser`` functions (``megatron/core/fusions/fused_bias_gelu.py``,
    ``fused_bias_dropout.py``), the layer norm apex's fused kernel, which takes fp32."""
    return dtype != "fp32" and 16 < seq <= 2048 and seq % 4 == 0 and attention_batches % 4 == 0


__all__ = ["cross_entropy_elements", "dtype_elements", "fused_softmax", "unfused_softmax"]
