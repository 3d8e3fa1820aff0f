"""The cycle-level engine (archsim.array.cycle) against SCALE-Sim 3.0.0 itself and the analytic model.

Expected values come from the scalesim package (``scalesim_reference``: its compute system's demand
and prefetch matrices, and whole USER-bandwidth runs), from the analytic model (itself checked
against SCALE-Sim in test_scalesim_exact), or from brute force — never from the engine's own
earlier output. The fixed USER-mode cases use 1–2 KiB SRAMs, so operands of a few thousand words
overflow them and the array really stalls; bandwidths span 1–10 words/cycle. Larger random
cross-checks are in test_scalesim_slow.
"""

import io
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from conftest import USAGE
from hypothesis import given, settings
from hypothesis import strategies as st

from archsim.array import cycle
from archsim.array.analytic import gemm_cost
from archsim.array.config import ArrayConfig, read_scalesim_cfg
from archsim.array.costing import cost_network, op_costs, op_cycles
from archsim.array.cycle import (
    demand_matrices,
    minimum_bandwidth,
    prefetch_order,
    simulate_cached,
    simulate_gemm,
    simulate_on,
)
from archsim.cli import main
from archsim.errors import InputError
from archsim.lowering import lower_network
from archsim.partition.coster import DeltaCoster
from archsim.sweep import load_spec
from archsim.workload import load_network

DATAFLOWS = ["ws", "os", "is"]


def figures(result):
    return (result.cycles, result.stall_cycles, result.ifmap_dram_reads, result.filter_dram_reads,
            result.ofmap_dram_writes, result.cycles_incl_prefetch)


def reference_figures(reference):
    return (reference.compute_cycles, reference.stall_cycles, reference.ifmap_dram_reads,
            reference.filter_dram_reads, reference.ofmap_dram_writes, reference.cycles_incl_prefetch)


# -- the array side: demand and prefetch order, row for row ---------------------------------------

def prefetch_places(matrix, words):
    """Place of each word in SCALE-Sim's prefetch matrix read row-major, nulls skipped."""
    flat = np.asarray(matrix).ravel()
    flat = flat[flat != -1].astype(np.int64)
    places = np.full(words, -1)
    places[flat] = np.arange(flat.size)
    return places


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 20), k=st.integers(1, 20), n=st.integers(1, 20), rows=st.integers(1, 9),
       cols=st.integers(1, 9), dataflow=st.sampled_from(DATAFLOWS))
def test_demand_and_prefetch_order_equal_scalesims_matrices(m, k, n, rows, cols, dataflow):
    """Every cycle's demanded words and the prefetch order (the anti-diagonal one included) are
    SCALE-Sim's compute system's, element for element."""
    pytest.importorskip("scalesim")
    from scalesim_reference import scalesim_compute_matrices

    ifmap_pf, filter_pf, *theirs = scalesim_compute_matrices(m, k, n, rows, cols, dataflow)
    for ours, reference in zip(demand_matrices(m, k, n, rows, cols, dataflow), theirs):
        assert np.array_equal(ours, reference)
    order_a, order_b = prefetch_order(m, k, n, rows, cols, dataflow)
    assert np.array_equal(order_a, prefetch_places(ifmap_pf, m * k))
    assert np.array_equal(order_b, prefetch_places(filter_pf, k * n))


# -- stall-free: the analytic model's cycles ------------------------------------------------------

@settings(max_examples=80, deadline=None)
@given(m=st.integers(1, 200), k=st.integers(1, 200), n=st.integers(1, 200), rows=st.integers(1, 32),
       cols=st.integers(1, 32), dataflow=st.sampled_from(DATAFLOWS))
def test_ample_memory_gives_the_analytic_cycles(m, k, n, rows, cols, dataflow):
    """SRAMs whose active halves hold every operand word and every ofmap write, and a bandwidth of a
    whole half per cycle: nothing misses, nothing drains early, so no stalls and exactly the analytic
    compute cycles."""
    analytic = gemm_cost(m, k, n, rows, cols, dataflow)
    writes = analytic.scalar("ofmap_sram_writes")
    words = 2 * max(m * k, k * n, writes) + 2
    result = simulate_gemm(m, k, n, rows, cols, dataflow, sram_words=(words,) * 3, bandwidth=(words,) * 3)
    assert result.stall_cycles == 0
    assert result.compute_cycles == result.cycles == analytic.scalar("cycles")


def test_compute_cycles_stay_analytic_when_memory_stalls():
    result = simulate_gemm(64, 40, 48, 8, 8, "ws", sram_words=(1024,) * 3, bandwidth=(1, 1, 1))
    assert result.stall_cycles > 0
    assert result.compute_cycles == gemm_cost(64, 40, 48, 8, 8, "ws").scalar("cycles")
    assert result.cycles == result.compute_cycles + result.stall_cycles  # last line is an ofmap write


# -- SCALE-Sim USER bandwidth mode: stalls and DRAM traffic ---------------------------------------

USER_CASES = [  # (M, K, N, rows, cols, (ifmap, filter, ofmap KiB), words/cycle)
    (64, 40, 48, 8, 8, (1, 1, 1), 1),
    (64, 40, 48, 8, 8, (1, 1, 1), 4),
    (50, 70, 30, 8, 4, (1, 2, 1), 6),
    (90, 33, 20, 5, 7, (2, 1, 1), 3),
    (37, 61, 53, 6, 6, (1, 1, 2), 7),
    (120, 16, 40, 16, 4, (1, 1, 1), 2),
    (23, 95, 41, 3, 9, (1, 2, 1), 9),
    (45, 45, 45, 4, 4, (1, 1, 1), 5),
    (31, 29, 67, 7, 5, (1, 1, 1), 10),
]


@pytest.mark.parametrize("dataflow", DATAFLOWS)
@pytest.mark.parametrize("m, k, n, rows, cols, kib, bandwidth", USER_CASES)
def test_user_bandwidth_mode_equals_scalesim(m, k, n, rows, cols, kib, bandwidth, dataflow):
    """Cycles (stalls included), stall cycles, DRAM reads per operand, DRAM writes and the cycles
    including the initial fill and final drain: all equal to SCALE-Sim's."""
    pytest.importorskip("scalesim")
    from scalesim_reference import scalesim_gemm

    reference = scalesim_gemm(m, k, n, rows, cols, dataflow, ifmap_kb=kib[0], filter_kb=kib[1], ofmap_kb=kib[2],
                              bandwidth=bandwidth)
    ours = simulate_gemm(m, k, n, rows, cols, dataflow, sram_words=tuple(1024 * x for x in kib),
                         bandwidth=(bandwidth,) * 3)
    assert figures(ours) == reference_figures(reference)


CONV_USER_CASES = [  # (H, W, f, C, filters, stride, dataflow): overlapping windows; stalls differ from the GEMM's
    (12, 12, 3, 2, 8, 1, "os"),
    (9, 9, 3, 3, 5, 1, "ws"),
    (12, 12, 3, 2, 8, 1, "is"),
]


@pytest.mark.parametrize("h, w, f, c, filters, stride, dataflow", CONV_USER_CASES)
def test_conv_with_overlapping_windows_equals_scalesims_conv_mode(h, w, f, c, filters, stride, dataflow):
    """SCALE-Sim's conv mode repeats ifmap words in its im2col operand and its read buffer hits on any
    active copy; with the windows given (``conv=``) the engine's stalls and DRAM counts equal its, where
    the plain im2col GEMM (every word distinct) gives other stalls on these layers."""
    pytest.importorskip("scalesim")
    from scalesim_reference import scalesim_conv

    from archsim.array.cycle import ConvWindows

    eh, ew = (h - f) // stride + 1, (w - f) // stride + 1
    reference = scalesim_conv(h, w, f, f, c, filters, stride, 8, 8, dataflow, ifmap_kb=1, filter_kb=1, ofmap_kb=1,
                              bandwidth=4)
    memory = {"sram_words": (1024,) * 3, "bandwidth": (4,) * 3}
    ours = simulate_gemm(eh * ew, f * f * c, filters, 8, 8, dataflow, conv=ConvWindows(eh, ew, f, f, c, stride),
                         **memory)
    assert figures(ours) == reference_figures(reference)
    assert figures(simulate_gemm(eh * ew, f * f * c, filters, 8, 8, dataflow, **memory)) != figures(ours)


def test_conv_windows_must_match_the_gemm():
    from archsim.array.cycle import ConvWindows

    with pytest.raises(InputError, match="not a 16x18 ifmap matrix"):
        simulate_gemm(16, 18, 4, 4, 4, conv=ConvWindows(4, 5, 3, 3, 2, 1))


@pytest.mark.parametrize("dataflow", DATAFLOWS)
def test_scalesims_own_read_bandwidth_in_user_mode(dataflow):
    """SCALE-Sim's shipped layout: ifmap and filter read at its bank bandwidth (10), the ofmap
    writes at Bandwidth (2). The engine models it with separate bandwidths."""
    pytest.importorskip("scalesim")
    from scalesim_reference import scalesim_gemm

    reference = scalesim_gemm(64, 40, 48, 8, 8, dataflow, ifmap_kb=1, filter_kb=1, ofmap_kb=1, bandwidth=2,
                              read_bandwidth=10)
    ours = simulate_gemm(64, 40, 48, 8, 8, dataflow, sram_words=(1024,) * 3, bandwidth=(10, 10, 2))
    assert figures(ours) == reference_figures(reference)
    assert reference.stall_cycles > 0


def test_neighbouring_configurations_give_other_figures():
    """The comparison above can fail: one word/cycle more, or one KiB more SRAM, changes the figures
    (so equality is not an accident of insensitive numbers)."""
    base = simulate_gemm(64, 40, 48, 8, 8, "ws", sram_words=(1024,) * 3, bandwidth=(4, 4, 4))
    faster = simulate_gemm(64, 40, 48, 8, 8, "ws", sram_words=(1024,) * 3, bandwidth=(5, 5, 5))
    bigger = simulate_gemm(64, 40, 48, 8, 8, "ws", sram_words=(2048, 1024, 1024), bandwidth=(4, 4, 4))
    assert figures(faster) != figures(base) and figures(bigger) != figures(base)


# -- minimum stall-free bandwidth ------------------------------------------------------------------

@pytest.mark.parametrize("m, k, n, rows, cols, dataflow", [
    (64, 40, 48, 8, 8, "ws"), (45, 45, 45, 4, 4, "os"), (120, 16, 40, 16, 4, "is"), (100, 30, 70, 8, 8, "os"),
])
def test_minimum_bandwidth_is_the_first_stall_free_one_and_more_stays_free(m, k, n, rows, cols, dataflow):
    """Brute force over every bandwidth up to half the SRAM (beyond it nothing changes)."""
    words = (1024, 1024, 1024)
    stalls = [simulate_gemm(m, k, n, rows, cols, dataflow, sram_words=words, bandwidth=(b, b, b)).stall_cycles
              for b in range(1, 513)]
    found = minimum_bandwidth(m, k, n, rows, cols, dataflow, sram_words=words)
    assert found is not None and found > 1
    assert stalls[found - 2] > 0 and not any(stalls[found - 1:])


def test_minimum_bandwidth_none_when_no_bandwidth_suffices():
    """ws demands each filter tile bottom row first; where a tile straddles the window's edge, the
    window slides past the earlier rows and must wrap round the whole filter (720,896 words read for
    a 9,322-word filter) — at any bandwidth."""
    words = (1024, 1024, 1024)
    fastest = simulate_gemm(27, 79, 118, 12, 11, "ws", sram_words=words, bandwidth=(512,) * 3)
    assert fastest.stall_cycles > 0 and fastest.filter_dram_reads > 50 * 79 * 118
    assert minimum_bandwidth(27, 79, 118, 12, 11, "ws", sram_words=words) is None


# -- inputs ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("call, field", [
    (lambda: simulate_gemm(0, 4, 4, 4, 4), "m"),
    (lambda: simulate_gemm(4, 4, 4, 4, 4, "rs"), "dataflow"),
    (lambda: simulate_gemm(4, 4, 4, 4, 4, bandwidth=(1, 0, 1)), "bandwidth"),
    (lambda: simulate_gemm(4, 4, 4, 4, 4, sram_words=(1, 1024, 1024)), "sram"),
])
def test_bad_inputs_name_the_field(call, field):
    with pytest.raises(InputError) as error:
        call()
    assert error.value.where.field == field


# -- costing, CLI, sweep ---------------------------------------------------------------------------

def small_array():
    """16 KiB SRAMs at 4 words/cycle: ffnn8's 1024×1024 weights overflow them, so its GEMMs stall."""
    return ArrayConfig(rows=32, cols=32, dataflow="ws", ifmap_sram_kb=16, filter_sram_kb=16, ofmap_sram_kb=16,
                       bandwidth=(4,))


def test_op_cycles_under_cycle_engine_add_each_gemms_stalls():
    array = small_array()
    ops = [op for item in lower_network(load_network("ffnn8"), 1, "paper") for op in item.ops]
    memory = op_cycles(ops, array, "cycle")
    compute = op_cycles(ops, array)
    expected = []
    for op in ops:
        gemms = sum(g.count * simulate_on(g.m, g.k, g.n, array).cycles for g in op.gemms)
        expected.append(gemms + -(-op.vector_elements // array.cols))
    assert memory.tolist() == expected
    assert (memory >= compute).all() and (memory > compute).any()
    frame = op_costs(ops, array, "cycle")
    assert frame.cycles.tolist() == expected
    stalls = [sum(g.count * simulate_on(g.m, g.k, g.n, array).stall_cycles for g in op.gemms) for op in ops]
    assert frame.stall_cycles.tolist() == stalls


def test_cycle_engine_simulates_each_distinct_gemm_once(monkeypatch):
    calls = []
    real = cycle.simulate_cached.__wrapped__

    def counting(m, k, n, array):
        calls.append((m, k, n))
        return real(m, k, n, array)

    array = replace(small_array(), bandwidth=(3,))  # a config no other test caches
    monkeypatch.setattr(cycle, "simulate_cached", counting)  # costing imports it at call time
    ops = [op for item in lower_network(load_network("ffnn8"), 2, "paper") for op in item.ops]
    shapes = {(g.m, g.k, g.n) for op in ops for g in op.gemms}
    assert sum(g.count for op in ops for g in op.gemms) > len(shapes)  # shapes do repeat
    op_cycles(ops, array, "cycle")
    assert sorted(calls) == sorted(shapes)


def test_simulate_cached_returns_the_same_result():
    array = small_array()
    assert simulate_cached(40, 20, 30, array) is simulate_cached(40, 20, 30, array)
    assert simulate_cached(40, 20, 30, array) == simulate_on(40, 20, 30, array)


def test_cost_network_cycle_columns_sum_the_ops():
    network = load_network("ffnn8")
    array = small_array()
    table = cost_network(network, array, 1, engine="cycle")
    assert {"stall_cycles", "dram_read_bytes", "dram_write_bytes"} <= set(table.columns)
    analytic = cost_network(network, array, 1)
    assert "stall_cycles" not in analytic.columns
    assert (table.total_cycles - analytic.total_cycles == table.stall_cycles).all()


def test_unknown_engine_is_an_input_error():
    with pytest.raises(InputError) as error:
        op_cycles([], small_array(), "spice")
    assert error.value.where.field == "engine"


def run_cli(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_gemm_cli_cycle_engine_columns(capsys):
    code, out, _ = run_cli(["gemm", "--m", "64", "--k", "40", "--n", "48", "--array", "8x8", "--engine", "cycle",
                            "--sram-kb", "1", "--bandwidth", "4", "--min-bandwidth", "--format", "csv"], capsys)
    assert code == 0
    row = pd.read_csv(io.StringIO(out), comment="#").iloc[0]
    expected = simulate_gemm(64, 40, 48, 8, 8, "ws", sram_words=(1024,) * 3, bandwidth=(4, 4, 4))
    assert (row.stall_cycles, row.total_cycles, row.ifmap_dram_reads, row.filter_dram_reads,
            row.ofmap_dram_writes) == (expected.stall_cycles, expected.cycles, expected.ifmap_dram_reads,
                                       expected.filter_dram_reads, expected.ofmap_dram_writes)
    assert row.cycles == expected.compute_cycles
    assert row.min_bandwidth == minimum_bandwidth(64, 40, 48, 8, 8, "ws", sram_words=(1024,) * 3)
    code, out, _ = run_cli(["gemm", "--m", "64", "--k", "40", "--n", "48", "--format", "csv"], capsys)
    assert code == 0 and "stall_cycles" not in out


def test_cost_cli_cycle_engine_columns(capsys):
    code, out, _ = run_cli(["cost", "ffnn8", "--batch", "1", "--array", "32x32", "--engine", "cycle",
                            "--sram-kb", "16", "--bandwidth", "4", "--format", "csv"], capsys)
    assert code == 0
    frame = pd.read_csv(io.StringIO(out), comment="#")
    table = cost_network(load_network("ffnn8"), small_array(), 1, engine="cycle")
    body = frame[frame.layer != "TOTAL"]
    assert body.stall_cycles.tolist() == table.stall_cycles.tolist()
    assert body.dram_read_bytes.tolist() == table.dram_read_bytes.tolist()
    total = frame[frame.layer == "TOTAL"].iloc[0]
    assert total.stall_cycles == table.stall_cycles.sum()


def cycle_row(out):
    row = pd.read_csv(io.StringIO(out), comment="#").iloc[0]
    return (row.total_cycles, row.stall_cycles, row.ifmap_dram_reads, row.filter_dram_reads, row.ofmap_dram_writes)


@pytest.mark.parametrize("dataflow", DATAFLOWS)
def test_a_scalesim_cfg_costs_as_scalesim_runs_it(tmp_path, dataflow, capsys):
    """A USER-mode .cfg whose [layout] read rates (10) differ from its Bandwidth (2), as SCALE-Sim's
    shipped configs do: read by archsim, the engine and `archsim gemm --config` give SCALE-Sim's own
    figures for the same file; `--bandwidth` then overrides all three operands."""
    pytest.importorskip("scalesim")
    from scalesim_reference import config_text, scalesim_gemm

    memory = {"ifmap_kb": 1, "filter_kb": 1, "ofmap_kb": 1, "bandwidth": 2, "read_bandwidth": 10}
    path = tmp_path / "user.cfg"
    path.write_text(config_text(8, 8, dataflow, **memory))  # the file scalesim_gemm runs SCALE-Sim on
    array = read_scalesim_cfg(path)
    assert array.dram_bandwidths == (10, 10, 2)
    reference = reference_figures(scalesim_gemm(64, 40, 48, 8, 8, dataflow, **memory))
    assert figures(simulate_on(64, 40, 48, array)) == reference
    gemm = ["gemm", "--m", "64", "--k", "40", "--n", "48", "--config", str(path), "--engine", "cycle",
            "--format", "csv"]
    code, out, _ = run_cli(gemm, capsys)
    assert code == 0 and cycle_row(out) == reference[:5]
    code, out, _ = run_cli(gemm + ["--bandwidth", "2"], capsys)
    uniform = figures(simulate_gemm(64, 40, 48, 8, 8, dataflow, sram_words=(1024,) * 3, bandwidth=(2, 2, 2)))
    assert code == 0 and cycle_row(out) == uniform[:5] and uniform != reference


@pytest.mark.parametrize("argv", [
    ["gemm", "--m", "4", "--k", "4", "--n", "4", "--engine", "spice"],
    ["cost", "layerpipe_sample", "--engine", "spice"],
    ["gemm", "--m", "4", "--k", "4", "--n", "4", "--engine", "cycle", "--sram-kb", "1,2"],
    ["gemm", "--m", "4", "--k", "4", "--n", "4", "--min-bandwidth"],
])
def test_bad_engine_arguments_are_one_line_errors(argv, capsys):
    code, out, err = run_cli(argv, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and USAGE.match(err)


SPEC = """[sweep]
networks = ["layerpipe_sample"]
arrays = ["16x16"]
batches = [2]
processors = [2]
methods = ["gpipe"]
"""


def test_sweep_engine_key(tmp_path):
    path = tmp_path / "spec.toml"
    path.write_text(SPEC)
    analytic = load_spec(path).units()[0]
    path.write_text(SPEC + 'engine = "cycle"\n')
    cycle = load_spec(path).units()[0]
    assert (analytic.engine, cycle.engine) == ("analytic", "cycle")
    assert cycle.key == analytic.key + "_cycle"
    path.write_text(SPEC + 'engine = "spice"\n')
    with pytest.raises(InputError) as error:
        load_spec(path)
    assert error.value.where.field == "engine"


@pytest.mark.parametrize("axis", ["rows", "channels", "reduction"])
def test_profile_splits_under_cycle_engine_agree(axis):
    """A cycle-engine profile costs δ splits with the cycle engine on both paths: split_cycles (integer
    hot path) equals split_cost (real sub-GEMM ops through op_cycles)."""
    from archsim.partition import build_profile

    profile = build_profile(load_network("ffnn8"), small_array(), 4, "paper", engine="cycle")
    for index in range(2):
        units = DeltaCoster.of(profile).split_units(index, axis)
        for part in sorted({1, units // 2} - {0}):
            _, d1, d2 = DeltaCoster.of(profile).split_cost(index, axis, part)
            assert (d1, d2) == tuple(float(x) for x in DeltaCoster.of(profile).split_cycles(index, axis, part))
    assert profile.engine == "cycle"
