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
from archsim.sim.engine import PriorityPolicy, ranks


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
    return problem.arrays, ranks(problem, PriorityPolicy()), len(problem.links)


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


@pytest.mark.long
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


_PRM_CHILD = """
import pickle, sys
from archsim.spp.prm import prm_tables
cases = pickle.loads(sys.stdin.buffer.read())
out = [prm_tables(*case) for case in cases]
assert "numba" not in sys.modules, "a small input loaded numba"
sys.stdout.buffer.write(pickle.dumps(out))
"""


def test_uncompiled_small_prm_tables_equal_the_compiled_kernel(monkeypatch):
    from test_spp import random_profile, random_topology

    from archsim.spp import prm

    cases = []
    for seed in range(60):
        layers, devices = seed % 9 + 1, seed % 7 + 1
        bandwidth = random_topology(seed + 5, devices).bandwidth
        if seed % 3 == 0:  # equal bandwidths: ties
            bandwidth = np.where(bandwidth > 0, np.round(bandwidth / 4) + 1, 0.0)
        order = [int(d) for d in np.random.default_rng(seed).permutation(devices)]
        cases.append((random_profile(seed, layers), order, bandwidth, seed % 5 + 1, min(layers, devices)))
    done = subprocess.run([sys.executable, "-c", _PRM_CHILD], input=pickle.dumps(cases), capture_output=True,
                          check=True)
    assert done.stderr == b""  # no division warnings: the uncompiled run divides as IEEE, silently
    monkeypatch.setattr(prm, "PYTHON_WORK", -1)
    assert pickle.loads(done.stdout) == [prm.prm_tables(*case) for case in cases]


_JIGSAW_CHILD = """
import pickle, sys
from archsim.cluster.jigsaw import simulate_jigsaw
cases = pickle.loads(sys.stdin.buffer.read())
out = [simulate_jigsaw(jobs, cluster, config, spb=spb) for jobs, cluster, config, spb in cases]
assert "numba" not in sys.modules, "a small input loaded numba"
sys.stdout.buffer.write(pickle.dumps(out))
"""


def jigsaw_case(seed: int):
    from archsim.cluster.jobs import JobCluster, JobSpec, SimConfig

    gib, rng = 2**30, random.Random(seed)
    machines = tuple(rng.randint(1, 3) for _ in range(rng.randint(1, 4)))
    jobs = []
    for j in range(rng.randint(1, 9)):
        workers = rng.randint(1, sum(machines))
        spb = tuple(rng.randint(1, 8) / 4 for _ in range(workers))  # a coarse grid: ties
        memory = tuple(rng.randint(1, 4) * gib for _ in range(workers))
        jobs.append(JobSpec(f"j{j}", rng.randint(0, 12) / 2, workers, rng.randint(1, 30), "m", max(spb), max(memory),
                            spb, memory, rng.choice([0.0, 1e8, 1e9, 4e9])))
    config = SimConfig(interval_s=rng.choice([0.0, 1.0, 3.0]), gamma_s_per_byte=rng.choice([0.0, 1e-10, 8e-10]),
                       unit_s=rng.choice([0.0, 0.0, 1.0, 4.0]))
    return jobs, JobCluster(machines, 16 * gib), config, rng.random() < 0.7


@pytest.mark.long
def test_uncompiled_small_jigsaw_runs_equal_the_compiled_kernel(monkeypatch):
    from archsim.cluster import jigsaw

    cases = [jigsaw_case(seed) for seed in range(150)]
    done = subprocess.run([sys.executable, "-c", _JIGSAW_CHILD], input=pickle.dumps(cases), capture_output=True,
                          check=True)
    monkeypatch.setattr(jigsaw, "PYTHON_WORK", -1)
    for case, python in zip(cases, pickle.loads(done.stdout)):
        jobs, cluster, config, spb = case
        compiled = jigsaw.simulate_jigsaw(jobs, cluster, config, spb=spb)
        assert python.jobs.astype(str).equals(compiled.jobs.astype(str))
        assert np.array_equal(python.busy, compiled.busy)
        assert (python.makespan_s, python.devices) == (compiled.makespan_s, compiled.devices)
