"""Numba kernel of Jigsaw's event loop (:mod:`archsim.cluster.jigsaw` states the policy).

Per-iteration planning places one task per worker per iteration — tens of millions of placements
for the §4.2 trace — so the loop runs compiled: flat arrays in, flat arrays out, two binary heaps
of float tuples (exact for the integer fields), and a boolean idle vector scanned in index order,
which is the order the policy's tie-breaks ask for. Decision for decision it is the plain-Python
loop kept in ``tests/jigsaw_reference.py`` (under the default migration cost, ``gpu``).
"""

from __future__ import annotations

import heapq

import numpy as np

from archsim.numba_cache import njit

DEVICE_FREE, UNIT_DONE, ARRIVAL = 0.0, 1.0, 2.0


@njit(cache=True)
def _open_unit(j, t, ready, workers, offsets, priority, block, left, current, outstanding, unit_end):
    """Queue every worker's task of job j's next unit (a block of ≤ block[j] iterations) at time t."""
    current[j] = min(block[j], left[j])
    outstanding[j] = workers[j]
    unit_end[j] = t
    for w in range(workers[j]):
        heapq.heappush(ready, (-priority[offsets[j] + w], t, float(j), float(w)))


@njit(cache=True)
def _earliest_start(p, t, free_at, machine, startup, eps):
    """(device, begin, delay) where a task whose previous device is p starts earliest at time t (s).

    Each device d offers begin = max(free_at[d], t) and delay = 0 on p's machine, ``startup`` (γ × model
    size, s) on any other, so its start is begin + delay (SPB paper §3.2). Ties within ``eps`` go to p, then
    to p's machine, then to the lowest index: the candidates are visited in that order and only a start
    earlier by more than ``eps`` displaces the one held."""
    best, best_begin, best_delay = p, max(free_at[p], t), 0.0
    for pass_ in range(2):  # p's machine first, then the others, each in index order
        for d in range(machine.shape[0]):
            if d == p or (machine[d] == machine[p]) != (pass_ == 0):
                continue
            begin = max(free_at[d], t)
            delay = 0.0 if pass_ == 0 else startup
            if begin + delay < best_begin + best_delay - eps:
                best, best_begin, best_delay = d, begin, delay
    return best, best_begin, best_delay


@njit(cache=True, nogil=True)
def run(workers, offsets, task_s, priority, migration, block, iterations, admit, machine, eps, finished,
        same_machine_free=False):
    """Simulate; returns (start, end, migrations) per job and the busy segments (begin, end).

    ``offsets[j] + w`` indexes worker w of job j in the flat per-task arrays ``task_s`` and
    ``priority``; ``machine[d]`` is device d's machine; ``same_machine_free``: a move to another device of the
    previous device's machine costs nothing and is not counted, and the task goes where it starts earliest over every
    device, busy or idle (:func:`_earliest_start`); else every change of device pays and counts, and only idle devices
    and the previous one are weighed. ``finished[0]`` counts the jobs done so far, for a
    progress bar another thread draws (the GIL is released); a nonzero ``finished[1]``, where present, stops
    the loop early (Ctrl-C: :func:`archsim.progress.polled`), the results then partial and discarded.
    """
    n_jobs, n_dev = workers.shape[0], machine.shape[0]
    left = iterations.copy()
    current = np.zeros(n_jobs, np.int64)
    outstanding = np.zeros(n_jobs, np.int64)
    unit_end = np.zeros(n_jobs)
    prev = np.full(offsets[n_jobs], -1, np.int64)
    moves = np.zeros(n_jobs, np.int64)
    start = np.full(n_jobs, np.nan)
    end = np.full(n_jobs, np.nan)
    free_at = np.zeros(n_dev)
    idle = np.ones(n_dev, np.bool_)
    n_idle = n_dev
    busy_begin = np.empty(1024)
    busy_end = np.empty(1024)
    n_busy = 0
    events = [(admit[j], ARRIVAL, float(j)) for j in range(n_jobs)]
    heapq.heapify(events)
    ready = [(0.0, 0.0, 0.0, 0.0)]  # seeds the list's type; popped at once
    heapq.heappop(ready)

    while len(events) > 0:
        if finished.shape[0] > 1 and finished[1] != 0:  # asked to stop: the interpreter must not end under us
            break
        t = events[0][0]
        while len(events) > 0 and events[0][0] <= t + eps:
            _, kind, who_f = heapq.heappop(events)
            who = int(who_f)
            if kind == DEVICE_FREE:
                if free_at[who] <= t + eps and not idle[who]:
                    idle[who] = True
                    n_idle += 1
            elif kind == ARRIVAL:
                _open_unit(who, t, ready, workers, offsets, priority, block, left, current, outstanding, unit_end)
            else:
                left[who] -= current[who]
                if left[who] == 0:
                    end[who] = unit_end[who]
                    finished[0] += 1
                else:
                    _open_unit(who, t, ready, workers, offsets, priority, block, left, current, outstanding,
                               unit_end)
        # place the highest-priority ready tasks while a device is idle
        while n_idle > 0 and len(ready) > 0:
            _, _, j_f, w_f = heapq.heappop(ready)
            j, task = int(j_f), offsets[int(j_f)] + int(w_f)
            duration = current[j] * task_s[task]
            p = prev[task]
            delay = 0.0
            if same_machine_free and p >= 0:  # §3.2: the earliest start over every device, busy ones included
                device, begin, delay = _earliest_start(p, t, free_at, machine, migration[j], eps)
                if machine[device] != machine[p]:
                    moves[j] += 1
            elif p >= 0 and idle[p]:
                device, begin = p, t
            else:
                device = -1
                if p >= 0:  # an idle device on p's machine first, then the lowest index
                    delay = migration[j]
                    for d in range(n_dev):
                        if idle[d] and machine[d] == machine[p]:
                            device = d
                            if same_machine_free:
                                delay = 0.0
                            break
                if device < 0:
                    for d in range(n_dev):
                        if idle[d]:
                            device = d
                            break
                begin = t
                if p >= 0 and free_at[p] <= t + delay + eps:  # waiting for p beats migrating
                    device, begin, delay = p, free_at[p], 0.0
                elif p >= 0 and not (same_machine_free and machine[device] == machine[p]):
                    moves[j] += 1
            finish = begin + delay + duration
            if idle[device]:
                idle[device] = False
                n_idle -= 1
            free_at[device] = finish
            heapq.heappush(events, (finish, DEVICE_FREE, float(device)))
            prev[task] = device
            if n_busy == busy_begin.shape[0]:
                busy_begin = np.concatenate((busy_begin, np.empty(n_busy)))
                busy_end = np.concatenate((busy_end, np.empty(n_busy)))
            busy_begin[n_busy] = begin + delay
            busy_end[n_busy] = finish
            n_busy += 1
            if np.isnan(start[j]):
                start[j] = begin
            unit_end[j] = max(unit_end[j], finish)
            outstanding[j] -= 1
            if outstanding[j] == 0:
                heapq.heappush(events, (unit_end[j], UNIT_DONE, float(j)))
    return start, end, moves, busy_begin[:n_busy].copy(), busy_end[:n_busy].copy()
