"""Jigsaw (SPB paper §3): iteration-level scheduling of SPB tasks, as an event-driven list scheduler.

Each iteration of a job is k tasks (one per worker, SPB-sized); iteration i+1's tasks become ready
when every task of iteration i has finished (Fig. 2(a)). Whenever a device is idle and tasks are
ready, the highest-priority ready task is placed (§3.2):

* priority = normalised GPU resource × running time = (peak memory / device memory) × task seconds;
  ties go to the earlier-ready, earlier-submitted job, then the lower worker index;
* placement at the earliest start: its previous device if idle (no cost); otherwise an idle device
  after the migration delay γ × model size (same machine first, then lowest index), unless the
  previous device frees no later than that — then the task waits for it (affinity, §3.2). With
  ``SimConfig.migration_cost = "machine"`` an idle device on the previous device's machine costs
  nothing and is no migration (the paper's "machine" read as a server), and the task goes to the device,
  busy or idle, where it starts earliest: max(device free, now) + γ × model size if on another machine
  (ties: the previous device, then its machine, then the lowest index); the default charges, and
  counts, every change of device.

A task's first placement costs nothing (every policy loads its model once). Jobs join at the
first scheduling-interval boundary after submission. The simulator has no run-time noise, so
planning an interval ahead and dispatching online give the same schedule; we dispatch online.
With ``unit_s`` > 0, ⌈unit_s / iteration⌉ iterations are planned as one (blocks of a job's
iterations run on one device each and meet at the block's barrier; see the report for how much
this coarsening changes the results). Devices run one task at a time; models kept on a device
between its tasks are assumed to fit (§3.1: they are small next to activations).
The event loop itself is compiled (:mod:`archsim.cluster.jigsaw_kernel`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from archsim.cluster import jigsaw_kernel as kernel
from archsim.cluster.jobs import JobCluster, JobSpec, SimConfig, SimResult
from archsim.numba_cache import small_in_python

_EPS = 1e-9
# Task placements up to which a process that has not loaded the kernel runs it as plain Python:
# about as long as loading numba and the cached kernel.
PYTHON_WORK = 50_000


def block_iterations(job: JobSpec, unit_s: float) -> int:
    """Iterations planned as one unit: 1 when ``unit_s`` is 0, else ≈ unit_s / iteration time."""
    if unit_s <= 0:
        return 1
    return max(1, round(unit_s / job.full_task_s))


def simulate_jigsaw(jobs: Sequence[JobSpec], cluster: JobCluster, config: SimConfig, *, spb: bool = True,
                    policy: str = "jigsaw", finished: np.ndarray | None = None) -> SimResult:
    """Run Jigsaw over ``jobs`` (``spb=False``: every worker runs the full task — an ablation);
    ``finished[0]`` (int64) counts the jobs done as they finish; a nonzero ``finished[1]`` stops the run
    (KeyboardInterrupt: Ctrl-C, :func:`archsim.progress.polled`)."""
    memory = cluster.device_memory_bytes
    task_s = [job.spb_task_s if spb else (job.full_task_s,) * job.workers for job in jobs]
    task_mem = [job.spb_memory_bytes if spb else (job.full_memory_bytes,) * job.workers for job in jobs]
    workers = np.array([job.workers for job in jobs], dtype=np.int64)
    blocks = np.array([block_iterations(job, config.unit_s) for job in jobs], dtype=np.int64)
    iterations = np.array([job.iterations for job in jobs], dtype=np.int64)
    placements = int(np.sum(workers * -(-iterations // blocks))) if len(jobs) else 0
    with small_in_python(kernel.run, placements, PYTHON_WORK):
        start, end, moves, busy_begin, busy_end = kernel.run(
            workers, np.concatenate([[0], np.cumsum(workers)]).astype(np.int64),
            np.array([t for ts in task_s for t in ts], dtype=float),
            np.array([m / memory * t for ts, ms in zip(task_s, task_mem) for t, m in zip(ts, ms)], dtype=float),
            np.array([config.gamma_s_per_byte * job.model_bytes for job in jobs], dtype=float),
            blocks, iterations, np.array([config.admit_time(job.submit_s) for job in jobs], dtype=float),
            cluster.machine_of().astype(np.int64), _EPS, np.zeros(1, np.int64) if finished is None else finished,
            config.migration_cost == "machine")
    if finished is not None and len(finished) > 1 and finished[1]:
        raise KeyboardInterrupt
    columns: dict[str, Any] = {
        "job_id": [job.job_id for job in jobs], "submit_s": [job.submit_s for job in jobs],
        "start_s": start, "end_s": end, "workers": workers,
        "iterations": [job.iterations for job in jobs], "migrations": moves,
    }
    columns["jct_s"] = np.asarray(columns["end_s"]) - np.asarray(columns["submit_s"])
    busy = np.column_stack([busy_begin, busy_end, np.ones(len(busy_begin))])
    return SimResult(policy, columns, busy, float(np.nanmax(columns["end_s"])), cluster.devices)
