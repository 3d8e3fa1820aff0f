"""Small inputs run the simulator's kernels as plain Python (no numba load); larger ones compiled.
Both paths must give identical arrays: here the uncompiled path runs in a fresh process that never
imports numba, the compiled path in this one, on 120 random problems (streams, pins, links, ties,
zero lengths) and on random graphs with and without cycles."""

import pickle
import random
import subprocess
import sys

import numpy as np
import pytest

from archsim.numba_cache import LazyKernel, njit, small_in_python
from archsim.sim import Dep, Link, Op, Problem, Processor
from archsim.sim import arrays as sim_arrays
from archsim.sim import kernel as sim_kernel
from archsim.sim.engine import PriorityPolicy, _ranks


def random_problem(seed: int) -> Problem:
    rng = random.Random(seed)
    n_procs, streams = rng.randint(1, 4), rng.randint(1, 3)
    procs = tuple(Processor(f"p{i}", streams) for i in range(n_procs))
    links = tuple(Link(f"l{i}{j}", f"p{i}", f"p{j}", rng.choice([1.0, 4.0]), rng.choice([0.0, 0.5]))
                  for i in range(n_procs) for j in range(n_procs) if i != j and rng.random() < 0.6)
    by_pair = {(link.src, link.dst): link.name for link in links}
    n = rng.randint(1, 300)
    ops, deps = [], []
    for i in range(n):
        proc = f"p{rng.randrange(n_procs)}"
        stream = rng.randrange(streams) if rng.random() < 0.2 else None
        ops.append(Op(f"o{i}", proc, rng.choice([0.0, 0.5, 1.0, 1.5, rng.uniform(0.1, 3)]),
                      (rng.randrange(3), rng.randrange(5)), stream=stream))
        for j in rng.sample(range(i), min(i, rng.randint(0, 3))):
            src = ops[j].processor
            if src == proc:
                deps.append(Dep(f"o{j}", f"o{i}"))
            elif (src, proc) in by_pair:
                deps.append(Dep(f"o{j}", f"o{i}", rng.choice([0, 2, 5]), by_pair[src, proc]))
    return Problem(procs, links, tuple(ops), tuple(deps))


def kernel_inputs(problem: Problem):
    return problem.arrays, _ranks(problem, PriorityPolicy()), len(problem.links)


def random_graph(seed: int) -> tuple[int, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    m = int(rng.integers(1, 3 * n))
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    if seed % 2:  # half of them acyclic: edges forward only
        src, dst = np.minimum(src, dst), np.maximum(src, dst)
        keep = src != dst
        src, dst = src[keep], dst[keep]
    return n, src.astype(np.int64), dst.astype(np.int64)


_CHILD = """
import pickle, sys
from archsim.sim.kernel import run_arrays
from archsim.sim.arrays import acyclic
problems, graphs = pickle.loads(sys.stdin.buffer.read())
out = ([run_arrays(*p) for p in problems], [acyclic(*g) for g in graphs])
assert "numba" not in sys.modules, "a small input loaded numba"
sys.stdout.buffer.write(pickle.dumps(out))
"""


def test_uncompiled_small_runs_equal_the_compiled_kernel(monkeypatch):
    problems = [kernel_inputs(random_problem(seed)) for seed in range(120)]
    graphs = [random_graph(seed) for seed in range(200)]
    done = subprocess.run([sys.executable, "-c", _CHILD], input=pickle.dumps((problems, graphs)),
                          capture_output=True, check=True)
    python_runs, python_acyclic = pickle.loads(done.stdout)
    monkeypatch.setattr(sim_kernel, "PYTHON_WORK", -1)
    monkeypatch.setattr(sim_arrays, "PYTHON_WORK", -1)
    for inputs, python in zip(problems, python_runs):
        compiled = sim_kernel.run_arrays(*inputs)
        for part_py, part_nb in zip(python, compiled):
            for a, b in zip(part_py, part_nb):
                assert a.dtype == b.dtype and np.array_equal(a, b)
    assert python_acyclic == [sim_arrays.acyclic(*g) for g in graphs]
    assert True in python_acyclic and False in python_acyclic


def test_a_lazy_kernel_compiles_on_its_first_compiled_call_only():
    @njit(cache=False)
    def double(x):
        return 2 * x

    assert isinstance(double, LazyKernel) and not double.loaded
    with small_in_python(double, work=5, limit=10) as python:
        assert python and double(3) == 6
    assert not double.loaded  # the small call ran uncompiled
    with small_in_python(double, work=50, limit=10) as python:
        assert not python and double(4) == 8
    assert double.loaded and double.signatures


@pytest.mark.parametrize("work, limit, expected", [(0, 0, True), (1, 0, False)])
def test_the_limit_is_inclusive(work, limit, expected):
    @njit
    def identity(x):
        return x

    with small_in_python(identity, work, limit) as python:
        assert python is expected
