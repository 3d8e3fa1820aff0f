"""The fixed cost of every command: each on a small input against ``python -c pass``, in one run.

    python benchmarks/bench_fixed_cost.py [--repeats 5] [--pipedream PIPEDREAM_CHECKOUT --python PYTHON
                                          [--pd-repeats 20] [--only-pipedream]]

For each command (as a user runs it: a fresh process) the best and the median of ``--repeats`` runs'
CPU seconds (user + system of the child) and the best wall seconds, the same for ``python -c pass`` and
for importing the CLI alone, the commands' runs interleaved round by round (a change of load on a shared
machine falls on all of them), and the fixed part named: the heavy packages the command imported and
their cumulative import seconds (``python -X importtime``, one more run). The 1-minute load average
before and after is printed and written beside each row. Target: under 0.5 s each on an idle machine.

With ``--pipedream`` (a checkout of msr-fiddle/pipedream and a Python with numpy and graphviz, see
benchmarks/pipedream_reference.py) it also times ``archsim plan --method pipedream`` against the released
``optimizer_graph_hierarchical.py`` as commands, on the smallest shipped profile and the largest that archsim plans (``COMPARED_PROFILES``), 4
machines at 16 GB/s, activations ignored (the released CLI's default; ``configs/clusters/testbed_v100.toml``
is that cluster), and checks they print the same time per stage. Writes benchmarks/results/fixed_cost.csv
(and pipedream_commands.csv).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.child_env import user_environment

PROFILES = ROOT / "tests" / "data" / "pipedream" / "profiles"
CLUSTER = ROOT / "configs" / "clusters" / "testbed_v100.toml"
# The smallest shipped profile, and the largest archsim plans: nasnetalarge, nasnetamobile and inception_v3
# have over 20,000 antichain states, which archsim refuses (in about a second) and the released optimizer
# searches for many minutes (nasnetalarge: not finished after 20 minutes).
COMPARED_PROFILES = ("alexnet", "densenet121")
HEAVY = ("pandas", "numba", "scipy", "networkx", "plotly", "tqdm", "onnx", "torch", "numpy")
ARCHSIM = [sys.executable, "-m", "archsim"]
# Children read and write bytecode caches, as an installed package has them (benchmarks/child_env.py; the
# released optimizer's few modules too). The first of the repeats writes them; the best is reported.
CHILD_ENV = user_environment(PYTHONWARNINGS="ignore")

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import archsim.cli": [sys.executable, "-c", "import archsim.cli"],
    "gemm": [*ARCHSIM, "gemm", "--m", "64", "--k", "64", "--n", "64"],
    "cost": [*ARCHSIM, "cost", "layerpipe_sample"],
    "energy": [*ARCHSIM, "energy", "layerpipe_sample"],
    "pipeline": [*ARCHSIM, "pipeline", "layerpipe_sample", "--processors", "2"],
    "schedule (network)": [*ARCHSIM, "schedule", "layerpipe_sample", "--policy", "gpipe", "--processors", "2",
                           "--microbatches", "2"],
    "schedule (per stage)": [*ARCHSIM, "schedule", "--stages", "2", "--stage-times", "1,1,1", "--microbatches", "4",
                             "--policy", "zb-h1"],
    "plan (pipedream)": [*ARCHSIM, "plan", str(PROFILES / "alexnet.txt"), "--cluster", str(CLUSTER),
                         "--microbatches", "4", "--method", "pipedream"],
    "plan (spp)": [*ARCHSIM, "plan", str(PROFILES / "alexnet.txt"), "--cluster", str(CLUSTER), "--microbatches", "4"],
    "bppsa rnn": [*ARCHSIM, "bppsa", "rnn"],
    "cluster": [*ARCHSIM, "cluster", "--trace", "synthetic", "--jobs", "8"],
    "import": [*ARCHSIM, "import", "layerpipe_sample"],
}


def timed(argv: list[str], cwd: Path = ROOT) -> tuple[float, float, subprocess.CompletedProcess]:
    """CPU seconds (user + system) and wall seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=CHILD_ENV, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr[-500:]}")
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall, done




def heavy_imports(argv: list[str]) -> dict[str, float]:
    """Cumulative import seconds of each heavy top-level package the command imported."""
    done = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], cwd=ROOT, capture_output=True, text=True,
                          env=CHILD_ENV, check=False)
    found = {}
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \| (\s*)(\S+)$", line)
        if match and match[3] in HEAVY and match[3] not in found:
            found[match[3]] = int(match[1]) / 1e6
    return found


def fixed_costs(repeats: int) -> list[dict]:
    load = os.getloadavg()[0]
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in COMMANDS}
    for _ in range(repeats):  # round by round: every command sees the same spells of load
        for name, argv in COMMANDS.items():
            cpu, wall, _ = timed(argv)
            runs[name].append((cpu, wall))
    load = max(load, os.getloadavg()[0])
    rows = []
    for name, argv in COMMANDS.items():
        cpu = min(r[0] for r in runs[name])
        median = statistics.median(r[0] for r in runs[name])
        wall = min(r[1] for r in runs[name])
        imports = heavy_imports(argv)
        rows.append({"command": name, "repeats": repeats, "cpu_seconds": round(cpu, 3),
                     "cpu_median_seconds": round(median, 3), "wall_seconds": round(wall, 3),
                     "heavy_imports": " ".join(f"{k}:{v:.2f}s" for k, v in sorted(imports.items(), key=lambda x: -x[1])),
                     "under_half_second": cpu < 0.5, "load_average": round(load, 2)})
        print(f"{name:22s} cpu {cpu:6.3f} s (median {median:6.3f})  wall {wall:6.3f} s  {rows[-1]['heavy_imports']}",
              flush=True)
    return rows


def pipedream_commands(checkout: Path, python: str, repeats: int) -> list[dict]:
    """archsim plan --method pipedream vs the released optimizer, both as commands, their runs
    alternating (so that a change of load on a shared machine falls on both): best and median CPU."""
    rows = []
    load = os.getloadavg()[0]
    python = str(Path(python).absolute()) if os.sep in python else python  # it runs in the checkout
    for profile in (PROFILES / f"{name}.txt" for name in COMPARED_PROFILES):
        local = checkout / "optimizer" / "profiles" / profile.name
        local.parent.mkdir(exist_ok=True)
        local.write_bytes(profile.read_bytes())
        theirs_cmd = [python, "optimizer_graph_hierarchical.py", "-f", f"profiles/{profile.name}", "-n", "4",
                      "-b", "1.6e10"]
        ours_cmd = [*ARCHSIM, "plan", str(profile), "--cluster", str(CLUSTER), "--microbatches", "4", "--method",
                    "pipedream", "--format", "json"]
        theirs_runs, ours_runs = [], []
        for _ in range(repeats):
            theirs_runs.append(timed(theirs_cmd, checkout / "optimizer"))
            ours_runs.append(timed(ours_cmd))
        theirs = float(re.search(r"Time per stage in pipeline: ([0-9.eE+-]+)", theirs_runs[-1][2].stdout)[1])
        ours = json.loads(ours_runs[-1][2].stdout)["meta"]["time_per_stage"]
        theirs_cpu, ours_cpu = (sorted(r[0] for r in runs) for runs in (theirs_runs, ours_runs))
        best_ratio = theirs_cpu[0] / ours_cpu[0]
        median_ratio = statistics.median(theirs_cpu) / statistics.median(ours_cpu)
        nodes = profile.read_text().count("forward_compute_time=")
        rows.append({"profile": profile.stem, "nodes": nodes, "repeats": repeats,
                     "released_cpu_seconds": round(theirs_cpu[0], 3), "archsim_cpu_seconds": round(ours_cpu[0], 3),
                     "speedup_cpu": round(best_ratio, 2),
                     "released_cpu_median": round(statistics.median(theirs_cpu), 3),
                     "archsim_cpu_median": round(statistics.median(ours_cpu), 3),
                     "speedup_cpu_median": round(median_ratio, 2),
                     "released_wall_seconds": round(min(r[1] for r in theirs_runs), 3),
                     "archsim_wall_seconds": round(min(r[1] for r in ours_runs), 3),
                     "same_time_per_stage": abs(ours - theirs) <= 1e-6 * theirs,
                     "load_average": round(max(load, os.getloadavg()[0]), 2)})
        print(f"{profile.stem} ({nodes} nodes): released {theirs_cpu[0]:.3f} s CPU (median "
              f"{statistics.median(theirs_cpu):.3f}), archsim {ours_cpu[0]:.3f} s (median "
              f"{statistics.median(ours_cpu):.3f}): ×{best_ratio:.2f} best, ×{median_ratio:.2f} median; same answer: "
              f"{rows[-1]['same_time_per_stage']}", flush=True)
    return rows


def write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs of each command (fixed costs)")
    parser.add_argument("--pd-repeats", type=int, default=20,
                        help="runs of each side in the PipeDream comparison (alternating)")
    parser.add_argument("--pipedream", type=Path, default=None)
    parser.add_argument("--python", default="python3")
    parser.add_argument("--only-pipedream", action="store_true", help="skip the per-command fixed costs")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}", flush=True)
    if not args.only_pipedream:
        write(args.out / "fixed_cost.csv", fixed_costs(args.repeats))
    if args.pipedream:
        write(args.out / "pipedream_commands.csv", pipedream_commands(args.pipedream, args.python, args.pd_repeats))
    print(f"load average after: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
