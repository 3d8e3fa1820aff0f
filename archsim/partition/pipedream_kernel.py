"""The inner loops of PipeDream's dynamic program, compiled (numba): the released code's
arithmetic, in its order, per entry A(i, j, m) (see :mod:`archsim.partition.pipedream`)."""

from __future__ import annotations

import math

import numpy as np

from archsim.numba_cache import njit


@njit(cache=True)
def solve_splits(value, split, rest, replicas, ancestor_bits, cumulative, matrix, use_matrix, activation, parameters,
                 crossing, bandwidth, straight, fewer, ratio, memory_bytes):
    """Fill A(i, j, m) for m ≥ 1 over the split candidates, in place.

    value/split/rest/replicas: (rows, n, machines), the one-stage entries already filled (inf where
    the released code has None). ancestor_bits[t, k >> 3] >> (k & 7) & 1: state k is an ancestor
    of state t (the released code walks them in ascending k here). Level 1 reads a
    stage's compute as cumulative[j] − cumulative[k]; upper levels read matrix[k + 1, j] (NaN: None).
    ratio ≤ 0: activation transfers ignored; memory_bytes < 0: no memory constraint.
    """
    rows, n, machines = value.shape
    for j in range(1, n):
        live = min(rows, j)  # the released loop runs j over i + 1 … n − 1
        for m in range(1, machines):
            top = 1 if straight else m
            ceil_rest = machines - (m + 1)
            for i in range(live):
                current = value[i, j, m]
                best_split, best_rest, best_replicas = split[i, j, m], rest[i, j, m], replicas[i, j, m]
                if fewer and value[i, j, m - 1] < current:
                    current = value[i, j, m - 1]
                    best_split, best_rest, best_replicas = split[i, j, m - 1], rest[i, j, m - 1], replicas[i, j, m - 1]
                for k in range(j):
                    if not (ancestor_bits[j, k >> 3] >> (k & 7)) & 1:
                        continue
                    if i > 0 and (ancestor_bits[i - 1, k >> 3] >> (k & 7)) & 1:
                        continue
                    last_compute = matrix[k + 1, j] if use_matrix else cumulative[j] - cumulative[k]
                    if math.isnan(last_compute):
                        continue
                    last_parameters = parameters[j] - parameters[k]
                    last_stash = activation[j] - activation[k] + last_parameters
                    for m_prime in range(1, top + 1):
                        if memory_bytes >= 0 and last_stash * math.ceil(ceil_rest / m_prime) > memory_bytes:
                            continue
                        before = value[i, k, m - m_prime]
                        if math.isinf(before):
                            continue
                        stage = (last_compute + (4 * (m_prime - 1) * last_parameters) / (bandwidth * m_prime)) / m_prime
                        time = max(before, stage)
                        if ratio > 0:
                            time = max(time, (2.0 * crossing[k]) / (bandwidth * m_prime) / ratio)
                            if j < n - 1:
                                time = max(time, (2.0 * crossing[j]) / (bandwidth * m_prime) / ratio)
                        if time < current:
                            current = time
                            best_split, best_rest, best_replicas = k, m - m_prime, m_prime
                value[i, j, m] = current
                split[i, j, m], rest[i, j, m], replicas[i, j, m] = best_split, best_rest, best_replicas


def warm_up() -> None:
    """Compile once on tiny inputs (benchmarks time the solver, not numba)."""
    shape = (1, 2, 2)
    solve_splits(np.full(shape, np.inf), np.full(shape, -1), np.full(shape, -1), np.zeros(shape, dtype=np.int64),
                 np.array([[0], [1]], dtype=np.uint8), np.zeros(2), np.zeros((1, 1)), False, np.zeros(2), np.zeros(2),
                 np.zeros(2), 1.0, False, False, 0.0, -1.0)
