"""One GPT-3 175B ``train`` in process and its uncompiled simulation, part by part (CPU milliseconds).

    .venv/bin/python benchmarks/bench_train_in_process.py [--calls 30]

GPT-3 175B on 1,024 A100 (``configs/transformers/gpt3_175b.toml`` on ``dgx_a100_superpod.toml``,
TP 8, PP 8, DP 16, global batch 1,536: ``bench_claims.train_in_process``'s configuration), 1F1B and
interleaved (V = 2). For each: the first call in this process, then best and median of ``--calls``
calls of ``archsim.training.run.train``; then, on the 1F1B prediction's own problem, the event
simulation alone (``sim.kernel.run_arrays``, uncompiled: below ``PYTHON_WORK``) and the cycle check
(``sim.arrays.acyclic``). Only public functions are called, so the same file times an older checkout
(``PYTHONPATH=CHECKOUT``). CPU time of this process (``time.process_time``), the steadier figure on a
shared machine. Nothing is written; timings are not tests.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(function: Callable[[], object], calls: int) -> tuple[float, float]:
    """(best, median) CPU milliseconds of ``calls`` calls."""
    spent = []
    for _ in range(calls):
        start = time.process_time()
        function()
        spent.append((time.process_time() - start) * 1e3)
    return min(spent), statistics.median(spent)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args(argv)
    from archsim.sim import arrays as sim_arrays
    from archsim.sim import kernel as sim_kernel
    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.training.parallel import Parallelism
    from archsim.training.run import train
    from archsim.workload.model_files import load_transformer

    print(f"archsim from {Path(sim_kernel.__file__).parents[2]}")
    config = load_transformer(ROOT / "configs" / "transformers" / "gpt3_175b.toml")
    cluster = load_gpu_cluster(ROOT / "configs" / "clusters" / "dgx_a100_superpod.toml")
    run_arrays, seen = sim_kernel.run_arrays, []

    def kept(*inputs):  # the simulation's inputs, kept for timing it alone
        seen.append(inputs)
        return run_arrays(*inputs)

    for chunks in (1, 2):
        par = Parallelism(8, 8, 16, 1536, 1, "full", False, chunks, "1f1b", None, "flash")
        machines = cluster.laid_out(par)
        predict = functools.partial(train, config, par, machines[0], machines)
        sim_kernel.run_arrays = kept
        start = time.process_time()
        predict()
        first = (time.process_time() - start) * 1e3
        sim_kernel.run_arrays = run_arrays
        best, median = timed(predict, args.calls)
        print(f"train, V = {chunks}: first call {first:.1f} ms, then best {best:.2f} ms, median {median:.2f} ms")
    problem, rank, links, *blocking = seen[0]  # blocking: the links whose sender waits (1F1B's Megatron sends)
    best, median = timed(lambda: run_arrays(problem, rank, links, *blocking), args.calls)
    print(f"simulation alone (V = 1, {len(problem.proc)} ops, {len(problem.dep_dst)} dependencies): "
          f"best {best:.2f} ms, median {median:.2f} ms")
    edges = problem.out_edges()
    best, median = timed(lambda: sim_arrays.acyclic(len(problem.proc), problem.dep_src, problem.dep_dst, edges),
                         args.calls)
    print(f"cycle check alone (V = 1): best {best:.2f} ms, median {median:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
