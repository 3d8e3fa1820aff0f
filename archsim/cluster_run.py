"""``cluster``'s run from its flags' values, once for the command and ``archsim.cluster_trace`` (SPB + Jigsaw against
gang baselines on a job trace, SPB paper §3–§4.2): the flags checked, the trace read or drawn, every policy simulated
on every seed, the summary rows and meta, and the HTML report. ``args`` is any object with the flags' attributes (the
command's namespace, or the library's keywords); a note is said through ``speak(kind, text)``. Seconds throughout.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from archsim.choices.cluster import MAIN_POLICIES
from archsim.console import notes_kept, say_after_run, setting
from archsim.errors import InputError
from archsim.progress import polled, progress
from archsim.units import GIB

DEFAULT_SEED, DEFAULT_SEEDS, DEFAULT_JOBS = 0, 5, 500  # the synthetic trace's (§4.2: 500 jobs)
DEFAULT_UNIT_SECONDS, DEFAULT_MAX_PACK = 10.0, 2  # Jigsaw's planning block (s), Gandiva's jobs per device
# the machines without --cluster: §4.2's 45 V100s (16 GiB), 3 a machine, migrating over 10 GbE (0.8 ns per byte)
DEFAULT_GPUS, DEFAULT_GPUS_PER_MACHINE, DEFAULT_DEVICE_MEMORY_GIB, DEFAULT_GAMMA_NS_PER_BYTE = 45, 3, 16.0, 0.8
# what a migration is, and pays γ × model size (SimConfig.migration_cost): a change of device; "machine": of machine
DEFAULT_MIGRATION_COST = "gpu"
# the flags a cluster file (--cluster) replaces, in --help's order: given beside it, refused in one line
REPLACED_FLAGS = ("gpus", "gpus-per-machine", "device-memory-gb", "gamma-ns-per-byte")
# The policies that read a policy's own flag: given to a run of none of them, it would be echoed and ignored.
READERS = {"unit_seconds": ("jigsaw", "jigsaw-nospb"), "max_pack": ("gandiva",)}

Speak = Callable[[str, str], None]


@dataclass(frozen=True)
class ClusterRun:
    """One cluster run: ``rows``, each run's summary (one policy on one seed: its row; ``all``, or ``--seeds`` given:
    the statistics over seeds, :func:`archsim.cluster.metrics.aggregate`'s), ``meta`` as the command prints it,
    ``per_seed`` (statistics over seeds: every run's row with its seed, else None) and the report ``wrote`` (its path, or None)."""

    rows: Any  # a Rows of one policy's runs, or the DataFrame of statistics over seeds
    meta: dict
    per_seed: Any = field(default=None, repr=False)
    wrote: str | None = None
    wrote_job_times: str | None = None  # --job-times' path, written after the report


# --job-times' columns: each job of each run, in the trace's order (seconds from the trace's start)
JOB_TIME_COLUMNS = ("policy", "seed", "job_id", "model_name", "num_gpu", "iterations", "submit_seconds",
                    "start_seconds", "end_seconds", "jct_seconds", "migrations")


def job_time_rows(result: Any, jobs: Any, seed: int | None) -> list[dict]:
    """One run's jobs as :data:`JOB_TIME_COLUMNS` rows (``seed``: None on a trace file, which draws none): when each
    was submitted, first ran and finished, its completion time (finish − submit) and its workers' moves to another
    device (machine, under SimConfig.migration_cost "machine"), from the simulation's per-job columns (``result``,
    a :class:`~archsim.cluster.jobs.SimResult`)."""
    models = {job.job_id: job.model for job in jobs}
    columns = {name: result.column(name) for name in ("job_id", "workers", "iterations", "submit_s", "start_s",
                                                      "end_s", "jct_s", "migrations")}
    return [{"policy": result.policy, "seed": "" if seed is None else seed, "job_id": str(job_id),
             "model_name": models[str(job_id)], "num_gpu": int(workers), "iterations": int(iterations),
             "submit_seconds": float(submit), "start_seconds": float(start), "end_seconds": float(end),
             "jct_seconds": float(jct), "migrations": int(moves)}
            for job_id, workers, iterations, submit, start, end, jct, moves in zip(*columns.values(), strict=True)]


def granularity_note(args: Any, stats: Any) -> str:
    """What Jigsaw's planning unit means for the numbers on the page: this run's own figures (``stats``, its
    statistics over seeds, :func:`archsim.cluster.metrics.aggregate`'s frame: Jigsaw's migrations per iteration and
    makespan gains), then the default synthetic trace's, measured at both units (docs/papers/jigsaw.md), said to be
    that trace's (until 2026-12-03 the page quoted them as if they were the run's)."""
    if args.unit_seconds <= 0:
        unit = "Jigsaw plans every iteration on its own (--unit-seconds 0, exact)."
    else:
        unit = (f"Jigsaw plans blocks of about {args.unit_seconds:g} s of a job's iterations as one unit "
                "(--unit-seconds; 0 plans every iteration, exact but slower).")
    policy = "jigsaw" if "jigsaw" in set(stats.policy) else "jigsaw-nospb"
    mine = stats[stats.policy == policy].iloc[0]
    over = f" (means over its {mine.runs} seeds)" if mine.runs > 1 else ""
    gains = [f"{row.jigsaw_gain_makespan_pct_mean:.3g}% below {row.policy}'s" for row in stats.itertuples()
             if row.policy != "jigsaw" and "jigsaw_gain_makespan_pct_mean" in stats]
    this = (f"In this run{over} {policy} makes {mine.migrations_per_iteration_mean:.2g} worker migrations per "
            "iteration (a job's migrations ÷ its iterations, averaged over jobs: above 1 where several workers move at "
            "once)" + (f", and Jigsaw's makespan is {' and '.join(gains)}." if gains else "."))
    server = getattr(args, "migration_cost", DEFAULT_MIGRATION_COST) == "machine"
    move = ("each move to another machine pays" if server else "each move's")
    counted = " (counting every change of device, --migration-cost gpu)" if server else ""
    return (f"{unit} The unit decides how often a worker can lose its device to another job, and {move} "
            f"γ × model size ({args.gamma_ns_per_byte:g} ns/byte){', which' if server else ''} idles the device"
            f"{' (a move within one machine is free and not counted, --migration-cost machine)' if server else ''}. "
            f"{this} For comparison, measured on "
            f"the default synthetic trace (500 jobs, 45 GPUs, seeds 0–4; docs/papers/jigsaw.md){counted} at both units: planning "
            "every iteration makes 0.49 worker migrations per iteration against 0.0098 in 10 s blocks, and Jigsaw's makespan "
            "gain falls from ≈25% (10 s blocks) to 4–6% over Gandiva and Tiresias; see the migration and utilization "
            "figures.")


def report_command_line(args: Any, policy: str) -> str:
    machines = (["--cluster", args.cluster] if getattr(args, "cluster", None) else
                ["--gpus", str(args.gpus), "--gpus-per-machine", str(args.gpus_per_machine)])
    words = ["archsim", "cluster", "--trace", args.trace, *machines, "--policy", policy]
    if args.trace == "synthetic":  # the flags a trace file refuses
        several = policy == "all" or args.seeds != 1  # one policy's default: one seed
        words += ["--seed", str(args.seed), "--jobs", str(args.jobs)] + (["--seeds", str(args.seeds)] if several else [])
    defaults = {"device_memory_gb": DEFAULT_DEVICE_MEMORY_GIB, "interval": 60.0,
                "gamma_ns_per_byte": DEFAULT_GAMMA_NS_PER_BYTE, "unit_seconds": DEFAULT_UNIT_SECONDS,
                "max_pack": DEFAULT_MAX_PACK}
    if getattr(args, "cluster", None):  # the file's figures: --cluster names them
        defaults = {key: value for key, value in defaults.items() if key not in ("device_memory_gb", "gamma_ns_per_byte")}
    for key, default in defaults.items():
        if getattr(args, key) != default:
            words += [f"--{key.replace('_', '-')}", f"{getattr(args, key):g}"]
    if getattr(args, "migration_cost", None) not in (None, DEFAULT_MIGRATION_COST):
        words += ["--migration-cost", args.migration_cost]
    if args.report:
        words += ["--report", args.report]
    return shlex.join(words)


def check_flags(args: Any) -> None:
    """Refuse, before reading anything, a flag the run would ignore (given even at its default), then put in
    the defaults: --seed and --jobs draw the synthetic trace, --seeds repeats a comparison over it, and
    --unit-seconds and --max-pack are read by the policies :data:`READERS` names. --seeds defaults to
    :data:`DEFAULT_SEEDS` for a comparison and to one seed for one policy."""
    synthetic = args.trace == "synthetic"
    comparing = args.compare or args.policy == "all"
    cluster_file = getattr(args, "cluster", None)
    if cluster_file is not None:  # the file states the machines: a flag beside it would be overridden or ignored
        given = [flag for flag in REPLACED_FLAGS if getattr(args, flag.replace("-", "_")) is not None]
        if given:
            raise InputError(f"{setting('cluster')} reads {', '.join(setting(flag) for flag in REPLACED_FLAGS)} from "
                             f"{cluster_file}: drop {' and '.join(setting(flag) for flag in given)}", field=given[0])
    for flag, value in (("seed", args.seed), ("jobs", args.jobs)):
        if value is not None and not synthetic:
            raise InputError(f"{setting(flag)} draws the synthetic trace; {args.trace} is a trace file with its own "
                             "jobs: drop it", field=flag)
    if args.seeds is not None and not synthetic:
        raise InputError(f"{setting('seeds')} repeats a run over synthetic traces of seeds SEED … SEED+N−1; "
                         "a trace file is one run: drop it", field="seeds")
    for name, readers in READERS.items():
        if getattr(args, name) is not None and not comparing and args.policy not in readers:
            flag = name.replace("_", "-")
            raise InputError(f"{setting(flag)} is read by {' and '.join(readers)} only; {setting('policy', args.policy)} "
                             "runs without it: drop it (or compare the policies with "
                             f"{setting('policy', 'all')})", field=flag)
    args.unit_seconds = DEFAULT_UNIT_SECONDS if args.unit_seconds is None else args.unit_seconds
    args.max_pack = DEFAULT_MAX_PACK if args.max_pack is None else args.max_pack
    args.seed = DEFAULT_SEED if args.seed is None else args.seed
    args.seeds = (DEFAULT_SEEDS if comparing else 1) if args.seeds is None else args.seeds
    args.jobs = DEFAULT_JOBS if args.jobs is None else args.jobs
    if cluster_file is None:
        for name, default in (("gpus", DEFAULT_GPUS), ("gpus_per_machine", DEFAULT_GPUS_PER_MACHINE),
                              ("device_memory_gb", DEFAULT_DEVICE_MEMORY_GIB),
                              ("gamma_ns_per_byte", DEFAULT_GAMMA_NS_PER_BYTE)):
            if getattr(args, name) is None:
                setattr(args, name, default)


def machines(args: Any) -> tuple[Any, tuple[str, ...]]:
    """The :class:`~archsim.cluster.jobs.JobCluster` the run places jobs on and the file's warnings (the caller says
    them, so a library call's warning points at the line that called it): ``--cluster``'s file (its figures put into
    ``args`` for the meta and the report), else ``--gpus`` devices, ``--gpus-per-machine`` to a machine, of
    ``--device-memory-gb`` GiB, with no warnings."""
    from archsim.cluster.jobs import JobCluster
    from archsim.cluster_machines import read_machines

    if getattr(args, "cluster", None) is None:
        return JobCluster.uniform(args.gpus, args.gpus_per_machine, args.device_memory_gb * GIB), ()
    read = read_machines(args.cluster)
    args.gpus, args.gpus_per_machine = read.gpus, max(read.machine_sizes)
    args.device_memory_gb, args.gamma_ns_per_byte = read.device_memory_gib, read.gamma_ns_per_byte
    return JobCluster(read.machine_sizes, read.device_memory_gib * GIB), read.warnings


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, …, 11th, 12th, 13th, 21st."""
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def synthetic_job_named(trace: Any, field: str, seed: int) -> str:
    """Which job of the synthetic trace a refusal's ``field`` ("job ID model_name") names, said as the user can
    find it: its place in the drawn trace and its model (the id j0005 is the generator's, never written by the user)."""
    job_id = field.split(" ")[1]
    place = next(i for i, job in enumerate(trace) if job.job_id == job_id)
    job = trace[place]
    return (f"the synthetic trace (seed {seed}) draws as its {ordinal(place + 1)} job (job_id {job_id}) a {job.model} "
            f"of {job.workers} worker{'s' if job.workers != 1 else ''}, which needs ")


def memory_hint(trace: Any, catalog: Any, cluster: Any, args: Any) -> str:
    """What to give where a trace's model does not fit a device: the device memory in GiB, to the hundredth above,
    that holds the trace's largest model (every row's, not just the refused one's), as ``--device-memory-gb`` or
    a cluster file's GPUs; empty where every model fits (the refusal was another's)."""
    import math

    from archsim.cluster.catalog import lookup

    largest = max(lookup(catalog, job.model).full_memory_bytes for job in trace)
    if largest <= cluster.device_memory_bytes:
        return ""
    gib = math.ceil(largest / GIB * 100) / 100
    if getattr(args, "cluster", None):
        return f": give a cluster file whose GPUs hold {gib:g} GiB or more"
    return f": give {setting('device-memory-gb', gib)} or more"


def spb_use(policies: tuple[str, ...]) -> str:
    """The meta's ``spb``: which of the policies run use SPB. Only ``jigsaw`` does; the gang baselines run
    full backprop (§4.2) and ``jigsaw-nospb`` is Jigsaw's scheduler with full backprop everywhere (the ablation),
    so a run of those alone uses none (until 2026-12-06 every run said "jigsaw only", ``jigsaw-nospb``'s too)."""
    others = [name for name in policies if name != "jigsaw"]
    if "jigsaw" not in policies:
        return f"none ({' and '.join(others)} run{'s' if len(others) == 1 else ''} full backprop on every worker)"
    return "jigsaw only (baselines run full backprop, §4.2)" if others else "jigsaw (every worker's share of backprop, §2)"


def spb_note(policies: tuple[str, ...]) -> str:
    """The report's sentence on SPB, for the policies the page shows (:func:`spb_use`)."""
    if "jigsaw" not in policies:
        names = " and ".join(policies)
        nospb = " (Jigsaw's scheduler, the ablation of SPB's gain)" if "jigsaw-nospb" in policies else ""
        return f"No policy here runs SPB: {names}{nospb} back-propagate{'s' if len(policies) == 1 else ''} every layer on every worker."
    return "Baselines run without SPB; Jigsaw with SPB (§4.2)." if len(policies) > 1 else "Jigsaw runs with SPB (§2)."


MAX_ROUNDS = 10**6  # scheduling intervals one simulation may step through (≈ a minute of CPU)


def _check_rounds(jobs, interval_s: float) -> None:
    """Refuse, before simulating, a trace whose work alone spans more than MAX_ROUNDS intervals (a
    duration of 10¹² s at a 60 s interval would step for days)."""
    if interval_s <= 0 or not jobs:
        return
    span = max(j.submit_s for j in jobs) + sum(j.iterations * j.full_task_s for j in jobs)
    if span / interval_s > MAX_ROUNDS:
        raise InputError(f"the trace's work spans about {span:.3g} s, {span / interval_s:.3g} scheduling intervals of "
                         f"{interval_s:g} s: above the limit of {MAX_ROUNDS:,}; shorten the jobs or raise --interval",
                         field="trace")


def run_cluster(args: Any, *, speak: Speak = say_after_run) -> ClusterRun:
    """The summary ``archsim cluster`` prints for ``args`` (defaults put in by :func:`check_flags`), the report
    written after the run where ``args.report`` names one."""
    import numpy as np  # the finished-job counter the simulation and the bar share

    from archsim.cluster.catalog import paper_catalog
    from archsim.cluster.jobs import SimConfig, build_jobs
    from archsim.cluster.metrics import aggregate, summarize
    from archsim.cluster.simulate import simulate
    from archsim.cluster.trace import load_tiresias_csv, synthetic_trace
    from archsim.rows import Rows

    over_seeds = getattr(args, "seeds", None) is not None  # one policy's statistics over seeds, as all's
    check_flags(args)
    policy = "all" if args.compare else args.policy
    over_seeds = over_seeds or policy == "all"
    cluster, warned = machines(args)
    for line in warned:
        speak("warning", line)
    if args.gpus_per_machine > args.gpus:  # docs/formats.md: the run builds one machine of --gpus
        speak("note", f"{setting('gpus-per-machine', args.gpus_per_machine)} is more than "
                      f"{setting('gpus', args.gpus)}: the cluster is one machine of {args.gpus} GPUs "
                      f"(gpus_per_machine {args.gpus} in the output)")
    config = SimConfig(interval_s=args.interval, gamma_s_per_byte=args.gamma_ns_per_byte * 1e-9,
                       unit_s=args.unit_seconds, max_pack=args.max_pack,
                       migration_cost=getattr(args, "migration_cost", None) or DEFAULT_MIGRATION_COST)
    catalog = paper_catalog()
    synthetic = args.trace == "synthetic"
    policies = MAIN_POLICIES if policy == "all" else (policy,)
    seeds = range(args.seed, args.seed + args.seeds) if over_seeds and synthetic else [args.seed]
    with notes_kept() as kept:  # the library's notes: this command's, after the run
        file_trace = None if synthetic else load_tiresias_csv(args.trace, catalog)
    for text in kept:
        speak("note", text)
    per_run, shown = [], []
    job_rows: list[dict] = []  # --job-times' rows, every run's
    jobs_per_run = args.jobs if synthetic else len(file_trace or ())
    # jobs finished, summed over the runs: a bar that moves while one long simulation runs
    with progress(len(seeds) * len(policies) * jobs_per_run, "cluster", "job") as bar:
        for seed in seeds:
            trace = file_trace if file_trace is not None else synthetic_trace(args.jobs, seed, catalog=catalog)
            try:
                jobs = build_jobs(trace, catalog, cluster)
            except InputError as exc:  # name the trace file and the row's line: the row's job id is in the field
                widest = max(job.workers for job in trace)
                too_wide = str(exc.where.field).endswith("num_gpu") and widest > cluster.devices
                more = (f"a cluster file of {widest} GPUs or more" if getattr(args, "cluster", None) else
                        f"{setting('gpus', widest)} or more")
                if synthetic and too_wide:  # a trace the user never wrote: say which flag to change
                    raise InputError(f"the synthetic trace (seed {seed}) draws a job of {widest} workers (§4.2's mix: "
                                     f"1 to 16 workers) and the cluster has {cluster.devices} devices: give "
                                     f"{more}", field="cluster" if getattr(args, "cluster", None) else "gpus") from None
                if synthetic and str(exc.where.field).endswith("model_name"):  # a job id the user never wrote
                    raise InputError(synthetic_job_named(trace, str(exc.where.field), seed)
                                     + exc.message.split(" needs ", 1)[1]
                                     + memory_hint(trace, catalog, cluster, args),
                                     field="cluster" if getattr(args, "cluster", None) else "device-memory-gb") from None
                hint = (f": give {more}" if too_wide  # the trace's widest job, not just this one
                        else memory_hint(trace, catalog, cluster, args) if str(exc.where.field).endswith("model_name")
                        else "")
                raise InputError(exc.message + hint, file=None if synthetic else args.trace, line=exc.where.line,
                                 field=exc.where.field) from None
            _check_rounds(jobs, config.interval_s)
            for name in policies:
                finished = np.zeros(2, np.int64)  # jobs done; a stop flag polled() sets on Ctrl-C
                result = polled(partial(simulate, jobs, cluster, name, config, finished), finished, bar)
                per_run.append({**summarize(result), "seed": seed})
                if getattr(args, "job_times", None):
                    job_rows += job_time_rows(result, jobs, seed if synthetic else None)
                if seed == seeds[0]:
                    shown.append(result)
                bar.update(len(jobs) - int(finished[0]))  # what the last poll missed
    # a policy's own setting only where a policy run reads it (READERS): tiresias' run showed a max_pack it never read
    read = {name: getattr(args, name) for name, readers in READERS.items() if set(readers) & set(policies)}
    from_file = {"cluster_file": args.cluster} if getattr(args, "cluster", None) else {}  # --cluster's path
    meta = {"trace": args.trace, **from_file, "gpus": args.gpus, "gpus_per_machine": max(cluster.machine_sizes),  # as ran
            "device_memory_gb": args.device_memory_gb, **({"max_pack": read["max_pack"]} if "max_pack" in read else {}),
            "interval_seconds": args.interval, "gamma_ns_per_byte": args.gamma_ns_per_byte,
            "migration_cost": config.migration_cost,
            **({"unit_seconds": read["unit_seconds"]} if "unit_seconds" in read else {}),
            **({"seeds": ",".join(str(s) for s in seeds)} if synthetic else {}),
            "jobs": int(per_run[0]["jobs"]), "spb": spb_use(policies)}
    per_seed = None
    if over_seeds:  # statistics over seeds: pandas (Jigsaw's gains only beside another policy)
        import pandas as pd

        per_seed = pd.DataFrame(per_run)
        rows: Any = aggregate(per_run, reference="jigsaw" if policy == "all" else "")
    else:  # one run's summary: plain rows
        rows = Rows.of({key: value for key, value in row.items() if key != "seed"} for row in per_run)
    wrote = None
    if args.report:
        from archsim.cluster.report import write_cluster_report

        stats = aggregate(per_run) if per_seed is None else rows  # the note's figures: this run's
        notes = ((f"Figures other than the spread show seed {seeds[0]}. " if synthetic else "")
                 + spb_note(policies)
                 + (" " + granularity_note(args, stats) if "unit_seconds" in read else ""))  # Jigsaw's unit alone
        wrote = str(write_cluster_report(args.report, shown, report_command_line(args, policy), bin_s=config.util_bin_s,
                                         summary=rows.frame() if isinstance(rows, Rows) else rows, per_seed=per_seed,
                                         notes=notes))
    wrote_job_times = None
    if getattr(args, "job_times", None):
        from archsim.output_files import write_output
        from archsim.outputs import render

        wrote_job_times = str(write_output(args.job_times, render(Rows.of(job_rows), "csv")))
    return ClusterRun(rows, meta, per_seed, wrote, wrote_job_times)


__all__ = ["DEFAULT_DEVICE_MEMORY_GIB", "DEFAULT_GAMMA_NS_PER_BYTE", "DEFAULT_GPUS", "DEFAULT_GPUS_PER_MACHINE",
           "DEFAULT_JOBS", "DEFAULT_SEED", "DEFAULT_SEEDS", "JOB_TIME_COLUMNS", "MAX_ROUNDS", "REPLACED_FLAGS", "ClusterRun",
           "check_flags",
           "granularity_note", "job_time_rows", "machines", "memory_hint", "run_cluster", "spb_note", "spb_use"]
