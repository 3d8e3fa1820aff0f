"""``archsim cluster``: SPB + Jigsaw against gang baselines on a job trace (SPB paper §3–§4.2)."""

from __future__ import annotations

import argparse

from archsim.choices.cluster import MIGRATION_COSTS, POLICIES
from archsim.cluster_run import (
    DEFAULT_JOBS,
    DEFAULT_MAX_PACK,
    DEFAULT_MIGRATION_COST,
    DEFAULT_SEED,
    DEFAULT_SEEDS,
    DEFAULT_UNIT_SECONDS,
)
from archsim.commands import Command
from archsim.commands.common import add_output_arguments, emit, positive_int
from archsim.output_files import note_written
from archsim.output_targets import output_flag
from archsim.value_parsers import float_flag, int_flag, processors_flag, seed_flag

_non_negative = float_flag(0.0, 1e12, what="a non-negative number")  # finite; 10¹² s or GiB is beyond any cluster
_positive = float_flag(0.0, 1e12, low_open=True, what="a positive number")  # a device's memory: 0 holds no job


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trace", default="synthetic", metavar="FILE|synthetic",
                        help="Tiresias-format CSV (job_id,num_gpu,submit_time,iterations,model_name,duration,"
                             "interval) or 'synthetic' for the §4.2 workload (default)")
    parser.add_argument("--cluster", default=None, metavar="CLUSTER.toml",
                        help="read the machines from a cluster TOML, as train reads it: each server's GPUs, the GPU's "
                             "memory in GiB (usable_memory_gib, else the board's) and γ = 10^9 / one GPU's share of "
                             "its server's NICs in bytes/s; replaces --gpus, --gpus-per-machine, --device-memory-gb "
                             "and --gamma-ns-per-byte")
    # None: not given (--cluster refuses them; check_flags puts in the defaults)
    parser.add_argument("--gpus", type=processors_flag, default=None, help="devices in the cluster (default 45)")
    parser.add_argument("--gpus-per-machine", type=positive_int, default=None, help="devices per machine (default 3)")
    parser.add_argument("--device-memory-gb", type=_positive, default=None,
                        help="memory per device in GiB, 2^30 bytes, not GB (a cluster file's gpu_memory_gb is 10^9 "
                             "bytes); default 16, a V100's 16 GiB")
    parser.add_argument("--policy", default="jigsaw", choices=(*POLICIES, "all"),
                        help="scheduler; 'all' compares jigsaw, gandiva and tiresias (default jigsaw)")
    parser.add_argument("--compare", action="store_true", help="same as --policy all")
    # None: not given (a file trace refuses them; run() puts in the defaults)
    parser.add_argument("--seed", type=seed_flag, default=None,
                        help=f"synthetic trace seed (default {DEFAULT_SEED}; refused with a trace file)")
    parser.add_argument("--seeds", type=int_flag(1, 1000, "a seed count"), default=None,
                        help="on the synthetic trace: run seeds SEED … SEED+N−1 and print each policy's statistics "
                             f"over them (default {DEFAULT_SEEDS} with --policy all, else 1; refused with a trace file)")
    parser.add_argument("--jobs", type=int_flag(1, 100_000, "a job count"), default=None,
                        help=f"synthetic trace jobs (default {DEFAULT_JOBS}; refused with a trace file)")
    parser.add_argument("--interval", type=_non_negative, default=60.0, help="scheduling interval, s (default 60); a job waits for the first boundary at or after its "
                             "submit_time (0: admitted on arrival)")
    parser.add_argument("--gamma-ns-per-byte", type=_non_negative, default=None,
                        help="migration cost γ in ns per model byte (default 0.8: 10 Gb/s)")
    parser.add_argument("--migration-cost", choices=MIGRATION_COSTS, default=DEFAULT_MIGRATION_COST,
                        help="what a worker's move pays γ × model size for and counts as a migration: 'gpu', any "
                             "change of device (default), or 'machine', only a change of machine (a move between "
                             "devices of one machine free and uncounted; the SPB paper's §3.2 rule read with "
                             "machine = server)")
    parser.add_argument("--unit-seconds", type=_non_negative, default=None,
                        help="Jigsaw plans ≈ this many seconds of a job's iterations as one (0: every "
                             f"iteration, exact; about 20 s per 500-job run; default {DEFAULT_UNIT_SECONDS:g}; jigsaw, "
                             "jigsaw-nospb and all only)")
    parser.add_argument("--max-pack", type=positive_int, default=None,
                        help=f"Gandiva jobs per device (default {DEFAULT_MAX_PACK}; gandiva and all only)")
    parser.add_argument("--report", type=output_flag, default=None, metavar="OUT.html", help="write the HTML report (plotly)")
    parser.add_argument("--job-times", type=output_flag, default=None, metavar="OUT.csv",
                        help="write each job's times as CSV, a row per job of every run: policy, seed, job_id, "
                             "model_name, num_gpu, iterations, submit_seconds, start_seconds (its first task), "
                             "end_seconds, jct_seconds (end − submit), migrations (docs/formats.md)")
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from archsim.cluster_run import run_cluster
    from archsim.outputs import render

    done = run_cluster(args)
    frame = done.rows
    if done.per_seed is not None and args.format == "table":  # the means and spreads that fit a terminal
        keep = [c for c in frame.columns if c.endswith(("_mean", "_std")) and not c.startswith("migrations")
                and "median" not in c and "p95_seconds_std" not in c
                and not (c.endswith("_std") and frame[c].isna().all())]  # one run (a trace file): no spread, no nan
        frame = frame[["policy", "runs", *keep]]
    emit(render(frame, args.format, precision=args.precision, meta=done.meta), args)
    for wrote in (done.wrote, done.wrote_job_times):  # the order the run writes them
        if wrote:
            note_written(f"wrote {wrote}")
    return 0


COMMAND = Command("cluster", "SPB + Jigsaw vs Gandiva and Tiresias on a job trace: makespan, JCT, utilization",
                  add_arguments, run)
