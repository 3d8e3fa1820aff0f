"""Cycle-level systolic-array engine: memory stalls and DRAM traffic of a GEMM, SCALE-Sim-exact.

The analytic model (:mod:`archsim.array.analytic`) gives compute cycles; this engine steps the
array fold by fold and cycle by cycle to get what memory adds. Each cycle the array demands some
words of A (ifmap), B (filter) and writes some of out (ofmap) — the same demand rows SCALE-Sim
3.0.0's ``systolic_compute_{ws,os,is}`` build as matrices, here derived per fold as "word
base + a·t + b·lane, valid on a (skewed) band", so nothing larger than one operand is ever held.
The demand goes through a model of SCALE-Sim's double-buffered scratchpads with its DRAM interface
in USER bandwidth mode (``memory/double_buffered_scratchpad_mem.py``, ``read_buffer.py``,
``write_buffer.py``, ``read_port.py``/``write_port.py``), reproduced decision for decision, so
stall cycles and DRAM reads/writes equal SCALE-Sim's for GEMMs, and for its conv mode when given
the windows (:class:`ConvWindows`: overlapping windows repeat ifmap words, off-edge taps are nulls).

SCALE-Sim's memory model, and the oddities this engine reproduces on purpose:

* **Reads.** An SRAM of S words holds an active half ⌈S/2⌉ and a prefetch half. Words are hashed,
  in the operand's prefetch order (fold tiles stacked; anti-diagonal order for skewed operands),
  into "lines" of ⌈S/100⌉ words; the active window is a run of lines. A demanded word outside the
  window slides the window by one prefetch buffer (circularly: a re-read operand wraps around).
* **Prefetch timing ignores the array.** Prefetch k (after the free initial fill, which SCALE-Sim
  places before cycle 0) is ready at k·(⌈(S/2)/bw⌉ + 1) − 1, whatever cycle the array asks for it:
  the DRAM runs back to back from cycle −1, never waiting for demand or stalls.
* **Stalls counted twice, and negative.** On a miss SCALE-Sim adds the potential stall
  (ready − now) to the line's offset *and*, if positive, adds it again; if negative it still adds it,
  so an early prefetch moves "now" back. A line stalls by the largest of the ifmap, filter and
  ofmap figures (the ofmap one is ≥ 0, which hides negative read stalls).
* **DRAM reads count whole lines of the request width,** nulls and overshoot included: the initial
  fill reads min(⌈(S/2)/bw⌉, lines of the prefetch matrix)·bw words, each prefetch ⌈(S/2)/bw⌉·bw.
* **Ofmap drain.** Writes fill bw-word lines. Once more than half the SRAM is used and no drain is
  running, the open line is flushed part-full and up to ⌈(S/2)/bw⌉ lines drain, one per cycle; only
  nulls in the *last* drained line are discounted, so a part-full line drained mid-batch counts bw
  words. A write stalls only when the SRAM is full during a drain.
* **The final drain is not in the cycle count.** After the last line SCALE-Sim drains the rest from
  the last line's cycle on; those cycles appear only in "Total Cycles (incl. prefetch)".
* **USER mode's read bandwidth.** SCALE-Sim 3.0.0 reads ifmap and filter at the ``[layout]``
  ``IfmapSRAMBankBandwidth``/``FilterSRAMBankBandwidth`` (10 by default) and uses ``Bandwidth`` only
  for the ofmap. :func:`simulate_gemm` takes the three separately; an ``ArrayConfig`` read from a
  SCALE-Sim ``.cfg`` carries the layout rates in ``read_bandwidth``, otherwise ``bandwidth`` applies
  to all three.

* **Repeated words** (a conv's im2col operand, ``conv=``): SCALE-Sim's read buffer looks a word up by
  address in every active line, so a word whose other copy (another window's) is active hits there;
  lines count every copy. Off-edge taps are null addresses: in no line, and skipped in the demand.
* **Custom layouts** (``layout=``, :mod:`archsim.array.layout`): a laid-out operand's words go into
  lines of exactly one bank bandwidth in the layout file's order, a late prefetch moves the line's
  cycle once (an early one not at all), and each demand row waits for its worst bank conflict.

Cycles: ``compute_cycles`` is the analytic count (stall-free); ``cycles`` is SCALE-Sim's "Compute
cycles" in USER mode — the last cycle an ofmap line is serviced, stalls included.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from archsim.array import cycle_kernel as kernel
from archsim.array import cycle_order as order
from archsim.array.analytic import DATAFLOW_CODES, fold_geometry
from archsim.array.config import ArrayConfig
from archsim.array.layout import GemmLayout, gemm_tables
from archsim.console import setting
from archsim.errors import InputError
from archsim.jit import announce_compile
from archsim.validate import positive_count
from archsim.value_parsers import parse_int

# How each dataflow tiles A and B for prefetching: (tile width, transposed, anti-diagonal order),
# from systolic_compute_*.create_{ifmap,filter}_prefetch_mat — see order.prefetch_geometry.
_PREFETCH = {  # dataflow: ((A width, A transposed, A diagonal), (B width, B transposed, B diagonal))
    "ws": (("rows", False, True), ("cols", False, False)),
    "os": (("rows", True, True), ("cols", False, True)),
    "is": (("cols", True, False), ("rows", True, True)),
}


@dataclass(frozen=True)
class CycleResult:
    """One GEMM through the array and its memories (cycles; words of ``element_bytes``).

    compute_cycles: stall-free cycles (= analytic ``gemm_cost``). stall_cycles: SCALE-Sim's stalls.
    cycles: SCALE-Sim's USER-mode "Compute cycles" (stalls included) — the memory-aware cost.
    cycles_incl_prefetch: SCALE-Sim's "Total Cycles (incl. prefetch)", initial fill to final drain.
    ifmap/filter_dram_reads, ofmap_dram_writes: words over the DRAM interface, as SCALE-Sim counts.
    """

    m: int
    k: int
    n: int
    compute_cycles: int
    stall_cycles: int
    cycles: int
    cycles_incl_prefetch: int
    ifmap_dram_reads: int
    filter_dram_reads: int
    ofmap_dram_writes: int

    @property
    def dram_words(self) -> int:
        return self.ifmap_dram_reads + self.filter_dram_reads + self.ofmap_dram_writes


@dataclass(frozen=True)
class ConvWindows:
    """A is the im2col matrix of this convolution (SCALE-Sim's conv mode, one image): out_h·out_w rows
    (ofmap pixels, row-major), one column per tap (tap row, tap column, channel
    fastest: filter_h·filter_w·channels), windows ``stride`` apart. Where windows overlap the same
    ifmap word sits in several places of A; SCALE-Sim's read buffer finds a word by address, so any
    active copy is a hit. ``kept_taps``: A holds only these columns, in this order (layer-wise N:M
    sparsity drops the pruned rows' columns); None: every tap. ``ifmap_h``/``ifmap_w``: the ifmap, when
    windows run past its edge (SCALE-Sim's ⌈(H − f + s)/s⌉ outputs: an off-edge tap is a null address,
    skipped in its SRAM lines and in the demand); None: every window lies inside it."""

    out_h: int
    out_w: int
    filter_h: int
    filter_w: int
    channels: int
    stride: int
    kept_taps: tuple[int, ...] | None = None
    ifmap_h: int | None = None
    ifmap_w: int | None = None

    def tables(self, m: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The kernel's conv descriptor and tap table, after checking that A is M×K of this convolution."""
        values = [positive_count(getattr(self, name), name) for name in
                  ("out_h", "out_w", "filter_h", "filter_w", "channels", "stride")]
        taps = self.filter_h * self.filter_w * self.channels
        kept = np.arange(taps, dtype=np.int64) if self.kept_taps is None else np.asarray(self.kept_taps, dtype=np.int64)
        if kept.ndim != 1 or (kept.size and (kept.min() < 0 or kept.max() >= taps or np.any(np.diff(kept) <= 0))):
            raise InputError(f"kept taps must rise within 0…{taps - 1}", field="conv")
        if m != self.out_h * self.out_w or k != kept.size:
            raise InputError(f"{self.out_h}x{self.out_w} windows of {kept.size} taps are not a {m}x{k} ifmap matrix",
                             field="conv")
        descriptor = np.zeros(order.C_SIZE, dtype=np.int64)
        descriptor[order.C_ON] = 1
        descriptor[[order.C_EH, order.C_EW, order.C_FH, order.C_FW, order.C_CHANNELS, order.C_STRIDE]] = values
        descriptor[order.C_KEPT] = kept.size
        reach = ((self.out_h - 1) * self.stride + self.filter_h, (self.out_w - 1) * self.stride + self.filter_w)
        sides = [reach[0] if self.ifmap_h is None else positive_count(self.ifmap_h, "ifmap_h"),
                 reach[1] if self.ifmap_w is None else positive_count(self.ifmap_w, "ifmap_w")]
        descriptor[[order.C_IH, order.C_IW]] = sides
        table = np.full((2, taps), -1, dtype=np.int64)
        table[0, :kept.size] = kept
        table[1, kept] = np.arange(kept.size)
        return descriptor, table


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _read_constants(words: int, bandwidth: int, valid: int, padded: int, per_set: int | None = None) -> list[int]:
    """read_buffer.set_params / prepare_hashed_buffer / prefetch_active_buffer, as numbers
    (``per_set``: words per SRAM line, ⌈S/100⌉ unless a custom layout makes it the bandwidth)."""
    per_set = per_set or _ceil(words, 100)
    active = _ceil(words, 2)
    prefetch = words - active
    lines = valid // per_set + 1  # SCALE-Sim always closes one more (possibly empty) line
    active_lines = min(_ceil(active, per_set), lines)
    prefetch_lines = min(_ceil(prefetch, per_set), lines - active_lines)
    first_fill = min(_ceil(active, bandwidth), _ceil(padded, bandwidth))
    return [per_set, lines, active_lines, prefetch_lines, _ceil(prefetch, bandwidth) + 1, first_fill, bandwidth]


MAX_STEPS = 10**9  # cycles one GEMM may step: about 15 minutes at the ~1.2·10⁶ cycles/s this engine runs


def check_steps(cycles: int) -> None:
    """Refuse, before stepping, a GEMM of more than ``ARCHSIM_MAX_STEPS`` (default 10⁹) cycles."""
    raw = os.environ.get("ARCHSIM_MAX_STEPS", "")
    try:
        limit = parse_int(raw, high=2**62) if raw else MAX_STEPS
    except ValueError as exc:
        raise InputError(str(exc), field="ARCHSIM_MAX_STEPS") from None
    if cycles > limit:
        raise InputError(f"the cycle engine would step {cycles:.3g} cycles for one GEMM (≈{cycles / 1.2e6 / 60:.3g} "
                         f"min), above {limit:.3g}; use {setting('engine', 'analytic')}, or set ARCHSIM_MAX_STEPS={cycles} to run it",
                         field="engine")


def simulate_gemm(m: int, k: int, n: int, rows: int, cols: int, dataflow: str = "ws", *,
                  sram_words: tuple[int, int, int] = (65536, 65536, 65536),
                  bandwidth: tuple[int, int, int] = (10, 10, 10), layout: GemmLayout | None = None,
                  conv: ConvWindows | None = None) -> CycleResult:
    """Step out[M×N] = A[M×K]·B[K×N] on an R×C array with SCALE-Sim's memory model.

    sram_words: ifmap, filter, ofmap SRAM sizes in words (SCALE-Sim: KiB × 1024, 1-byte words).
    bandwidth: ifmap, filter, ofmap DRAM words/cycle (USER mode).
    layout: custom layouts and SRAM banks of A and/or B (:mod:`archsim.array.layout`), as SCALE-Sim's
    GEMM mode runs them; None: SCALE-Sim's default layout (banks then change nothing).
    conv: A is this convolution's im2col matrix (:class:`ConvWindows`), as SCALE-Sim's conv mode
    builds it; None: A's words are all distinct (a GEMM, or a conv whose windows do not overlap).
    """
    m, k, n = positive_count(m, "m"), positive_count(k, "k"), positive_count(n, "n")
    rows, cols = positive_count(rows, "rows"), positive_count(cols, "cols")
    if dataflow not in DATAFLOW_CODES:
        raise InputError(f"unknown dataflow {dataflow!r}; choose one of ws, os, is", field="dataflow")
    for values, field in ((sram_words, "sram"), (bandwidth, "bandwidth")):
        if len(values) != 3:
            raise InputError(f"give three values (ifmap, filter, ofmap), got {values!r}", field=field)
    words = [positive_count(w, "sram") for w in sram_words]
    bws = [positive_count(b, "bandwidth") for b in bandwidth]
    if min(words) < 2:
        raise InputError("an SRAM needs at least 2 words (two halves)", field="sram")
    df = DATAFLOW_CODES[dataflow]
    windows, taps = ((np.zeros(order.C_SIZE, dtype=np.int64), np.zeros((2, 1), dtype=np.int64)) if conv is None
                     else conv.tables(m, k))
    off_edge = conv is not None and (conv.ifmap_h is not None or conv.ifmap_w is not None) and \
        (windows[order.C_IH] < (conv.out_h - 1) * conv.stride + conv.filter_h or
         windows[order.C_IW] < (conv.out_w - 1) * conv.stride + conv.filter_w)
    if conv is not None and layout is not None:
        raise InputError("custom layouts run on GEMMs (SCALE-Sim's GEMM mode); give no conv", field="conv")
    per_fold, row_folds, col_folds = fold_geometry(m, k, n, rows, cols, dataflow)
    check_steps(per_fold * row_folds * col_folds)

    sides = {"rows": rows, "cols": cols}
    (wa, ta, da), (wb, tb, db) = _PREFETCH[dataflow]
    geometry = np.array([order.prefetch_geometry(m, k, sides[wa], ta, da),
                         order.prefetch_geometry(k, n, sides[wb], tb, db)], dtype=np.int64)
    padded = geometry[:, order.P_STACKED_ROWS] * geometry[:, order.P_WIDTH]
    tables = [None, None] if layout is None else gemm_tables(m, k, n, layout, (bws[0], bws[1]))
    nulls, valid = np.zeros(0, dtype=np.int64), m * k
    if off_edge:
        nulls, valid = order.null_line_table(geometry[0], _ceil(words[0], 100), m * k, windows, taps)
    read = np.array([_read_constants(words[0], bws[0], int(valid), int(padded[0])) if tables[0] is None else
                     _read_constants(words[0], bws[0], m * k, tables[0][2], per_set=bws[0]),
                     _read_constants(words[1], bws[1], k * n, int(padded[1])) if tables[1] is None else
                     _read_constants(words[1], bws[1], k * n, tables[1][2], per_set=bws[1])], dtype=np.int64)
    banked, lookup = _banked(tables, layout)
    if int(banked[:, 1].max()) * (max(rows, cols) + 1) > 2**27:
        raise InputError(f"{int(banked[:, 1].max()):,} banks on a {rows}x{cols} array: too many to track per cycle",
                         field="banks")
    active = _ceil(words[2], 2)
    write = np.array([words[2], active, _ceil(words[2] - active, bws[2]), bws[2]], dtype=np.int64)
    announce_compile(kernel.advance, "the cycle-level engine")
    out = _run_kernel(LINES_PER_RUN, (m, k, n, rows, cols, df, per_fold, row_folds, col_folds, geometry, read, write,
                                      banked, lookup, windows, taps, nulls))
    if out[kernel.OUT_ERROR] != kernel.ERROR_NONE:  # a drain starts only with > S/2 words stored
        raise RuntimeError("internal: ofmap drain of an empty trace (SCALE-Sim would raise IndexError)")
    first_read = min(int(out[kernel.OUT_IFMAP_FIRST]), int(out[kernel.OUT_FILTER_FIRST]))
    return CycleResult(
        m=m, k=k, n=n,
        compute_cycles=int(out[kernel.OUT_LINES]) - 1,
        stall_cycles=int(out[kernel.OUT_STALLS]),
        cycles=int(out[kernel.OUT_TOTAL]),
        cycles_incl_prefetch=int(out[kernel.OUT_OFMAP_LAST]) - first_read,
        ifmap_dram_reads=int(out[kernel.OUT_IFMAP_READS]),
        filter_dram_reads=int(out[kernel.OUT_FILTER_READS]),
        ofmap_dram_writes=int(out[kernel.OUT_OFMAP_WRITES]),
    )


LINES_PER_RUN = 2**19  # demand lines one kernel call steps: about 0.4 s at ~1.3·10⁶ lines/s


def _run_kernel(lines: int, arguments: tuple) -> np.ndarray:
    """The kernel's OUT_* vector for ``arguments`` (its inputs, as :func:`simulate_gemm` builds them), stepped
    ``lines`` demand lines a call. Why in runs: Python hears Ctrl-C (and SIGTERM, which the CLI makes one) only
    between calls, so a 10⁹-cycle GEMM in one call could not be stopped; between runs it ends with
    KeyboardInterrupt, nothing kept. A call costs microseconds, a run about 0.4 s: no measurable cost."""
    rows, cols, read, write, banked = arguments[3], arguments[4], arguments[10], arguments[11], arguments[12]
    states, wstate, partial, seen, cursor = kernel.start(rows, cols, read, write, banked)
    out = np.zeros(kernel.OUT_SIZE, dtype=np.int64)
    while not cursor[kernel.CUR_DONE]:
        partial = kernel.grown(partial, wstate, rows, cols)
        kernel.advance(lines, *arguments, states, wstate, partial, seen, cursor, out)
    return out


def _banked(tables, layout: GemmLayout | None) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's ``banked`` (2×4) and ``lookup`` (2×words) arguments from :func:`gemm_tables`."""
    banked = np.zeros((2, 4), dtype=np.int64)
    parts = []
    start = 0
    for op, (table, banks) in enumerate(zip(tables, (None, None) if layout is None else (layout.ifmap, layout.filter))):
        if table is not None and banks is not None:
            banked[op] = (1, banks.banks, banks.ports, start)
            parts.append(np.stack(table[:2]))
            start += table[0].size
    lookup = np.concatenate(parts, axis=1) if parts else np.zeros((2, 1), dtype=np.int64)
    return banked, lookup


def demand_matrices(m: int, k: int, n: int, rows: int, cols: int,
                    dataflow: str = "ws") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-cycle demand as SCALE-Sim's compute system builds it: ifmap, filter and ofmap matrices,
    one row per cycle, one column per array edge lane, holding the word's flat index in A, B or
    out (−1: idle). Materializes them — for inspection and tests on small GEMMs; the engine itself
    walks the same rows without building them."""
    df = DATAFLOW_CODES[dataflow]
    per_fold, row_folds, col_folds = fold_geometry(m, k, n, rows, cols, dataflow)
    widths = np.array({"ws": (rows, cols, cols), "os": (rows, cols, cols), "is": (cols, rows, cols)}[dataflow],
                      dtype=np.int64)
    return kernel.fill_demand(m, k, n, rows, cols, df, per_fold, row_folds, col_folds, widths)


def prefetch_order(m: int, k: int, n: int, rows: int, cols: int, dataflow: str = "ws") -> tuple[np.ndarray, np.ndarray]:
    """Place of every word of A (M×K, flat) and of B (K×N) in SCALE-Sim's prefetch order."""
    sides = {"rows": rows, "cols": cols}
    orders = []
    for (width, transposed, diagonal), (nr, nc) in zip(_PREFETCH[dataflow], ((m, k), (k, n))):
        geometry = np.array(order.prefetch_geometry(nr, nc, sides[width], transposed, diagonal), dtype=np.int64)
        orders.append(np.array([order.position(geometry, i) for i in range(nr * nc)], dtype=np.int64))
    return orders[0], orders[1]


def sram_words(array: ArrayConfig) -> tuple[int, int, int]:
    """SRAM sizes of an array config in words of its element size."""
    ifmap, filters, ofmap = (max(2, kb * 1024 // array.element_bytes)
                             for kb in (array.ifmap_sram_kb, array.filter_sram_kb, array.ofmap_sram_kb))
    return ifmap, filters, ofmap


def simulate_on(m: int, k: int, n: int, array: ArrayConfig, bandwidth: int | None = None) -> CycleResult:
    """:func:`simulate_gemm` on an :class:`ArrayConfig`: its SRAMs and DRAM bandwidths
    (:attr:`ArrayConfig.dram_bandwidths`), or the ``bandwidth`` given for all three operands."""
    rates = array.dram_bandwidths if bandwidth is None else (bandwidth,) * 3
    return simulate_gemm(m, k, n, array.rows, array.cols, array.dataflow, sram_words=sram_words(array),
                         bandwidth=rates)


def minimum_bandwidth(m: int, k: int, n: int, rows: int, cols: int, dataflow: str = "ws", *,
                      sram_words: tuple[int, int, int] = (65536, 65536, 65536)) -> int | None:
    """Fewest DRAM words/cycle (the same for all three operands) at which the GEMM never stalls,
    or None when no bandwidth suffices (SRAMs too small for SCALE-Sim's prefetch model).

    Above half the largest SRAM every prefetch and drain is one line, so more bandwidth changes
    nothing: that is the search's upper end. Bisection assumes that once stall-free, more bandwidth
    stays stall-free — true on every case tests/test_cycle_engine_scalesim.py scans linearly.
    """
    def stalls(bw: int) -> int:
        return simulate_gemm(m, k, n, rows, cols, dataflow, sram_words=sram_words,
                             bandwidth=(bw, bw, bw)).stall_cycles

    high = max(_ceil(int(w), 2) for w in sram_words)
    if stalls(high) > 0:
        return None
    low = 0  # stalls at low (or low is below 1); none at high
    while high - low > 1:
        middle = (low + high) // 2
        if stalls(middle) > 0:
            low = middle
        else:
            high = middle
    return high


@lru_cache(maxsize=4096)
def simulate_cached(m: int, k: int, n: int, array: ArrayConfig) -> CycleResult:
    """:func:`simulate_on`, once per distinct (GEMM, array): a network repeats its GEMM shapes, and
    costing, splitting and sweeping ask for the same ones again."""
    return simulate_on(m, k, n, array)
