"""The default sweep on this tree vs on an earlier commit, alternating fresh processes in one run.

    .venv/bin/python benchmarks/bench_sweep_history.py [--before 6cbbc72] [--repeats 5]

A speed-up claimed against a figure measured on another day is a claim about the machine's load
as much as the code: this script measures both sides now. ``--before`` is any commit of this
repository (default: 6cbbc72, where the scale issue measured its 5.5–6.0 s); its tree is
exported with ``git archive`` to a temporary folder and imported ahead of the installed archsim
(``PYTHONPATH``; same virtualenv, same numpy and pandas). Each side's child process imports
archsim.sweep, numpy and pandas, then times ``run_sweep`` of that tree's own
``configs/sweeps/layerpipe_paper.toml`` into an empty folder (cold: nothing cached) — the
measurement of ``bench_sweep.py`` — and separately reports its import time. One untimed run of
each side first fills numba's caches (the earlier tree compiles its kernels into its own folder).
Configurations whose cycles per iteration differ between the sides are listed (results are
checked byte for byte against recorded files in tests/test_sweep_reference.py, not here): against
6cbbc72, four ResNet-50 PipeDream rows on 3 processors, where 882642b made PipeDream's partition
the released optimizer's search over the DAG's antichain states.

Writes benchmarks/results/sweep_history.csv atomically: one row per timed run.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]

from archsim.outputs import atomic_write_text

# Runs in the child, from a folder holding nothing importable: sys.path[0] is that folder, so
# PYTHONPATH (the earlier tree) comes before the installed archsim.
CHILD = '''
import json, sys, tempfile, time
from pathlib import Path
start = time.perf_counter()
import numpy, pandas
from archsim.sweep import load_spec, run_sweep
imported = time.perf_counter()
spec = load_spec(sys.argv[1])
with tempfile.TemporaryDirectory() as folder:
    begin, cpu = time.perf_counter(), time.process_time()
    frame = run_sweep(spec, folder, workers=1, progress=False)
    wall, cpu = time.perf_counter() - begin, time.process_time() - cpu
keys = ["network", "rows", "cols", "dataflow", "batch", "mode", "processors", "method"]
column = "iteration_cycles" if "iteration_cycles" in frame else "cycles_per_iteration"  # older trees
cycles = {"|".join(str(row[k]) for k in keys): float(row[column]) for row in frame[keys + [column]].to_dict("records")}
print(json.dumps({"archsim": str(Path(sys.modules["archsim"].__file__).parent), "import_s": imported - start,
                  "sweep_s": wall, "sweep_cpu_s": cpu, "configurations": len(frame), "cycles": cycles}))
'''


def export(commit: str, folder: Path) -> Path:
    """``commit``'s tree under ``folder`` (git archive: tracked files only, no build outputs)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        # git's own archive; the "data" filter (Python ≥ 3.11.4) refuses links out of the folder anyway
        tar.extractall(folder, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    return folder


def run_side(tree: Path, work: Path, earlier: bool) -> dict:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if earlier:
        env["PYTHONPATH"] = str(tree)
    spec = tree / "configs" / "sweeps" / "layerpipe_paper.toml"
    done = subprocess.run([sys.executable, str(work / "child.py"), str(spec)], cwd=work, env=env, check=True,
                          capture_output=True, text=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if Path(result["archsim"]).resolve() != (tree / "archsim").resolve():
        raise SystemExit(f"the child imported archsim from {result['archsim']}, not {tree / 'archsim'}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="6cbbc72", help="the earlier commit (default 6cbbc72)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of each side (default 5)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as temp:
        work = Path(temp) / "work"
        work.mkdir()
        (work / "child.py").write_text(CHILD)
        before = export(args.before, Path(temp) / "before")
        sides = {f"before ({args.before})": (before, True), "now": (ROOT, False)}
        for tree, earlier in sides.values():  # untimed: numba caches, file-system caches
            run_side(tree, work, earlier)
        rows, cycles = [], {}
        for repeat in range(args.repeats):
            for side, (tree, earlier) in sides.items():
                result = run_side(tree, work, earlier)
                cycles[side] = result.pop("cycles")
                rows.append({"side": side, "repeat": repeat + 1, **{k: v for k, v in result.items() if k != "archsim"}})
    frame = pd.DataFrame(rows)
    mismatched = [key for key in cycles["now"] if cycles[f"before ({args.before})"].get(key) != cycles["now"][key]]
    for side, group in frame.groupby("side", sort=False):
        print(f"{side}: sweep {', '.join(f'{s:.2f}' for s in group.sweep_s)} s "
              f"(median {statistics.median(group.sweep_s):.2f}), imports median {statistics.median(group.import_s):.2f} s, "
              f"{group.configurations.iloc[0]} configurations")
    paired = frame.pivot(index="repeat", columns="side", values="sweep_s")
    ratios = paired[f"before ({args.before})"] / paired["now"]
    print(f"speed-up, run by run: {', '.join(f'{r:.2f}x' for r in ratios)} (median {ratios.median():.2f}x)")
    with_imports = frame.assign(total=frame.import_s + frame.sweep_s).pivot(index="repeat", columns="side",
                                                                           values="total")
    print(f"with the imports counted: median {(with_imports[f'before ({args.before})'] / with_imports['now']).median():.2f}x")
    print(f"cycles per iteration: {len(cycles['now']) - len(mismatched)} of {len(cycles['now'])} configurations equal"
          + "".join(f"\n  differs: {key}" for key in mismatched))
    atomic_write_text(ROOT / "benchmarks" / "results" / "sweep_history.csv", frame.to_csv(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
