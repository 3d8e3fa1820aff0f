"""GEMMs on a device's arrays, in cycles: the arrays mechanism of the one device model.

A device whose GEMMs run on its arrays (:class:`~archsim.devices.device.Arrays`: ``count`` arrays of
``rows × cols``) times a GEMM out[m×n] = A[m×k]·B[k×n] from SCALE-Sim's exact cost of one array
(:func:`archsim.array.analytic.gemm_cost`): its F folds, all of c cycles, are dealt to the arrays in
waves. Everything here is a pure function of shapes and arrays and returns cycles; seconds are
:func:`archsim.devices.kernel_ops.array_gemm_seconds` (÷ clock, the HBM roofline, launch), and
``validate-gpu``'s cycles view (:mod:`archsim.validation.gpu`) is these functions on a GPU's tensor
cores. Mechanisms:

* **waves**: ``parts`` GEMMs of one shape dealt together: ⌈F · parts / P⌉ · c elapsed cycles;
  ``busy`` = F · c · parts array-cycles (what two streams sharing the arrays add up).
* **a split of the streamed dimension** (when F · parts < P: the folds leave arrays idle): the GEMM is cut
  into s real sub-GEMMs along one dimension, all their folds dealt in ⌈F' · s · parts / P⌉ waves of one
  sub-GEMM fold's cycles; s ∈ 1..min(that dimension, P) is the cheapest in elapsed cycles (s = 1 is no
  split, so never slower; the first on ties). Which dimension (:data:`SPLIT_AXIS`):

  - ``ws`` and ``is``: the streamed one — ws's M rows of A (⌈m/s⌉ rows each, every array holding the
    same weight fold), is's N columns of B (⌈n/s⌉ each, every array holding the same input fold). Each
    array writes its own rows (columns) of the output: no reduction, no extra work but each array's
    fill, which the sub-GEMM's SCALE-Sim cycles count. On for every device of more than one array, as
    a compiler for a chip of several arrays deals one GEMM's rows over them (XLA over a TPU core's MXUs;
    SCALE-Sim v3's multi-core partitioning); with one array s = 1 and nothing changes.
  - ``os`` (**split-K**, only where ``split_k`` is on): the reduction, sub-GEMMs (m, ⌈k/s⌉, n), plus
    ⌈(s − 1)·m·n·parts / (P·cols)⌉ cycles to add the partial outputs on all arrays' lanes, as
    cuBLAS/cuDNN split weight gradients and small-batch layers (an os fold's streamed dimension is K).

  ``busy`` = s · (sub-GEMM's elapsed cycles) · parts (+ the adds on ``cols`` lanes), ``split`` = s.
* **SCALE-Sim's count** (:func:`indexed_cycles`): the array model reports a GEMM's cycles as SCALE-Sim
  does, the last cycle's index, one less than elapsed (:mod:`archsim.array.analytic`). The device
  counts the same way, one less per GEMM *run* on its busiest array: ``runs`` = ⌈waves / F⌉, that
  array's folds in whole GEMMs of F folds, rounded up (``parts`` on one array; 1 where a GEMM's folds
  spread over the arrays). Why per run: the array model prices a batch's parts as separate
  SCALE-Sim runs, each one less than elapsed; elapsed is the physical count, the difference one
  cycle per run (~1e-6 of a real GEMM). With one array this is
  ``parts`` × :func:`~archsim.array.analytic.gemm_cost`'s cycles exactly, so a device file of one array
  prices a GEMM as ``archsim cost --config`` does. Seconds (:func:`archsim.devices.kernel_ops.array_gemm_seconds`)
  and ``validate-gpu``'s cycles view both take this count: one convention.
* **an op's GEMMs one after another** (:func:`op_array_cycles`): each GEMM of a batch its own wave
  schedule, in SCALE-Sim's count (with one array this is :func:`archsim.array.costing.op_cycles`).
* **two streams** (:func:`two_stream_cycles`): two ops sharing the arrays end no earlier than the
  longer one nor than their busy array-cycles spread over all arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from archsim.array.analytic import gemm_cost
from archsim.devices.device import Arrays
from archsim.lowering import TrainingOp
from archsim.lowering.gemm_arrays import flatten_gemms


@dataclass(frozen=True)
class ArrayCycles:
    """Per GEMM (or op): ``cycles`` elapsed (or SCALE-Sim's last-cycle index, :func:`op_array_cycles`),
    ``busy`` array-cycles summed over the arrays (elapsed), ``split`` the split s of the streamed dimension
    (ws's M, is's N, os's K: module docstring; 1: none),
    ``runs`` the GEMM runs the busiest array does back to back (:func:`indexed_cycles`; an op's: summed)."""

    cycles: np.ndarray
    busy: np.ndarray
    split: np.ndarray
    runs: np.ndarray


def indexed_cycles(gemm: ArrayCycles) -> np.ndarray:
    """A GEMM's cycles in SCALE-Sim's count, the one archsim reports: elapsed less one per GEMM run
    (each run counted by its last cycle's index, as :func:`~archsim.array.analytic.gemm_cost`). Cycles."""
    return gemm.cycles - gemm.runs


SPLIT_AXIS = {"ws": 0, "is": 2, "os": 1}
"""The dimension of (m, k, n) a GEMM's split cuts, per dataflow: its streamed one (module docstring)."""


@dataclass(frozen=True)
class GemmDeal:
    """How :func:`array_gemm_cycles` deals ``parts`` GEMMs of one shape over the arrays, per GEMM: the
    s · parts (sub-)GEMMs dealt, each ``sub`` = (m, k, n) (the GEMM's own shape where s = 1) of ``folds`` folds;
    ``waves`` the folds the busiest array runs, of those sub-GEMMs; ``adds`` the cycles adding a split
    reduction's partial outputs (os split-K; 0 otherwise); ``dealt`` the folds dealt in all (s · folds · parts).
    Elapsed cycles = waves · one sub-GEMM fold's cycles + adds. Why: the chip's cycle-engine timing
    (:mod:`archsim.chip_cycles`) simulates the busiest array's share of the same deal. Folds and cycles."""

    sub: tuple[np.ndarray, np.ndarray, np.ndarray]
    folds: np.ndarray
    waves: np.ndarray
    adds: np.ndarray
    dealt: np.ndarray


def array_gemm_cycles(m: npt.ArrayLike, k: npt.ArrayLike, n: npt.ArrayLike, parts: npt.ArrayLike,
                      units: Arrays, split_k: bool = False) -> ArrayCycles:
    """Elapsed cycles, busy array-cycles and split s of ``parts`` GEMMs of shape (m, k, n) dealt
    together over ``units`` (module docstring: ws and is split their streamed dimension where folds
    leave arrays idle; os its reduction only with ``split_k``). Integer arrays broadcast; units: cycles."""
    return _dealt(m, k, n, parts, units, split_k)[0]


def gemm_deal(m: npt.ArrayLike, k: npt.ArrayLike, n: npt.ArrayLike, parts: npt.ArrayLike,
              units: Arrays, split_k: bool = False) -> GemmDeal:
    """The deal behind :func:`array_gemm_cycles` of the same arguments (:class:`GemmDeal`): one rule."""
    return _dealt(m, k, n, parts, units, split_k)[1]


def _dealt(m: npt.ArrayLike, k: npt.ArrayLike, n: npt.ArrayLike, parts: npt.ArrayLike,
           units: Arrays, split_k: bool) -> tuple[ArrayCycles, GemmDeal]:
    """(:func:`array_gemm_cycles`, :func:`gemm_deal`): the deal, computed once for both."""
    P = units.count
    m, k, n, parts = np.broadcast_arrays(*(np.atleast_1d(np.asarray(x, dtype=np.int64)) for x in (m, k, n, parts)))
    whole = gemm_cost(m, k, n, units.rows, units.cols, units.dataflow)
    per_fold = (whole.cycles + 1) // whole.folds  # SCALE-Sim's cycles are the last cycle's index
    folds = whole.folds * parts
    waves = -(-folds // P)
    cycles = waves * per_fold
    busy = (whole.cycles + 1) * parts
    split = np.ones_like(cycles)
    runs = -(-waves // whole.folds)  # the busiest array's folds in whole GEMMs (module docstring)
    sub_shape = [m.copy(), k.copy(), n.copy()]
    sub_folds, adds = whole.folds.copy(), np.zeros_like(cycles)
    dealt_waves = waves.copy()
    splits = split_k or units.dataflow != "os"
    todo = np.flatnonzero(folds < P) if splits else np.array([], dtype=int)
    if todo.size:
        axis = SPLIT_AXIS[units.dataflow]
        dims = [x[todo, None] for x in (m, k, n)]
        pp = parts[todo, None]
        s = np.arange(1, min(P, int(dims[axis].max())) + 1, dtype=np.int64)[None, :]
        sub = [-(-x // s) if i == axis else x for i, x in enumerate(dims)]
        part = gemm_cost(sub[0], sub[1], sub[2], units.rows, units.cols, units.dataflow)
        part_fold = (part.cycles + 1) // part.folds
        # partial outputs added, one per lane: only a split reduction (os) has any
        merge = (s - 1) * dims[0] * dims[2] * pp if axis == 1 else np.zeros_like(s)
        part_waves = -(-(s * part.folds * pp) // P)
        total = part_waves * part_fold + -(-merge // (P * units.cols))
        total = np.where(s <= dims[axis], total, np.iinfo(np.int64).max)
        best = np.argmin(total, axis=1)
        rows = np.arange(todo.size)
        merged = np.broadcast_to(merge, total.shape)[rows, best]
        cycles[todo] = total[rows, best]
        split[todo] = best + 1
        busy[todo] = (best + 1) * (part.cycles[rows, best] + 1) * pp[:, 0] + -(-merged // units.cols)
        runs[todo] = -(-part_waves[rows, best] // part.folds[rows, best])
        sub_shape[axis][todo] = -(-dims[axis][:, 0] // (best + 1))
        sub_folds[todo] = part.folds[rows, best]
        adds[todo] = -(-merged // (P * units.cols))
        dealt_waves[todo] = part_waves[rows, best]
    deal = GemmDeal((sub_shape[0], sub_shape[1], sub_shape[2]), sub_folds, dealt_waves, adds, sub_folds * split * parts)
    return ArrayCycles(cycles, busy, split, runs), deal


def op_array_cycles(ops: Sequence[TrainingOp], units: Arrays, split_k: bool = False) -> ArrayCycles:
    """Each op's cycles on ``units``, its GEMMs (and a batch's parts) one after another, each in
    SCALE-Sim's count (:func:`indexed_cycles`: one run each, elapsed − 1); busy array-cycles summed;
    the largest split s."""
    owner, m, k, n, times = flatten_gemms(ops)
    cycles = np.zeros(len(ops), dtype=np.int64)
    busy = np.zeros(len(ops), dtype=np.int64)
    split = np.ones(len(ops), dtype=np.int64)
    runs = np.zeros(len(ops), dtype=np.int64)
    if owner.size:
        gemm = array_gemm_cycles(m, k, n, 1, units, split_k)
        np.add.at(cycles, owner, indexed_cycles(gemm) * times)
        np.add.at(busy, owner, gemm.busy * times)
        np.maximum.at(split, owner, gemm.split)
        np.add.at(runs, owner, gemm.runs * times)
    return ArrayCycles(cycles, busy, split, runs)


def two_stream_cycles(a: npt.ArrayLike, b: npt.ArrayLike, busy_a: npt.ArrayLike, busy_b: npt.ArrayLike,
                      count: int) -> np.ndarray:
    """Cycles (SCALE-Sim's convention) of two ops on two streams sharing ``count`` arrays:
    max(a, b, ⌈(busy_a + busy_b) / count⌉ − 1)."""
    a, b, busy_a, busy_b = (np.asarray(x, dtype=np.int64) for x in (a, b, busy_a, busy_b))
    return np.maximum(np.maximum(a, b), -(-(busy_a + busy_b) // count) - 1)


__all__ = ["SPLIT_AXIS", "ArrayCycles", "GemmDeal", "array_gemm_cycles", "gemm_deal", "indexed_cycles", "op_array_cycles",
           "two_stream_cycles"]
