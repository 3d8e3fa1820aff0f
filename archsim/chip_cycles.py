"""A chip of several arrays timed by the cycle engine (``cost``/``energy --engine cycle`` on such a device file).

Train's op timing deals each GEMM's folds to the arrays in waves (:mod:`archsim.devices.array_waves`) against its
HBM bytes at the file's bandwidth; it sees no stall of an array waiting on a DRAM the arrays share. Here the same
deal (:func:`~archsim.devices.array_waves.gemm_deal`, the rule :func:`~archsim.devices.array_waves.array_gemm_cycles`
runs, called, not copied) gives the folds the busiest array runs, and that array's share is stepped by the cycle
engine through cost's path (:func:`archsim.array.costing.cycle_results`: SCALE-Sim's memory model, its SRAMs the
costed array's) at its share of the chip's DRAM rate: the file's ``hbm_gbps`` ÷ the arrays running at once, on each
of its three operand buffers, in words per cycle at the chip's clock rounded as
:func:`archsim.array.config.dram_words` rounds the whole rate (:func:`share_words`). A GEMM's chip cycles
are that array's (plus a split reduction's adds, as the deal counts them); a vector op's elements are dealt evenly
to the arrays, the busiest stepping ⌈⌈elements / arrays⌉ / cols⌉ cycles (on one array ⌈elements / cols⌉, as
:func:`archsim.array.costing.op_cycles` counts it). Cycles, each simulated GEMM in SCALE-Sim's count.

The share (:func:`busiest_share`): of ``waves`` folds of the dealt (sub-)GEMMs, F folds each, ⌊waves / F⌋ whole
ones, then the rest r of one more: q whole column folds (each with all its row folds: under ws and is the whole
reduction) and the next column fold's first r' row folds, (q, r') = divmod(r, row folds); at most three GEMMs.

What it leaves out, stated: the arrays share the HBM evenly (the arrays running at once are min(arrays, folds dealt),
each given an equal rate the whole GEMM long, a last partial wave's idle arrays freeing none); the busiest array's
share is stepped alone (the others run as many folds or fewer, of the same shapes); a remainder's row folds of a
ws or is reduction on two arrays add their partial sums for free, as the deal counts no adds for them; cost's
``--bandwidth`` sets the one array's columns, not the chip's rate (train reads ``hbm_gbps`` too); a device's fp32
lanes are not used (the engine steps cost's array); a vector op's elements are not streamed at ``hbm_gbps`` here
(its lanes' cycles alone, as the cycle engine counts one array's). Each distinct share is stepped once per rate,
beside cost's own steps of the whole GEMMs: ResNet-50 at batch 8 on the TPU-v4-like file runs about a tenth longer.

These cycles can beat the chip's HBM: SCALE-Sim's memory model gives each of the share's three operand buffers the
share's whole rate, so the arrays together may draw up to three times ``hbm_gbps``. The chip's seconds are
therefore floored, op by op, at the op's HBM bytes as train's op timing counts them (a vector op's elements streamed
too) ÷ ``hbm_gbps`` (:func:`archsim.chip_time.chip_seconds`); the cycles here stay the engine's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from archsim.array.config import ArrayConfig
    from archsim.devices.device import Device
    from archsim.lowering import TrainingOp

Shape = tuple[int, int, int]


def share_words(hbm_gbps: float, arrays: int, element_bytes: int, ghz: float) -> int:
    """DRAM words per cycle on each operand buffer of one of ``arrays`` arrays sharing ``hbm_gbps`` GB/s evenly,
    in ``element_bytes``-byte words at ``ghz``: hbm_gbps ÷ arrays ÷ (element_bytes × GHz) to the nearest whole
    number (a half up), at least 1 — the share's words by the whole rate's one rule,
    :func:`~archsim.array.config.dram_words` (:func:`~archsim.array.device_rate.device_dram_rate`'s)."""
    from archsim.array.config import dram_words

    return dram_words(hbm_gbps / arrays, ghz, element_bytes)


def busiest_share(sub: Shape, folds: int, waves: int, rows: int, cols: int, dataflow: str) -> list[tuple[Shape, int]]:
    """(GEMM (m, k, n), times) the busiest array runs: ``waves`` folds of (sub-)GEMMs ``sub`` of ``folds`` folds
    each on ``rows × cols`` arrays in ``dataflow`` (module docstring: whole GEMMs, whole column folds, then row
    folds), so its folds sum to ``waves``."""
    from archsim.array.analytic import ROLES

    whole, rest = divmod(waves, folds)
    pieces = [(sub, whole)] if whole else []
    if rest:
        roles = ROLES[dataflow]
        spatial_rows, spatial_cols, streamed = (sub[role] for role in roles)
        strips, row_folds = divmod(rest, -(-spatial_rows // rows))
        parts = [(spatial_rows, min(spatial_cols, strips * cols))] if strips else []
        if row_folds:
            parts.append((min(spatial_rows, row_folds * rows), min(cols, spatial_cols - strips * cols)))
        for spatial in parts:
            dims = [0, 0, 0]
            for role, size in zip(roles, (*spatial, streamed), strict=True):
                dims[role] = size
            pieces.append(((dims[0], dims[1], dims[2]), 1))
    return pieces


def chip_op_cycles(ops: Sequence[TrainingOp], array: ArrayConfig, chip: Device) -> np.ndarray:
    """Each op's cycles on ``chip``'s arrays (int64; module docstring): its GEMMs one after another, each its
    ``count`` parts dealt together as train deals them, the busiest array's share stepped by the cycle engine on
    ``array`` (its shape, dataflow and SRAMs; the chip's arrays have its shape) at :func:`share_words`; plus its
    vector elements dealt to the arrays, the busiest one's ÷ the array's columns."""
    from archsim.array.costing import cycle_results, rated_k
    from archsim.array.options import with_memory
    from archsim.devices.array_waves import gemm_deal
    from archsim.errors import InputError
    from archsim.lowering.gemm_arrays import flatten_gemms
    from archsim.validate import INT32_MAX, check_exact

    units = chip.arrays
    owner, m, k, n, count = flatten_gemms(ops)
    k = rated_k(k, array)  # the reduction packed at the arrays' MACs per PE per cycle, as train deals it
    per_gemm = np.zeros(owner.size, dtype=np.int64)
    if owner.size:
        deal = gemm_deal(m, k, n, count, units, chip.split_k)
        running = np.minimum(deal.dealt, units.count)
        hbm_gbps, ghz = chip.hbm_bytes_per_s / 1e9, units.clock_hz / 1e9
        by_rate: dict[int, list[tuple[int, Shape, int]]] = {}
        for i in range(owner.size):
            words = share_words(hbm_gbps, int(running[i]), array.element_bytes, ghz)
            if words > INT32_MAX:  # the device's rate named, not the words/cycle the cycle engine would refuse
                raise InputError(f"{hbm_gbps:g} GB/s shared by {int(running[i])} arrays at {ghz:g} GHz is {words:.3g} "
                                 f"DRAM words/cycle of {array.element_bytes} bytes each, above the {INT32_MAX} the "
                                 "cycle engine takes: give a lower hbm_gbps", field="memory.hbm_gbps")
            sub = (int(deal.sub[0][i]), int(deal.sub[1][i]), int(deal.sub[2][i]))
            for shape, times in busiest_share(sub, int(deal.folds[i]), int(deal.waves[i]), units.rows, units.cols,
                                              units.dataflow):
                by_rate.setdefault(words, []).append((i, shape, times))
        per_gemm += deal.adds
        for words, pieces in sorted(by_rate.items()):
            shapes = np.array([shape for _, shape, _ in pieces], dtype=np.int64)
            results, index = cycle_results(shapes[:, 0], shapes[:, 1], shapes[:, 2], with_memory(array, bandwidth=words))
            for (i, _, times), row in zip(pieces, index.tolist(), strict=True):
                per_gemm[i] += results[row].cycles * times
    vector = np.fromiter((op.vector_elements for op in ops), dtype=np.int64, count=len(ops))
    check_exact(float(per_gemm.astype(np.float64).sum()) + float(vector.astype(np.float64).sum()),
                "the network's total chip cycles")
    cycles = np.zeros(len(ops), dtype=np.int64)
    np.add.at(cycles, owner, per_gemm)
    busiest = -(-vector // units.count)  # a vector op's elements dealt evenly: the busiest array's ⌈elements / arrays⌉
    return cycles + -(-busiest // array.cols)


__all__ = ["busiest_share", "chip_op_cycles", "share_words"]
