"""SCALE-Sim's DRAM traffic counted without simulating (archsim.array.dram_traffic) against the cycle engine.

The cycle engine (archsim.array.cycle, itself checked against SCALE-Sim 3.0.0 in test_cycle_engine_scalesim)
steps every cycle; the count here only reads the demand order. References: the engine's own DRAM counts
over grids of shapes, dataflows, SRAM sizes from "holds the whole operand" to "a few words", element
sizes 1 and 2 and several bandwidths; a plain word-by-word replay of SCALE-Sim's read window over the
engine's demand matrices; hand counts; and SCALE-Sim 3.0.0's own recorded runs (tests/data/scalesim_dram/,
provenance in tests/data/README.md), compared directly with no engine in between.
"""

import csv
import itertools
from pathlib import Path

import numpy as np
import pytest

from archsim.array import dram_traffic
from archsim.array.config import ArrayConfig
from archsim.array.cycle import demand_matrices, prefetch_order, simulate_gemm, simulate_on
from archsim.array.dram_traffic import array_dram_traffic, gemm_dram_traffic, operand_tilings
from archsim.errors import InputError

DATAFLOWS = ("ws", "os", "is")
SCALESIM_DRAM = Path(__file__).parent / "data" / "scalesim_dram"
RECORDED = [{key: value if key == "dataflow" else int(value) for key, value in row.items()} | {"file": path.stem}
            for path in sorted(SCALESIM_DRAM.glob("*.csv")) for row in csv.DictReader(path.open())]


def engine_reads(m, k, n, rows, cols, dataflow, words, bandwidth):
    r = simulate_gemm(m, k, n, rows, cols, dataflow, sram_words=words, bandwidth=bandwidth)
    return r.ifmap_dram_reads, r.filter_dram_reads, r.ofmap_dram_writes


def replayed_slides(m, k, n, rows, cols, dataflow, operand, words):
    """SCALE-Sim's read window replayed word by word (read_buffer.service_reads) over the engine's demand
    matrices and prefetch order: an independent count of the window's slides."""
    demand = demand_matrices(m, k, n, rows, cols, dataflow)[operand]
    place = prefetch_order(m, k, n, rows, cols, dataflow)[operand]
    per_line = -(-words // 100)
    half = -(-words // 2)
    lines = place.size // per_line + 1
    active = min(-(-half // per_line), lines)
    step = min(-(-(words - half) // per_line), lines - active)
    start = slides = 0
    for word in demand[demand >= 0]:
        while (place[word] // per_line - start) % lines >= active:
            start, slides = (start + step) % lines, slides + 1
    return slides


def test_tile_positions_are_the_engines_prefetch_order():
    """Each word's place in the prefetch order, from the tiling, equals the engine's (checked against
    SCALE-Sim's prefetch matrices), anti-diagonal and row orders, part-empty last tiles included."""
    for (m, k, n), (rows, cols), dataflow in itertools.product([(5, 7, 3), (9, 4, 11), (1, 6, 2)], [(2, 3), (4, 4)],
                                                               DATAFLOWS):
        places = prefetch_order(m, k, n, rows, cols, dataflow)
        for operand, (tile, place, (nr, nc)) in enumerate(zip(operand_tilings(m, k, n, rows, cols, dataflow), places,
                                                             ((m, k), (k, n)))):
            transposed = (dataflow, operand) in (("os", 0), ("is", 0), ("is", 1))  # tiles of rows, each transposed
            for i, j in itertools.product(range(nr), range(nc)):
                (block, col), row = divmod(i, tile.width) if transposed else divmod(j, tile.width), j if transposed else i
                assert tile.position(block, row, col) == place[i * nc + j], (m, k, n, rows, cols, dataflow, i, j)


def test_tile_corners_at_numpy_speed_are_the_positions():
    """Every tile's first and last word, as one array, equal Tiling.position word by word (itself the engine's
    prefetch order above): row and anti-diagonal order, tiles taller or wider than the others, part-empty last tiles."""
    for (m, k, n), (rows, cols), dataflow in itertools.product([(5, 7, 3), (9, 40, 11), (1, 6, 2), (33, 3, 17)],
                                                               [(2, 3), (4, 4), (1, 5)], DATAFLOWS):
        for tile in operand_tilings(m, k, n, rows, cols, dataflow):
            firsts, lasts = dram_traffic.tile_corners(tile)
            assert firsts.tolist() == [tile.position(b, 0, 0) for b in range(tile.blocks)]
            assert lasts.tolist() == [tile.position(b, tile.height - 1, tile.tile_width(b) - 1)
                                      for b in range(tile.blocks)]


@pytest.mark.parametrize("dataflow", DATAFLOWS)
def test_reads_equal_the_cycle_engines_over_a_grid(dataflow):
    """Exact: ifmap and filter DRAM reads equal the engine's on every shape, SRAM size (words, from holding
    whole operands down to 2) and bandwidth of the grid; the ofmap writes are the demand, exact where the
    module says and otherwise within its bound."""
    shapes = [(5, 7, 3), (12, 10, 7), (3, 13, 11), (16, 9, 5), (30, 17, 2), (1, 20, 20), (25, 1, 25)]
    for (m, k, n), (rows, cols), words, bw in itertools.product(shapes, [(2, 2), (4, 3), (3, 5), (1, 4)],
                                                                [2, 5, 13, 40, 77, 150, 1000], [1, 3]):
        sizes, rates = (words, words + 3, words + 1), (bw, bw + 1, bw)
        ifmap, filters, ofmap = engine_reads(m, k, n, rows, cols, dataflow, sizes, rates)
        got = gemm_dram_traffic(m, k, n, rows, cols, dataflow, sram_words=sizes, bandwidth=rates)
        assert (got.ifmap_reads, got.filter_reads) == (ifmap, filters), (m, k, n, rows, cols, words, bw)
        assert 0 <= ofmap - got.ofmap_writes <= got.ofmap_slack  # 0 (exact) where no drain starts mid-run


@pytest.mark.parametrize("element_bytes", [1, 2])
@pytest.mark.parametrize("dataflow", DATAFLOWS)
def test_array_configs_in_kib_equal_the_engine(dataflow, element_bytes):
    """On ArrayConfigs (SRAMs in KiB, words of 1 or 2 bytes) from operands that fit to operands many times the
    SRAM: equal to the engine's counts on the same config."""
    for kib, (m, k, n) in itertools.product([1, 2, 8, 64], [(40, 70, 50), (97, 33, 64), (8, 300, 9)]):
        array = ArrayConfig(rows=8, cols=8, dataflow=dataflow, ifmap_sram_kb=kib, filter_sram_kb=kib, ofmap_sram_kb=kib,
                            bandwidth=(4,), user_bandwidth=True, element_bytes=element_bytes)
        r, got = simulate_on(m, k, n, array), array_dram_traffic(m, k, n, array)
        assert (got.ifmap_reads, got.filter_reads) == (r.ifmap_dram_reads, r.filter_dram_reads), (kib, m, k, n)
        assert 0 <= r.ofmap_dram_writes - got.ofmap_writes <= got.ofmap_slack


def test_slides_do_not_depend_on_bandwidth():
    """The engine's reads are bw · (first fill + slides · ⌈⌊S/2⌋/bw⌉) with the same slide count at every
    bandwidth (bandwidth moves when, never which, words are fetched), and that count is the replayed one."""
    m, k, n, rows, cols, words = 23, 19, 17, 4, 3, 60
    for dataflow, operand in itertools.product(DATAFLOWS, (0, 1)):
        slides = replayed_slides(m, k, n, rows, cols, dataflow, operand, words)
        padded = operand_tilings(m, k, n, rows, cols, dataflow)[operand].padded
        for bw in (1, 2, 5, 7, 30):
            reads = engine_reads(m, k, n, rows, cols, dataflow, (words,) * 3, (bw,) * 3)[operand]
            fill = min(-(-30 // bw), -(-padded // bw)) * bw
            assert reads == fill + slides * -(-30 // bw) * bw, (dataflow, operand, bw)
            got = gemm_dram_traffic(m, k, n, rows, cols, dataflow, sram_words=(words,) * 3, bandwidth=(bw,) * 3)
            assert (got.ifmap_prefetches, got.filter_prefetches)[operand] == slides


def test_hand_counts():
    """An operand the SRAM holds is read once, its last tile's nulls included: ws 5×7·7×3 on 4×4, A in two
    4-wide tiles of 5 rows (40 words), B one 4-wide tile of 7 rows (28). os with A one tile (2 ≤ rows) of 20
    words through 1-word lines, 5 active, sliding 5, read once per column fold (3): lines 0…19 of 21; pass 1
    slides to cover line 19 (3 slides), pass 2 reaches line 0 a turn later and line 19 again (5), pass 3 (4)."""
    got = gemm_dram_traffic(5, 7, 3, 4, 4, "ws", sram_words=(1000, 1000, 1000), bandwidth=(1, 1, 1))
    assert (got.ifmap_reads, got.filter_reads, got.ifmap_prefetches, got.filter_prefetches) == (40, 28, 0, 0)
    got = gemm_dram_traffic(2, 10, 6, 2, 2, "os", sram_words=(10, 1000, 1000), bandwidth=(1, 1, 1))
    assert (got.ifmap_prefetches, got.ifmap_reads) == (3 + 5 + 4, 5 + 12 * 5)
    assert engine_reads(2, 10, 6, 2, 2, "os", (10, 1000, 1000), (1, 1, 1))[0] == 65


def test_refetch_whenever_the_sram_holds_less_than_the_streamed_operand():
    """The point of the count: ws's A (64 Ki words) is streamed once per column fold (4 on 64 columns). A 256 KiB
    SRAM holds it: read once. At 64 KiB and below it is re-read every pass, and more: in anti-diagonal order a
    tile's first words come before the previous tile's last ones, and a window that slid past them turns a whole
    circle (SCALE-Sim's wrap) — so the count is not monotone in the SRAM size (1 KiB reads a little less than 8)."""
    m, k, n = 256, 256, 256
    reads = [array_dram_traffic(m, k, n, ArrayConfig(rows=64, cols=64, ifmap_sram_kb=kib, bandwidth=(1,))).ifmap_reads
             for kib in (1, 8, 64, 256)]
    assert reads[3] == m * k
    assert min(reads[:3]) >= 4 * m * k
    assert reads[0] < reads[1]


def test_the_recorded_runs_are_all_read():
    """Both recordings, every row: 8 weight-gradient runs and 12 refetch runs (tests/data/README.md)."""
    assert sorted({row["file"] for row in RECORDED}) == ["conv_weight_gradient", "sram_32k_32m"]
    assert len(RECORDED) == 20


@pytest.mark.parametrize("row", RECORDED, ids=lambda r: f"{r['m']}x{r['k']}x{r['n']}-{r['dataflow']}-{r['sram_kib']}KiB")
def test_equals_scalesims_own_recorded_runs(row):
    """SCALE-Sim 3.0.0's own DRAM words, unchanged, in USER mode (1-byte words, the three SRAMs at the row's KiB:
    1,024 words a KiB, its bandwidth for every operand), against the count with no engine between: ifmap and
    filter reads equal, ofmap writes the demand plus at most the module's proven slack (exact where that is 0).
    Both as words (as test_cycle_weight_gradient gives the engine) and on an ArrayConfig of 1-byte words
    (as test_energy_refetch does), which must agree."""
    m, k, n, rows, cols, dataflow = (row[key] for key in ("m", "k", "n", "rows", "cols", "dataflow"))
    got = gemm_dram_traffic(m, k, n, rows, cols, dataflow, sram_words=(1024 * row["sram_kib"],) * 3,
                            bandwidth=(row["bandwidth"],) * 3)
    array = ArrayConfig(rows, cols, dataflow, ifmap_sram_kb=row["sram_kib"], filter_sram_kb=row["sram_kib"],
                        ofmap_sram_kb=row["sram_kib"], bandwidth=(row["bandwidth"],), user_bandwidth=True,
                        element_bytes=1)
    assert array_dram_traffic(m, k, n, array) == got
    assert (got.ifmap_reads, got.filter_reads) == (row["ifmap_dram_reads"], row["filter_dram_reads"])
    assert 0 <= row["ofmap_dram_writes"] - got.ofmap_writes <= got.ofmap_slack


def test_bad_input_is_one_clear_line():
    with pytest.raises(InputError, match="positive integer"):
        gemm_dram_traffic(0, 3, 3, 2, 2)
    with pytest.raises(InputError, match="two halves"):
        gemm_dram_traffic(3, 3, 3, 2, 2, sram_words=(1, 8, 8))
    with pytest.raises(InputError, match="unknown dataflow"):
        gemm_dram_traffic(3, 3, 3, 2, 2, "xs")


@pytest.mark.long
def test_random_gemms_equal_the_engine():
    """Random GEMMs up to 90 a side on 4–16 PE sides, SRAMs of 200–8192 words (lines of 2–82 words), bandwidths
    1–10: reads equal, ofmap within bound."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        m, k, n = (int(x) for x in rng.integers(1, 91, 3))
        rows, cols = (int(x) for x in rng.choice([4, 8, 16], 2))
        dataflow = str(rng.choice(DATAFLOWS))
        words, bw = int(rng.choice([200, 500, 1000, 2048, 8192])), int(rng.choice([1, 4, 10]))
        ifmap, filters, ofmap = engine_reads(m, k, n, rows, cols, dataflow, (words,) * 3, (bw,) * 3)
        got = gemm_dram_traffic(m, k, n, rows, cols, dataflow, sram_words=(words,) * 3, bandwidth=(bw,) * 3)
        assert (got.ifmap_reads, got.filter_reads) == (ifmap, filters), (m, k, n, rows, cols, dataflow, words, bw)
        assert 0 <= ofmap - got.ofmap_writes <= got.ofmap_slack


@pytest.mark.parametrize("dataflow", DATAFLOWS)
def test_chip_sized_arrays_equal_the_engine(dataflow):
    """128 × 128 arrays with SRAMs of a TPU-like chip's operand buffer (1365 KiB of 2-byte words: lines of 6,989
    words), 64 KiB and 16 KiB of bytes, a 571-word/cycle DRAM: reads equal the engine's, ofmap within bound."""
    m, k, n = 512, 768, 1152
    for kib, element_bytes in [(1365, 2), (64, 2), (16, 1)]:
        array = ArrayConfig(rows=128, cols=128, dataflow=dataflow, ifmap_sram_kb=kib, filter_sram_kb=kib,
                            ofmap_sram_kb=kib, element_bytes=element_bytes, bandwidth=(571,))
        r, got = simulate_on(m, k, n, array), array_dram_traffic(m, k, n, array)
        assert (got.ifmap_reads, got.filter_reads) == (r.ifmap_dram_reads, r.filter_dram_reads), kib
        assert 0 <= r.ofmap_dram_writes - got.ofmap_writes <= got.ofmap_slack


def line_replayed_slides(window, tile, rows):
    """A preloaded operand's slides with no skipping: SCALE-Sim's window (read_buffer.service_reads) replayed
    line by line over the demand order the module docstring gives (each tile fold by fold, a fold's rows from
    the last to the first, each row's words rising), from the tiling's prefetch positions. The oracle for the
    count that skips repeating folds."""
    start = slides = 0
    for block in range(tile.blocks):
        width = tile.tile_width(block)
        for bottom in range(0, tile.height, rows):
            for row in range(min(tile.height, bottom + rows) - 1, bottom - 1, -1):
                first = tile.position(block, row, 0)
                for line in range(first // window.per_line, (first + width - 1) // window.per_line + 1):
                    while (line - start) % window.lines >= window.active:
                        start, slides = (start + window.step) % window.lines, slides + 1
    return slides


@pytest.mark.parametrize("dataflow", ["ws", "is"])
def test_deep_preloaded_operands_skip_repeating_folds_exactly(dataflow, monkeypatch):
    """A preloaded operand (ws's B, is's A) hundreds of folds deep whose rows wrap the window many times (a weight
    gradient's δ): the count that skips repeating folds equals the line-by-line replay, with part-empty last folds
    and narrower last tiles, SRAMs from 40 words to about the operand, and takes far fewer fold steps than folds."""
    steps = []
    fold_slides = dram_traffic.fold_slides
    monkeypatch.setattr(dram_traffic, "fold_slides",  # folds stepped: its last two arguments, start and stop
                        lambda *args: steps.append(args[-1] - args[-2]) or fold_slides(*args))
    operand = 1 if dataflow == "ws" else 0
    for (m, k, n, rows, cols), words in itertools.product(
            [(5, 2000, 6, 4, 4), (3, 1501, 7, 3, 4), (2, 997, 5, 4, 3), (4, 1203, 9, 5, 2)], [40, 77, 150, 300, 2900]):
        tile = operand_tilings(m, k, n, rows, cols, dataflow)[operand]
        window = dram_traffic.read_window(words, tile, 1)
        steps.clear()
        got = dram_traffic.window_slides(window, tile, operand, m, k, n, rows, cols, dataflow)
        assert got == line_replayed_slides(window, tile, rows), (m, k, n, rows, cols, words)
        if words <= 150:  # δ re-read 9–1,000 times: the folds repeat within some tens, so few fold steps
            assert got > 5 * window.lines // window.step and 0 < sum(steps) < tile.blocks * tile.height // rows / 4
    got = gemm_dram_traffic(2, 997, 5, 4, 3, dataflow, sram_words=(77,) * 3, bandwidth=(1,) * 3)
    assert (got.ifmap_prefetches, got.filter_prefetches)[operand] == replayed_slides(2, 997, 5, 4, 3, dataflow,
                                                                                       operand, 77)


@pytest.mark.parametrize(("shape", "operand"), [((5, 2000, 3, 4, 2, "ws"), 0), ((3, 2001, 7, 4, 3, "ws"), 0),
                                                ((2000, 5, 3, 2, 4, "os"), 0), ((3, 7, 2000, 4, 2, "os"), 1),
                                                ((3, 2000, 7, 4, 2, "is"), 1)])
def test_long_streamed_operands_skip_repeating_tiles_exactly(shape, operand, monkeypatch):
    """A streamed operand of 500–1,000 tiles (ws's and os's A, os's B, is's B) through windows it wraps tens to
    hundreds of times: the count that skips tiles repeating earlier ones (and passes repeating earlier passes)
    equals SCALE-Sim's window replayed word by word over the engine's demand, in far fewer run steps than tiles."""
    m, k, n, rows, cols, dataflow = shape
    tile = operand_tilings(m, k, n, rows, cols, dataflow)[operand]
    steps = []
    advance = dram_traffic.advance_window
    monkeypatch.setattr(dram_traffic, "advance_window", lambda *args: steps.append(1) or advance(*args))
    for words in (77, 150):
        window = dram_traffic.read_window(words, tile, 1)
        steps.clear()
        got = dram_traffic.window_slides(window, tile, operand, m, k, n, rows, cols, dataflow)
        assert got == replayed_slides(m, k, n, rows, cols, dataflow, operand, words), words
        assert tile.blocks >= 500 and len(steps) < tile.blocks / 3
