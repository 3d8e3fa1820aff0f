"""Run PipeDream's released optimizer, unchanged, and record what it prints.

PipeDream is not shipped with archsim: pass a checkout of msr-fiddle/pipedream (commit 7db6a1c)
with ``--pipedream DIR`` and a Python that has numpy and graphviz (``--python``). For each
setting and machine count this runs

    python optimizer_graph_hierarchical.py -f PROFILE -n N… -b B… [flags]

from ``DIR/optimizer`` and parses "Time per stage in pipeline", "Time taken by single-stage
pipeline" and each level's "(split start, split end) time replication" lines into the same
JSON layout as ``tests/data/pipedream/optimizer_results.json`` (also the settings below, which are
that file's). ``benchmarks/bench_pipedream.py`` uses :func:`run_optimizer` to time it.

    python benchmarks/pipedream_reference.py --pipedream ../pipedream --python python3 \
        --profile tests/data/pipedream/profiles/resnet18.txt --out tests/data/pipedream_resnet18.json
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

SETTINGS = {  # name → (levels for N machines, extra flags); bandwidths in bytes per second
    "flat": (lambda n: ([n], [1e9]), ["--activation_compression_ratio", "1"]),
    "flat_mem": (lambda n: ([n], [1e9]), ["--activation_compression_ratio", "1", "--use_memory_constraint"]),
    "flat_noact": (lambda n: ([n], [1e9]), []),
    "hier": (lambda n: (HIER[n], [1.6e10, 1.25e9]), ["--activation_compression_ratio", "1"]),
    "hier_mem": (lambda n: (HIER[n], [1.6e10, 1.25e9]),
                 ["--activation_compression_ratio", "1", "--use_memory_constraint"]),
}
HIER = {2: [1, 2], 4: [2, 2], 8: [4, 2], 16: [4, 4]}  # N → (GPUs per server, servers)
BLOCK = re.compile(r"^\((\d+), (\d+)\) (\S+) (\d+)$")


def run_optimizer(pipedream: Path, python: str, profile: Path, ns: list[int], bws: list[float],
                  flags: list[str]) -> tuple[dict, float]:
    """The optimizer's parsed output and its wall time in seconds (the profile is copied, unchanged,
    to the checkout's ``optimizer/profiles/`` so the recorded command line names no local path)."""
    local = pipedream / "optimizer" / "profiles" / profile.name
    if not local.exists():
        local.parent.mkdir(exist_ok=True)
        shutil.copyfile(profile, local)
    cmd = [python, "optimizer_graph_hierarchical.py", "-f", f"profiles/{profile.name}", "-n", *map(str, ns),
           "-b", *map(str, bws), *flags]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=pipedream / "optimizer", capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    record: dict = {"ns": ns, "bws": bws, "rc": done.returncode,
                    "cmd": " ".join(["optimizer_graph_hierarchical.py", *cmd[2:]])}
    levels, level = [], None
    for line in done.stdout.splitlines():
        if line.startswith("Level "):
            level = {"level": int(line.split()[1]), "blocks": []}
            levels.append(level)
        elif line.startswith("(Split start"):
            assert level is not None
            level["blocks"].append([])
        elif (match := BLOCK.match(line)) and level is not None:
            a, b, t, r = match.groups()
            level["blocks"][-1].append([int(a), int(b), float(t), int(r)])
        elif line.startswith("Time per stage in pipeline:"):
            record["time_per_stage"] = float(line.split(":")[1])
        elif line.startswith("Time taken by single-stage pipeline:"):
            record["single_stage_time"] = float(line.split(":")[1])
    record["levels"] = levels
    return record, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipedream", type=Path, required=True, help="checkout of msr-fiddle/pipedream")
    parser.add_argument("--python", default="python3", help="a Python with numpy and graphviz")
    parser.add_argument("--profile", type=Path, required=True)
    parser.add_argument("--machines", type=int, nargs="+", default=[2, 4, 8, 16])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    results = []
    for setting, (levels, flags) in SETTINGS.items():
        for n in args.machines:
            ns, bws = levels(n)
            record, seconds = run_optimizer(args.pipedream, args.python, args.profile, ns, bws, flags)
            record = {"model": args.profile.stem, "setting": setting, "N": n, **record}
            results.append(record)
            print(f"{setting} N={n}: {record.get('time_per_stage')} ({seconds:.1f} s)", flush=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
