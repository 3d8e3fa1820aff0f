"""BPPSA cost model: level counts from Algorithm 1's loops, Eq. 6–7, the RNN study's shape (Fig. 8),
exact sparse FLOPs (§3.3) and the ``archsim bppsa`` command."""

import io
import json
import math

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from archsim import cli
from archsim.array.analytic import gemm_cost
from archsim.array.config import ArrayConfig
from archsim.bppsa.rnn_cost import product_cycles, rnn_backward, rnn_frame
from archsim.bppsa.scan import blelloch_scan, ceil_log2, linear_scan
from archsim.bppsa.sparse_cost import Pattern, pattern_of, product_flops
from archsim.bppsa.steps import (
    blelloch_level_count,
    hybrid_level_count,
    level_census,
    linear_census,
    per_worker_memory,
    steps_with_workers,
    work,
)
from archsim.bppsa.vgg import critical_path, vgg_flops
from archsim.errors import InputError


def symbols(n):
    """Eq. 5's array as placeholders: a vector then n matrices (the scan only needs ◇ and ndim)."""
    return [np.zeros(1)] + [np.zeros((1, 1)) for _ in range(n)]


def counting_op(a, b):
    return b  # any value of the right kind: the run's shape, not its numbers, is under test


def census_of(run):
    rows = {}
    for s in run.steps:
        key = (s.phase, s.level)
        mm, mv, mo = rows.get(key, (0, 0, 0))
        rows[key] = (mm + (s.kind == "mm"), mv + (s.kind == "mv"), mo + (s.kind == "id"))
    return [(*k, *v) for k, v in rows.items()]


@pytest.mark.parametrize("n", range(1, 65))
def test_instrumented_levels_equal_2_ceil_log2_n_plus_1_minus_1(n):
    run = blelloch_scan(symbols(n))
    assert len(run.levels) == 2 * math.ceil(math.log2(n + 1)) - 1 == blelloch_level_count(n)
    assert census_of(run) == [(c.phase, c.level, c.mm, c.mv, c.moves) for c in level_census(n)]
    for up in range(ceil_log2(n + 1)):
        hybrid = blelloch_scan(symbols(n), up_levels=up)
        assert len(hybrid.levels) == hybrid_level_count(n, up)
        assert census_of(hybrid) == [(c.phase, c.level, c.mm, c.mv, c.moves) for c in level_census(n, up)]
    assert len(linear_scan(symbols(n)).levels) == n == len(linear_census(n))


def test_work_is_linear_and_exact_on_full_trees():
    for k in range(1, 11):
        n = 2**k - 1
        done = work(level_census(n))
        assert (done["mm"] + done["mv"], done["moves"]) == (2 * n - 1 - k, k)  # up n−1, down n−k products
    for n in range(1, 300):
        done = work(level_census(n))
        assert n - 1 <= done["mm"] + done["mv"] < 2 * n


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 100_000), st.integers(1, 4096))
def test_steps_with_p_workers_are_theta_n_over_p_plus_log_p(n, p):
    census = level_census(n)
    steps = steps_with_workers(census, p)
    products = sum(c.products for c in census)
    assert steps >= max(blelloch_level_count(n), products / p)
    assert steps <= 2 * n / p + 2 * ceil_log2(n + 1)
    if p < n:
        assert steps <= 4 * n / p + 2 * math.log2(p) + 2
    else:
        assert steps == blelloch_level_count(n) or steps <= 2 * ceil_log2(n + 1)


def test_per_worker_memory_bppsa_falls_pipeline_grows():
    n, mj, mx = 1000, 1600, 80
    bppsa, pipe = zip(*(per_worker_memory(n, p, mj, mx) for p in (1, 10, 100, 1000, 10000)))
    assert bppsa == (1001 * mj, 101 * mj, 11 * mj, 2 * mj, mj)
    assert pipe == ((1000 + 1) * mx, (100 + 10) * mx, (10 + 100) * mx, (1 + 1000) * mx, (1 + 10000) * mx)


def test_rnn_product_costs_come_from_gemm_cost():
    array = ArrayConfig(rows=16, cols=8, dataflow="os")
    c = product_cycles(20, 16, 4, array)

    def cyc(m, k, n):
        return int(gemm_cost(m, k, n, 16, 8, "os").cycles)

    assert (c.mm, c.mv, c.bp_step) == (cyc(20, 20, 20), cyc(1, 20, 20), cyc(4, 20, 20))
    point = rnn_backward(10, 4, batch=16, array=array)
    # n = 10: up d=0..2 (5, 3, 1 pairs), down d=3..0 (1, 1, 3, 5 pairs); 16 copies of each in waves of 4.
    up = [(16 * 4 // 4) * c.mm + (16 // 4) * c.mv, (16 * 2 // 4) * c.mm + 4 * c.mv, 4 * c.mv]
    down = [0, 0, (16 * 2 // 4) * c.mv, (16 * 4 // 4) * c.mv]
    assert (point.bp_cycles, point.scan_cycles) == (9 * c.bp_step, sum(up) + sum(down))


def test_rnn_speedup_grows_with_t_then_plateaus_bounded_by_p():
    batch, array = 4, ArrayConfig()
    c = product_cycles(20, batch, 256, array)
    for p in (64, 256, 1024):
        limit = p * c.bp_step / (batch * (c.mm + c.mv))  # T → ∞: ≈ (B·T/p)(mm + mv) vs T·bp_step
        seq = [2**k for k in range(3, 18)]  # below T = 8 the log-depth overhead dominates (speedup ≈ 1)
        speed = rnn_frame(seq, [p], batch=batch, array=array).speedup.to_numpy()
        knee = p // batch
        growing = speed[[t <= 4 * knee for t in seq]]
        assert np.all(np.diff(growing) > 0)  # monotone growth while T ≲ p/B
        assert speed[seq.index(2 * knee)] > 2 * speed[0]
        tail = speed[[t >= 64 * knee for t in seq]]
        assert len(tail) >= 2 and np.all(tail <= limit) and np.all(tail >= 0.9 * limit)  # plateau
        assert np.all(np.diff(tail) >= 0) and tail[-1] - tail[0] < 0.1 * limit
    by_p = rnn_frame([30000], [16, 64, 256, 1024, 4096], batch=batch).speedup.to_numpy()
    assert np.all(np.diff(by_p) > 0)  # more workers per sample, more speedup (Fig. 8d–e)


def test_rnn_bad_input_names_field():
    for kwargs, field in (({"seq_len": 0, "processors": 1}, "seq_len"), ({"seq_len": 5, "processors": -1}, "processors"),
                          ({"seq_len": 5, "processors": 1, "hidden": 0}, "hidden")):
        with pytest.raises(InputError, match=field):
            rnn_backward(**kwargs)


def brute_flops(x: np.ndarray, y: np.ndarray) -> int:
    """Multiplies + adds of X·Y by enumerating stored-entry pairs (patterns = nonzeros here)."""
    mults, outputs = 0, set()
    for i, k in zip(*np.nonzero(x)):
        for j in np.nonzero(y[k])[0]:
            mults += 1
            outputs.add((i, j))
    return 2 * mults - len(outputs)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.05, 0.9))
def test_symbolic_product_flops_equal_brute_force(seed, density):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((7, 6)) * (rng.random((7, 6)) < density)
    y = rng.standard_normal((6, 5)) * (rng.random((6, 5)) < density)
    flops, dense, out = product_flops(pattern_of(sp.csr_array(x)), pattern_of(sp.csr_array(y)))
    assert flops == brute_flops(x, y) and dense == 7 * 5 * 11
    assert out.matrix.nnz == np.count_nonzero((x != 0).astype(int) @ (y != 0).astype(int))
    vflops, vdense, vout = product_flops(pattern_of(sp.csr_array(x)), Pattern(length=6))
    assert vflops == brute_flops(x, np.ones((6, 1))) and vdense == 7 * 11 and vout.length == 7


def test_pruned_vgg_flops_structure():
    frame = vgg_flops(sparsity=0.9, seed=1, width_divisor=16, up_levels=1)
    summary = critical_path(frame).set_index("method")
    assert summary.steps["bp"] == 21 and summary.steps["bppsa"] == hybrid_level_count(21, 1) == 12
    bp = frame[frame.method == "bp"]
    assert bp.critical.all() and (bp.kind.iloc[1:] == "mv").all()
    assert summary.critical_path_flops["bp"] == bp.flops.sum()
    bppsa = frame[frame.method == "bppsa"]
    assert (bppsa.groupby("seq_step").critical.sum() == 1).all()
    assert (bppsa.flops <= bppsa.dense_flops).all() and set(bppsa.kind) == {"mm", "mv", "id"}
    linear = critical_path(vgg_flops(sparsity=0.9, seed=1, width_divisor=16, up_levels=0)).set_index("method")
    assert linear.critical_path_flops["bppsa"] == linear.critical_path_flops["bp"]  # L = 0 is BP
    denser = critical_path(vgg_flops(sparsity=0.5, seed=1, width_divisor=16, up_levels=1)).set_index("method")
    assert denser.critical_path_flops["bp"] > summary.critical_path_flops["bp"]  # pruning cuts FLOPs
    with pytest.raises(InputError, match="sparsity"):
        vgg_flops(sparsity=1.0)


def run_cli(argv, capsys):
    code = cli.main(argv)  # bppsa is in cli.REGISTRY
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_rnn_json_and_report(tmp_path, capsys):
    report = tmp_path / "rnn.html"
    code, out, _ = run_cli(["bppsa", "rnn", "--seq-len", "10,100,1000", "--hidden", "20", "--batch", "16",
                            "--processors", "64,1024", "--array", "32x32", "--dataflow", "ws", "--format", "json",
                            "--report", str(report)], capsys)
    assert code == 0
    rows = json.loads(out)["rows"]
    assert len(rows) == 6 and all({"bp_steps", "scan_steps", "speedup"} <= set(r) for r in rows)
    assert rows[0]["bp_steps"] == 9 and rows[0]["scan_levels"] == 7
    text = report.read_text()
    assert text.startswith("<!DOCTYPE html>") and "plotly" in text and "archsim bppsa rnn --seq-len 10,100,1000" in text
    assert [p.name for p in tmp_path.iterdir()] == ["rnn.html"]


def test_cli_pruned_vgg_csv_and_report(tmp_path, capsys):
    report = tmp_path / "vgg.html"
    code, out, _ = run_cli(["bppsa", "pruned-vgg11", "--sparsity", "0.97", "--width-divisor", "16",
                            "--up-levels", "1", "--compare-levels", "1", "--format", "csv", "--report", str(report)],
                           capsys)
    assert code == 0
    frame = pd.read_csv(io.StringIO(out))
    assert {"method", "seq_step", "product", "flops", "dense_flops", "critical"} <= set(frame.columns)
    assert "archsim bppsa pruned-vgg11 --sparsity 0.97" in report.read_text()
    # BP by hand. VGG-11 at width 64/16 = 4 … 512/16 = 32 channels on 32×32×3: the 21 operators
    # (C conv 3×3 pad 1, R ReLU, M 2×2 max-pool) and the element count each outputs.
    ops = ["C", "R", "M", "C", "R", "M", "C", "R", "C", "R", "M", "C", "R", "C", "R", "M", "C", "R", "C", "R", "M"]
    sizes = [3072, 4096, 4096, 1024, 2048, 2048, 512, 1024, 1024, 1024, 1024, 256, 512, 512, 512, 512, 128,
             128, 128, 128, 128, 32]  # sizes[i] = input of operator i + 1
    bp = frame[frame.method == "bp"].sort_values("seq_step")
    # Step 0 takes the loss gradient as given; step s = 1…20 multiplies by operator 22 − s's Jᵀ
    # (in × out) a dense vector: dense FLOPs r·(2k − 1) with r = its input size, k = its output size.
    assert bp.dense_flops.tolist() == [0] + [sizes[i] * (2 * sizes[i + 1] - 1) for i in range(20, 0, -1)]
    # Input-independent patterns (zeros kept): ReLU's Jᵀ is diagonal — out multiplies, no adds; a max-pool's
    # links each input to its one window — in multiplies, no adds. Conv counts depend on the random pruning.
    sparse = {i: sizes[i + 1] if ops[i] == "R" else sizes[i] for i in range(1, 21) if ops[i] != "C"}
    assert {i: bp.flops.iloc[21 - i] for i in sparse} == sparse


@pytest.mark.long
@pytest.mark.parametrize("argv, field", [
    (["bppsa", "rnn", "--seq-len", "0"], "--seq-len"),  # a flag's value: named as the flag the user typed
    (["bppsa", "rnn", "--processors", "4,-2"], "--processors"),
    (["bppsa", "rnn", "--hidden", "0"], "--hidden"),
    (["bppsa", "rnn", "--batch", "x"], "--batch"),
    (["bppsa", "pruned-vgg11", "--sparsity", "1"], "--sparsity"),
    (["bppsa", "pruned-vgg11", "--sparsity", "-0.1"], "--sparsity"),
    (["bppsa", "pruned-vgg11", "--up-levels", "9"], "--up-levels"),  # checked before the study runs
])
def test_cli_bad_input_is_one_line_naming_the_field(argv, field, capsys):
    code, out, err = run_cli(argv, capsys)
    named = f"{field}:" if field.startswith("--") else f"field '{field}'"
    assert code == 2 and out == "" and err.count("\n") == 1 and named in err


def test_dropping_input_dependent_zeros_never_adds_flops():
    """'values' stores a subset of 'pattern''s entries, so no step can cost more, and the ReLU and
    pooling zeros of a real input make the up-sweep's products strictly cheaper overall."""
    from archsim.bppsa.vgg import vgg_flops

    pattern = vgg_flops(sparsity=0.9, width_divisor=16, up_levels=2, zeros="pattern")
    values = vgg_flops(sparsity=0.9, width_divisor=16, up_levels=2, zeros="values")
    keys = ["method", "seq_step", "left", "right"]
    joined = pattern.merge(values, on=keys, suffixes=("_pattern", "_values"))
    assert len(joined) == len(pattern) == len(values)
    assert (joined.flops_values <= joined.flops_pattern).all()
    assert joined.flops_values.sum() < joined.flops_pattern.sum()
    with pytest.raises(InputError):
        vgg_flops(width_divisor=16, zeros="dense")
