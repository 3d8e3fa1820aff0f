"""Gang-scheduled baselines (SPB paper §4.2): Gandiva-style packing and Tiresias 2D-LAS.

Both run standard jobs (no SPB: every worker runs the full task, §4.2) as gangs: all k workers
hold a device each for the whole job run, so an iteration takes the full task time (Fig. 2(b)).
Progress is fluid between scheduling decisions (decisions at admissions, completions and every
interval boundary; preemption keeps fractional progress). A device time-sliced by m packed jobs
gives each 1/m of its time, and a gang advances at the pace of its most-shared device.
A job whose workers land on other devices than before pauses γ × model size (parallel transfers);
each moved worker counts one migration (``SimConfig.migration_cost = "machine"``: only workers that land
on another machine count, and only they make the job pause).

* **gandiva** (Xiao et al. 2018, as the SPB paper uses it): FIFO with backfill; a job goes on
  free devices consolidated on as few machines as possible (best-fitting machine first); with too
  few free devices it is packed onto devices running fewer than ``max_pack`` jobs whose memory
  still fits; when devices free up, packed workers migrate to them (unpacking). No preemption.
* **tiresias** (Gu et al. 2019): discretised 2D-LAS — attained service = devices × time run;
  queue = number of thresholds passed; order by (queue, submission); greedy allocation of
  exclusive devices in that order (lower-priority jobs backfill); running jobs not chosen are
  preempted; a resumed job prefers its old devices. No starvation knob, no packing.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

import numpy as np

from archsim.cluster.jobs import JobCluster, JobSpec, SimConfig, SimResult

_EPS = 1e-9
POLICIES = ("gandiva", "tiresias")


def _consolidated(free: list[int], machine: list[int], count: int) -> list[int] | None:
    """``count`` free devices on as few machines as possible: best-fitting machine, else largest first."""
    if len(free) < count:
        return None
    by_machine: dict[int, list[int]] = {}
    for d in sorted(free):
        by_machine.setdefault(machine[d], []).append(d)
    fitting = [m for m, ds in by_machine.items() if len(ds) >= count]
    if fitting:
        best = min(fitting, key=lambda m: (len(by_machine[m]), m))
        return by_machine[best][:count]
    chosen: list[int] = []
    for m in sorted(by_machine, key=lambda m: (-len(by_machine[m]), m)):
        chosen.extend(by_machine[m][: count - len(chosen)])
        if len(chosen) == count:
            break
    return chosen


def simulate_gang(jobs: Sequence[JobSpec], cluster: JobCluster, config: SimConfig, policy: str,
                  finished: np.ndarray | None = None) -> SimResult:
    """Run ``policy`` (gandiva or tiresias) over ``jobs``; see the module docstring for the rules.
    ``finished[0]`` (int64) counts the jobs done as they finish; a nonzero ``finished[1]`` stops the run
    (KeyboardInterrupt: Ctrl-C, :func:`archsim.progress.polled`)."""
    if policy not in POLICIES:
        raise ValueError(policy)
    n, n_dev = len(jobs), cluster.devices
    machine = cluster.machine_of().tolist()
    where = machine if config.migration_cost == "machine" else list(range(n_dev))  # what a move must change
    admit = [config.admit_time(job.submit_s) for job in jobs]
    order = sorted(range(n), key=lambda j: (admit[j], jobs[j].submit_s, j))
    remaining = [float(job.iterations) for job in jobs]
    placed: list[list[int] | None] = [None] * n
    last: list[list[int] | None] = [None] * n
    pause = [0.0] * n
    service = [0.0] * n
    moves = [0] * n
    start = [np.nan] * n
    end = [np.nan] * n
    load = [0] * n_dev
    used_memory = [0.0] * n_dev
    active: list[int] = []
    segments: list[tuple[float, float, float]] = []
    next_admit = 0
    t = 0.0

    def devices_of(j: int) -> list[int]:  # of a placed job
        devices = placed[j]
        assert devices is not None, f"job {j} is not placed"
        return devices

    def slowdown(j: int) -> int:
        return max(load[d] for d in devices_of(j))

    def put(j: int, devices: list[int] | None, now: float) -> None:
        assert devices is not None, f"no devices for job {j}"
        previous = last[j]
        if previous is not None:
            moved = sum(where[a] != where[b] for a, b in zip(previous, devices))
            if moved:
                moves[j] += moved
                pause[j] += config.gamma_s_per_byte * jobs[j].model_bytes
        placed[j] = last[j] = list(devices)
        for d in devices:
            load[d] += 1
            used_memory[d] += jobs[j].full_memory_bytes
        if np.isnan(start[j]):
            start[j] = now

    def release(j: int) -> None:
        for d in devices_of(j):
            load[d] -= 1
            used_memory[d] -= jobs[j].full_memory_bytes
        placed[j] = None

    def free_devices() -> list[int]:
        return [d for d in range(n_dev) if load[d] == 0]

    def gandiva_round(now: float) -> None:
        for j in sorted((j for j in active if placed[j] is None), key=lambda j: (jobs[j].submit_s, j)):
            devices = _consolidated(free_devices(), machine, jobs[j].workers)
            if devices is None and config.max_pack > 1:
                fits = [d for d in range(n_dev) if load[d] < config.max_pack
                        and used_memory[d] + jobs[j].full_memory_bytes <= cluster.device_memory_bytes]
                if len(fits) >= jobs[j].workers:
                    devices = sorted(fits, key=lambda d: (load[d], d))[: jobs[j].workers]
            if devices is not None:
                put(j, devices, now)
        for j in sorted((j for j in active if placed[j] is not None), key=lambda j: (jobs[j].submit_s, j)):
            shared = [w for w, d in enumerate(devices_of(j)) if load[d] > 1]
            free = free_devices()
            if shared and len(free) >= len(shared):
                target = list(devices_of(j))
                release(j)
                spots = _consolidated(free, machine, len(shared))
                assert spots is not None, "free devices hold the shared workers"
                for w, d in zip(shared, spots):
                    target[w] = d
                put(j, target, now)

    def tiresias_round(now: float) -> None:
        def rank(j: int) -> tuple:
            return (bisect.bisect_right(config.tiresias_thresholds, service[j]), jobs[j].submit_s, j)

        capacity, chosen = n_dev, []
        for j in sorted(active, key=rank):
            if jobs[j].workers <= capacity:
                chosen.append(j)
                capacity -= jobs[j].workers
        keep = set(chosen)
        for j in active:
            if placed[j] is not None and j not in keep:
                release(j)
        for j in chosen:
            if placed[j] is None:
                free = free_devices()
                old = last[j]
                devices = old if old is not None and all(load[d] == 0 for d in old) else \
                    _consolidated(free, machine, jobs[j].workers)
                put(j, devices, now)

    while next_admit < n or active:
        if finished is not None and len(finished) > 1 and finished[1]:
            raise KeyboardInterrupt
        horizon = [admit[order[next_admit]]] if next_admit < n else []
        if config.interval_s > 0 and active:
            horizon.append((np.floor(t / config.interval_s + _EPS) + 1) * config.interval_s)
        for j in active:
            if placed[j] is not None:
                horizon.append(t + pause[j] + remaining[j] * jobs[j].full_task_s * slowdown(j))
        t_next = max(min(horizon), t)
        dt = t_next - t
        for j in active:
            if placed[j] is None or dt <= 0:
                continue
            waiting = min(pause[j], dt)
            pause[j] -= waiting
            slow = slowdown(j)
            run = dt - waiting
            remaining[j] -= run / (jobs[j].full_task_s * slow)
            service[j] += jobs[j].workers * dt
            if run > 0:
                segments.append((t + waiting, t_next, jobs[j].workers / slow))
        t = t_next
        for j in list(active):
            if placed[j] is not None and remaining[j] <= _EPS * max(1.0, jobs[j].iterations) and pause[j] <= _EPS:
                end[j] = t
                release(j)
                active.remove(j)
                if finished is not None:
                    finished[0] += 1
        while next_admit < n and admit[order[next_admit]] <= t + _EPS:
            active.append(order[next_admit])
            next_admit += 1
        (gandiva_round if policy == "gandiva" else tiresias_round)(t)

    columns: dict[str, Any] = {
        "job_id": [job.job_id for job in jobs], "submit_s": [job.submit_s for job in jobs],
        "start_s": start, "end_s": end, "workers": [job.workers for job in jobs],
        "iterations": [job.iterations for job in jobs], "migrations": moves,
    }
    columns["jct_s"] = np.asarray(columns["end_s"]) - np.asarray(columns["submit_s"])
    busy = np.asarray(segments, dtype=float).reshape(-1, 3)
    return SimResult(policy, columns, busy, float(np.nanmax(columns["end_s"])), n_dev)
