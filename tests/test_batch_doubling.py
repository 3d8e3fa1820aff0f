"""benchmarks/batch_doubling.py against hand-worked pairs: the least error a model linear in the micro-batches
(T = m·x + c, x, c ≥ 0) must leave where a cell measured at B and 2B grows by more than 2× or shrinks."""

import pytest
from benchmark_scripts import load_benchmark

doubling = load_benchmark("batch_doubling")


def _row(batch, measured, predicted, micro_batch=2, recompute="full"):
    return {"hidden": 1024, "layers": 24, "heads": 16, "seq": 1024, "recompute": recompute,
            "micro_batch": micro_batch, "global_batch": batch, "measured_ms": measured, "predicted_ms": predicted}


@pytest.mark.parametrize("t1, t2, floor", [
    (100.0, 150.0, 0.0),     # inside 1–2: x = 50 / m, c = 50 matches both
    (100.0, 200.0, 0.0),     # c = 0 exactly
    (100.0, 100.0, 0.0),     # x = 0 exactly
    (100.0, 250.0, 0.2),     # p1 = 100, p2 = 200: 0 + 50/250
    (100.0, 80.0, 0.2),      # p1 = p2 = 80: 20/100 + 0
])
def test_pair_floor_by_hand(t1, t2, floor):
    assert doubling.pair_floor(t1, t2) == pytest.approx(floor)


def test_pair_floor_is_the_minimum_over_a_grid():
    """Brute force over p1 ≤ p2 ≤ 2·p1 on a fine grid: nothing beats the closed form, and it is reached."""
    for t1, t2 in ((1683.3, 4117.1), (813.5, 1431.5), (100.0, 70.0), (300.0, 900.0)):
        best = min(abs(p1 / t1 - 1) + abs(p2 / t2 - 1)
                   for p1 in [t1 * k / 400 for k in range(1, 1200)]
                   for p2 in [p1 * (1 + j / 200) for j in range(201)])
        assert doubling.pair_floor(t1, t2) == pytest.approx(best, abs=6e-3)
        assert doubling.pair_floor(t1, t2) <= best + 1e-12


def test_pairs_implied_line_and_floor():
    rows = [_row(16, 800.0, 700.0), _row(32, 1800.0, 1390.0), _row(16, 500.0, 500.0, micro_batch=4),
            _row(16, 300.0, 300.0, recompute="none")]
    pairs = doubling.doubling_pairs(rows)
    assert len(pairs) == 1
    p = pairs[0]
    assert p.micro_batches == (8, 16)
    assert p.per_micro_batch_ms == pytest.approx(1000 / 8)           # (1800 − 800) / (16 − 8)
    assert p.fixed_ms == pytest.approx(800 - 8 * 125)                # −200: grows more than twofold
    assert p.measured_ratio == pytest.approx(2.25)
    assert p.predicted_ratio == pytest.approx(1390 / 700)
    assert p.predicted_per_micro_batch_ms == pytest.approx(690 / 8)   # (1390 − 700) / (16 − 8)
    # pair floor 1 − 2/2.25 = 1/9 over the 4 runs
    assert doubling.linear_floor(rows) == pytest.approx((1 / 9) / 4)
    text = "\n".join(doubling.doubling_markdown(rows))
    assert "1 of the 1 measured pairs fall outside" in text and "2.8%" in text


def test_no_pairs_no_section():
    assert doubling.doubling_markdown([_row(16, 1.0, 1.0)]) == []
