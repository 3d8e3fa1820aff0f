"""The simulator on ~100k ops: a manual timing check, not a timed unit test.

Run ``.venv/bin/python tests/test_sim_scale.py`` to print build / simulate / validate seconds for
a few shapes (few or many processors, one or two streams, links). Under pytest the same problems
run only with ``-m slow`` and assert validity, never a time.
"""

import random
import time

import pytest

from archsim.sim import Dep, Link, Op, Problem, Processor, simulate, validate_timeline

SHAPES = [(8, 1), (8, 2), (1000, 1)]  # (processors, streams)


def ring_problem(ops: int, processors: int, streams: int, seed: int = 0, fan_in: int = 3) -> Problem:
    """Op i on processor i mod P; each takes up to ``fan_in`` deps from the previous 50 ops: free on
    its own processor, over the ring link from the previous processor, skipped otherwise."""
    rng = random.Random(seed)
    procs = tuple(Processor(f"p{i}", streams) for i in range(processors))
    links = tuple(Link(f"l{i}", f"p{i}", f"p{(i + 1) % processors}", 10.0, 0.1) for i in range(processors))
    op_list, deps = [], []
    for i in range(ops):
        p = i % processors
        op_list.append(Op(f"o{i}", f"p{p}", rng.uniform(0.5, 2.0), (rng.randrange(4), i)))
        for _ in range(fan_in):
            j = i - rng.randrange(1, 50)
            if j < 0:
                continue
            q = j % processors
            if q == p:
                deps.append(Dep(f"o{j}", f"o{i}"))
            elif (q + 1) % processors == p:
                deps.append(Dep(f"o{j}", f"o{i}", 5, f"l{q}"))
    return Problem(procs, links if processors > 1 else (), tuple(op_list), tuple(deps))


@pytest.mark.slow
@pytest.mark.parametrize("processors, streams", SHAPES)
def test_a_hundred_thousand_ops_give_a_valid_timeline(processors, streams):
    problem = ring_problem(100_000, processors, streams)
    assert validate_timeline(problem, simulate(problem)) == []


def main() -> None:
    for processors, streams in SHAPES:
        t0 = time.perf_counter()
        problem = ring_problem(100_000, processors, streams)
        t1 = time.perf_counter()
        timeline = simulate(problem)
        t2 = time.perf_counter()
        errors = validate_timeline(problem, timeline)
        t3 = time.perf_counter()
        print(f"{len(problem.ops)} ops, {len(problem.deps)} deps, {processors} processors × {streams} streams: "
              f"build {t1 - t0:.2f} s, simulate {t2 - t1:.2f} s, validate {t3 - t2:.2f} s, "
              f"{len(errors)} violations, makespan {timeline.makespan:.1f}")


if __name__ == "__main__":
    main()
