"""Jigsaw's event loop as first written: plain Python (heapq, a set of idle devices), one placement
at a time. archsim now runs :mod:`archsim.cluster.jigsaw_kernel` (numba); this stays as the
differential reference its tests compare against, job for job and segment for segment."""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np
import pandas as pd

from archsim.cluster.jigsaw import block_iterations
from archsim.cluster.jobs import JobCluster, JobSpec, SimConfig, SimResult

_EPS = 1e-9
_DEVICE, _UNIT_DONE, _ARRIVAL = 0, 1, 2


def reference_jigsaw(jobs: Sequence[JobSpec], cluster: JobCluster, config: SimConfig, *, spb: bool = True,
                    policy: str = "jigsaw") -> SimResult:
    """Run Jigsaw over ``jobs`` (``spb=False``: every worker runs the full task — an ablation)."""
    n_dev = cluster.devices
    machine = cluster.machine_of().tolist()
    memory = cluster.device_memory_bytes
    task_s = [job.spb_task_s if spb else (job.full_task_s,) * job.workers for job in jobs]
    task_mem = [job.spb_memory_bytes if spb else (job.full_memory_bytes,) * job.workers for job in jobs]
    priority = [[m / memory * t for t, m in zip(ts, ms)] for ts, ms in zip(task_s, task_mem)]
    migration = [config.gamma_s_per_byte * job.model_bytes for job in jobs]
    block = [block_iterations(job, config.unit_s) for job in jobs]
    left = [job.iterations for job in jobs]
    current = [0] * len(jobs)
    outstanding = [0] * len(jobs)
    unit_end = [0.0] * len(jobs)
    prev = [[-1] * job.workers for job in jobs]
    moves = [0] * len(jobs)
    start = [np.nan] * len(jobs)
    end = [np.nan] * len(jobs)
    free_at = [0.0] * n_dev
    idle = set(range(n_dev))
    busy_start: list[float] = []
    busy_end: list[float] = []
    events: list[tuple[float, int, int]] = [(config.admit_time(job.submit_s), _ARRIVAL, j) for j, job in enumerate(jobs)]
    heapq.heapify(events)
    ready: list[tuple[float, float, int, int]] = []

    def open_unit(j: int, t: float) -> None:
        current[j] = min(block[j], left[j])
        outstanding[j] = jobs[j].workers
        unit_end[j] = t
        for w in range(jobs[j].workers):
            heapq.heappush(ready, (-priority[j][w], t, j, w))

    def place(t: float) -> None:
        while idle and ready:
            _, _, j, w = heapq.heappop(ready)
            duration = current[j] * task_s[j][w]
            p = prev[j][w]
            delay = 0.0
            if p >= 0 and p in idle:
                device, begin = p, t
            else:
                if p >= 0:
                    delay = migration[j]
                    home = machine[p]
                    device = min(idle, key=lambda d: (machine[d] != home, d))
                else:
                    device = min(idle)
                begin = t
                if p >= 0 and free_at[p] <= t + delay + _EPS:
                    device, begin, delay = p, free_at[p], 0.0
                elif p >= 0:
                    moves[j] += 1
            finish = begin + delay + duration
            idle.discard(device)
            free_at[device] = finish
            heapq.heappush(events, (finish, _DEVICE, device))
            prev[j][w] = device
            busy_start.append(begin + delay)
            busy_end.append(finish)
            if np.isnan(start[j]):
                start[j] = begin
            unit_end[j] = max(unit_end[j], finish)
            outstanding[j] -= 1
            if outstanding[j] == 0:
                heapq.heappush(events, (unit_end[j], _UNIT_DONE, j))

    while events:
        t = events[0][0]
        while events and events[0][0] <= t + _EPS:
            _, kind, who = heapq.heappop(events)
            if kind == _DEVICE:
                if free_at[who] <= t + _EPS:
                    idle.add(who)
            elif kind == _ARRIVAL:
                open_unit(who, t)
            else:
                left[who] -= current[who]
                if left[who] == 0:
                    end[who] = unit_end[who]
                else:
                    open_unit(who, t)
        place(t)

    frame = pd.DataFrame({
        "job_id": [job.job_id for job in jobs], "submit_s": [job.submit_s for job in jobs],
        "start_s": start, "end_s": end, "workers": [job.workers for job in jobs],
        "iterations": [job.iterations for job in jobs], "migrations": moves,
    })
    frame["jct_s"] = frame.end_s - frame.submit_s
    busy = np.column_stack([busy_start, busy_end, np.ones(len(busy_start))]) if busy_start else np.zeros((0, 3))
    return SimResult(policy, frame, busy, float(frame.end_s.max()), n_dev)
