"""HBM elements a memory-bound op streams: what an unfused kernel reads plus writes, in elements of the training
dtype. The one count for every command that times such an op on a device (``train``'s op lists,
:mod:`archsim.training.layer_ops`; ``cost``'s and ``energy``'s chip seconds, :mod:`archsim.chip_time`), so an op's
time does not depend on which command asks.

Why reads plus writes: an unfused elementwise, softmax or normalisation kernel holds nothing on chip between
kernels, so it streams each input from HBM and its output back to it (Megatron-LM's fused softmax and bias-GeLU,
apex's layer norm, PyTorch's eager kernels alike: the counts :mod:`archsim.training.layer_ops` tabulates). Per op
class, forward and backward, per element of the tensor it works on (``n``):

=========  ================================  ===============================================
class      forward                           backward
=========  ================================  ===============================================
unary      read x, write y: 2n               read dy and x (or y), write dx: 3n
(softmax,
GELU, …)
add of I   read I inputs, write y: (I + 1)n  the residual stream's gradient: read dy and the
inputs                                       branch's, write their sum: (I + 1)n (3n at I = 2)
norm       read x, write y: 2n               read dy, x, write dx (dγ, dβ reduced in the same
                                             pass): 3n
pool       read x, write y: in + out         read dy, write dx: out + in
=========  ================================  ===============================================

A norm's parameters (C elements beside the N·C of x) are left out, as train's op lists leave them out. The array
lowering's ``vector_elements`` stay its element operations (the vector unit's cycles and energy,
:func:`archsim.lowering.lower.lower_layer`); these are the bytes ÷ element size a device's HBM moves."""

from __future__ import annotations

from typing import Literal

OpClass = Literal["unary", "add", "norm"]

_PASSES = {"unary": (2, 3), "norm": (2, 3)}  # tensors read plus written, forward and backward (module table)


def streamed_elements(op_class: OpClass, elements: float, inputs: int = 1) -> tuple[float, float]:
    """(forward, backward) HBM elements of an unfused ``op_class`` op over ``elements`` elements of its tensor
    (module table; ``inputs``: an add's operands, 2 for a residual add). Elements of the training dtype."""
    if op_class == "add":
        return (inputs + 1) * elements, (inputs + 1) * elements
    forward, backward = _PASSES[op_class]
    return forward * elements, backward * elements


def layer_streamed(kind: str, inputs: int, in_elements: int, out_elements: int,
                   delta: bool) -> tuple[int, int, int]:
    """(F, G, D) HBM elements of a non-GEMM layer of ``kind`` as the array lowering lowers it
    (:func:`archsim.lowering.lower.lower_layer`): ``in_elements`` per input and ``out_elements`` for the mini-batch,
    ``inputs`` operands, ``delta`` whether it has a δ op. An elementwise layer of one input is a unary op, of several
    an add; a norm's backward pass is its δ op's (dx, dγ and dβ in one pass), its G op's alone (2n: dy and x read)
    where it has no δ; a pool reads its input and writes its output each way."""
    if kind == "pool":
        return in_elements + out_elements, 0, in_elements + out_elements
    if kind == "elementwise":
        forward, backward = streamed_elements("unary" if inputs == 1 else "add", in_elements, inputs)
        return round(forward), 0, round(backward)
    forward, backward = streamed_elements("norm", in_elements)  # batchnorm, layernorm (NORM_KINDS)
    return round(forward), (0 if delta else 2 * in_elements), round(backward)


__all__ = ["OpClass", "layer_streamed", "streamed_elements"]
