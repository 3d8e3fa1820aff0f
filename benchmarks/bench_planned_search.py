"""`archsim search --balance planned` with zero-bubble orders among its schedules: CPU seconds and output of this
checkout against an older one's (or the figures recorded before the planner's rank sizing kept its per-shape
figures, 2026-12-02), in one run.

    .venv/bin/python benchmarks/bench_planned_search.py [--compare-with CHECKOUT]

* ``gpt_1t``: docs/search.md's 1T planned search — the 1T GPT on configs/clusters/a100_384_servers.toml (3,072
  A100s), global batch 3,072, every schedule, ``--balance planned --refine 0 --max-micro-batch 4``.
* ``gpt3_175b_zb_h1``: GPT-3 175B on 1,024 of those GPUs, global batch 1,536, ZB-H1 only, the same flags.

Each command runs as its own process (``python -m archsim search ... --format json``, from the checkout's root);
its CPU seconds are the child's user + system time (``getrusage``: the machine is shared). With ``--compare-with`` the
same commands run first in CHECKOUT (a copy of an older commit's files, e.g. ``git archive``, where a search
has run once: numba compiles the event simulator once per checkout), and its output is the reference; without it, the reference is the recorded one (:data:`RECORDED`: CPU seconds and the output's
SHA-256, measured on commit 771a71e6 on the shared two-core development machine). Prints each ratio (before / now)
and whether the output is byte-identical (exit 1 if not). Writes benchmarks/results/planned_search_speed.csv.
"""

from __future__ import annotations

import argparse
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
RECORDED = {  # commit 771a71e6 (before), 2026-12-02: CPU s (user + system) and the output's SHA-256
    "gpt_1t": (151.42, "c9574e0bd87c33f124e073ea9d7ce2dcdec5836b0005a61c513755c108a3de56"),
    "gpt3_175b_zb_h1": (16.82, "abb98edbd36b5b1d1eaa3a779eb2dede7c822beee17b32df49cca630a3b0cf8d"),
}


def run(root: Path, args: list[str]) -> tuple[float, bytes]:
    """CPU seconds (user + system) of ``python -m archsim search ARGS`` run in ``root``, and its standard output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, "-m", "archsim", "search", *args], cwd=root, capture_output=True,
                         check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare-with", type=Path, help="an older checkout's root, run first as the reference")
    args = parser.parse_args()
    lines, same_all = ["search,before_cpu_s,now_cpu_s,ratio,identical,sha256"], True
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
