"""`archsim search --balance planned` with zero-bubble orders among its schedules: CPU seconds and output of this
checkout against an older one's (or the figures recorded on 2026-12-03, once flash was timed by the blocks its causal
kernel computes), in one run.

    .venv/bin/python benchmarks/bench_planned_search.py [--compare-with CHECKOUT]

* ``gpt_1t``: docs/search.md's 1T planned search — the 1T GPT on configs/clusters/a100_384_servers.toml (3,072
  A100s), global batch 3,072, every schedule, ``--balance planned --refine 0 --max-micro-batch 4``.
* ``gpt3_175b_zb_h1``: GPT-3 175B on 1,024 of those GPUs, global batch 1,536, ZB-H1 only, the same flags.

Each command runs as its own process (``python -m archsim search ... --format json``, from the checkout's root);
its CPU seconds are the child's user + system time (``getrusage``: the machine is shared). With ``--compare-with`` the
same commands run first in CHECKOUT (a copy of an older commit's files, e.g. ``git archive``, where a search
has run once: numba compiles the event simulator once per checkout), and its output is the reference; without it, the reference is the recorded one (:data:`RECORDED`: CPU seconds and the output's
SHA-256, measured on 2026-12-03 on the shared two-core development machine; a change that moves a search's
output must record its new SHA-256, as a run of this script prints it). Prints each ratio (before / now) and whether
the output is byte-identical (exit 1 if not). Writes benchmarks/results/planned_search_speed.csv, its ``#`` lines
saying how: the command, the commit, the date and the reference.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archsim.output_files import write_output

FLAGS = ["--balance", "planned", "--refine", "0", "--max-micro-batch", "4", "--format", "json"]
SEARCHES = {
    "gpt_1t": ["configs/transformers/gpt_1t.toml", "--cluster", "configs/clusters/a100_384_servers.toml",
               "--global-batch", "3072", "--top", "3", *FLAGS],
    "gpt3_175b_zb_h1": ["configs/transformers/gpt3_175b.toml", "--cluster", "configs/clusters/a100_384_servers.toml",
                        "--gpus", "1024", "--global-batch", "1536", "--schedule", "zb-h1", *FLAGS],
}
# 2026-12-03, FlashAttention-2's backward buffers in the working set and head dims as its v2.8.3 rounds them: CPU s
# (user + system) and the output's SHA-256. Until then commit 6c74115b's (flash timed by its causal blocks), 27.31 s
# (bdafe9dd…) and 4.11 s (793f1475…), whose outputs had changed since (the 1T search's at 63185286: cc122107…); before
# that commit 771a71e6's, 151.42 s (c9574e0b…) and 16.82 s (abb98edb…), the code before the planner's rank sizing
# kept its per-shape figures; the 175B search's SHA-256 had changed since with its per-shape memory.
RECORDED = {
    "gpt_1t": (28.81, "d3efe0652265a95fd880a632c97e799633f82098278015cf5aa4c17b62f7130d"),
    "gpt3_175b_zb_h1": (4.46, "fc80b7e74e84bcd0ca6ad7c70c6ab200ca7b7bf1fecb852f731c4f237ce9f1ce"),
}


def run(root: Path, args: list[str]) -> tuple[float, bytes]:
    """CPU seconds (user + system) of ``python -m archsim search ARGS`` run in ``root``, and its standard output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, "-m", "archsim", "search", *args], cwd=root, capture_output=True,
                         check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, out


def commit(root: Path) -> str:
    """``root``'s commit (short), with ``+ uncommitted changes`` where its files differ from it; "unknown" outside git."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()

    try:
        return git("rev-parse", "--short=8", "HEAD") + (" + uncommitted changes" if git("status", "--porcelain",
                                                                                        "--untracked-files=no") else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare-with", type=Path, help="an older checkout's root, run first as the reference")
    args = parser.parse_args()
    before_from = ("--compare-with an older checkout, run first in the same process" if args.compare_with is not None
                 else "RECORDED in benchmarks/bench_planned_search.py")
    flag = " --compare-with CHECKOUT" if args.compare_with is not None else ""
    lines = [f"# produced_by: python benchmarks/bench_planned_search.py{flag}",
             f"# commit: {commit(ROOT)}", f"# date: {datetime.date.today().isoformat()}",
             f"# before: {before_from}",
             "# cpu_s: user + system seconds of each python -m archsim search child (getrusage), shared two-core machine",
             "search,before_cpu_s,now_cpu_s,ratio,identical,sha256"]
    same_all = True
    for name, flags in SEARCHES.items():
        if args.compare_with is not None:
            before_s, reference = run(args.compare_with, flags)
            want = hashlib.sha256(reference).hexdigest()
        else:
            before_s, want = RECORDED[name]
        now_s, out = run(ROOT, flags)
        sha = hashlib.sha256(out).hexdigest()
        same = sha == want
        same_all &= same
        lines.append(f"{name},{before_s:.2f},{now_s:.2f},{before_s / now_s:.2f},{same},{sha}")
        print(f"{name}: before {before_s:.2f} CPU s, now {now_s:.2f} CPU s, ratio {before_s / now_s:.2f}; "
              f"output identical: {same}", flush=True)
    write_output(ROOT / "benchmarks" / "results" / "planned_search_speed.csv", "\n".join(lines) + "\n")
    return 0 if same_all else 1


if __name__ == "__main__":
    raise SystemExit(main())
