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
fold plus one per row that misses, until a tile's folds repeat (:func:`_preloaded_slides`): then the rest of
the tile's full folds in one step.

**Ofmap writes** are the ofmap demand words D (every fold's partial outputs: M·N·⌈K/R⌉ for ws and is,
M·N for os), exactly when the ofmap SRAM never fills past half (D ≤ ⌊S/2⌋) or bw = 1. Otherwise SCALE-Sim
flushes the open ofmap line part-full when a drain starts, at a moment that depends on stalls (so on
bandwidth), and counts such a line as bw words unless it is the last of its drain: the engine's count is
D plus at most bw − 1 words per drain started mid-run (:func:`ofmap_write_bound`).

Everything is pure arithmetic on integers; words are of the array's element size.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from math import gcd

from archsim.array.analytic import fold_geometry
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


def _triangle(x: int) -> int:
    return x * (x + 1) // 2 if x > 0 else 0


def _below(d: int, height: int, width: int) -> int:
    """Cells (r, c) of a height × width rectangle with r + c < d."""
    if height <= 0 or width <= 0:
        return 0
    return _triangle(d) - _triangle(d - height) - _triangle(d - width) + _triangle(d - height - width)


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


def _advance(window: ReadWindow, u: int, first: int, last: int) -> int:
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


def _fold_slides(window: ReadWindow, u: int, base: int, width: int, bottom: int, top: int) -> int:
    """The window's unwrapped first line after one fold of a preloaded tile: rows ``top`` … ``bottom`` (row r's
    words at base + r·width …, contiguous), the last first, each row a run; rows whose words all lie in the
    window are skipped in one step."""
    per_line, row = window.per_line, top
    while row >= bottom:
        u = _advance(window, u, base + row * width, base + row * width + width - 1)
        start = u % window.lines  # the window's first line
        if (base + row * width) // per_line < start:  # this row hit where the window wraps round
            row -= 1
            continue
        # this row lies in lines start … start + active − 1: so do the rows below it down to the
        # first one starting before line ``start`` (the highest such row: ``behind``)
        behind = _ceil(start * per_line - base, width) - 1
        row = min(row - 1, max(behind, bottom - 1))
    return u


def _preloaded_slides(window: ReadWindow, tile: Tiling, rows: int) -> int:
    """Slides serving a preloaded operand (ws's B, is's A): fold (fr, fc) reads tile fc's rows fr·R … fr·R + kr − 1,
    the last first (:func:`_fold_slides`).

    Why it can skip: what a fold does to the window depends only on where the fold starts within a line
    (its first word mod ``per_line``: the same every ``period`` folds) and on the window's start relative
    to the fold's first line, modulo ``lines`` (every hit test and slide is circular arithmetic on that
    difference). So once a full fold of a tile meets a (place in the period, relative start) it met
    before, the folds between repeat verbatim, each time moving the window by the same lines, up to the
    tile's last full fold: counted in one step. Deep refetch (a weight gradient's δ, re-read at every
    fold) repeats within some tens of folds."""
    u, per_line = 0, window.per_line
    for block in range(tile.blocks):
        width = tile.tile_width(block)
        base = tile.position(block, 0, 0)  # a tile's rows are contiguous runs of width words from here
        stride = rows * width  # words from one fold's first word to the next's
        full, folds = tile.height // rows, _ceil(tile.height, rows)
        period = per_line // gcd(stride, per_line)
        seen: dict[tuple[int, int], tuple[int, int]] | None = {}
        fold = 0
        while fold < folds:
            if seen is not None and fold < full:
                key = (fold % period, (u - (base + fold * stride) // per_line) % window.lines)
                if key in seen:
                    before, u_before = seen[key]
                    times = (full - fold) // (fold - before)
                    fold, u, seen = fold + times * (fold - before), u + times * (u - u_before), None
                    continue
                seen[key] = (fold, u)
            bottom = fold * rows
            u = _fold_slides(window, u, base, width, bottom, min(tile.height, bottom + rows) - 1)
            fold += 1
    return u // window.step


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
    whole = _ceil(gap, window.per_line) <= window.lines - window.active
    runs = []
    for block in range(tile.blocks):
        ends = (tile.position(block, 0, 0), tile.position(block, tile.height - 1, tile.tile_width(block) - 1))
        runs.append([ends] if whole or ends[0] // window.per_line == ends[1] // window.per_line
                    else list(_diagonals(tile, block)))
    u = 0  # the window's first line, unwrapped (it only moves forward)
    for _ in range(passes):
        for block in range(tile.blocks):
            for _ in range(repeat_each):
                for first, last in runs[block]:
                    u = _advance(window, u, first, last)
    return u // window.step


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


__all__ = ["DramTraffic", "ReadWindow", "Tiling", "array_dram_traffic", "gemm_dram_traffic", "ofmap_demand",
           "ofmap_write_bound", "operand_tilings", "read_window", "tiling", "window_slides"]
