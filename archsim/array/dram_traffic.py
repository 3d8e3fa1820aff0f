"""DRAM words SCALE-Sim's memory system moves for one GEMM on one array, counted without simulating.

The cycle engine (:mod:`archsim.array.cycle`) steps SCALE-Sim's double-buffered scratchpads cycle by
cycle; its DRAM reads depend only on the *order* the array demands words in, never on when, so they can
be counted from the order alone. A read SRAM of S words keeps ``a`` = ⌈⌈S/2⌉/⌈S/100⌉⌉ "lines" of
⌈S/100⌉ words active out of ``lines`` = ⌊valid/⌈S/100⌉⌋ + 1 (words hashed in SCALE-Sim's prefetch
order, :mod:`archsim.array.cycle_order`); a demanded word outside the window slides it by ``p`` =
⌈⌊S/2⌋/⌈S/100⌉⌉ lines, circularly. Reads = bw · (first fill + slides · ⌈⌊S/2⌋/bw⌉) words, the first fill
min(⌈⌈S/2⌉/bw⌉, ⌈padded/bw⌉) lines of bw words (the prefetch matrix's nulls included).

**Slides, exactly.** Every dataflow demands an operand as a sequence of *runs* whose words rise in
prefetch order (:func:`window_slides`):

* the streamed operand (ws's A, os's A, is's B): tile by tile, each tile once per column fold (a pass
  over the whole operand per fold of the other side), each tile's words in anti-diagonal order;
* os's B: tile by tile, each tile ``row folds`` times over;
* the preloaded operand (ws's B, is's A): each fold's rows from the last to the first, each row a run.

Within a run, the window only ever slides forward, so the count depends on the run's first line (which
copy of it, circularly, the window reaches: a line already behind the window costs a full turn, the
refetch) and its last line: with the window's start at unwrapped line u, a run from line L₀ to L₁ reaches
X₀ = u + ((L₀ − u) mod lines) and ends with u' = u + p · max(0, ⌈(X₀ + L₁ − L₀ − a + 1 − u)/p⌉). That is
the engine's count whenever consecutive demanded lines of a run are at most ``lines − a`` apart (then the
circular hit test agrees with the unwrapped one): rows are contiguous; a tile's anti-diagonal run skips at
most 2·width − 1 words between two demanded ones, and where that could exceed ``lines − a`` lines (an SRAM
that almost holds the operand) the tile is taken diagonal by diagonal, each contiguous. So the reads are
exact, in O(runs) steps: ⌈K/R⌉·⌈N/C⌉ tiles (ws; os and is alike), or for a preloaded operand one step per
fold plus one per row that misses. Fewer: a run's effect on the window depends only on its place in a line,
its length and the window's start relative to it modulo ``lines``, so where runs repeat (a preloaded tile's
folds, a long operand's tiles, passes) a state that recurs settles the rest of the repetition in one step.

**Ofmap writes** are the ofmap demand words D (every fold's partial outputs: M·N·⌈K/R⌉ for ws and is,
M·N for os), exactly when the ofmap SRAM never fills past half (D ≤ ⌊S/2⌋) or bw = 1. Otherwise SCALE-Sim
flushes the open ofmap line part-full when a drain starts, at a moment that depends on stalls (so on
bandwidth), and counts such a line as bw words unless it is the last of its drain: the engine's count is
D plus at most bw − 1 words per drain started mid-run (:func:`ofmap_write_bound`). Pure integer arithmetic; words
are of the array's element size."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from math import gcd

import numpy as np

from archsim.array.analytic import Integers, fold_geometry
from archsim.array.config import ArrayConfig
from archsim.errors import InputError


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Tiling:
    """How SCALE-Sim stacks an operand for prefetching (``cycle_order.prefetch_geometry``): ``blocks`` tiles of
    ``height`` rows × ``width`` words, the last tile ``last_width`` wide (the rest of it nulls); read row by row,
    or by anti-diagonals from the bottom-left (``diagonal``). ``valid``: non-null words. All counts in words."""

    height: int
    width: int
    blocks: int
    last_width: int
    diagonal: bool

    @property
    def valid(self) -> int:
        return self.height * ((self.blocks - 1) * self.width + self.last_width)

    @property
    def padded(self) -> int:
        """Words of the stacked prefetch matrix, nulls included."""
        return self.blocks * self.height * self.width

    def tile_width(self, block: int) -> int:
        return self.last_width if block == self.blocks - 1 else self.width

    def position(self, block: int, row: int, col: int) -> int:
        """Place among the non-null words, in prefetch order, of word (row, col) of tile ``block``."""
        r, w, row0 = block * self.height + row, self.width, (self.blocks - 1) * self.height
        nulls_wide = w - self.last_width
        if not self.diagonal:
            return r * w - max(0, r - row0) * nulls_wide + col
        stacked = self.blocks * self.height
        d = r + col
        before = _below(d, stacked, w) + min(d, stacked - 1) - r  # earlier diagonals, then higher rows on d
        nulls = _below(d - row0 - self.last_width, stacked - row0, nulls_wide)
        lo, hi = max(r + 1, row0, d - w + 1), min(stacked - 1, d - self.last_width)
        return before - nulls - max(0, hi - lo + 1)


def _triangle(x: Integers) -> Integers:
    x = x * (x > 0)  # an int, or every entry of an int64 array
    return x * (x + 1) // 2


def _below(d: Integers, height: int, width: int) -> Integers:
    """Cells (r, c) of a height × width rectangle with r + c < d (for each d of an array)."""
    if height <= 0 or width <= 0:
        return d * 0
    return _triangle(d) - _triangle(d - height) - _triangle(d - width) + _triangle(d - height - width)


def tile_corners(tile: Tiling) -> tuple[np.ndarray, np.ndarray]:
    """Every tile's first and last word's prefetch positions (int64), as :meth:`Tiling.position` gives them one by
    one for (0, 0) and (last row, last column), at numpy speed."""
    w, lw, h, last = tile.width, tile.last_width, tile.height, tile.blocks - 1
    blocks = np.arange(tile.blocks, dtype=np.int64)
    corners = []
    for r, col in ((blocks * h, blocks * 0), (blocks * h + h - 1, np.where(blocks == last, lw, w) - 1)):
        if not tile.diagonal:
            corners.append(r * w - np.maximum(0, r - last * h) * (w - lw) + col)
            continue
        d = r + col
        before = _below(d, tile.blocks * h, w) + np.minimum(d, tile.blocks * h - 1) - r
        nulls = _below(d - last * h - lw, h, w - lw)
        lo, hi = np.maximum(np.maximum(r + 1, last * h), d - w + 1), np.minimum(tile.blocks * h - 1, d - lw)
        corners.append(before - nulls - np.maximum(0, hi - lo + 1))
    return corners[0], corners[1]


def tiling(nr: int, nc: int, width: int, transposed: bool, diagonal: bool) -> Tiling:
    """An nr × nc operand cut into tiles of ``width`` columns (or, ``transposed``, of ``width`` rows, each tile
    its transpose), as ``cycle_order.prefetch_geometry``."""
    limit, height = (nr, nc) if transposed else (nc, nr)
    blocks = _ceil(limit, width)
    return Tiling(height, width, blocks, limit - (blocks - 1) * width, diagonal)


def operand_tilings(m: int, k: int, n: int, rows: int, cols: int, dataflow: str) -> tuple[Tiling, Tiling]:
    """(A's, B's) prefetch tilings on an rows × cols array (``systolic_compute_*.create_*_prefetch_mat``)."""
    if dataflow == "ws":
        return tiling(m, k, rows, False, True), tiling(k, n, cols, False, False)
    if dataflow == "os":
        return tiling(m, k, rows, True, True), tiling(k, n, cols, False, True)
    if dataflow == "is":
        return tiling(m, k, cols, True, False), tiling(k, n, rows, True, True)
    raise InputError(f"unknown dataflow {dataflow!r}; choose one of ws, os, is", field="dataflow")


@dataclass(frozen=True)
class ReadWindow:
    """SCALE-Sim's read buffer of one operand (``read_buffer.set_params``), in its units: ``per_line`` words a
    line, ``lines`` lines, ``active`` and ``step`` lines (the window and one prefetch), ``fill`` words of the first
    fill and ``prefetch`` words of each later one (whole requests of ``bandwidth`` words)."""

    per_line: int
    lines: int
    active: int
    step: int
    fill: int
    prefetch: int


def read_window(words: int, tile: Tiling, bandwidth: int) -> ReadWindow:
    """The read buffer of an SRAM of ``words`` words holding ``tile``'s operand, read at ``bandwidth`` words/cycle."""
    per_line = _ceil(words, 100)
    active_words = _ceil(words, 2)
    prefetch_words = words - active_words
    lines = tile.valid // per_line + 1  # SCALE-Sim always closes one more (possibly empty) line
    active = min(_ceil(active_words, per_line), lines)
    step = min(_ceil(prefetch_words, per_line), lines - active)
    fill = min(_ceil(active_words, bandwidth), _ceil(tile.padded, bandwidth)) * bandwidth
    return ReadWindow(per_line, lines, active, step, fill, _ceil(prefetch_words, bandwidth) * bandwidth)


def advance_window(window: ReadWindow, u: int, first: int, last: int) -> int:
    """The window's unwrapped first line after serving a run of demanded words rising from prefetch position
    ``first`` to ``last``, consecutive demanded lines at most ``lines − active`` apart (module docstring)."""
    lo, hi = first // window.per_line, last // window.per_line
    reach = u + (lo - u) % window.lines + hi - lo  # the copy of lo the window slides to, then hi
    if reach - window.active + 1 > u:
        u += window.step * _ceil(reach - window.active + 1 - u, window.step)
    return u


def _diagonals(tile: Tiling, block: int) -> Iterator[tuple[int, int]]:
    """Tile ``block``'s anti-diagonals in demand order, each (first, last) prefetch position: contiguous runs."""
    height, width = tile.height, tile.tile_width(block)
    for d in range(height + width - 1):
        c0, c1 = max(0, d - height + 1), min(width - 1, d)
        yield tile.position(block, d - c0, c0), tile.position(block, d - c1, c1)


def fold_slides(window: ReadWindow, u: int, base: int, width: int, height: int, rows: int, start: int,
                 stop: int) -> int:
    """The window's unwrapped first line after folds ``start`` … ``stop`` − 1 of a preloaded tile of ``height`` rows
    (row r: ``width`` words from prefetch position base + r·width): fold f reads rows f·R … f·R + R − 1 (R = ``rows``),
    the last first, each row a run; rows whose words all lie in the window are skipped in one step."""
    per_line = window.per_line
    for bottom in range(start * rows, min(height, stop * rows), rows):
        row = min(height, bottom + rows) - 1
        while row >= bottom:
            u = advance_window(window, u, base + row * width, base + row * width + width - 1)
            first_line = u % window.lines  # the window's first line
            if (base + row * width) // per_line < first_line:  # this row hit where the window wraps round
                row -= 1
                continue
            # this row lies in lines first_line … first_line + active − 1: so do the rows below it down to the
            # first one starting before that line (the highest such row: ``behind``)
            behind = _ceil(first_line * per_line - base, width) - 1
            row = min(row - 1, max(behind, bottom - 1))
    return u


def _preloaded_slides(window: ReadWindow, tile: Tiling, rows: int) -> int:
    """Slides serving a preloaded operand (ws's B, is's A): fold (fr, fc) reads tile fc's rows fr·R … fr·R + kr − 1,
    the last first (:func:`fold_slides`). Folds start at the same place in a line every ``period`` folds: once a
    full fold meets a window start (relative to its first line, modulo ``lines``) that one ``period``s before met,
    the folds between repeat up to the tile's last full one, counted in one step (a weight gradient's δ, re-read
    at every fold, repeats within some tens of folds)."""
    u, per_line, height = 0, window.per_line, tile.height
    for block in range(tile.blocks):
        width = tile.tile_width(block)
        base = tile.position(block, 0, 0)  # a tile's rows are contiguous runs of width words from here
        stride = rows * width  # words from one fold's first word to the next's
        full, folds = height // rows, _ceil(height, rows)
        period = per_line // gcd(stride, per_line)
        fold = 0
        seen: dict[tuple[int, int], tuple[int, int]] = {}
        while fold < full and full > period:  # else no fold can repeat one of the same place in a line
            key = (fold % period, (u - (base + fold * stride) // per_line) % window.lines)
            if key in seen:
                before, u_before = seen[key]
                times = (full - fold) // (fold - before)
                fold, u = fold + times * (fold - before), u + times * (u - u_before)
                break
            seen[key] = (fold, u)
            u = fold_slides(window, u, base, width, height, rows, fold, fold + 1)
            fold += 1
        u = fold_slides(window, u, base, width, height, rows, fold, folds)
    return u // window.step


def _repeated_passes(lines: int, passes: int, serve: Callable[[int], int]) -> int:
    """The window's unwrapped first line after ``passes`` identical passes, ``serve`` taking it through one: a pass's
    effect depends only on its start modulo ``lines``, so once a start recurs the rest is counted in one step."""
    u, done = 0, 0
    seen: dict[int, tuple[int, int]] | None = {}
    while done < passes:
        if seen is not None:
            if u % lines in seen:
                before, u_before = seen[u % lines]
                times = (passes - done) // (done - before)
                done, u, seen = done + times * (done - before), u + times * (u - u_before), None
                continue
            seen[u % lines] = (done, u)
        u = serve(u)
        done += 1
    return u


def _translated_until(firsts: np.ndarray, lasts: np.ndarray, start: int, span: int, shift: int) -> int:
    """The first tile j ≥ ``start`` whose run is not tile j − ``span``'s moved by ``shift`` words, else the count."""
    moved = (firsts[start:] - firsts[start - span:-span] == shift) & (lasts[start:] - lasts[start - span:-span] == shift)
    broken = np.flatnonzero(~moved)
    return start + int(broken[0]) if broken.size else len(firsts)


def _streamed_pass(window: ReadWindow, firsts: np.ndarray, lasts: np.ndarray, repeat_each: int, u: int,
                   period: int) -> int:
    """The window's unwrapped first line after one pass over tiles whose runs rise from ``firsts`` to ``lasts``
    (prefetch positions), each served ``repeat_each`` times. Once a tile's state recurs (module docstring), the tiles
    after it repeat those between as far as each run is the run that many tiles before moved by the same words:
    one step. ``period``: tiles from one starting at a place in a line to the next (none repeats in fewer)."""
    per_line, lines = window.per_line, window.lines
    ends, tile = list(zip(firsts.tolist(), lasts.tolist())), 0
    seen: dict[tuple[int, int, int], tuple[int, int]] | None = {} if len(ends) > period else None
    while tile < len(ends):
        first, last = ends[tile]
        if seen is not None:
            key = (first % per_line, last - first, (u - first // per_line) % lines)
            if key in seen:
                before, u_before = seen[key]
                span, seen = tile - before, None
                reach = _translated_until(firsts, lasts, tile, span, first - ends[before][0])
                times = (reach - tile) // span  # whole spans from here that repeat the one just served
                tile, u = tile + times * span, u + times * (u - u_before)
                continue
            seen[key] = (tile, u)
        for _ in range(repeat_each):
            u = advance_window(window, u, first, last)
        tile += 1
    return u


def window_slides(window: ReadWindow, tile: Tiling, operand: int, m: int, k: int, n: int, rows: int, cols: int,
                  dataflow: str) -> int:
    """How many times SCALE-Sim's read window slides (prefetches) serving operand 0 (A) or 1 (B), exactly.

    Streamed operands run tile by tile, each tile's words rising in anti-diagonal order with at most
    2·width − 1 positions (the other tiles' words of two diagonals) between two demanded ones; where that many
    could exceed the lines outside the window, the tile is served diagonal by diagonal (each contiguous)."""
    if window.step == 0:  # the window holds every line: never a miss
        return 0
    if (dataflow, operand) in (("ws", 1), ("is", 0)):
        return _preloaded_slides(window, tile, rows)
    _, row_folds, col_folds = fold_geometry(m, k, n, rows, cols, dataflow)
    repeated = (dataflow, operand) == ("os", 1)  # os's B: each tile once per row fold, in one pass
    repeat_each, passes = (row_folds, 1) if repeated else (1, col_folds)
    gap = 2 * tile.width - 1 if tile.blocks > 1 else 1
    whole = _ceil(gap, window.per_line) <= window.lines - window.active  # every tile one run
    period = window.per_line // gcd(tile.height * tile.width, window.per_line)  # tiles from a place in a line to it
    if whole and tile.blocks > period:  # enough tiles for a repeat: their runs at numpy speed, repeats skipped
        firsts, lasts = tile_corners(tile)
        return _repeated_passes(window.lines, passes,
                                lambda u: _streamed_pass(window, firsts, lasts, repeat_each, u, period)) // window.step
    runs = []
    for block in range(tile.blocks):
        ends = (tile.position(block, 0, 0), tile.position(block, tile.height - 1, tile.tile_width(block) - 1))
        runs.append([ends] if whole or ends[0] // window.per_line == ends[1] // window.per_line
                    else list(_diagonals(tile, block)))

    def serve(u: int) -> int:  # one pass; u: the window's first line, unwrapped (it only moves forward)
        for tile_runs in runs:
            for _ in range(repeat_each):
                for first, last in tile_runs:
                    u = advance_window(window, u, first, last)
        return u

    return _repeated_passes(window.lines, passes, serve) // window.step


@dataclass(frozen=True)
class DramTraffic:
    """DRAM words of one GEMM on one array, as SCALE-Sim counts them (words of the element size):
    ``ifmap_reads``/``filter_reads`` exact; ``ofmap_writes`` the ofmap demand (module docstring: exact
    when no drain starts mid-run, else up to ``ofmap_slack`` words fewer than SCALE-Sim's).
    ``ifmap_prefetches``/``filter_prefetches``: window slides after the first fill (refetch shows here)."""

    ifmap_reads: int
    filter_reads: int
    ofmap_writes: int
    ofmap_slack: int
    ifmap_prefetches: int
    filter_prefetches: int

    @property
    def words(self) -> int:
        return self.ifmap_reads + self.filter_reads + self.ofmap_writes


def ofmap_demand(m: int, k: int, n: int, rows: int, cols: int, dataflow: str) -> int:
    """Ofmap words the array writes into its SRAM: M·N per row fold (ws, is: ⌈K/R⌉ partial sums each), M·N (os)."""
    _, row_folds, _ = fold_geometry(m, k, n, rows, cols, dataflow)
    return m * n * (1 if dataflow == "os" else row_folds)


def ofmap_write_bound(demand: int, words: int, bandwidth: int) -> int:
    """Most words SCALE-Sim's ofmap DRAM writes can exceed ``demand`` by, for an SRAM of ``words`` words written
    back at ``bandwidth`` (bw) words/cycle. Why: only a line flushed part-full as a drain starts mid-run is
    over-counted (by < bw words), one per such drain. A drain starts only with more than h = ⌊S/2⌋ counted words
    undrained, so in lines of ≤ bw words it drains its full ⌈h/bw⌉ lines, ≥ h − bw + 1 counted words; K drains
    count K·(h − bw + 1) ≤ D + K·(bw − 1) words, so K ≤ D / (h − 2·bw + 2) (K ≤ D, one per written word, else)."""
    half = words - _ceil(words, 2)
    if demand <= half or bandwidth == 1:
        return 0
    room = half - 2 * bandwidth + 2
    return (bandwidth - 1) * (demand // room if room > 0 else demand)


def gemm_dram_traffic(m: int, k: int, n: int, rows: int, cols: int, dataflow: str = "ws", *,
                      sram_words: tuple[int, int, int] = (65536, 65536, 65536),
                      bandwidth: tuple[int, int, int] = (10, 10, 10)) -> DramTraffic:
    """DRAM traffic of out[M×N] = A[M×K]·B[K×N] on an R×C array with SCALE-Sim's memory model: SRAM sizes and
    DRAM rates per operand (ifmap, filter, ofmap) in words and words/cycle, as :func:`archsim.array.cycle.simulate_gemm`
    takes them. Exact reads (bandwidth only rounds requests), ofmap writes as :class:`DramTraffic` says."""
    for value, name in ((m, "m"), (k, "k"), (n, "n"), (rows, "rows"), (cols, "cols"), *((w, "sram") for w in sram_words),
                        *((b, "bandwidth") for b in bandwidth)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise InputError(f"must be a positive integer, got {value!r}", field=name)
    if min(sram_words) < 2:
        raise InputError("an SRAM needs at least 2 words (two halves)", field="sram")
    tiles = operand_tilings(m, k, n, rows, cols, dataflow)
    reads, slides = [], []
    for operand, tile in enumerate(tiles):
        window = read_window(sram_words[operand], tile, bandwidth[operand])
        count = window_slides(window, tile, operand, m, k, n, rows, cols, dataflow)
        slides.append(count)
        reads.append(window.fill + count * window.prefetch)
    demand = ofmap_demand(m, k, n, rows, cols, dataflow)
    return DramTraffic(reads[0], reads[1], demand, ofmap_write_bound(demand, sram_words[2], bandwidth[2]),
                       slides[0], slides[1])


def array_dram_traffic(m: int, k: int, n: int, array: ArrayConfig) -> DramTraffic:
    """:func:`gemm_dram_traffic` on an :class:`ArrayConfig`: its SRAMs in words of its element size and its DRAM
    rates, as :func:`archsim.array.cycle.simulate_on` gives them to the cycle engine."""
    from archsim.array.cycle import sram_words  # the one KiB → words rule (numba is not loaded by it)

    return gemm_dram_traffic(m, k, n, array.rows, array.cols, array.dataflow, sram_words=sram_words(array),
                             bandwidth=array.dram_bandwidths)


__all__ = ["DramTraffic", "ReadWindow", "Tiling", "advance_window", "array_dram_traffic", "fold_slides",
           "gemm_dram_traffic", "ofmap_demand", "ofmap_write_bound", "operand_tilings", "read_window", "tiling",
           "window_slides"]
