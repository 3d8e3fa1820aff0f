"""``archsim pipeline --dfg``'s cost: the same command with and without the DFG, in one run.

    .venv/bin/python benchmarks/bench_dfg.py [--network resnet101] [--processors 8] [--repeats 3]
        [--compare-with CHECKOUT] [--out CSV]

Runs ``archsim pipeline NETWORK --processors P`` and the same with ``--dfg`` in fresh child processes,
alternating, and keeps each case's least CPU time of ``--repeats`` (the steadier figure on a shared
machine; wall seconds beside it). The ratio is the DFG run's time over the plain run's; the child also
times the iteration bound (:func:`archsim.dfg.loops.iteration_bound`, Lawler's search with Bellman–Ford)
alone. With ``--compare-with`` another source tree (e.g. an extracted earlier commit) runs the same
children in the same session, and its DFG must give the same iteration bound and critical loop (as a set
of nodes: where the loop's listing starts may differ) — exit 1 if not.
Writes ``benchmarks/results/dfg_speed.csv``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
start, start_cpu = time.perf_counter(), time.process_time()
import importlib
loops = importlib.import_module("archsim.dfg.loops")
from archsim.cli import main
spent = {"bound_s": 0.0, "bound_cpu_s": 0.0}
inner = loops.iteration_bound
def timed(*args, **kwargs):
    t, c = time.perf_counter(), time.process_time()
    try:
        return inner(*args, **kwargs)
    finally:
        spent["bound_s"] += time.perf_counter() - t
        spent["bound_cpu_s"] += time.process_time() - c
loops.iteration_bound = timed
of_plan = importlib.import_module("archsim.dfg.of_plan")
of_plan.iteration_bound = timed
code = main(sys.argv[1:] + ["--format", "json", "--out", OUT])
spent["command_s"] = time.perf_counter() - start
spent["command_cpu_s"] = time.process_time() - start_cpu
spent["exit"] = code
print(json.dumps(spent))
"""


def run_child(tree: Path, argv: list[str], scratch: Path) -> dict:
    code = CHILD.replace("OUT", repr(str(scratch / "table.json")))
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env, cwd=tree,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"bench_dfg: error: {tree}: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def bound_of(path: Path) -> tuple[float, frozenset[str]]:
    bound = json.loads(path.read_text(encoding="utf-8"))["iteration_bound"]
    return bound["per_slot"], frozenset(bound["critical_loop"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", default="resnet101")
    parser.add_argument("--processors", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--compare-with", default=None, metavar="CHECKOUT")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "dfg_speed.csv"))
    args = parser.parse_args(argv)
    trees = {"this": ROOT} | ({"other": Path(args.compare_with).resolve()} if args.compare_with else {})
    base = ["pipeline", args.network, "--processors", str(args.processors)]
    best: dict[tuple[str, str], dict] = {}
    bounds = {}
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        for _ in range(args.repeats):
            for name, tree in trees.items():
                for case in ("plain", "dfg"):
                    extra = ["--dfg", str(scratch / f"{name}.json")] if case == "dfg" else []
                    got = run_child(tree, base + extra, scratch)
                    kept = best.get((name, case))
                    if kept is None or got["command_cpu_s"] < kept["command_cpu_s"]:
                        best[(name, case)] = got
            bounds = {name: bound_of(scratch / f"{name}.json") for name in trees}
    rows = []
    for name in trees:
        plain, dfg = best[(name, "plain")], best[(name, "dfg")]
        rows.append({"tree": name, "network": args.network, "processors": args.processors,
                     "plain_cpu_s": plain["command_cpu_s"], "dfg_cpu_s": dfg["command_cpu_s"],
                     "plain_wall_s": plain["command_s"], "dfg_wall_s": dfg["command_s"],
                     "bound_cpu_s": dfg["bound_cpu_s"], "dfg_over_plain": dfg["command_cpu_s"] / plain["command_cpu_s"],
                     "same_bound": bounds[name] == bounds["this"]})
    if "other" in trees:
        rows[0]["this_over_other_dfg"] = rows[0]["dfg_cpu_s"] / rows[1]["dfg_cpu_s"]
        rows[0]["this_over_other_bound"] = rows[0]["bound_cpu_s"] / max(rows[1]["bound_cpu_s"], 1e-9)
    import pandas as pd

    from archsim.outputs import atomic_write_text

    frame = pd.DataFrame(rows)
    atomic_write_text(args.out, frame.to_csv(index=False))
    print(frame.to_string(index=False))
    return 0 if all(row["same_bound"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
