"""One GPU kernel → seconds, from the op, its shape, its dtype and the GPU's datasheet alone.

The mechanisms (every figure of the GPU comes from :data:`archsim.devices.catalog.TABLE`):

* **GEMM / batched GEMM** out[M×N] = A[M×K]·B[K×N], ``batch`` of them in one launch, by one function
  (:func:`path_gemm_seconds`) whatever the dtype; the dtype picks the :class:`GemmPath` it runs on.
  The output is cut into CTA tiles of the path's tile set; ``resident / (tm·tn)`` small tiles share
  one SM at once (at least one), so the tiles run in ⌈tiles / (SMs · tiles per SM)⌉ waves, each wave
  the SM's work on its resident outputs × K at the SM's peak × ``constants.gemm`` × the tile's
  operand feed ``min(1, (tm·tn / (tm + tn)) / needed reuse)`` (a tile's k-step loads tm + tn operands
  for tm·tn MACs: small tiles starve the units). Split-K cuts the reduction into s of the path's
  splits, parts of at least :data:`SPLIT_MIN_K` each: s times the tiles, so few output tiles fill the
  SMs and a tail wave shrinks, paid by a second kernel that reads the s partial outputs and writes
  the result. The tile and split are the ones that finish first, as a library's heuristic picks. The
  kernel also reads A and B through HBM once (the larger of the main loop and that read counts: a
  roofline per kernel); C is written once, in an epilogue after the main loop (not hidden behind it)
  or, on a path without one, within the roofline. GEMM traffic moves at ``constants.gemm_memory`` ×
  bandwidth (its own fraction: tiles staged through L2 and scattered stores are not a stream).

  - **SIMT** (fp32, :func:`simt_path`): :data:`TILES` (the sgemm tiles cuBLAS picks from on
    Pascal–Ampere), :data:`REFERENCE_TILE_AREA` outputs per SM, the fitted ``constants.feed``, split-K
    over :data:`SPLITS`, C in the epilogue, the power cap below; the SM's peak is ``lanes × 2 × clock``.
  - **Tensor cores** (fp16/bf16, :func:`tensor_path`): :data:`TENSOR_TILES` (cuBLAS/CUTLASS tensor-core
    CTA tiles), one per SM at a time, fed from the datasheet's L2 read bandwidth (a tile needs a reuse
    of MACs per clock per SM × element bytes / L2 bytes per clock per SM, :attr:`GpuSpec.l2_bytes_per_clock
    <archsim.devices.catalog.GpuSpec.l2_bytes_per_clock>`; a chip without that figure is always fed), no split-K, C's write inside the roofline, the power cap below
    (a catalog board at its own watts); the SM's peak is the dtype's tensor peak.
    These choices are the ones the tensor-core constants were fitted with on vTrain's A100 runs; the
    SIMT path's split-K, epilogue and several tiles per SM, refitted there, do not lower the held-out
    error (docs/accuracy.md, "One GEMM model for every dtype").
* **Power cap** (every GEMM path): the board's power bounds the kernel's *average* rate at
  ``TDP / energy per FLOP`` FLOP/s (:func:`sustained_flops`): the main loop is the longer of its waves at
  the SMs' fed rate and all its tiles' FLOPs at that sustained rate. A board's power limiter acts over
  milliseconds, longer than a wave, so the SMs a kernel leaves idle lend their share to the busy ones:
  with full waves only this is an even split over the SMs, one wave on k SMs runs each at
  min(fed rate, sustained / k), and more SMs at one board power never make a GEMM slower. Until
  2026-12-05 the cap was split evenly over all the SMs, so a GEMM of few tiles slowed as SMs were added
  (64×64×4096 fp32 on a T4-like chip: 75.6 / 76.7 / 118.3 µs at 40 / 41 / 80 SMs, now 56.8 µs at each);
  the constants stay the ones fitted under that rule. The energies per FLOP and why they scale with
  process node and clock are :mod:`archsim.devices.kernel_constants`'s.
* **Elementwise** (add, mul, div, pow and their ``u`` scalar forms, relu, gelu, tanh): bytes read
  and written (3 tensors for tensor ⊕ tensor, 2 with a scalar or one input) at ``constants.memory`` ×
  HBM bandwidth.
* **Softmax / layer norm** over the last dimension, at their own achieved fractions
  ``constants.softmax`` / ``constants.layernorm`` of HBM bandwidth. Layer norm: two reads (a Welford
  pass for mean and variance, then the normalizing pass) and one write. Softmax: PyTorch's two kernels
  (:func:`softmax_tensors`). Rows of at most :data:`SOFTMAX_WARP_MAX` elements go to the warp softmax,
  which holds a row in one warp's registers: one read, one write. Longer rows go to the block softmax
  (one CTA of :func:`softmax_block_threads` threads per row), which reads its row three times (max,
  sum of exponentials, output) and writes it once; the two re-reads come from the SM's L1 as far as
  the rows resident on one SM (threads per SM / block threads, at most the rows each SM gets) fit in
  its L1 (``GpuSpec.l1_bytes``), else from HBM: the fraction missed is ``max(0, 1 − L1 / resident
  bytes)``.
* Every kernel pays ``constants.launch_s``.

No L2-resident speed-up is modeled: in the fitted files no elementwise, softmax or layer-norm kernel
that fits in L2 runs faster per byte than one that does not (they are launch-bound instead).

The constants (:class:`KernelConstants`, their two fits and the tensor cores' energy per FLOP) are
:mod:`archsim.devices.kernel_constants`'s; this module holds the timers.
A GPU never fitted gets these mechanisms and its datasheet, never another GPU's number.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from archsim.choices.devices import FP8
from archsim.devices.catalog import GpuSpec
from archsim.devices.kernel_constants import (
    FITTED,
    TENSOR_DTYPES,
    KernelConstants,
    element_bytes,
    sm_flops,
    sustained_flops,
)
from archsim.errors import InputError

# SIMT sgemm CTA tiles (rows × cols of the output) among which cuBLAS chooses on Pascal–Ampere.
TILES = ((128, 128), (128, 64), (64, 128), (128, 32), (32, 128), (64, 64), (64, 32), (32, 32))
REFERENCE_TILE_AREA = 128 * 128  # outputs one SM works on at once (registers of one 128×128 sgemm CTA)
# CTA output tiles of cuBLAS/CUTLASS fp16/bf16 tensor-core GEMMs on Volta–Hopper (one per SM at a time:
# a 64×64 tensor-core CTA already fills an SM's tensor cores and shared memory)
TENSOR_TILES = ((256, 128), (128, 256), (128, 128), (256, 64), (64, 256), (128, 64), (64, 128), (64, 64))
SPLITS = (1, 2, 4, 8, 16, 32, 64)  # split-K factors tried
SPLIT_MIN_K = 128  # a split-K part keeps at least this much of K (the figures move < 0.5 points for 64…512)

# elementwise ops: tensors moved per element (inputs + output)
ELEMENTWISE_TENSORS = {"add": 3, "mul": 3, "div": 3, "pow": 3, "addu": 2, "mulu": 2, "divu": 2, "powu": 2,
                       "relu": 2, "gelu": 2, "tanh": 2}
LAYERNORM_READS = 2  # a Welford pass for mean and variance, then a pass that normalizes
SOFTMAX_WARP_MAX = 1024  # PyTorch: rows of at most this many elements take the warp softmax
SOFTMAX_MAX_THREADS = 1024  # PyTorch's block softmax: at most this many threads per CTA
SOFTMAX_LOAD_BYTES = 16  # … each thread loading 16 bytes at a time (ILP = 16 / element bytes)
GEMM_OPS = ("linear", "bmm")
OP_CLASSES = {**{op: op for op in GEMM_OPS}, **{op: "elementwise" for op in ELEMENTWISE_TENSORS},
              "softmax": "softmax", "ln": "layernorm"}
"""op name (NeuSight's OPName) → op class for the accuracy report."""


def _arrays(*values: npt.ArrayLike) -> list[np.ndarray]:
    return [np.asarray(v, dtype=np.float64) for v in values]


@dataclass(frozen=True)
class GemmPath:
    """How one dtype's GEMMs run on one GPU: ``cores`` (SMs) of ``core_flops`` peak FLOP/s each at the
    dtype; CTA output ``tiles``, ``max(1, resident // (tm·tn))`` of them on one core at once; a tile is
    fully fed at an operand reuse tm·tn/(tm + tn) of ``needed_reuse`` elements (None: the fitted
    ``constants.feed``; 0: always fed); split-K factors ``splits``; ``epilogue`` True: C is written
    after the main loop (not hidden behind it), False: C's write joins the reads in the roofline;
    ``hbm_bytes_per_s`` (× ``constants.gemm_memory``); ``sustained_flops``: the board power's cap
    on the whole GPU (inf: none)."""

    cores: int
    core_flops: float
    tiles: tuple[tuple[int, int], ...]
    resident: int
    needed_reuse: float | None
    splits: tuple[int, ...]
    epilogue: bool
    hbm_bytes_per_s: float
    sustained_flops: float = float("inf")


def simt_path(spec: GpuSpec, constants: KernelConstants = FITTED, dtype: str = "fp32") -> GemmPath:
    """SIMT sgemm on ``spec``'s FP32 lanes: :data:`TILES`, several small tiles per SM, the fitted feed,
    split-K, C in the epilogue, the power cap (what NeuSight's fp32 kernels are fitted with)."""
    return GemmPath(spec.sm_count, sm_flops(spec, dtype), TILES, REFERENCE_TILE_AREA, None, SPLITS, True,
                    spec.memory_bytes_per_s, sustained_flops(spec, constants, dtype))


def tensor_path(cores: int, core_flops: float, clock_hz: float, l2_bytes_per_clock: float,
                hbm_bytes_per_s: float, size: int, sustained: float = float("inf")) -> GemmPath:
    """Tensor-core (or any library-tile) GEMMs: :data:`TENSOR_TILES`, one per SM at a time, fed from
    L2 (the datasheet's L2 read bytes per clock; 0: always fed): a tile needs a reuse of
    MACs per clock per SM × element bytes (``size``) / L2 bytes per clock per SM. ``core_flops``:
    one SM's peak FLOP/s at the dtype; ``clock_hz`` the clock those bytes per clock are counted at;
    ``sustained``: the power cap (:func:`sustained_flops`; inf: none). No split-K and C's write inside
    the roofline: what the tensor-core constants were fitted with (docs/accuracy.md, "Fitted constants")."""
    needed = 0.0
    if l2_bytes_per_clock:
        needed = core_flops / (2 * clock_hz) * size / (l2_bytes_per_clock / cores)
    return GemmPath(cores, core_flops, TENSOR_TILES, 0, needed, (1,), False, hbm_bytes_per_s, sustained)


def spec_path(spec: GpuSpec | None, constants: KernelConstants = FITTED, dtype: str = "fp32",
              board: Callable[[], GemmPath] | None = None) -> GemmPath:
    """The one rule of which path ``dtype`` GEMMs take, on the chip ``spec`` or on a board's device
    (``board``: its tensor tiles at its own figures, built only when chosen;
    :func:`archsim.devices.kernel_ops.gemm_path` passes it):

    * SIMT tiles on the chip's FP32 lanes (:func:`simt_path`) for a dtype tensor tiles do not run
      (fp32), and for fp16/bf16 on a bare chip without tensor cores (fp16 storage on the lanes);
      fp8 (train's ``--fp8`` GEMMs) runs on tensor tiles only;
    * otherwise tensor tiles: the board's where one is given (a board that states no peak for the dtype
      refuses it there), else the chip's, at the peak its tensor cores' MMA shape and clock give, fed
      from its L2 read bandwidth (:func:`tensor_path`);
    * no chip (``spec`` None: a device file): the board's tiles, in any dtype."""
    tensor = dtype in TENSOR_DTYPES or dtype == FP8  # fp8: train's --fp8 GEMMs, on a board's fp8 peak
    if spec is not None and (not tensor or (board is None and spec.array_unit != "tensor core")):
        return simt_path(spec, constants, dtype)
    if board is not None:
        return board()
    if spec is None:
        raise ValueError("spec_path needs a chip or a board")
    return tensor_path(spec.sm_count, sm_flops(spec, dtype), spec.clock_hz, spec.l2_bytes_per_clock,
                       spec.memory_bytes_per_s, element_bytes(dtype), sustained_flops(spec, constants, dtype))


def compute_seconds(batch: npt.ArrayLike, m: npt.ArrayLike, n: npt.ArrayLike, k: npt.ArrayLike, path: GemmPath,
                    constants: KernelConstants = FITTED, size: int = 4) -> np.ndarray:
    """Seconds of the main loop alone of ``batch`` GEMMs (arrays broadcast), the best tile and split:
    waves of tiles over the cores at the fed rate, or all the tiles' FLOPs at the board's sustained rate
    if longer (the power cap bounds the kernel's average), a split's reduction kernel included; no HBM
    roofline, no launch — the part a fused kernel overlaps with its own traffic."""
    b, m, n, k = _arrays(batch, m, n, k)
    hbm = path.hbm_bytes_per_s * constants.gemm_memory
    rate = path.core_flops * constants.gemm
    sms = path.cores
    needed = constants.feed if path.needed_reuse is None else path.needed_reuse
    best = np.full(np.broadcast(b, m, n, k).shape, np.inf)
    for tm, tn in path.tiles:
        per_sm = max(1, path.resident // (tm * tn))
        fed = min(1.0, tm * tn / (tm + tn) / needed) if needed else 1.0
        tiles = np.ceil(m / tm) * np.ceil(n / tn) * b
        for s in path.splits:
            usable = (s == 1) | (k >= s * SPLIT_MIN_K)
            if not np.any(usable):
                break
            waves = np.ceil(tiles * s / (sms * per_sm))
            # the waves at the SMs' fed rate, or the kernel's FLOPs at the board power, whichever is longer
            compute = np.maximum(waves * (per_sm / (rate * fed)), tiles * (s / path.sustained_flops)) \
                * (2.0 * tm * tn) * np.ceil(k / s)
            if s > 1:
                compute = compute + (s + 1) * b * m * n * size / hbm + constants.launch_s
            best = np.minimum(best, np.where(usable, compute, np.inf))
    return best


def path_gemm_seconds(batch: npt.ArrayLike, m: npt.ArrayLike, n: npt.ArrayLike, k: npt.ArrayLike, path: GemmPath,
                      constants: KernelConstants = FITTED, size: int = 4, out_size: int | None = None) -> np.ndarray:
    """Seconds of ``batch`` GEMMs out[m×n] = A[m×k]·B[k×n] in one kernel on ``path`` (``size`` bytes per
    element of A and B, ``out_size`` of C: None, ``size``; an fp8 GEMM writes the training dtype): the main
    loop or the reads of A and B, whichever is longer (a roofline per kernel), then C's write (after it with an
    epilogue, inside the roofline without), plus one launch."""
    b, m, n, k = _arrays(batch, m, n, k)
    best = compute_seconds(b, m, n, k, path, constants, size)
    hbm = path.hbm_bytes_per_s * constants.gemm_memory
    reads = b * (m * k + k * n) * size / hbm
    write = b * m * n * (size if out_size is None else out_size) / hbm
    if path.epilogue:
        return np.maximum(best, reads) + write + constants.launch_s
    return np.maximum(best, reads + write) + constants.launch_s


def gemm_seconds(batch: npt.ArrayLike, m: npt.ArrayLike, n: npt.ArrayLike, k: npt.ArrayLike, spec: GpuSpec,
                 constants: KernelConstants = FITTED, dtype: str = "fp32") -> np.ndarray:
    """Seconds of ``batch`` GEMMs out[m×n] = A[m×k]·B[k×n] in one kernel (arrays broadcast) on the chip
    ``spec`` (:func:`spec_path`)."""
    return path_gemm_seconds(batch, m, n, k, spec_path(spec, constants, dtype), constants, element_bytes(dtype))


def softmax_block_threads(hidden: npt.ArrayLike, dtype: str = "fp32") -> np.ndarray:
    """Threads of PyTorch's block softmax CTA for rows of ``hidden`` elements: the power of two at or
    above half of min(hidden / ILP, 1,024), at least one warp (ILP = 16 bytes / element bytes)."""
    h = np.asarray(hidden, dtype=np.float64)
    wanted = np.minimum(h / (SOFTMAX_LOAD_BYTES // element_bytes(dtype)), SOFTMAX_MAX_THREADS) / 2
    return np.maximum(32.0, 2.0 ** np.ceil(np.log2(np.maximum(wanted, 1.0))))


def softmax_tensors(batch: npt.ArrayLike, hidden: npt.ArrayLike, spec: GpuSpec, dtype: str = "fp32") -> np.ndarray:
    """Tensor-sized HBM passes of a softmax over the last ``hidden`` elements of a ``batch`` × ``hidden``
    tensor: 2 for the warp softmax (rows ≤ :data:`SOFTMAX_WARP_MAX`); for the block softmax 2 plus its
    two re-reads × the fraction of the rows resident on one SM that its L1 cannot hold."""
    b, h = np.broadcast_arrays(*_arrays(batch, hidden))
    resident = np.minimum(spec.threads_per_sm // softmax_block_threads(h, dtype), np.ceil(b / spec.sm_count))
    footprint = resident * h * element_bytes(dtype)
    missed = np.clip(1.0 - spec.l1_bytes / footprint, 0.0, 1.0)
    return np.where(h <= SOFTMAX_WARP_MAX, 2.0, 2.0 + 2.0 * missed)


def memory_bound_seconds(op: npt.ArrayLike, batch: npt.ArrayLike, hidden: npt.ArrayLike, spec: GpuSpec,
                         constants: KernelConstants = FITTED, dtype: str = "fp32") -> np.ndarray:
    """Seconds of an elementwise, softmax (``softmax``) or layer-norm (``ln``) kernel on a
    ``batch`` × ``hidden`` tensor: its bytes at the op class's achieved HBM fraction, plus launch."""
    b, h = np.broadcast_arrays(*_arrays(batch, hidden))
    ops = np.broadcast_to(np.asarray(op, dtype=object), b.shape)
    tensors = np.empty(ops.shape)
    fraction = np.empty(ops.shape)
    for name in set(ops.ravel().tolist()):
        where = ops == name
        if name in ELEMENTWISE_TENSORS:
            tensors[where], fraction[where] = ELEMENTWISE_TENSORS[name], constants.memory
        elif name == "softmax":
            tensors[where] = softmax_tensors(b[where], h[where], spec, dtype)
            fraction[where] = constants.softmax
        elif name == "ln":
            tensors[where] = LAYERNORM_READS + 1
            fraction[where] = constants.layernorm
        else:
            raise InputError(f"unknown memory-bound op {name!r}", field="op")
    return stream_seconds(tensors * b * h * element_bytes(dtype), spec.memory_bytes_per_s, constants, fraction)


def stream_seconds(nbytes: npt.ArrayLike, hbm_bytes_per_s: float, constants: KernelConstants = FITTED,
                   fraction: npt.ArrayLike | None = None, kernels: npt.ArrayLike = 1) -> np.ndarray:
    """Seconds of ``kernels`` memory-bound kernels moving ``nbytes`` in all through HBM at ``fraction``
    of its bandwidth (default ``constants.memory``, the elementwise one), plus their launches: the one
    memory-bound time every op class and dtype is priced with."""
    achieved = constants.memory if fraction is None else fraction
    return np.asarray(nbytes, dtype=np.float64) / (hbm_bytes_per_s * np.asarray(achieved)) \
        + np.asarray(kernels) * constants.launch_s


def linear_rows(ops: npt.ArrayLike, batch: npt.ArrayLike, m: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """(GEMMs, rows each) of GEMM kernels given as B × M: a ``linear`` on a B × M × K input is one GEMM of B·M rows
    against the one weight (PyTorch folds the leading dimensions into the rows: ``F.linear`` on a contiguous
    3-d input runs one addmm), so (1, B·M); a ``bmm`` is B GEMMs of M rows, each with its own B operand."""
    linear = np.asarray(ops, dtype=object) == "linear"
    b, rows = _arrays(batch, m)
    return np.where(linear, 1.0, b), np.where(linear, b * rows, rows)


def kernel_seconds(rows: Mapping[str, npt.ArrayLike], spec: GpuSpec, constants: KernelConstants = FITTED,
                   dtype: str = "fp32") -> np.ndarray:
    """Seconds of each kernel in ``rows`` (columns ``op`` and B, M, N, K for linear/bmm or B, H
    for the others; NeuSight's OPName names), on ``spec``."""
    ops = np.asarray(rows["op"], dtype=object)
    unknown = sorted(set(ops.tolist()) - set(OP_CLASSES))
    if unknown:
        raise InputError(f"unknown op(s) {', '.join(map(str, unknown))}; known: {', '.join(OP_CLASSES)}",
                         field="op")
    seconds = np.zeros(len(ops))
    gemm = np.isin(ops, GEMM_OPS)
    if gemm.any():
        b, m, n, k = (np.asarray(rows[c], dtype=np.float64)[gemm] for c in ("B", "M", "N", "K"))
        b, m = linear_rows(ops[gemm], b, m)
        seconds[gemm] = gemm_seconds(b, m, n, k, spec, constants, dtype)
    if (~gemm).any():
        b, h = (np.asarray(rows[c], dtype=np.float64)[~gemm] for c in ("B", "H"))
        seconds[~gemm] = memory_bound_seconds(ops[~gemm], b, h, spec, constants, dtype)
    return seconds


__all__ = ["ELEMENTWISE_TENSORS",
    "LAYERNORM_READS",
    "OP_CLASSES",
    "SOFTMAX_WARP_MAX",
    "SPLITS",
    "SPLIT_MIN_K",
    "TENSOR_TILES",
    "TILES",
    "GemmPath",
    "compute_seconds",
    "gemm_seconds",
    "kernel_seconds",
    "linear_rows",
    "memory_bound_seconds",
    "path_gemm_seconds",
    "simt_path",
    "softmax_block_threads",
    "softmax_tensors",
    "spec_path",
    "stream_seconds",
    "tensor_path",
]
