"""The inner loops of PipeDream's dynamic program, compiled (numba): the released code's
arithmetic, in its order, per entry A(i, j, m) (see :mod:`archsim.partition.pipedream`).

The released code tries every ancestor k of state j (O(n) per entry). This kernel tries the same
candidates but stops early, with the same answer: it starts at the split chosen for state j − 1
and walks k downwards and upwards from there, stopping each way at the first k past which no
candidate can beat the best time found so far:

* downwards (k′ ≤ k): a candidate's time is at least its last stage's time, and that stage holds
  at least states k + 1 … j: its compute is at least cumulative[j] − max(cumulative[0..k]) (upper
  levels: the least of matrix[k′ + 1, j] over k′ ≤ k) and its parameters at least
  parameters[j] − max(parameters[0..k]). Every step of the released formula is monotone in both
  (floating-point rounding is monotone), so the stage time computed from these bounds, by the
  same expression, bounds every such candidate's from below.
* upwards (k′ ≥ k): a candidate's time is at least A(i, k′, m − m′) ≥ min over k″ ≥ k of
  A(i, k″, m − m′), a suffix minimum of a column already complete (rows are solved one at a time,
  machine counts in increasing order).

A walk stops only where the bound is strictly greater than the best time, so every candidate that
ties the optimum is still tried; the winner is the released code's: the least time, then the
least k, then the least m′ (its scan is ascending with a strict ``<``), kept only if it beats the
entry's one-stage (or fewer-machines) time. On a chain the walks cover the few states near the
optimal cut, so a row costs O(n · m · window) instead of O(n² · m).
"""

from __future__ import annotations

import math

import numpy as np

from archsim.numba_cache import njit


@njit(cache=True)
def _is_ancestor(runs, starts, ends, state, k):
    """k among state's ancestor runs (binary search; runs are ascending and disjoint)."""
    low, high = runs[state], runs[state + 1]
    while low < high:
        mid = (low + high) // 2
        if ends[mid] < k:
            low = mid + 1
        else:
            high = mid
    return low < runs[state + 1] and starts[low] <= k


@njit(cache=True)
def stage_time(last_compute, last_parameters, m_prime, bandwidth):
    """A stage's time on m′ replicas: (compute + 4(m′ − 1)·P / (B·m′)) / m′, the all-reduce compiled here as
    :func:`~archsim.partition.pipedream_allreduce.replica_allreduce` writes it (tests/test_pipedream_kernel.py)."""
    return (last_compute + (4 * (m_prime - 1) * last_parameters) / (bandwidth * m_prime)) / m_prime


@njit(cache=True)
def _candidate(before, last_compute, last_parameters, last_activation, memory_factor, memory_bytes, crossing_in,
               crossing_out, m_prime, bandwidth, ratio):
    """The released code's pipeline time for one split candidate (inf: it skips the candidate).
    crossing_out < 0: the last state, no output transfer."""
    if math.isnan(last_compute) or math.isinf(before):
        return np.inf
    if memory_bytes >= 0 and (last_activation + last_parameters) * memory_factor > memory_bytes:
        return np.inf
    time = max(before, stage_time(last_compute, last_parameters, m_prime, bandwidth))
    if ratio > 0:
        time = max(time, (2.0 * crossing_in) / (bandwidth * m_prime) / ratio)
        if crossing_out >= 0:
            time = max(time, (2.0 * crossing_out) / (bandwidth * m_prime) / ratio)
    return time


@njit(cache=True)
def solve_splits(value, split, rest, replicas, runs, starts, ends, cumulative, matrix, lowest, use_matrix,
                 activation, parameters, crossing, bandwidth, straight, fewer, ratio, memory_bytes):
    """Fill A(i, j, m) for m ≥ 1 over the split candidates, in place.

    value/split/rest/replicas: (rows, n, machines), the one-stage entries already filled (inf where
    the released code has None). runs/starts/ends: each state's ancestors as runs (see
    :class:`~archsim.partition.antichain.AntichainStates`). Level 1 reads a stage's compute as
    cumulative[j] − cumulative[k]; upper levels read matrix[k + 1, j] (NaN: None), and
    lowest[r, j] is the least non-NaN matrix[r′, j] over r′ ≤ r (inf: none).
    ratio ≤ 0: activation transfers ignored; memory_bytes < 0: no memory constraint.
    """
    rows, n, machines = value.shape
    most_compute = np.empty(n)  # running maxima: the downward bound
    most_parameters = np.empty(n)
    high_c, high_p = -np.inf, -np.inf
    for k in range(n):
        if not use_matrix:
            high_c = max(high_c, cumulative[k])
        high_p = max(high_p, parameters[k])
        most_compute[k], most_parameters[k] = high_c, high_p
    suffix = np.empty((n + 1, machines))  # suffix[k, c] = min over k″ ≥ k of A(i, k″, c), this row
    for i in range(rows):
        for m in range(1, machines):
            top = 1 if straight else m
            ceil_rest = machines - (m + 1)
            suffix[n, m - 1] = np.inf
            for k in range(n - 1, -1, -1):
                suffix[k, m - 1] = min(suffix[k + 1, m - 1], value[i, k, m - 1])
            for j in range(i + 1, n):  # the released loop runs j over i + 1 … n − 1
                current = value[i, j, m]
                keep_split, keep_rest, keep_replicas = split[i, j, m], rest[i, j, m], replicas[i, j, m]
                if fewer and value[i, j, m - 1] < current:
                    current = value[i, j, m - 1]
                    keep_split, keep_rest, keep_replicas = split[i, j, m - 1], rest[i, j, m - 1], replicas[i, j, m - 1]
                best, best_k, best_m = np.inf, n, 0
                for m_prime in range(1, top + 1):  # each replica count on its own walk
                    c = m - m_prime
                    memory_factor = math.ceil(ceil_rest / m_prime)
                    low, high = 0, j - 1  # start where the part before overtakes the last stage (a guess)
                    while low < high:
                        mid = (low + high) // 2
                        guess = matrix[mid + 1, j] if use_matrix else cumulative[j] - cumulative[mid]
                        if value[i, mid, c] >= stage_time(guess, parameters[j] - parameters[mid], m_prime, bandwidth):
                            high = mid
                        else:
                            low = mid + 1
                    for direction in range(2):
                        k = low if direction == 0 else low + 1
                        while 0 <= k < j:
                            bound = min(best, current)
                            if direction == 0:  # every k′ ≤ k: its last stage's time at least this
                                least_compute = lowest[k + 1, j] if use_matrix else cumulative[j] - most_compute[k]
                                if stage_time(least_compute, parameters[j] - most_parameters[k], m_prime,
                                               bandwidth) > bound:
                                    break
                            elif suffix[k, c] > bound:  # every k′ ≥ k: the part before at least this
                                break
                            if _is_ancestor(runs, starts, ends, j, k) and not (
                                    i > 0 and _is_ancestor(runs, starts, ends, i - 1, k)):
                                last_compute = matrix[k + 1, j] if use_matrix else cumulative[j] - cumulative[k]
                                time = _candidate(value[i, k, c], last_compute, parameters[j] - parameters[k],
                                                  activation[j] - activation[k], memory_factor, memory_bytes,
                                                  crossing[k], crossing[j] if j < n - 1 else -1.0, m_prime,
                                                  bandwidth, ratio)
                                if time < best or (time == best and (
                                        k < best_k or (k == best_k and m_prime < best_m))):
                                    best, best_k, best_m = time, k, m_prime
                            k = k - 1 if direction == 0 else k + 1
                if best < current:
                    value[i, j, m] = best
                    split[i, j, m], rest[i, j, m], replicas[i, j, m] = best_k, m - best_m, best_m
                else:
                    value[i, j, m] = current
                    split[i, j, m], rest[i, j, m], replicas[i, j, m] = keep_split, keep_rest, keep_replicas


def warm_up() -> None:
    """Compile once on tiny inputs (benchmarks time the solver, not numba)."""
    shape = (1, 2, 2)
    solve_splits(np.full(shape, np.inf), np.full(shape, -1), np.full(shape, -1), np.zeros(shape, dtype=np.int64),
                 np.array([0, 0, 1]), np.array([0]), np.array([0]), np.zeros(2), np.zeros((1, 1)),
                 np.zeros((1, 1)), False, np.zeros(2), np.zeros(2), np.zeros(2), 1.0, False, False, 0.0, -1.0)
