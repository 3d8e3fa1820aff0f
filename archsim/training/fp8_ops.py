"""FP8 training as Megatron-LM runs it on Transformer Engine (TE): ``--fp8-format hybrid|e4m3`` under the default
``--fp8-recipe delayed``, ``--bf16`` or ``--fp16`` the higher precision. Which GEMMs take fp8 operands, the quantize
kernels TE adds to a layer's op list, and which of its collectives move fp8 (:func:`fp8_layer_work`); the refusals
(:func:`check_fp8`). Read from NVIDIA/TransformerEngine (commit d0067d0d: ``pytorch/module/linear.py``,
``layernorm_linear.py``, ``base.py``, ``quantization.py``) and NVIDIA/Megatron-LM (commit d98e8a6). The time of the
scaling bookkeeping is :mod:`~archsim.training.fp8_scaling`'s, the memory :mod:`~archsim.training.fp8_memory`'s.

**What runs in fp8.** Megatron-Core's TE layer spec makes a layer's linear layers TE modules: QKV and the MLP's
first GEMM (gate and up: one GEMM) ``TELayerNormColumnParallelLinear``, the norm inside it; the attention projection
and the MLP's second ``TERowParallelLinear``; a mixture's experts ``TEGroupedLinear``, a shared expert's TE column- and
row-parallel linears. ``TransformerBlock.forward`` runs its layers under one ``fp8_autocast`` (the delayed recipe's
outer context). Each of their GEMMs — forward Y = X·W, data gradient dX = dY·Wᵀ, weight gradient dW = Xᵀ·dY — takes
fp8 operands at the device's fp8 peak and writes the higher precision (``general_gemm``): :data:`FP8_INPUTS`' ops
carry ``gemm_dtype`` ``fp8``. The LM head is Megatron's own ``tensor_parallel.ColumnParallelLinear``
(``GPTModel.output_layer``: TE's only for Blackwell's MXFP8 output projection), the router and a shared expert's gate
plain GEMMs, attention's core TE's ``DotProductAttention`` in the higher precision (``--fp8-dot-product-attention``,
off by default, is not modelled): they keep ``--dtype``. hybrid (E4M3 forward, E5M2 gradients) and e4m3 time alike.

**The quantize kernels** (memory-bound, one kernel each; bytes per element of the tensor, x = the higher precision's 2):

=============================  ==================================================  ======================
tensor                         TE's kernel                                         bytes per element
=============================  ==================================================  ======================
a linear's input (projection,  ``Float8Quantizer`` row- and column-wise: cast and  read x, write 1 + 1
MLP's second, experts)         transpose in one kernel
a norm-fed input (QKV, MLP's   the norm writes fp8 (``rmsnorm_fwd`` into the       the norm: 1 written,
first)                         quantizer: FULLY_FUSED), ``nvte_transpose`` the     not x; transpose: 2
                               column-wise copy; under sequence parallelism in the
                               backward, on the gathered input, before the weight
                               gradient (``ln_out_needs_gather``)
a plain column-parallel input  cast on the rank's T/t rows, gathered in fp8,       x + 1 on T/t; 2 on T
under sequence parallelism     transposed in the backward
(a shared expert's first)
an output gradient dY          ``grad_output_preprocess``: cast and transpose      x + 2; under sequence
                               fused (bias gradient inside); a row-parallel        parallelism a row-
                               layer's under sequence parallelism cast on T/t      parallel dY x + 1 on
                               rows, all-gathered in fp8, transposed               T/t, 2 on T
=============================  ==================================================  ======================

The weights are cast and transposed once an iteration (:mod:`~archsim.training.fp8_scaling`), not per micro-batch:
Megatron passes ``is_first_microbatch`` (``TELinear.forward``) and TE keeps the fp8 copies (``_fp8_workspaces``).
Under sequence parallelism every TP all-gather of the layer moves fp8 (``gather_along_first_dim(...,
quantizer=...)``: the column-parallel inputs forward and again for the weight gradient, the row-parallel output
gradients); the reduce-scatters and all-reduces move the higher precision, as does the LM head's.

``--fp8-param-gather`` (fp8 primary weights) is :mod:`~archsim.training.fp8_memory`'s. Not modelled: the
current-scaling, MXFP8 and blockwise recipes, ``--first-last-layers-bf16``, fp8 attention, TE's padding of each
expert's rows to a multiple of 16 and fp8 MoE dispatch.
"""

from __future__ import annotations

from dataclasses import replace

from archsim.choices.devices import ELEMENT_BYTES, FP8
from archsim.choices.training import FP8_RECIPES
from archsim.console import setting
from archsim.devices.device import Device
from archsim.errors import InputError
from archsim.lowering import TrainingOp
from archsim.training.kernel_bytes import dtype_elements
from archsim.training.op_work import Collective, Work, vector_op
from archsim.value_parsers import check_choice
from archsim.workload.transformer import TransformerConfig, layer_widths

# Each fp8 GEMM's op name → how TE quantizes its input: ``norm`` (the norm before it writes fp8), ``column`` (a
# column-parallel linear's own cast), ``row`` (a row-parallel linear's), ``grouped`` (the experts'); ``up``: the
# MLP's first GEMM with ``gate`` (one TE GEMM of both widths: its input and output gradient are gate's)
FP8_INPUTS = {"qkv": "norm", "fc1": "norm", "gate": "norm", "up": "up", "proj": "row", "fc2": "row",
              "experts.fc1": "grouped", "experts.fc2": "grouped", "shared_expert.fc1": "column",
              "shared_expert.fc2": "row"}
NORMS = {"qkv": "norm1", "fc1": "norm2", "gate": "norm2"}  # the norm TE fuses into a norm-fed linear
SCALING_ALL_GATHERS = ("attn.", "mlp.")  # the layer's own TP collectives (TE's), not the MoE dispatcher's


def check_fp8(fp8: str | None, device: Device, dtype: str, implementation: str = "megatron",
              fsdp: bool = False, param_gather: bool = False, distributed_optimizer: bool = False) -> None:
    """Refuse ``--fp8`` in one line where it cannot run as modelled: a recipe it does not know, a device without
    an fp8 peak (A100, V100, T4; an array device that states none), ``--dtype fp32`` (TE's recipe keeps a 16-bit
    higher precision), eager PyTorch's op list (TE is Megatron's) and FSDP (TE caches no fp8 weights under it);
    ``param_gather`` (``--fp8-param-gather``) without ``fp8`` or without the distributed optimizer (Megatron-LM's
    ``validate_args``: "--fp8-param-gather only supported with distributed optimizer")."""
    if param_gather and fp8 is None:
        raise InputError(f"{setting('fp8-param-gather')} keeps the fp8 weights of {setting('fp8')}: give it too",
                         field="fp8-param-gather")
    if param_gather and not distributed_optimizer:
        raise InputError(f"{setting('fp8-param-gather')} needs {setting('distributed-optimizer')} (Megatron-LM "
                         "refuses it otherwise: the optimizer's all-gather is what moves the fp8 weights)",
                         field="fp8-param-gather")
    if fp8 is None:
        return
    check_choice(fp8, FP8_RECIPES, "fp8")
    flag = setting("fp8", fp8)
    if dtype not in ("fp16", "bf16"):
        raise InputError(f"{flag} runs beside a 16-bit {setting('dtype')} (Transformer Engine's higher precision: "
                         f"bf16 or fp16), not {setting('dtype', dtype)}", field="fp8")
    if FP8 not in dict(device.peaks):
        stated = "" if device.catalog else " (a device TOML states one as [compute.peak_tflops] fp8, in TFLOP/s)"
        if not device.catalog and device.gemm == "arrays":  # or the arrays' fp8 rate, which sets that peak
            stated += ("; on arrays [compute] macs_per_pe = { fp8 = N } (a .cfg: its [macs_per_pe] section, fp8 = N) "
                       "states their fp8 MACs per PE per cycle and so that peak")
        raise InputError(f"{flag} needs a device with an fp8 peak (Hopper: H100, H200); {device.name} has "
                         f"{', '.join(name for name, _ in device.peaks)}{stated}", field="fp8")
    if implementation != "megatron":
        raise InputError(f"{flag} is Transformer Engine's, run by Megatron-LM: not with "
                         f"{setting('implementation', implementation)}", field="fp8")
    if fsdp:
        raise InputError(f"{flag} is not modelled with {setting('fsdp')} (Transformer Engine caches no fp8 weights "
                         "under it): drop one", field="fp8")


def fp8_layer_work(work: Work, tp: int, sequence_parallel: bool, dtype: str) -> Work:
    """A layer's :class:`Work` (Megatron's, :func:`~archsim.training.layer_ops.block_work`) under TE's fp8 recipe
    (module docstring): :data:`FP8_INPUTS`' GEMMs at ``gemm_dtype`` fp8, each quantize kernel before the GEMM that
    reads it, the fused norms writing fp8, and under sequence parallelism the layer's TP all-gathers at 1 byte an
    element. Counts from each op's own GEMM shape (X: m × k, dY: m × n); ``dtype`` the higher precision."""
    sp = sequence_parallel and tp > 1
    x = ELEMENT_BYTES[dtype]
    fed = {NORMS[op.layer] for op in work.forward if op.layer in NORMS}
    pair = {op.layer: op.gemms[0] for op in work.forward if op.layer == "up"}

    def kernel(name: str, kind: str, nbytes: float) -> TrainingOp:
        return vector_op(name, kind, dtype_elements(nbytes, dtype))

    forward: list[TrainingOp] = []
    regather: list[TrainingOp] = []  # the transposes a weight gradient waits on under sequence parallelism
    for op in work.forward:
        role = FP8_INPUTS.get(op.layer)
        if op.layer in fed and op.kernel:  # the norm writes its output in fp8: 1 byte, not x
            _, rows, row = op.kernel
            op = replace(op, vector_elements=op.vector_elements - round(dtype_elements((x - 1) * rows * row, dtype)))
        if role is None:
            forward.append(op)
            continue
        g = op.gemms[0]
        read = g.m * g.k * g.count  # X, as the GEMM reads it
        if role in ("row", "grouped") or (role == "column" and not sp):
            forward.append(kernel(f"{op.layer}.fp8_cast_transpose", "F", (x + 2) * read))
        elif role == "column":
            forward.append(kernel(f"{op.layer}.fp8_cast", "F", (x + 1) * read / tp))
        if role == "norm" and not sp:
            forward.append(kernel(f"{op.layer}.fp8_transpose", "F", 2 * read))
        elif role in ("norm", "column") and sp:
            regather.append(kernel(f"{op.layer}.fp8_transpose", "G", 2 * read))
        forward.append(replace(op, gemm_dtype=FP8))
    backward: list[TrainingOp] = []
    for op in work.backward:
        role = FP8_INPUTS.get(op.layer) if op.kind in ("D", "G") else None
        if role is None:
            backward.append(op)
            continue
        if op.kind == "D" and role != "up":
            g = op.gemms[0]  # dX[m × k] = dY[m × n]·Wᵀ: Gemm(m, n, k), its own k being dY's width
            dy = g.m * g.k * g.count + (pair["up"].m * pair["up"].n if op.layer == "gate" and pair else 0)
            if role == "row" and sp:
                backward += [kernel(f"{op.layer}.fp8_grad_cast", "D", (x + 1) * dy / tp),
                             kernel(f"{op.layer}.fp8_grad_transpose", "D", 2 * dy)]
            else:
                backward.append(kernel(f"{op.layer}.fp8_grad_cast_transpose", "D", (x + 2) * dy))
        if op.kind == "G":
            backward += [t for t in regather if t.layer == f"{op.layer}.fp8_transpose"]
        backward.append(replace(op, gemm_dtype=FP8))
    colls_f, colls_b = (tuple(_fp8_gather(c) if sp else c for c in colls)
                        for colls in (work.forward_collectives, work.backward_collectives))
    return Work(tuple(forward), tuple(backward), colls_f, colls_b)


def _fp8_gather(c: Collective) -> Collective:
    """A layer's TP all-gather under sequence parallelism as TE runs it in fp8: half the 2-byte element's bytes."""
    if c.kind == "all-gather" and c.group == "tp" and c.name.startswith(SCALING_ALL_GATHERS):
        return replace(c, bytes=c.bytes / 2)
    return c


def fp8_gemms(c: TransformerConfig, ep: int = 1) -> int:
    """TE GEMMs of one layer on one GPU under fp8, each with its own scaling (an input, a weight and an output
    amax forward, an output and an input gradient's backward): QKV, the projection, the MLP's two (gate and up
    one GEMM), or a mixture's two per local expert (``TEGroupedLinear``'s ``num_gemms``) and a shared expert's two."""
    if not c.moe:
        return 4
    return 2 + 2 * (c.experts // ep) + (2 if c.shared_expert_ffn else 0)


def fp8_weight_parameters(c: TransformerConfig, tp: int, ep: int = 1, etp: int | None = None) -> float:
    """Weights of one layer on one GPU that TE casts to fp8 (:data:`FP8_INPUTS`' GEMMs): QKV (h × its width over
    TP), the projection, the MLP's (2 or, gated, 3 × h × ffn/TP) or a mixture's local experts (E/EP × 3 × h ×
    f/ETP) and shared expert (3 × h × f_s/TP); not the router, the shared expert's gate, the norms or the biases."""
    w = layer_widths(c, tp)
    attention = (w.qkv + w.attention) * c.hidden
    if not c.moe:
        return attention + (3 if w.gated else 2) * c.hidden * w.ffn
    experts = c.experts // ep * 3 * c.hidden * (c.expert_ffn // (etp or tp))
    return attention + experts + 3 * c.hidden * (c.shared_expert_ffn // tp)


__all__ = ["FP8_INPUTS", "NORMS", "check_fp8", "fp8_gemms", "fp8_layer_work", "fp8_weight_parameters"]
