"""PipeDream's split search for row i = 0 of a small table in numpy: every candidate at once.

:func:`~archsim.partition.pipedream_kernel.solve_splits` walks few candidates per entry but needs
numba, whose first call in a process loads its compiler (about a second: more than a whole sweep
of small profiles costs otherwise). For the final level (one row, i = 0) of a table of n states
this module computes, per machine count m and replica count m′, the released code's candidate
time for every (j, k) pair as an (n, n) array — the same float64 expressions in the same order
(numpy's elementwise +, −, ×, ÷ round exactly like scalar ones) — and keeps the same winner: the
least time, then the least k, then the least m′, only if it beats the entry's one-stage (or
fewer-machines) time. O(n² · m · m′) work, so it is used only where that is small
(:func:`fits`).
"""

from __future__ import annotations

import math

import numpy as np

from archsim.partition.pipedream_allreduce import replica_allreduce

WORK_LIMIT = 4_000_000  # n² · machines · replica counts tried: above this the compiled walk wins


def fits(rows: int, n: int, machines: int, straight: bool) -> bool:
    """Whether the dense search applies (one row) and is cheap for this table."""
    return rows == 1 and n * n * machines * (1 if straight else machines) <= WORK_LIMIT


def _ancestors(runs: np.ndarray, starts: np.ndarray, ends: np.ndarray, n: int) -> np.ndarray:
    """(n, n) bool: [j, k] when state k is an ancestor of state j and k < j (the candidates of j)."""
    mask = np.zeros((n, n), dtype=bool)
    for j in range(n):
        for r in range(runs[j], runs[j + 1]):
            mask[j, starts[r]:ends[r] + 1] = True
    return np.tril(mask, -1)


def solve_row(value, split, rest, replicas, runs, starts, ends, cumulative, matrix, use_matrix, activation,
              parameters, crossing, bandwidth, straight, fewer, ratio, memory_bytes) -> None:
    """:func:`~archsim.partition.pipedream_kernel.solve_splits` for a one-row table (same
    arguments, less ``lowest``), in place."""
    _, n, machines = value.shape
    candidates = _ancestors(runs, starts, ends, n)
    j_index, k_index = np.arange(n)[:, None], np.arange(n)[None, :]
    if use_matrix:
        last_compute = matrix[k_index + 1, j_index]
    else:
        last_compute = cumulative[j_index] - cumulative[k_index]
    last_parameters = parameters[j_index] - parameters[k_index]
    last_activation = activation[j_index] - activation[k_index]
    crossing_out = np.where(np.arange(n) < n - 1, crossing, -1.0)[:, None]
    rows = np.arange(1, n)  # the released loop runs j over i + 1 … n − 1
    with np.errstate(invalid="ignore"):
        allowed = candidates & ~np.isnan(last_compute)
        for m in range(1, machines):
            current = value[0, :, m].copy()
            keep: tuple[np.ndarray, ...] = split[0, :, m].copy(), rest[0, :, m].copy(), replicas[0, :, m].copy()
            if fewer:
                fewer_better = value[0, :, m - 1] < current
                current = np.where(fewer_better, value[0, :, m - 1], current)
                keep = tuple(np.where(fewer_better, table[0, :, m - 1], kept)
                             for table, kept in zip((split, rest, replicas), keep))
            best, best_k, best_m = np.full(n, np.inf), np.full(n, n), np.zeros(n, dtype=np.int64)
            for m_prime in range(1, (1 if straight else m) + 1):
                before = value[0, :, m - m_prime][None, :]
                stage = (last_compute + replica_allreduce(m_prime, last_parameters, bandwidth)) / m_prime
                time = np.maximum(before, stage)
                ok = allowed & ~np.isinf(before)
                if memory_bytes >= 0:
                    memory_factor = math.ceil((machines - (m + 1)) / m_prime)
                    ok &= ~((last_activation + last_parameters) * memory_factor > memory_bytes)
                if ratio > 0:
                    time = np.maximum(time, ((2.0 * crossing) / (bandwidth * m_prime) / ratio)[None, :])
                    out = (2.0 * crossing_out) / (bandwidth * m_prime) / ratio
                    time = np.where(crossing_out >= 0, np.maximum(time, out), time)
                time = np.where(ok, time, np.inf)
                k = np.argmin(time, axis=1)  # the first least k
                least = time[np.arange(n), k]
                wins = (least < best) | ((least == best) & (k < best_k))
                best, best_k, best_m = np.where(wins, least, best), np.where(wins, k, best_k), \
                    np.where(wins, m_prime, best_m)
            chosen = best < current
            value[0, rows, m] = np.where(chosen, best, current)[rows]
            split[0, rows, m] = np.where(chosen, best_k, keep[0])[rows]
            rest[0, rows, m] = np.where(chosen, m - best_m, keep[1])[rows]
            replicas[0, rows, m] = np.where(chosen, best_m, keep[2])[rows]
