"""A pipeline rank's machine built per candidate vs once per layout, in one run: what a planned search asks
:meth:`GpuCluster.machine <archsim.training.cluster.GpuCluster.machine>` for.

    .venv/bin/python benchmarks/bench_rank_machine.py [--candidates 400]

The 1T GPT (configs/transformers/gpt_1t.toml) on configs/clusters/a100_384_servers.toml (3,072 A100s),
global batch 3,072: N candidates spread evenly over the 13,488 of ``archsim search --max-micro-batch 4`` that
pass the rules (81 TP × PP × DP layouts, every schedule, recompute and sequence parallelism; fewer per layout
than the search asks for, so the ratio is a lower bound), each one's rank-0 machine built by
:func:`~archsim.training.group_links.rank_machine` (as every call was before the cache) and then by a fresh
cluster's :meth:`machine` (built once per TP × PP × DP). CPU seconds of this process (``time.process_time``:
the machine is shared), their ratio, and the two equal (exit 1 if not). Writes
benchmarks/results/rank_machine_cache.csv.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archsim.choices.schedules import TRAINING_SCHEDULES as SCHEDULES
from archsim.output_files import write_output
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.group_links import rank_machine
from archsim.training.search_space import candidates, rejection
from archsim.workload.model_files import load_transformer

GLOBAL_BATCH = 3072


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=400, help="candidates timed (default 400)")
    args = parser.parse_args()
    model = load_transformer(ROOT / "configs" / "transformers" / "gpt_1t.toml")
    path = ROOT / "configs" / "clusters" / "a100_384_servers.toml"
    cluster = load_gpu_cluster(path)
    grid = [k for k in candidates(cluster.gpus, range(1, 5), ("none", "selective", "full"), SCHEDULES, (2, 4),
                                  (False, True))
            if rejection(model, k, GLOBAL_BATCH, cluster.gpus_per_server, True) is None]
    pars = [k.parallelism(GLOBAL_BATCH) for k in grid[::max(1, len(grid) // args.candidates)]]
    start = time.process_time()
    built = [rank_machine(cluster, par) for par in pars]
    each = time.process_time() - start
    fresh = load_gpu_cluster(path)
    start = time.process_time()
    cached = [fresh.machine(par) for par in pars]
    once = time.process_time() - start
    layouts = len({(p.tp, p.pp, p.dp) for p in pars})
    same = built == cached
    print(f"{len(pars)} candidates over {layouts} layouts: built per candidate {each:.3f} CPU s "
          f"({each / len(pars) * 1e3:.2f} ms each), once per layout {once:.3f} CPU s; ratio {each / once:.1f}; "
          f"machines equal: {same}")
    write_output(ROOT / "benchmarks" / "results" / "rank_machine_cache.csv",
                 "candidates,layouts,per_candidate_cpu_s,per_layout_cpu_s,ratio,equal\n"
                 f"{len(pars)},{layouts},{each:.4f},{once:.4f},{each / once:.2f},{same}\n")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
