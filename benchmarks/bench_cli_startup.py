"""CLI start-up: `archsim --help` lazy vs eager, and `archsim cost layerpipe_sample`, measured in one run.

    .venv/bin/python benchmarks/bench_cli_startup.py [--repeats 7]

Each sample is a fresh interpreter (what a user's shell pays): ``lazy`` runs ``archsim --help`` as
shipped (only the registry is imported); ``eager`` builds the full parser first, importing every
sub-command module as the CLI did before the registry became lazy; ``python`` is a bare
interpreter, the floor. ``cost`` runs ``archsim cost layerpipe_sample`` (analytic engine: numba is
not imported; its rows print without pandas); ``numpy`` imports numpy only, the floor of every command
that computes; ``pandas`` imports numpy and pandas, what a command that builds a DataFrame pays. Prints
the median and best wall time of each, the eager/lazy ratio and the load average, and writes
benchmarks/results/cli_startup.csv atomically. Then every command's ``--help`` in a fresh interpreter:
its CPU seconds (user + system, best of the repeats: load on the machine adds wall time, not CPU)
beside the 0.3 s goal, written to benchmarks/results/cli_help_cpu.csv (``--help-only``: this part only).
Children run in the caller's environment less ``PYTHONDONTWRITEBYTECODE`` (benchmarks/child_env.py): they read
and write bytecode caches as a user's install does, so the figures do not depend on how the caller was started.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from archsim.outputs import atomic_write_text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.child_env import user_environment

CHILD_ENV = user_environment()  # children cache bytecode as a user's install does
CASES = {
    "python": "pass",
    "lazy": "from archsim.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass",
    "numpy": "import numpy",
    "pandas": "import numpy, pandas",
    "cost": "from archsim.cli import main\nmain(['cost', 'layerpipe_sample'])",
    "eager": ("from archsim.cli import build_parser\nparser = build_parser()\ntry:\n    parser.parse_args(['--help'])\n"
              "except SystemExit:\n    pass"),
}


def sample(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=CHILD_ENV, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - start


HELP_GOAL_CPU_S = 0.3


def help_cpu(command: str) -> float:
    """CPU seconds (user + system) of ``archsim COMMAND --help`` in a fresh interpreter."""
    code = f"from archsim.cli import main\ntry:\n    main([{command!r}, '--help'])\nexcept SystemExit:\n    pass"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], env=CHILD_ENV, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def help_times(repeats: int, out: str) -> pd.DataFrame:
    from archsim.cli import REGISTRY

    rows = [{"command": name, "repeats": repeats, "best_cpu_s": min(help_cpu(name) for _ in range(repeats)),
             "goal_cpu_s": HELP_GOAL_CPU_S} for name, _, _ in REGISTRY]
    frame = pd.DataFrame(rows)
    frame["within_goal"] = frame.best_cpu_s <= HELP_GOAL_CPU_S
    print(frame.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    atomic_write_text(out, frame.to_csv(index=False))
    return frame


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "cli_startup.csv"))
    parser.add_argument("--help-out", default=str(ROOT / "benchmarks" / "results" / "cli_help_cpu.csv"))
    parser.add_argument("--help-only", action="store_true", help="only every command's --help CPU time")
    args = parser.parse_args(argv)
    if args.help_only:
        help_times(args.repeats, args.help_out)
        return 0
    times: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(args.repeats):  # interleaved, so load on the machine hits every case alike
        for name, code in CASES.items():
            times[name].append(sample(code))
    rows = [{"case": name, "repeats": args.repeats, "median_s": statistics.median(values), "best_s": min(values)}
            for name, values in times.items()]
    frame = pd.DataFrame(rows)
    ratio = frame.set_index("case").median_s["eager"] / frame.set_index("case").median_s["lazy"]
    print(frame.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    print(f"eager / lazy (median): {ratio:.1f}x; load average {os.getloadavg()}")
    atomic_write_text(args.out, frame.to_csv(index=False))
    help_times(args.repeats, args.help_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
