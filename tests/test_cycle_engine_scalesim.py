"""The cycle-level engine (archsim.array.cycle) against SCALE-Sim 3.0.0 itself and the analytic model.

Expected values come from the scalesim package (``scalesim_reference``: its compute system's demand
and prefetch matrices, and whole USER-bandwidth runs), from the analytic model (itself checked
against SCALE-Sim in test_scalesim_exact), or from brute force — never from the engine's own
earlier output. The fixed USER-mode cases use 1–2 KiB SRAMs, so operands of a few thousand words
overflow them and the array really stalls; bandwidths span 1–10 words/cycle. Larger random
cross-checks are in test_scalesim_slow; the engine inside costing, the CLI and sweeps is checked in
test_cycle_engine_costing.
"""

import numpy as np
import pytest
from cycle_figures import DATAFLOWS, figures, reference_figures
from hypothesis import given, settings
from hypothesis import strategies as st

from archsim.array.analytic import gemm_cost
from archsim.array.cycle import demand_matrices, minimum_bandwidth, prefetch_order, simulate_gemm
from archsim.errors import InputError

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

@pytest.mark.long
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
    assert result.compute_cycles == 5 * 6 * (2 * 8 + 8 + 64 - 2) - 1  # ws by hand: 30 folds of 86 cycles, less 1
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


@pytest.mark.long
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

@pytest.mark.long
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
