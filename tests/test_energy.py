"""Energy and area: hand computations from independently obtained counts, linearity, monotonicity.

Per-access figures are typed here from the published sources the shipped table cites (Horowitz,
ISSCC 2014, 45 nm; Aladdin's 40 nm register), not read from the table: 8-bit MAC = 0.2 pJ multiply
+ 0.1 pJ 32-bit add; register 0.009 pJ/bit (an operand word at its width, a partial sum at the 32-bit
accumulator's); 64-bit SRAM access 10 pJ at 8 KB, 20 pJ at 32 KB (a √
law below 32 KB); DRAM 1.3 nJ per 64 bits.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from archsim.array.config import ArrayConfig
from archsim.array.cycle import demand_matrices
from archsim.cli import main
from archsim.energy import (
    COUNTS,
    ENERGY_COLUMNS,
    access_energies,
    array_area,
    energy_of,
    layer_energy,
    load_table,
    op_energy,
    read_cfg_energy,
)
from archsim.errors import InputError
from archsim.lowering import Gemm, TrainingOp, lower_layer, split_delta
from archsim.workload import load_network

MAC_8BIT = 0.2 + 0.1
REGISTER_8BIT = 8 * 0.009
PSUM_REGISTER = 32 * 0.009  # a partial sum's register move: int8 accumulates in int32


def psums(m: int, k: int, n: int, dataflow: str) -> int:
    """Register moves of partial sums: one a MAC (ws, is), the M·N accumulated outputs drained (os)."""
    return m * n if dataflow == "os" else m * k * n
DRAM_8BIT = 1300.0 / 64 * 8


def sram_8bit(kib: float) -> float:
    """pJ per byte of an SRAM of ``kib``: 10 pJ per 64 bits at 8 KiB, ×2 per ×4 capacity up to 32 KiB."""
    return 10.0 * math.sqrt(kib / 8.0) / 8.0


def one_gemm(m: int, k: int, n: int) -> list[TrainingOp]:
    return [TrainingOp("g", "F", (Gemm(m, k, n),))]


@pytest.mark.parametrize("dataflow", ["ws", "os", "is"])
@pytest.mark.parametrize("shape", [(7, 5, 6, 3, 2), (16, 9, 11, 4, 4), (1, 1, 1, 1, 1)])
def test_analytic_energy_equals_hand_computation_from_demand_counts(dataflow: str, shape) -> None:
    """SRAM reads/writes counted from the per-cycle demand matrices (equal to SCALE-Sim's, tested in
    test_cycle_engine_scalesim); DRAM compulsory: A and B read once, out written once."""
    m, k, n, rows, cols = shape
    ifmap, filter_, ofmap = demand_matrices(m, k, n, rows, cols, dataflow)
    reads_a, reads_b, writes_out = (int((x >= 0).sum()) for x in (ifmap, filter_, ofmap))
    stationary = {"ws": k * n, "os": m * n, "is": m * k}[dataflow]
    macs = m * k * n
    sram = sram_8bit(8)  # 1.25 pJ per byte: a table point
    sums = psums(m, k, n, dataflow)
    hand = (macs * MAC_8BIT + (2 * macs + stationary - sums) * REGISTER_8BIT + sums * PSUM_REGISTER
            + (reads_a + reads_b) * sram  # operands into the array
            + (writes_out - m * n + m * n) * sram  # partial sums read back, then the drain to DRAM
            + writes_out * sram  # outputs and partial sums written
            + (m * k + k * n) * sram  # fills from DRAM
            + (m * k + k * n + m * n) * DRAM_8BIT)
    array = ArrayConfig(rows, cols, dataflow, ifmap_sram_kb=8, filter_sram_kb=8, ofmap_sram_kb=8)
    got = op_energy(one_gemm(m, k, n), array)
    assert got["energy_pj"].iloc[0] == pytest.approx(hand, rel=1e-12)
    assert got["ofmap_sram_writes"].iloc[0] == writes_out


@pytest.mark.parametrize("dataflow", ["ws", "os", "is"])
def test_cycle_engine_energy_equals_hand_computation_from_scalesim_counts(dataflow: str) -> None:
    """SCALE-Sim 3.0.0 itself (USER mode, 1 KiB SRAMs, 2 words/cycle) gives the SRAM and DRAM counts."""
    pytest.importorskip("scalesim")
    from scalesim_reference import scalesim_gemm

    m, k, n, rows, cols = 24, 20, 18, 4, 4
    ref = scalesim_gemm(m, k, n, rows, cols, dataflow, ifmap_kb=1, filter_kb=1, ofmap_kb=1, bandwidth=2)
    writes_out = ref.ofmap_sram_writes
    if dataflow == "os":  # SCALE-Sim adds R + C phantom ofmap writes per fold; energy counts the real M·N
        assert writes_out - ref.folds * (rows + cols) == m * n
        writes_out = m * n
    stationary = {"ws": k * n, "os": m * n, "is": m * k}[dataflow]
    macs = m * k * n
    sram = sram_8bit(1)
    sums = psums(m, k, n, dataflow)
    hand = (macs * MAC_8BIT + (2 * macs + stationary - sums) * REGISTER_8BIT + sums * PSUM_REGISTER
            + (ref.ifmap_sram_reads + ref.filter_sram_reads) * sram
            + (writes_out - m * n + ref.ofmap_dram_writes) * sram + writes_out * sram
            + (ref.ifmap_dram_reads + ref.filter_dram_reads) * sram
            + (ref.ifmap_dram_reads + ref.filter_dram_reads + ref.ofmap_dram_writes) * DRAM_8BIT)
    array = ArrayConfig(rows, cols, dataflow, ifmap_sram_kb=1, filter_sram_kb=1, ofmap_sram_kb=1, bandwidth=(2,),
                        user_bandwidth=True)
    got = op_energy(one_gemm(m, k, n), array, engine="cycle")
    assert got["energy_pj"].iloc[0] == pytest.approx(hand, rel=1e-12)
    assert got["dram_read_pj"].iloc[0] == pytest.approx((ref.ifmap_dram_reads + ref.filter_dram_reads) * DRAM_8BIT)


def test_table_figures_are_the_published_ones() -> None:
    energies = access_energies(ArrayConfig(ifmap_sram_kb=8, filter_sram_kb=32, ofmap_sram_kb=1024))
    assert energies.mac_pj == pytest.approx(MAC_8BIT)
    assert (energies.ifmap_read_pj, energies.filter_read_pj, energies.ofmap_read_pj) == pytest.approx((10 / 8, 20 / 8,
                                                                                                       100 / 8))
    assert energies.dram_read_pj == pytest.approx(DRAM_8BIT) and energies.register_pj == pytest.approx(REGISTER_8BIT)
    assert energies.psum_register_pj == pytest.approx(PSUM_REGISTER)
    fp16 = access_energies(ArrayConfig(element_bytes=2))
    assert fp16.mac_pj == pytest.approx(1.1 + 0.9)  # fp16 multiply, fp32 accumulate


counts_rows = st.lists(st.integers(0, 10**9), min_size=len(COUNTS) + 1, max_size=len(COUNTS) + 1)


@settings(max_examples=40, deadline=None)
@given(row=counts_rows, which=st.sampled_from(COUNTS), extra=st.integers(1, 1000))
def test_energy_is_linear_in_each_count(row, which, extra) -> None:
    array = ArrayConfig()
    energies = replace(access_energies(array), pe_leakage_mw=0.0)
    base = pd.DataFrame([dict(zip(("cycles", *COUNTS), row))])
    more = base.copy()
    more[which] += extra
    figure = {"macs": "mac_pj", "register_words": "register_pj", "vector_elements": "vector_pj",
              "ifmap_dram_reads": "dram_read_pj", "filter_dram_reads": "dram_read_pj",
              "ofmap_dram_writes": "dram_write_pj"}.get(which)
    if figure is None:  # "<operand>_sram_<reads|writes>"
        operand, _, kind = which.split("_")
        figure = f"{operand}_{kind[:-1]}_pj"
    delta = energy_of(more, energies, array)["energy_pj"].iloc[0] - energy_of(base, energies, array)["energy_pj"].iloc[0]
    if which == "psum_register_words":  # a register word priced at the accumulator's width, not the operand's
        assert delta == pytest.approx(extra * (energies.psum_register_pj - energies.register_pj), rel=1e-6, abs=1e-3)
        return
    assert delta == pytest.approx(extra * getattr(energies, figure), rel=1e-6, abs=1e-3)


def test_fgd_split_of_a_layer_follows_its_access_counts() -> None:
    network = load_network("layerpipe_sample")
    array = ArrayConfig(16, 16, "ws")
    energies = access_energies(array)
    lowered = [lower_layer(layer, 2, "paper") for layer in network.layers]
    per_layer = layer_energy(lowered, array, energies)
    for item, row in zip(lowered, per_layer.itertuples()):
        for op in item.ops:
            counts = op_energy([op], array, energies)
            by_hand = sum(float(counts[c].iloc[0]) * f for c, f in (
                ("macs", energies.mac_pj), ("register_words", energies.register_pj),
                ("psum_register_words", energies.psum_register_pj - energies.register_pj),
                ("ifmap_sram_reads", energies.ifmap_read_pj), ("filter_sram_reads", energies.filter_read_pj),
                ("ofmap_sram_reads", energies.ofmap_read_pj), ("ifmap_sram_writes", energies.ifmap_write_pj),
                ("filter_sram_writes", energies.filter_write_pj), ("ofmap_sram_writes", energies.ofmap_write_pj),
                ("ifmap_dram_reads", energies.dram_read_pj), ("filter_dram_reads", energies.dram_read_pj),
                ("ofmap_dram_writes", energies.dram_write_pj)))
            assert getattr(row, f"{op.kind}_energy_pj") == pytest.approx(by_hand, rel=1e-12)
    assert per_layer["energy_pj"].sum() == pytest.approx(per_layer[["F_energy_pj", "G_energy_pj", "D_energy_pj"]]
                                                         .to_numpy().sum())


def ws_gemm_by_hand(m: int, k: int, n: int, rows: int, cols: int, sram: float, dram: float = DRAM_8BIT) -> float:
    """pJ of out[m×n] = A[m×k]·B[k×n] on a rows × cols ws int8 array, all three SRAMs at ``sram`` pJ per byte and
    DRAM at ``dram``: :func:`ws_gemm_pj` at Horowitz's 8-bit MAC and Aladdin's register."""
    return ws_gemm_pj(m, k, n, rows, cols, mac=MAC_8BIT, register=REGISTER_8BIT, sram=sram, dram=dram)


def ws_gemm_pj(m: int, k: int, n: int, rows: int, cols: int, *, mac: float, register: float, sram: float,
               dram: float, psum: float = PSUM_REGISTER) -> float:
    """pJ of out[m×n] = A[m×k]·B[k×n] on a rows × cols ws array, per word of its element: ``mac`` a MAC,
    ``register`` an operand's register move, ``psum`` a partial sum's (32 bits: default 0.288 pJ), ``sram`` an
    access of any of its three SRAMs, ``dram`` a DRAM word; from SCALE-Sim's ws mapping (B stationary, K on the
    rows, N on the columns, A streamed once per column fold, a partial sum written once per row fold): MACs;
    registers: an A word and a partial sum per MAC + B loaded once; SRAM: A read m·k·⌈n/C⌉,
    B read k·n, out written m·n·⌈k/R⌉ and read back the same (the partial sums, then the drain), A and B filled
    once from DRAM; DRAM: A, B read and out written once."""
    macs, ifmap_reads, ofmap_writes = m * k * n, m * k * -(-n // cols), m * n * -(-k // rows)
    sram_words = ifmap_reads + k * n + 2 * ofmap_writes + m * k + k * n
    return macs * mac + (macs + k * n) * register + macs * psum + sram_words * sram + (m * k + k * n + m * n) * dram


def test_split_delta_energy_is_its_sub_gemms() -> None:
    """δ′ + δ″ along the channels: each part is the energy of its own sub-GEMM, not a share of δ. By hand from
    conv4's shape (28 × 28 input, 3 × 3 filters, 128 → 128 channels, batch 2; paper mode's δ is the dense
    (N·H·W, R·S·M, C) = (1568, 1152, 128) GEMM): δ″ takes 1 channel (n = 1), δ′ the other 127, on a 16 × 16
    ws array with 64 KiB SRAMs — 20 pJ per 64 bits at 32 KiB × (64/32)^(log 5 / log 32) on the table's
    log-log segment to 100 pJ at 1 MiB. δ″ is 0.468 of δ's energy, not 1/128: each piece reads all of A
    (m·k words) from DRAM, 2.94e8 of δ″'s 3.08e8 pJ (0.505 until 2026-12-05, when δ's partial sums moved through
    the array's registers at 8 bits, not the 32-bit accumulator's)."""
    layer = load_network("layerpipe_sample").layers[3]
    assert (layer.ifmap_h, layer.filter_h, layer.channels, layer.filters) == (28, 3, 128, 128)
    lowered = lower_layer(layer, 2, "paper")
    split = split_delta(lowered, 1, "channels")
    array = ArrayConfig(16, 16, "ws")
    d1, d2, whole = (op_energy([op], array)["energy_pj"].iloc[0] for op in (split.d1, split.d2, lowered.op("D")))
    sram_64k = 20.0 * (64 / 32) ** (math.log(5) / math.log(32)) / 8
    m, k = 2 * 28 * 28, 3 * 3 * 128
    hand = {n: ws_gemm_by_hand(m, k, n, 16, 16, sram_64k) for n in (1, 127, 128)}
    assert (d2, d1, whole) == pytest.approx((hand[1], hand[127], hand[128]), rel=1e-12)
    assert d2 / whole == pytest.approx(0.468, abs=5e-4)
    for op, energy in ((split.d1, d1), (split.d2, d2)):
        gemm = op.gemms[0]
        assert energy == pytest.approx(op_energy(one_gemm(gemm.m, gemm.k, gemm.n), array)["energy_pj"].iloc[0]
                                       * gemm.count, rel=1e-12)


def test_leakage_is_power_times_runtime() -> None:
    """1 mW per PE for one 1 GHz cycle is 1 pJ per PE."""
    array = ArrayConfig(4, 4, "ws", clock_hz=1e9)
    energies = replace(access_energies(array), pe_leakage_mw=1.0)
    got = op_energy(one_gemm(8, 8, 8), array, energies)
    assert got["leakage_pj"].iloc[0] == pytest.approx(16 * got["cycles"].iloc[0])
    with pytest.raises(InputError, match="clock"):
        op_energy(one_gemm(8, 8, 8), replace(array, clock_hz=None), energies)


def sram_access_by_hand(kib: float) -> float:
    """pJ of one 64-bit access from Horowitz's rows (10 pJ at 8 KB, 20 at 32 KB, 100 at 1 MB), log-log between
    them and along the end segments beyond: √(kib / 8) × 10 up to 32 KiB, (kib / 32)^(log 5 / log 32) × 20 above."""
    return 10.0 * math.sqrt(kib / 8.0) if kib <= 32 else 20.0 * (kib / 32.0) ** (math.log(5) / math.log(32))


def area_by_hand(rows: int, cols: int, ifmap_kib: int) -> float:
    """mm² of an int8 array with 64 KiB filter and ofmap SRAMs: a PE is Horowitz's 8-bit multiplier (282 µm²) +
    32-bit adder (137 µm²) + two 8-bit operand registers and the 32-bit accumulator's at Aladdin's 5.98 µm² a bit; an
    SRAM bit is Mistry's 0.346 µm² cell over a 0.7 array efficiency."""
    pe_um2 = 282.0 + 137.0 + (2 * 8 + 32) * 5.98
    return (rows * cols * pe_um2 + (ifmap_kib + 64 + 64) * 1024 * 8 * 0.346 / 0.7) / 1e6


@settings(max_examples=30, deadline=None)
@example(small=8, factor=4, rows=1)  # the table's own rows: 10 → 20 pJ
@example(small=100, factor=8, rows=63)  # 100 and 800 KiB, on the 32 KiB – 1 MiB segment
@example(small=16, factor=4, rows=2)  # 16 → 64 KiB: across the 32 KiB row
@example(small=2048, factor=8, rows=16)  # past 1 MiB: the end segment extended
@example(small=3, factor=5, rows=7)  # 3 KiB, below the first row: the √ segment extended
@given(small=st.integers(1, 4096), factor=st.integers(2, 8), rows=st.integers(1, 64))
def test_sram_energy_and_area_grow_with_capacity_and_pes(small: int, factor: int, rows: int) -> None:
    """Direction, and every drawn point's value by hand from the published rows (sram_access_by_hand, area_by_hand)."""
    table = load_table()
    assert table.sram_access_pj(small * factor) > table.sram_access_pj(small)
    for kib in (small, small * factor):
        assert table.sram_access_pj(kib) == pytest.approx(sram_access_by_hand(kib), rel=1e-12)
    a, b = ArrayConfig(rows, 8, ifmap_sram_kb=small), ArrayConfig(rows + 1, 8, ifmap_sram_kb=small * factor)
    assert array_area(b, table).total_mm2 > array_area(a, table).total_mm2
    assert array_area(a, table).total_mm2 == pytest.approx(area_by_hand(rows, 8, small), rel=1e-12)
    assert array_area(b, table).total_mm2 == pytest.approx(area_by_hand(rows + 1, 8, small * factor), rel=1e-12)


def test_sram_and_area_pinned_at_two_points() -> None:
    """Two points as plain numbers worked out by hand: 128 KiB is 20 × 4^(log 5 / log 32) = 20 × 5^0.4 = 38.07 pJ
    a 64-bit access; a 1 × 8 int8 array with 64 KiB SRAMs is 8 × 706.04 µm² + 3 × 524,288 bits × 0.346 / 0.7 µm²
    = 0.7831 mm² (0.7819 until 2026-12-05, its partial-sum register at 8 bits)."""
    table = load_table()
    assert table.sram_access_pj(128) == pytest.approx(20 * 5 ** 0.4, rel=1e-12)
    assert 20 * 5 ** 0.4 == pytest.approx(38.07, abs=5e-3)
    assert table.sram_access_pj(2) == pytest.approx(5.0, rel=1e-12)  # √(2 / 8) × 10
    assert array_area(ArrayConfig(1, 8, ifmap_sram_kb=64), table).total_mm2 == pytest.approx(0.7831, abs=5e-5)


@settings(max_examples=15, deadline=None)
@given(m=st.integers(1, 40), k=st.integers(1, 40), n=st.integers(1, 40), dram=st.floats(0, 500),
       more=st.floats(0.1, 100))
def test_energy_grows_with_any_per_access_figure(m, k, n, dram, more) -> None:
    array = ArrayConfig(4, 4, "os")
    low = replace(access_energies(array), dram_read_pj=dram)
    high = replace(low, dram_read_pj=dram + more)
    e_low, e_high = (op_energy(one_gemm(m, k, n), array, e)["energy_pj"].iloc[0] for e in (low, high))
    assert e_high - e_low == pytest.approx(more * (m * k + k * n), rel=1e-9)


def test_area_from_published_figures() -> None:
    area = array_area(ArrayConfig(2, 3, ifmap_sram_kb=1, filter_sram_kb=2, ofmap_sram_kb=4))
    pe_um2 = 282 + 137 + (2 * 8 + 32) * 5.98  # int8 multiplier + int32 adder + two byte registers + an int32 one
    assert area.pe_array_mm2 == pytest.approx(6 * pe_um2 / 1e6)
    assert area.sram_mm2 == pytest.approx(7 * 8192 * 0.346 / 0.7 / 1e6)


def test_cfg_energy_section_overrides_and_errors(tmp_path) -> None:
    base = (tmp_path / "a.cfg")
    text = ("[architecture_presets]\nArrayHeight: 4\nArrayWidth: 4\nIfmapSramSzkB: 8\nFilterSramSzkB: 8\n"
            "OfmapSramSzkB: 8\nDataflow: ws\n[archsim]\nClockGHz: 2\n")
    base.write_text(text + "[energy]\ntable = horowitz45\ndram_read_pj = 100\n")
    cfg = read_cfg_energy(base)
    assert cfg.table == "horowitz45" and cfg.overrides == {"dram_read_pj": 100.0}
    bad = tmp_path / "b.cfg"
    bad.write_text(text + "[energy]\ndram_pj = 1\n")
    with pytest.raises(InputError, match="dram_pj"):
        read_cfg_energy(bad)
    with pytest.raises(InputError, match="no 3-byte"):
        access_energies(ArrayConfig(element_bytes=3))
    with pytest.raises(InputError, match="unknown energy table"):
        load_table("nosuchtable")


def test_cli_energy_and_cost_energy(tmp_path, capsys) -> None:
    cfg = tmp_path / "a.cfg"
    cfg.write_text("[architecture_presets]\nArrayHeight: 8\nArrayWidth: 8\nIfmapSramSzkB: 8\nFilterSramSzkB: 8\n"
                   "OfmapSramSzkB: 8\nDataflow: ws\n[archsim]\nClockGHz: 2\n[energy]\ndram_read_pj = 0\n")
    assert main(["energy", "layerpipe_sample", "--config", str(cfg), "--batch", "2", "--format", "csv"]) == 0
    frame = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out), comment="#")
    total = frame.set_index("op").loc["TOTAL"]
    assert total["dram_read_pj"] == 0 and total["energy_pj"] == pytest.approx(
        frame.set_index("op").drop("TOTAL")["energy_pj"].sum())
    assert total["energy_pj"] == pytest.approx(sum(total[c] for c in ENERGY_COLUMNS if c != "energy_pj"))
    assert main(["cost", "layerpipe_sample", "--config", str(cfg), "--batch", "2", "--energy", "--format", "json"]) == 0
    out = __import__("json").loads(capsys.readouterr().out)
    assert out["meta"]["clock_ghz"] == 2.0 and out["meta"]["area_mm2"] > 0
    total_row = out["rows"][-1]
    assert total_row["total_seconds"] == pytest.approx(total_row["total_cycles"] / 2e9)
    assert total_row["energy_pj"] == pytest.approx(total["energy_pj"])
    assert main(["energy", "layerpipe_sample", "--energy-table", "nosuch"]) == 2
    # a width the table lacks: cycles still print (without area); energy is a clean error
    assert main(["cost", "layerpipe_sample", "--batch", "1", "--element-bytes", "3", "--format", "json"]) == 0
    assert "area_mm2" not in __import__("json").loads(capsys.readouterr().out)["meta"]
    assert main(["cost", "layerpipe_sample", "--batch", "1", "--element-bytes", "3", "--energy"]) == 2


def test_microbatches_repeat_smaller_gemms() -> None:
    """Four micro-batches of 2 re-read the weights four times: more filter DRAM traffic than one batch of 8."""
    from archsim.energy import iteration_energy

    network, array = load_network("layerpipe_sample"), ArrayConfig(16, 16, "ws")
    one = iteration_energy(network, array, 8).set_index("op")
    four = iteration_energy(network, array, 8, microbatches=4).set_index("op")
    assert four.loc["TOTAL", "macs"] == one.loc["TOTAL", "macs"]
    assert np.isclose(four.loc["TOTAL", "mac_pj"], one.loc["TOTAL", "mac_pj"])
    # F's B operand is the weights (G's is the output gradient, which shrinks with the micro-batch)
    assert four.loc["F", "filter_dram_reads"] == 4 * one.loc["F", "filter_dram_reads"] > 0
    with pytest.raises(InputError, match="divide"):
        iteration_energy(network, array, 8, microbatches=3)
