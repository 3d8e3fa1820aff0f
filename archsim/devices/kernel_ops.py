"""Training ops → seconds on a device, for every dtype: the one GPU op-timing model's op list side.

:func:`op_seconds` takes the same :class:`~archsim.lowering.TrainingOp` list as
:func:`archsim.array.costing.op_cycles` and returns each op's time. Which fitted constants time which
kernel family is decided in one place, :func:`kernel_families` (a :class:`KernelFamilies`). Every GEMM
goes through one function, :func:`archsim.devices.kernels.path_gemm_seconds` (tiles in waves over the
SMs, the tile's operand feed, split-K, the HBM roofline, the epilogue, one launch), on the
:class:`~archsim.devices.kernels.GemmPath` its dtype runs on (:func:`gemm_path`):

* **fp32 on a catalog GPU**: SIMT sgemm on the FP32 lanes (:func:`~archsim.devices.kernels.simt_path`),
  the kernels NeuSight measured on five GPUs and :data:`~archsim.devices.kernel_constants.FITTED` is fitted on.
* **fp16/bf16** (and any dtype on a device file whose ``gemm`` is ``tiles``): tensor-core CTA tiles at
  the device's dtype peak, one per SM at a time, fed from the datasheet's L2 read bandwidth
  (:func:`~archsim.devices.kernels.tensor_path`), with the constants fitted on vTrain's A100 runs
  (:data:`archsim.training.fitted.A100_KERNELS`).
* **fp8 operands** (an op's ``gemm_dtype``: a linear layer's GEMMs under ``--fp8``, :mod:`archsim.training.fp8_ops`):
  the same tensor tiles at the device's fp8 peak, 1 byte an operand, C written in the training dtype, with the
  training dtype's constants (on a device's arrays, their own rate at 1 byte an operand, C's HBM bytes at the training
  dtype's too: :func:`array_gemm_hbm_bytes`'s ``out_bytes``).
* **a device whose ``gemm`` is ``arrays``** (an accelerator's device file, :mod:`archsim.devices.device`):
  each GEMM's folds, costed exactly as SCALE-Sim costs them on one array, dealt to the arrays in
  ⌈folds · count / arrays⌉ waves of one fold's cycles (a ws or is GEMM of fewer folds than arrays split
  along its streamed dimension; split-K where ``Device.split_k`` is on:
  :mod:`archsim.devices.array_waves`, the mechanisms ``validate-gpu``'s cycles view uses too) at the
  arrays' clock, ÷ ``constants.gemm``; the same HBM roofline and launch (:func:`array_gemm_seconds`).

Memory-bound work, per op (one kernel each, one launch):

* where the memory-bound kernels are timed as **PyTorch's own** (``KernelFamilies.pytorch``: fp32 on a
  catalog GPU) they are the kernels NeuSight measured and are timed with its constants
  (``memory_bound``): a forward softmax or layer norm (``op.kernel`` = ``("softmax" |
  "ln", rows, row)``) by its class mechanism, :func:`~archsim.devices.kernels.memory_bound_seconds`
  (warp/block softmax with the L1 re-reads, layer norm's two reads) at the kernel's dtype
  (``op.kernel_dtype``, else the training dtype); every other op streams its bytes at its class's
  fraction (softmax, layer norm, else elementwise);
* otherwise (fp16/bf16 — Megatron's fused kernels, apex's layer norm and the fused scale-mask-softmax,
  and eager PyTorch's, at the same fit — or a device file), every memory-bound op streams its
  ``vector_elements`` at the element size, at the achieved fraction of HBM bandwidth of its class
  (:func:`~archsim.devices.kernels.stream_seconds`); the vTrain fit and a device file state one
  fraction for all.

An op marked ``split_k`` (a convolution's weight gradient, :attr:`~archsim.lowering.TrainingOp.split_k`)
may cut its reduction over :data:`~archsim.devices.kernels.SPLITS` on a tile path that does not
(the tensor tiles). A kernel timed alone, not inside a training step, pays NeuSight's launch in every
family (:func:`kernel_families` ``alone``, :func:`timed_alone`); inside a step PyTorch's fp32 kernels
pay none (:func:`queued`).

A *fused* op (FlashAttention) keeps its GEMMs' operands and results on chip: its GEMMs' main loops, one
after another (at FlashAttention-2's ``mma.sync`` share of the tensor peak,
:func:`~archsim.devices.nonmatmul.fused_matmul_fraction`) or its shared-memory traffic, whichever is longer
(:func:`~archsim.devices.nonmatmul.smem_seconds`), then its non-matmul work (its ``exps``,
``lane_ops`` and ``int_ops``, :func:`~archsim.devices.nonmatmul.nonmatmul_seconds`); that or the HBM traffic it counts in
``vector_elements``, whichever is longer, and one launch. FlashAttention runs fp16/bf16 only: an fp32 one is
refused on every device whose GEMMs are a GPU library's tiles (a catalog GPU, a ``gemm = "tiles"`` device file).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from archsim.choices.devices import ELEMENT_BYTES, GEMM_OPERAND_BYTES
from archsim.console import setting
from archsim.devices.catalog import chip_of
from archsim.devices.device import Device
from archsim.devices.kernel_constants import FITTED, TENSOR_DTYPES, KernelConstants, sustained_flops
from archsim.devices.kernels import (
    SPLITS,
    GemmPath,
    compute_seconds,
    memory_bound_seconds,
    path_gemm_seconds,
    spec_path,
    stream_seconds,
    tensor_path,
)
from archsim.devices.nonmatmul import fused_matmul_fraction, nonmatmul_seconds, smem_seconds
from archsim.errors import InputError
from archsim.lowering import TrainingOp
from archsim.lowering.gemm_arrays import flatten_gemms

KERNEL_CLASSES = ("softmax", "ln")  # the memory-bound kernels an op may name (``TrainingOp.kernel``)


@dataclass(frozen=True)
class KernelFamilies:
    """Which constants time which kernel family. ``gemm``: GEMMs and fused attention (their tiles,
    launch and HBM fraction); ``memory_bound``: every other kernel (class fractions, launch);
    ``pytorch``: those memory-bound kernels are PyTorch's own, timed by their class mechanism.

    Why two sets: each fit is valid for the kernels it was fitted on. The vTrain fit
    (:data:`archsim.training.fitted.A100_KERNELS`) saw cuBLAS's tensor-core GEMMs and Megatron's fused
    memory-bound kernels, with one HBM fraction and one 33 µs gap absorbing them; NeuSight's fit
    (:data:`~archsim.devices.kernel_constants.FITTED`) saw PyTorch's own kernels (sgemm, softmax, layer norm,
    elementwise) timed one by one. Made by :func:`kernel_families`."""

    gemm: KernelConstants
    memory_bound: KernelConstants
    pytorch: bool = False


def timed_alone(constants: KernelConstants, alone: KernelConstants = FITTED) -> KernelConstants:
    """``constants`` for a kernel *timed alone*, back to back (a kernel benchmark: DeepBench,
    ``validate-gpu``), not inside a training iteration: its launch is ``alone.launch_s``, NeuSight's
    fit on kernels timed alone (:data:`~archsim.devices.kernel_constants.FITTED`), whatever family
    times the rest. Why: the vTrain fit's ``launch_s`` (32.4 µs) is an iteration's gap between kernels
    (host issue, syncs), which a kernel run back to back does not pay. Seconds."""
    return replace(constants, launch_s=alone.launch_s)


def queued(constants: KernelConstants) -> KernelConstants:
    """``constants`` for PyTorch's kernels inside a training step: no launch. Why: a launch is host
    work. PyTorch enqueues kernels asynchronously, so the GPU pays one only when it waits for the host:
    a kernel timed alone (NeuSight's rows, whose fit gives ``launch_s`` 16.0 µs), or a step whose host
    is behind, which the host floor prices (``host_s`` per op, :mod:`archsim.training.iteration`);
    charging both counts the host twice. The GPU-side gap between queued kernels (1–2 µs) is not
    modelled. NeuSight's V100 iterations: totals' MAPE 11.3% → 4.3% (docs/training.md)."""
    return replace(constants, launch_s=0.0)


def kernel_families(device: Device, dtype: str, efficiency: KernelConstants,
                    pytorch_constants: KernelConstants = FITTED, pytorch_memory_bound: bool = False,
                    alone: bool = False) -> KernelFamilies:
    """The one rule of which constants time which kernels (:class:`KernelFamilies`), given the
    training fit ``efficiency`` (vTrain's, or a device file's own) and PyTorch's kernel fit
    ``pytorch_constants`` (NeuSight's; a benchmark passes a leave-one-GPU-out one):

    * fp32 on a catalog GPU (either implementation: Megatron's fused kernels have no fp32 form): SIMT
      GEMMs and PyTorch's memory-bound kernels, ``pytorch_constants`` for both, queued (no launch:
      :func:`queued`);
    * anything else (fp16/bf16 on a catalog GPU, a device file): ``efficiency`` for every kernel — in
      eager PyTorch too, although its memory-bound kernels are PyTorch's: ``pytorch_memory_bound``
      times those with ``pytorch_constants`` instead, which was tried on the Hopper iterations and
      not adopted (docs/accuracy.md, "Hopper check": the class mechanism barely moves them; the
      NeuSight launch time removes a per-kernel gap the vTrain fit charges);
    * ``alone`` (kernels timed alone, back to back: a kernel benchmark, not a training step): every
      family as above, but each kernel's launch is ``pytorch_constants.launch_s`` (:func:`timed_alone`).
      A device file keeps its own launch: it states one for its kernels whatever runs them."""
    families = _kernel_families(device, dtype, efficiency, pytorch_constants, pytorch_memory_bound)
    if device.gemm == "arrays" or chip_of(device) is None:
        return families
    if alone:
        return KernelFamilies(timed_alone(families.gemm, pytorch_constants),
                              timed_alone(families.memory_bound, pytorch_constants), families.pytorch)
    if dtype not in TENSOR_DTYPES:
        return KernelFamilies(queued(families.gemm), queued(families.memory_bound), families.pytorch)
    return families


def _kernel_families(device: Device, dtype: str, efficiency: KernelConstants, pytorch_constants: KernelConstants,
                     pytorch_memory_bound: bool) -> KernelFamilies:
    """:func:`kernel_families`' constants, each with the launch it was fitted with."""
    if device.gemm == "arrays" or chip_of(device) is None:
        return KernelFamilies(efficiency, efficiency)
    if dtype not in TENSOR_DTYPES:
        return KernelFamilies(pytorch_constants, pytorch_constants, pytorch=True)
    if pytorch_memory_bound:
        return KernelFamilies(efficiency, pytorch_constants, pytorch=True)
    return KernelFamilies(efficiency, efficiency)


def gemm_path(device: Device, dtype: str, constants: KernelConstants) -> GemmPath | None:
    """The path ``dtype`` GEMMs take on ``device`` (module docstring), chosen by the one rule,
    :func:`~archsim.devices.kernels.spec_path`, on its chip with its own tensor tiles (its dtype peak,
    clock, L2 and HBM); None where the device's GEMMs run on its arrays (:func:`array_gemm_seconds`)."""
    if device.gemm == "arrays":
        return None

    chip = chip_of(device)

    def board() -> GemmPath:
        cap = float("inf") if chip is None else sustained_flops(chip, constants, dtype, device.board_watts or 0.0)
        return tensor_path(device.sms, device.peak(dtype) / device.sms, device.clock_hz, device.l2_bytes_per_clock,
                           device.hbm_bytes_per_s, GEMM_OPERAND_BYTES[dtype], cap)

    return spec_path(chip, constants, dtype, board)


def array_gemm_seconds(m: npt.ArrayLike, k: npt.ArrayLike, n: npt.ArrayLike, count: npt.ArrayLike, device: Device,
                       constants: KernelConstants, element_bytes: int = 2, dtype: str = "fp16",
                       out_bytes: int | None = None) -> np.ndarray:
    """Seconds of each batched GEMM on a device's arrays (the lanes for fp32 where it has them):
    the ``count`` GEMMs' folds dealt together in waves over the arrays, each wave one fold's SCALE-Sim
    cycles (:func:`archsim.devices.array_waves.array_gemm_cycles`; split-K where the device has it on,
    ``Device.split_k``), counted as SCALE-Sim and the array model count them
    (:func:`~archsim.devices.array_waves.indexed_cycles`: on one array, ``archsim cost``'s cycles
    exactly), its reduction run at the dtype's MACs per PE per cycle (``Device.macs_per_pe``: (m, ⌈k / r⌉, n),
    :func:`archsim.array.mac_rates.packed_k`; the GEMM itself at 1), vs its HBM traffic, plus one launch. The
    traffic: each operand once, (m·k + k·n + m·n) · count elements, or with ``Device.dram_traffic`` ``"scalesim"`` the words SCALE-Sim's memory model moves for each
    array's sub-GEMM (:func:`archsim.devices.array_dram.gemm_dram_words`, × count), at ``element_bytes`` each, C's at
    ``out_bytes`` (None: ``element_bytes``; :func:`array_gemm_hbm_bytes`)."""
    from archsim.array.mac_rates import packed_k
    from archsim.devices.array_waves import array_gemm_cycles, indexed_cycles  # only devices built of arrays

    units = device.gemm_units(dtype)
    m, k, n, count = (np.asarray(x, dtype=np.int64) for x in (m, k, n, count))
    rate = device.mac_rate(dtype) if units is device.arrays else 1.0  # the lanes: one FMA a lane and cycle
    gemm = array_gemm_cycles(m, packed_k(k, rate), n, count, units, device.split_k)
    shape = np.broadcast(m, k, n, count).shape
    cycles = indexed_cycles(gemm).reshape(shape)
    compute = cycles.astype(np.float64) / (units.clock_hz * constants.gemm)
    traffic = array_gemm_hbm_bytes(m, k, n, count, device, element_bytes, dtype, out_bytes) / (
        device.hbm_bytes_per_s * constants.gemm_memory)  # GEMM traffic's own fraction, as on tiles
    return np.maximum(compute, traffic) + constants.launch_s


def array_gemm_hbm_bytes(m: npt.ArrayLike, k: npt.ArrayLike, n: npt.ArrayLike, count: npt.ArrayLike, device: Device,
                         element_bytes: int = 2, dtype: str = "fp16", out_bytes: int | None = None) -> np.ndarray:
    """HBM bytes of each batched GEMM on a device's arrays (float64, of the broadcast shape), the traffic
    :func:`array_gemm_seconds` sets its waves against: each operand and the result once, (m·k + k·n) · count operand
    elements and m·n · count result elements, or with ``Device.dram_traffic`` ``"scalesim"`` the words SCALE-Sim's
    memory model moves for each array's dealt sub-GEMM (:func:`archsim.devices.array_dram.gemm_dram_words`: ifmap and
    filter reads, ofmap writes; × count); operands at ``element_bytes`` each, the result C at ``out_bytes`` (None:
    ``element_bytes``): an fp8 GEMM under ``train --fp8`` reads 1-byte A and B and writes C in the training dtype, as
    Transformer Engine does and the tile path counts it. The one count: the cycle engine's chip seconds are floored at
    it too (:func:`archsim.chip_time.chip_seconds`)."""
    m, k, n, count = (np.asarray(x, dtype=np.int64) for x in (m, k, n, count))
    shape = np.broadcast(m, k, n, count).shape
    out = element_bytes if out_bytes is None else out_bytes
    if device.dram_traffic == "scalesim":
        from archsim.devices.array_dram import gemm_dram_words

        words = gemm_dram_words(m, k, n, count, device, dtype, element_bytes)
        operands, result = (x.reshape(shape) for x in (words[:, 0] + words[:, 1], words[:, 2]))
    else:
        operands, result = np.broadcast_to(m * k + k * n, shape), np.broadcast_to(m * n, shape)
    times = np.broadcast_to(count, shape)
    return (operands * times).astype(np.float64) * element_bytes + (result * times).astype(np.float64) * out


def array_op_hbm_bytes(ops: Sequence[TrainingOp], device: Device, dtype: str, element_bytes: int) -> np.ndarray:
    """HBM bytes of each op on a device's arrays (float64), as train's op timing (:func:`op_seconds`) sets them
    against the HBM: its GEMMs' traffic (:func:`array_gemm_hbm_bytes`) plus its memory-bound elements streamed
    (``vector_elements``), ``element_bytes`` each; a fused op the larger of the two, which train overlaps. What a
    chip's HBM must move for the op whoever times it: the cycle engine's chip seconds are floored at it over the
    file's ``hbm_gbps`` (:func:`archsim.chip_time.chip_seconds`)."""
    owner, m, k, n, count = flatten_gemms(ops)
    gemm = np.zeros(len(ops))
    if owner.size:
        np.add.at(gemm, owner, array_gemm_hbm_bytes(m, k, n, count, device, element_bytes, dtype))
    vector = np.fromiter((op.vector_elements for op in ops), dtype=np.float64, count=len(ops)) * element_bytes
    fused = np.fromiter((op.fused for op in ops), dtype=bool, count=len(ops))
    return np.where(fused, np.maximum(gemm, vector), gemm + vector)


def device_gemm_seconds(m: npt.ArrayLike, k: npt.ArrayLike, n: npt.ArrayLike, count: npt.ArrayLike, device: Device,
                        constants: KernelConstants, dtype: str = "fp16") -> np.ndarray:
    """Seconds of each batched GEMM, ``count`` of out[m×n] = A[m×k]·B[k×n] (arrays broadcast), on the
    ``device`` in ``dtype``, one launch each: the path :func:`gemm_path` picks. (The chip-level
    :func:`archsim.devices.kernels.gemm_seconds` takes a ``GpuSpec`` and (batch, m, n, k).)"""
    path = gemm_path(device, dtype, constants)
    if path is None:
        return array_gemm_seconds(m, k, n, count, device, constants, ELEMENT_BYTES[dtype], dtype)
    return path_gemm_seconds(count, m, n, k, path, constants, ELEMENT_BYTES[dtype])


@dataclass(frozen=True)
class OpParts:
    """Each op's time in parts, launches excluded (:func:`op_parts`): ``gemm`` its GEMMs' main loops
    or HBM rooflines (a fused op's whole body), ``memory`` its memory-bound kernel's bytes at its
    class's HBM fraction, ``kernels`` how many kernels it launches (one per GEMM, one memory-bound,
    one for a fused op). Why: to see *which* class of work an iteration's error sits in
    (:mod:`archsim.training.op_classes`). Units: seconds; kernels a count."""

    gemm: np.ndarray
    memory: np.ndarray
    kernels: np.ndarray


def path_op_seconds(ops: Sequence[TrainingOp], path: GemmPath, constants: KernelConstants, size: int,
                    out_size: int | None = None) -> np.ndarray:
    """Seconds of each op's GEMMs on ``path`` (``size`` bytes per operand element, ``out_size`` per output
    element: None, ``size``), each GEMM one kernel with
    its launch (:func:`~archsim.devices.kernels.path_gemm_seconds`), an op's GEMMs one after another
    (an op marked ``split_k`` over :data:`~archsim.devices.kernels.SPLITS` whatever the path's splits); a
    fused op's GEMMs their main loops alone (:func:`~archsim.devices.kernels.compute_seconds`: the
    caller overlaps them with the op's own traffic). The GEMM side of :func:`op_seconds` on a tile path,
    and all of it for GEMM-only ops: ``validate-gpu`` times a chip with no ``Device`` by it."""
    owner, m, k, n, count = flatten_gemms(ops)
    fused = np.fromiter((op.fused for op in ops), dtype=bool, count=len(ops))
    split = np.fromiter((op.split_k for op in ops), dtype=bool, count=len(ops))
    seconds = np.zeros(len(ops))
    if owner.size:
        plain = path_gemm_seconds(count, m, n, k, path, constants, size, out_size)
        if split.any() and path.splits != SPLITS:  # the op's library splits K where the path does not
            cut = path_gemm_seconds(count, m, n, k, replace(path, splits=SPLITS), constants, size, out_size)
            plain = np.where(split[owner], cut, plain)
        inside = compute_seconds(count, m, n, k, path, constants, size) if fused.any() else plain
        np.add.at(seconds, owner, np.where(fused[owner], inside, plain))
    return seconds


def _gemm_terms(ops: Sequence[TrainingOp], device: Device, tiles: KernelConstants, dtype: str,
                path: GemmPath | None, out_size: int | None = None, size: int | None = None) -> np.ndarray:
    """Each op's GEMM seconds with ``dtype`` operands (``size`` bytes each; None: ``dtype``'s) on ``path``
    (:func:`gemm_path`; None: the device's arrays), C at ``out_size`` bytes an element (None: the operands'); a
    fused op's its main loops alone."""
    size = size or GEMM_OPERAND_BYTES[dtype]
    if path is not None:
        return path_op_seconds(ops, path, tiles, size, out_size)
    owner, m, k, n, count = flatten_gemms(ops)
    gemm = np.zeros(len(ops))
    if owner.size:
        fused = np.fromiter((op.fused for op in ops), dtype=bool, count=len(ops))
        plain = array_gemm_seconds(m, k, n, count, device, tiles, size, dtype, out_size)
        inside = plain - tiles.launch_s  # its own traffic is counted once more below: max, not sum
        np.add.at(gemm, owner, np.where(fused[owner], inside, plain))
    return gemm


def fused_attention_refusal(device: Device, dtype: str) -> str | None:
    """Why ``device`` has no fused attention kernel (FlashAttention) in ``dtype``, or None: a GPU library's GEMMs (a
    catalog GPU's, a device file's ``gemm = "tiles"``) run FlashAttention, which takes fp16/bf16 only; a device of
    arrays prices its own fused kernel in any dtype. The one rule, for train's ops and a device sweep's spec."""
    if device.gemm == "arrays" or dtype in TENSOR_DTYPES:
        return None
    return f"a fused attention kernel has no {dtype} kernel time (FlashAttention runs fp16/bf16)"


def _op_terms(ops: Sequence[TrainingOp], device: Device, families: KernelFamilies,
              dtype: str, element_bytes: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(GEMM seconds, memory-bound seconds, kernels) of each op at ``families`` (launches included as
    they state): the one op-timing rule behind :func:`op_seconds` and :func:`op_parts`."""
    tiles, memory = families.gemm, families.memory_bound
    size = element_bytes or ELEMENT_BYTES[dtype]
    path = gemm_path(device, dtype, tiles)
    chip = chip_of(device)
    fused = np.fromiter((op.fused for op in ops), dtype=bool, count=len(ops))
    refusal = fused_attention_refusal(device, dtype)
    if refusal and fused.any():
        layer = ops[int(np.argmax(fused))].layer
        raise InputError(f"{layer}: {refusal}; use {setting('attention', 'standard')}", field="attention")
    gemm = _gemm_terms(ops, device, tiles, dtype, path, size=element_bytes)
    for low in {op.gemm_dtype for op in ops if op.gemm_dtype}:  # fp8's linear GEMMs (training/fp8_ops.py)
        which = [i for i, op in enumerate(ops) if op.gemm_dtype == low]
        gemm[which] = _gemm_terms([ops[i] for i in which], device, tiles, low, gemm_path(device, low, tiles), size)
    streamed = np.zeros(len(ops))
    kernels = np.fromiter((len(op.gemms) for op in ops), dtype=np.int64, count=len(ops))  # one per GEMM
    fractions = {"softmax": memory.softmax, "ln": memory.layernorm, "": memory.memory}
    for i, op in enumerate(ops):
        name = op.kernel[0] if op.kernel else ""
        if name not in fractions:
            raise InputError(f"{op.layer}: unknown kernel {name!r}; known: {', '.join(KERNEL_CLASSES)}", field="op")
        if op.fused:  # one kernel: compute, then its non-matmul work, overlapping its own HBM traffic; one launch
            traffic = float(stream_seconds(op.vector_elements * size, device.hbm_bytes_per_s, tiles, kernels=0))
            matmul = max(gemm[i] / fused_matmul_fraction(device), smem_seconds(op.smem_bytes, device))
            body = matmul + nonmatmul_seconds(op.exps, op.lane_ops, device, op.int_ops)
            gemm[i] = max(body, traffic) + tiles.launch_s
            kernels[i] = 1
        elif families.pytorch and chip is not None and op.kernel and op.kind == "F":
            _, rows, row = op.kernel
            streamed[i] = float(memory_bound_seconds(name, rows, row, chip, memory, op.kernel_dtype or dtype))
            kernels[i] += 1
        elif op.vector_elements > 0:
            streamed[i] = float(stream_seconds(op.vector_elements * size, device.hbm_bytes_per_s, memory,
                                               fractions[name]))
            kernels[i] += 1
    return gemm, streamed, kernels


def _families(device: Device, dtype: str, constants: KernelConstants | KernelFamilies) -> KernelFamilies:
    """``constants`` as kernel families: as given, or one set standing for both fits, its launch as given."""
    if isinstance(constants, KernelFamilies):
        return constants
    return _kernel_families(device, dtype, constants, constants, pytorch_memory_bound=False)


def op_seconds(ops: Sequence[TrainingOp], device: Device, constants: KernelConstants | KernelFamilies,
               dtype: str = "fp16", element_bytes: int | None = None) -> np.ndarray:
    """Seconds of each op on ``device`` in ``dtype`` (module docstring): its GEMMs (one launch per
    :class:`~archsim.lowering.Gemm`) plus its memory-bound kernel (one launch when it has one).
    ``constants``: per kernel family (:class:`KernelFamilies`), or one set standing for both fits
    (:func:`kernel_families` then picks the families). ``element_bytes``: every element's bytes where they are not
    ``dtype``'s (an array command's width on a device's arrays: ``archsim cost``'s int8 word, its
    ``--element-bytes``). The interface of :func:`archsim.array.costing.op_cycles`, in seconds. Units: elements
    in, seconds out."""
    gemm, streamed, _ = _op_terms(ops, device, _families(device, dtype, constants), dtype, element_bytes)
    return gemm + streamed


def op_parts(ops: Sequence[TrainingOp], device: Device, constants: KernelConstants | KernelFamilies,
             dtype: str = "fp16") -> OpParts:
    """:func:`op_seconds`' time of each op in parts (:class:`OpParts`), timed with every launch set to 0
    and the kernels counted instead: with one launch per kernel at its family's ``launch_s`` they add
    up to :func:`op_seconds` (but for a split-K reduction kernel — fp32 SIMT, or an op marked
    ``split_k`` — neither timed nor counted here)."""
    families = _families(device, dtype, constants)
    no_launch = KernelFamilies(replace(families.gemm, launch_s=0.0), replace(families.memory_bound, launch_s=0.0),
                               families.pytorch)
    return OpParts(*_op_terms(ops, device, no_launch, dtype))


__all__ = ["KERNEL_CLASSES", "KernelFamilies", "OpParts", "array_gemm_hbm_bytes", "array_gemm_seconds",
           "array_op_hbm_bytes", "device_gemm_seconds",
           "fused_attention_refusal", "gemm_path",
           "kernel_families", "op_parts", "op_seconds", "path_op_seconds", "queued",
           "timed_alone"]
