"""The reference for PipeDream's optimizer: its antichain states (ancestors as an n × n/8 bit
matrix, augmented antichains found with a sparse edge-matrix product) and its dynamic program's
split search (every ancestor k of every state j scanned in ascending order) as first written, kept
unchanged so the run-list states of :mod:`archsim.partition.antichain` and the pruned kernel of
:mod:`archsim.partition.pipedream_kernel` can be tested equal to them table for table (values,
splits, rests, replicas). What was never rewritten is imported rather than copied: the
breadth-first walk over antichains, PipeDream's topological order of them and each one's closure
(``antichain.discover``, ``mask``); the one-stage entries and compute-time tables
(``pipedream_tables.one_stage``, ``Matrix``); the chaining of levels (``level_tables``). The
test does not check those."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from archsim.errors import InputError
from archsim.numba_cache import njit
from archsim.partition.antichain import discover, mask
from archsim.partition.pipedream_tables import Level, Matrix, PipeDreamOptions, level_tables, one_stage
from archsim.partition.profile import LayerProfile


@dataclass(frozen=True)
class AntichainStates:
    """Per state, in PipeDream's order; times in the profile's unit, sizes in bytes.

    compute/activation/parameters: sums over the state's closure (its augmented antichain and all
    their predecessors); crossing: bytes of every tensor crossing the cut after the state (the
    augmented antichain's outputs); ancestor_bits[j]: the states before state j in the antichain
    DAG, packed little-endian (bit k of row j: state k is an ancestor of j); closure[j]: the bit
    set of nodes done after state j.
    """

    antichains: tuple[tuple[int, ...], ...]
    closure: tuple[int, ...]
    compute: np.ndarray
    activation: np.ndarray
    parameters: np.ndarray
    crossing: np.ndarray
    ancestor_bits: np.ndarray

    def __len__(self) -> int:
        return len(self.antichains)

    def nodes_between(self, start: int, end: int) -> list[int]:
        """Nodes of the stage holding states start..end−1: done after end−1 but not after start−1."""
        done = self.closure[end - 1] & ~(self.closure[start - 1] if start > 0 else 0)
        return [k for k in range(done.bit_length()) if done >> k & 1]


MAX_STATES = 20000  # a limit on the search itself; Inception-v3 has ~221,000 states


def antichain_states(profile: LayerProfile, max_states: int = MAX_STATES) -> AntichainStates:
    """The states of ``profile``; more than ``max_states`` is an error (the optimizer's tables
    would not fit: PipeDream's own answer is to compress branches first)."""
    n = len(profile)
    producers = [profile.producers(k) for k in range(n)]
    successors_list = [profile.consumers(k) for k in range(n)]
    before = [0] * n  # strict predecessors
    for node in range(n):
        for parent in producers[node]:
            before[node] |= before[parent] | 1 << parent
    after = [0] * n  # strict successors
    for node in reversed(range(n)):
        for child in successors_list[node]:
            after[node] |= after[child] | 1 << child
    sources = [k for k in range(n) if not producers[k]]
    if not sources:
        raise InputError("the profile has no source node", field="edges")

    # reads[p, q] = 1 for an edge p → q: one sparse product finds the nodes read from outside a set.
    reads = _edge_matrix(producers, n)
    augmented_cache: dict[tuple[int, ...], list[int]] = {}

    def augment(antichain: list[int]) -> list[int]:
        """PipeDream's augment_antichain: add each predecessor p of an antichain node a that still
        has a consumer other than a outside a's predecessors."""
        key = tuple(sorted(antichain))
        if key not in augmented_cache:
            extra: set[int] = set()
            for node in antichain:
                inside = mask(before[node], n)
                outside = ~inside
                outside[node] = False
                extra.update(np.flatnonzero(inside & (reads @ outside.astype(np.int8) > 0)).tolist())
            augmented_cache[key] = sorted(extra) + list(antichain)
        return augmented_cache[key]

    augmented, closure, edges, order = discover(sources[0], successors_list, before, after, augment, max_states)
    number = {state: k for k, state in enumerate(order)}
    if closure[-1] != (1 << n) - 1:
        missing = [profile.names[k] for k in range(n) if not closure[-1] >> k & 1]
        raise InputError(f"no antichain path from the first source {profile.names[sources[0]]} reaches "
                         f"{len(missing)} node(s), e.g. {missing[0]}: PipeDream's states would drop their cost",
                         field="edges")
    total, weights, activations = profile.total, profile.weight_bytes, profile.activation_bytes
    masks = [mask(done, n) for done in closure]
    compute = np.array([float(np.sum(total[mask], dtype=float)) for mask in masks])
    activation = np.array([float(np.sum(activations[mask], dtype=float)) for mask in masks])
    parameters = np.array([float(np.sum(weights[mask], dtype=float)) for mask in masks])
    crossing = np.array([float(sum(float(activations[k]) for k in nodes)) for nodes in augmented])
    ancestors = [0] * len(order)
    for s in order:  # topological: a state's ancestors are complete before its children read them
        for child in edges[s]:
            ancestors[number[child]] |= ancestors[number[s]] | 1 << number[s]
    width = (len(order) + 7) // 8
    bits = np.frombuffer(b"".join(a.to_bytes(width, "little") for a in ancestors), dtype=np.uint8)
    return AntichainStates(
        antichains=tuple(tuple(nodes) for nodes in augmented), closure=tuple(closure), compute=compute,
        activation=activation, parameters=parameters, crossing=crossing,
        ancestor_bits=bits.reshape(len(order), width).copy(),
    )


def _edge_matrix(producers, n: int) -> sparse.csr_matrix:
    rows = [p for node in range(n) for p in producers[node]]
    cols = [node for node in range(n) for _ in producers[node]]
    return sparse.csr_matrix((np.ones(len(rows), dtype=np.int32), (rows, cols)), shape=(n, n))


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


def _solve_level(states: AntichainStates, compute, level: Level, within: int, final: bool,
                 options: PipeDreamOptions):
    """The library's one-stage entries, then the first-written split search over the bit matrix."""
    solved = one_stage(states, compute, level, within, final, options)
    ratio = options.activation_compression_ratio
    use_matrix = isinstance(compute, Matrix)
    solve_splits(solved.value, solved.split, solved.rest, solved.replicas, states.ancestor_bits,
                 np.zeros(1) if use_matrix else compute.cumulative, compute.values if use_matrix else np.zeros((1, 1)),
                 use_matrix, states.activation, states.parameters, states.crossing, float(level.bandwidth),
                 options.straight_pipeline, options.use_fewer_machines,
                 -1.0 if ratio is None else float(ratio),
                 float(options.memory_bytes) if options.memory_constraint else -1.0)
    return solved


def reference_tables(profile: LayerProfile, hierarchy, options: PipeDreamOptions):
    """The first-written states and tables per level (innermost first), levels chained as pipedream_plan chains them."""
    states = antichain_states(profile)
    return states, level_tables(states, hierarchy, options, solve=_solve_level)
