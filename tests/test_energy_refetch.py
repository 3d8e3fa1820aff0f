"""DRAM refetch and SRAM size in the energy model, against SCALE-Sim's own recorded DRAM counts.

``tests/data/scalesim_dram/sram_32k_32m.csv`` holds SCALE-Sim 3.0.0's DRAM reads and writes for two
GEMMs in the three dataflows at 32 KiB and 32 MiB SRAMs (tests/data/README.md says how they were
produced). The cycle engine, which ``archsim energy --engine cycle`` prices DRAM with, must count the
same words; the analytic engine (and the training energy on device files, which uses it) charges
each operand once whatever the SRAM, so it cannot show refetch. The guard test checks the energy
parts of both engines on every recorded GEMM: they differ by the recorded refetch words alone.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from archsim.array.config import ArrayConfig
from archsim.cli import main
from archsim.energy.model import energy_columns, gemm_counts
from archsim.energy.table import access_energies

DATA = Path(__file__).parent / "data" / "scalesim_dram" / "sram_32k_32m.csv"
ROWS = list(csv.DictReader(DATA.open()))
DRAM = ("ifmap_dram_reads", "filter_dram_reads", "ofmap_dram_writes")


def _array(row: dict, kib: int | None = None) -> ArrayConfig:
    size = kib if kib is not None else int(row["sram_kib"])
    return ArrayConfig(int(row["rows"]), int(row["cols"]), row["dataflow"], ifmap_sram_kb=size, filter_sram_kb=size,
                       ofmap_sram_kb=size, bandwidth=(int(row["bandwidth"]),), user_bandwidth=True)


def _shape(row: dict) -> tuple[np.ndarray, ...]:
    return tuple(np.array([int(row[key])]) for key in ("m", "k", "n"))


def test_the_recording_covers_both_sizes_and_all_dataflows() -> None:
    assert len(ROWS) == 12
    assert {(r["dataflow"], r["sram_kib"]) for r in ROWS} == {(d, s) for d in ("ws", "os", "is")
                                                              for s in ("32", "32768")}


@pytest.mark.long  # the cycle engine's first call in a process loads its compiled kernels (about a second)
@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r['m']}x{r['k']}x{r['n']}-{r['dataflow']}-{r['sram_kib']}KiB")
def test_cycle_engine_counts_scalesims_dram_words(row: dict) -> None:
    counts = gemm_counts(*_shape(row), _array(row), engine="cycle")
    assert [int(counts[name][0]) for name in DRAM] == [int(row[name]) for name in DRAM]
    # the SRAMs are filled with what DRAM delivered: one write per word read
    assert int(counts["ifmap_sram_writes"][0]) == int(row["ifmap_dram_reads"])
    assert int(counts["filter_sram_writes"][0]) == int(row["filter_dram_reads"])


@pytest.mark.parametrize("row", [r for r in ROWS if r["sram_kib"] == "32"], ids=lambda r: f"{r['m']}-{r['dataflow']}")
def test_analytic_engine_charges_compulsory_words_at_any_sram(row: dict) -> None:
    """The documented floor: A, B read once and out written once, at 32 KiB as at 32 MiB; SCALE-Sim reads
    more than that at 32 KiB, so the analytic figure is a lower bound on its traffic."""
    m, k, n = (int(row[key]) for key in ("m", "k", "n"))
    for kib in (32, 32768):
        counts = gemm_counts(*_shape(row), _array(row, kib), engine="analytic")
        assert [int(counts[name][0]) for name in DRAM] == [m * k, k * n, m * n]
    assert int(row["ifmap_dram_reads"]) + int(row["filter_dram_reads"]) > m * k + k * n


def _energy(engine: str, kib: int) -> float:
    path = str(Path(__file__).resolve().parents[1] / "docs" / "examples" / "tiny_resnet.csv")
    return main(["energy", path, "--array", "256x256", "--batch", "8", "--engine", engine, "--sram-kb", str(kib),
                 "--format", "json"])


@pytest.mark.long
def test_smaller_sram_costs_more_only_where_refetch_is_counted(capsys) -> None:
    """The user trial's question on a 256 × 256 array: with SCALE-Sim's refetch (cycle engine) 32 KiB
    SRAMs cost more joules than 32 MiB ones; with compulsory traffic (analytic) less, since only the
    SRAM access energy, which grows with capacity, changes. The analytic totals are pinned to a hand
    computation from the layers' shapes (the cycle engine's DRAM words are SCALE-Sim's, checked against its
    recording below, and have no hand form)."""
    totals = {}
    for engine in ("analytic", "cycle"):
        for kib in (32, 32768):
            assert _energy(engine, kib) == 0
            rows = json.loads(capsys.readouterr().out)["rows"]
            totals[engine, kib] = next(r for r in rows if r["op"] == "TOTAL")["energy_pj"]
    assert totals["cycle", 32] > 2 * totals["cycle", 32768]
    assert totals["analytic", 32] < totals["analytic", 32768]
    # the analytic totals by hand: SRAM at 20 pJ per 64 bits at 32 KiB, 500 at 32 MiB (the table's end segment,
    # 20 → 100 pJ from 32 KiB to 1 MiB, extended ×32 again: ×5)
    for kib, sram in ((32, 20.0 / 8), (32768, 500.0 / 8)):
        assert totals["analytic", kib] == pytest.approx(_tiny_resnet_by_hand(sram), rel=1e-12), kib


def _tiny_resnet_by_hand(sram: float) -> float:
    """pJ of docs/examples/tiny_resnet.csv at batch 8 on a 256 × 256 ws array (int8), every SRAM at ``sram``
    pJ per byte, with compulsory DRAM traffic (the analytic engine), from the layers' shapes alone.

    GEMMs (rows, reduction, cols), exact mode (lowering's documented im2col; the stem, fed by the input, has
    no δ): stem F (8·32·32, 3·3·3, 16), G (27, 8192, 16); conv_a and conv_b F (8192, 3·3·16, 16),
    G (144, 8192, 16), D (8192, 144, 16) (stride 1); fc (16·16·16 → 10) F (8, 4096, 10), G (4096, 8, 10),
    D (8, 10, 4096). Each in SCALE-Sim's ws mapping (B stationary; A streamed once per column fold; a
    partial sum written, then read back, once per row fold; A and B filled once): MAC 0.3 pJ, registers
    2 per MAC + B's load, one of each MAC's a partial sum at the int32 accumulator's 32 × 0.009 pJ (since
    2026-12-05), the rest at 8 × 0.009 pJ, DRAM m·k + k·n + m·n words at 1300 / 64 × 8 pJ. Vector unit
    (0.03 pJ an element), F and D alike: add, one per input element per input (8·32·32·16 · 2); pool, each
    output's 2 × 2 window (8·16·16·16 · 4)."""
    gemms = [(8192, 27, 16), (27, 8192, 16)] + [(8192, 144, 16), (144, 8192, 16), (8192, 144, 16)] * 2 \
        + [(8, 4096, 10), (4096, 8, 10), (8, 10, 4096)]
    total = 0.0
    for m, k, n in gemms:
        macs, ifmap_reads, ofmap_writes = m * k * n, m * k * -(-n // 256), m * n * -(-k // 256)
        total += (macs * 0.3 + (macs + k * n) * 8 * 0.009 + macs * 32 * 0.009
                  + (ifmap_reads + k * n + 2 * ofmap_writes + m * k + k * n) * sram
                  + (m * k + k * n + m * n) * 1300 / 64 * 8)
    vector = 2 * (8 * 32 * 32 * 16 * 2 + 8 * 16 * 16 * 16 * 4)
    return total + vector * 0.03


def _energy_parts(row: dict, engine: str) -> tuple[dict, dict, float]:
    """(counts, energy by part in pJ, the array's per-word energies) of one recorded GEMM under ``engine``."""
    array = _array(row)
    counts = gemm_counts(*_shape(row), array, engine=engine)
    counts = {**counts, "vector_elements": np.zeros(1, dtype=np.int64), "cycles": np.zeros(1, dtype=np.int64)}
    energies = access_energies(array)
    return counts, energy_columns(counts, energies, array), energies


@pytest.mark.long  # the cycle engine's first call in a process loads its compiled kernels (about a second)
@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r['m']}x{r['k']}x{r['n']}-{r['dataflow']}-{r['sram_kib']}KiB")
def test_guard_energy_engines_differ_exactly_by_scalesims_refetch_words(row: dict) -> None:
    """Guard of where refetch is priced. ``engine="cycle"`` charges SCALE-Sim's recorded DRAM words
    (refetches included) and refills the ifmap/filter SRAMs with every word read, and drains the ofmap
    SRAM once per word written; ``engine="analytic"`` charges the compulsory words (A, B read once, out
    written once) at any SRAM size. Every other part (MACs, registers, SRAM reads into the array,
    ofmap SRAM writes) is the same under both engines: SRAM demand does not depend on the SRAM's size."""
    m, k, n = (int(row[key]) for key in ("m", "k", "n"))
    recorded = {name: int(row[name]) for name in DRAM}
    words = {"analytic": {"ifmap_dram_reads": m * k, "filter_dram_reads": k * n, "ofmap_dram_writes": m * n},
             "cycle": recorded}
    parts = {}
    for engine, dram in words.items():
        counts, energy, e = _energy_parts(row, engine)
        parts[engine] = energy
        ofmap_sram_reads = int(counts["ofmap_sram_writes"][0]) - m * n + dram["ofmap_dram_writes"]
        expected = {"dram_read_pj": (dram["ifmap_dram_reads"] + dram["filter_dram_reads"]) * e.dram_read_pj,
                    "dram_write_pj": dram["ofmap_dram_writes"] * e.dram_write_pj,
                    "ifmap_sram_write_pj": dram["ifmap_dram_reads"] * e.ifmap_write_pj,
                    "filter_sram_write_pj": dram["filter_dram_reads"] * e.filter_write_pj,
                    "ofmap_sram_read_pj": ofmap_sram_reads * e.ofmap_read_pj}
        for column, value in expected.items():
            assert float(energy[column][0]) == pytest.approx(value, rel=1e-12), (engine, column)
    for column in ("mac_pj", "register_pj", "ifmap_sram_read_pj", "filter_sram_read_pj", "ofmap_sram_write_pj"):
        assert float(parts["cycle"][column][0]) == float(parts["analytic"][column][0]), column
    if row["sram_kib"] == "32":  # the operands exceed their SRAMs: refetch makes the cycle engine's joules larger
        assert float(parts["cycle"]["energy_pj"][0]) > 2 * float(parts["analytic"]["energy_pj"][0])
