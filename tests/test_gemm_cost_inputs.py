"""gemm_cost gives the same hand-counted figures however a GEMM is passed (Python ints, numpy integers,
arrays, dataflow names or codes), and its 2^53 guard holds at the limit for each form.

A single GEMM of one dataflow is counted in Python ints and an array of one dataflow picks each formula
once, so each form is checked here against counts written out by hand, not against another form.
"""

import numpy as np
import pytest

from archsim.array.analytic import gemm_cost
from archsim.errors import InputError

# VGG16 conv1_1's forward GEMM at batch 1 (M = 224·224 output pixels, K = 3·3·3, N = 64 filters) on a
# 32×32 ws array. By hand: Sr = K = 27, Sc = N = 64, T = M = 50176; folds = ⌈27/32⌉·⌈64/32⌉ = 1·2 = 2;
# a fold takes 2R + C + T − 2 = 64 + 32 + 50176 − 2 = 50270 cycles, so cycles = 2·50270 − 1 = 100539;
# ifmap reads M·K·(column folds) = 50176·27·2 = 2709504; filter reads K·N = 1728; ofmap writes
# M·N·(row folds) = 3211264; MACs 50176·27·64 = 86704128; mapping efficiency 27·64 / (1024·2) = 0.84375.
HAND = {"cycles": 100539, "folds": 2, "row_folds": 1, "col_folds": 2, "ifmap_sram_reads": 2709504,
        "filter_sram_reads": 1728, "ofmap_sram_writes": 3211264, "macs": 86704128}
FORMS = {
    "python ints": ((50176, 27, 64, 32, 32), "ws"),
    "numpy integers": ((np.int64(50176), np.int32(27), np.int16(64), 32, 32), "ws"),
    "an upper-case name": ((50176, 27, 64, 32, 32), " WS"),
    "arrays": (([50176, 50176], 27, 64, 32, [32, 32]), "ws"),
    "an array of names": (([50176], 27, 64, 32, 32), ["ws"]),
    "an array of codes": (([50176], 27, 64, 32, 32), np.array([0])),
    "whole floats": ((50176.0, 27, 64, 32, 32), "ws"),
}


@pytest.mark.parametrize("form", FORMS)
def test_each_form_of_a_gemm_gives_the_hand_count(form):
    dims, dataflow = FORMS[form]
    cost = gemm_cost(*dims, dataflow)
    for name, value in HAND.items():
        assert np.all(np.asarray(getattr(cost, name)) == value), name
    assert np.all(np.asarray(cost.mapping_efficiency) == 0.84375)


@pytest.mark.parametrize("form", ["python ints", "arrays", "mixed dataflows"])
def test_counts_just_below_2_53_pass_and_at_2_53_are_refused(form):
    """os, M = K = 2^26, N = 1 on a 1×1 array: Sr = M, Sc = N, T = K, so folds = 2^26 and a fold takes
    R + C + T − 2 = 2^26 cycles: cycles = 2^52 − 1, MACs and the ifmap and filter reads 2^52, all exact.
    With M = 2^27 the MACs reach 2^53 and the GEMM is refused. (The largest dimension alone, X = 2^26,
    bounds the counts only by X³ = 2^78: these counts are judged one by one, not by that bound.)"""
    def cost(m):
        if form == "python ints":
            return gemm_cost(m, 2**26, 1, 1, 1, "os")
        if form == "arrays":
            return gemm_cost(np.array([m, 1]), 2**26, 1, 1, 1, "os")
        return gemm_cost(np.array([m, 1]), 2**26, 1, 1, 1, ["os", "ws"])

    below = cost(2**26)
    assert int(np.asarray(below.cycles).flat[0]) == 2**52 - 1
    assert int(np.asarray(below.macs).flat[0]) == 2**52
    assert int(np.asarray(below.filter_sram_reads).flat[0]) == 2**52
    with pytest.raises(InputError, match="2\\^53"):
        cost(2**27)


@pytest.mark.parametrize("dims, field", [((0, 1, 1, 1, 1), "m"), ((1, 1, 1, 1, -3), "cols"),
                                         ((np.int64(4), 0, 1, 1, 1), "k")])
def test_a_single_gemm_refuses_a_dimension_below_one_naming_it(dims, field):
    with pytest.raises(InputError) as error:
        gemm_cost(*dims, "ws")
    assert error.value.where.field == field


def test_a_dimension_past_int64_is_refused_in_one_line():
    with pytest.raises(InputError, match="exceeds 2\\^63"):
        gemm_cost(2**63, 1, 1, 1, 1, "ws")


def test_a_single_gemm_repr_shows_plain_numbers():
    """A single GEMM's cost prints each field as the number it is (``cycles=100539``), not numpy 2's
    ``np.int64(100539)``; the hand counts above, and the fields keep their numpy types (values unchanged)."""
    cost = gemm_cost(50176, 27, 64, 32, 32, "ws")
    text = repr(cost)
    assert "np." not in text and text.startswith("GemmCost(cycles=100539, folds=2, row_folds=1, col_folds=2, ")
    for name, value in HAND.items():
        assert f"{name}={value}," in text or text.endswith(f"{name}={value})")
    assert "mapping_efficiency=0.84375," in text
    assert isinstance(cost.cycles, np.integer) and cost.cycles == 100539


def test_an_array_cost_repr_keeps_numpy_arrays():
    """Array inputs give arrays, shown as numpy shows them."""
    assert repr(gemm_cost([50176, 50176], 27, 64, 32, 32)).startswith("GemmCost(cycles=array([100539, 100539]), ")


@pytest.mark.parametrize("dims, field", [((True, 1, 1, 1, 1), "m"), ((4, 4, 4, 4, np.True_), "cols"),
                                         ((4, np.array([True, True]), 4, 4, 4), "k"),
                                         (([4, True], 4, 4, 4, 4), "m")])
def test_a_bool_is_no_dimension(dims, field):
    """A bool is no count (docs/api.md: ``tp=True`` is refused), though Python and numpy cast it to 1: before,
    ``gemm_cost(True, 1, 1, 1, 1)`` costed a 1×1×1 GEMM. Refused naming the argument, in one line."""
    with pytest.raises(InputError, match="whole number") as error:
        gemm_cost(*dims, "ws")
    assert error.value.where.field == field and "\n" not in str(error.value)
