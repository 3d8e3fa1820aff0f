"""PipeDream's states: the antichain DAG of a profile's node DAG (SOSP'19 §3.1, the released
``graph.py``), which lets its dynamic program cut a branching network anywhere a set of tensors
can cross.

A *state* is an antichain of nodes; everything it and its predecessors compute is "done". Its
*augmented* antichain adds the predecessors whose output is still read by a node not yet done (a
ResNet shortcut's source, say): every tensor crossing the cut after this state. States are
reached from the first source by advancing one node at a time, and numbered in the order
PipeDream's ``topological_sort`` gives them (depth-first from the first state, children in the
order they were found, each finished state put in front), so state numbers match the optimizer's.

Sets of nodes are Python integers used as bit sets (bit k = node k). A state's ancestors are
handed on as sorted runs of state numbers (for a chain, one run 0..j−1), so the dynamic program
reads them in memory that grows with the number of runs, not with n².
"""

from __future__ import annotations

import collections
import functools
import itertools
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from archsim.errors import InputError
from archsim.partition.memo import per_profile
from archsim.partition.profile import LayerProfile


@dataclass(frozen=True)
class AntichainStates:
    """Per state, in PipeDream's order; times in the profile's unit, sizes in bytes.

    compute/activation/parameters: sums over the state's closure (its augmented antichain and all
    their predecessors); crossing: bytes of every tensor crossing the cut after the state (the
    augmented antichain's outputs); the states before state j in the antichain DAG (its ancestors)
    are the runs ancestor_starts[r] … ancestor_ends[r] (inclusive, ascending, disjoint, not
    adjacent) for r in ancestor_runs[j] … ancestor_runs[j + 1] − 1; closure[j]: the nodes done
    after state j, as runs (first, last) of node indices (a chain's: one run from node 0).
    """

    antichains: tuple[tuple[int, ...], ...]
    closure: tuple[tuple[tuple[int, int], ...], ...]
    compute: np.ndarray
    activation: np.ndarray
    parameters: np.ndarray
    crossing: np.ndarray
    ancestor_runs: np.ndarray
    ancestor_starts: np.ndarray
    ancestor_ends: np.ndarray

    def __len__(self) -> int:
        return len(self.antichains)

    def done(self, state: int) -> int:
        """The bit set of nodes done after ``state``."""
        return _bits(self.closure[state])

    def nodes_between(self, start: int, end: int) -> list[int]:
        """Nodes of the stage holding states start..end−1: done after end−1 but not after start−1."""
        done = self.done(end - 1) & ~(self.done(start - 1) if start > 0 else 0)
        return [node for first, last in _runs(done) for node in range(first, last + 1)]

    def ancestors(self, state: int) -> list[int]:
        """The states before ``state`` in the antichain DAG, ascending."""
        runs = range(self.ancestor_runs[state], self.ancestor_runs[state + 1])
        return [k for r in runs for k in range(self.ancestor_starts[r], self.ancestor_ends[r] + 1)]


MAX_STATES = 20000  # a limit on the search itself; Inception-v3 has ~221,000 states


@per_profile
def antichain_states(profile: LayerProfile, max_states: int = MAX_STATES) -> AntichainStates:
    """The states of ``profile``; more than ``max_states`` is an error (the search, and a
    hierarchy's tables, would not fit: PipeDream's own answer is to compress branches first)."""
    n = len(profile)
    shape = _shape(tuple(profile.producers(k) for k in range(n)), tuple(profile.consumers(k) for k in range(n)),
                   max_states)
    augmented, closure = shape.augmented, shape.closure
    if closure[-1] != ((0, n - 1),):
        last = _bits(closure[-1])
        missing = [profile.names[k] for k in range(n) if not last >> k & 1]
        raise InputError(f"no antichain path from the first source {profile.names[shape.source]} reaches "
                         f"{len(missing)} node(s), e.g. {missing[0]}: PipeDream's states would drop their cost",
                         field="edges")
    total, weights, activations = profile.total, profile.weight_bytes, profile.activation_bytes
    sums = []
    for values in (total, activations, weights):
        out, prefix = np.empty(len(closure)), _exact_prefix_sums(values)
        for number, runs in enumerate(closure):  # one mask at a time (a prefix of nodes needs none)
            if len(runs) == 1 and runs[0][0] == 0:
                out[number] = prefix[runs[0][1]] if prefix is not None else np.sum(values[:runs[0][1] + 1], dtype=float)
            else:
                out[number] = np.sum(values[mask(_bits(runs), n)], dtype=float)
        sums.append(out)
    compute, activation, parameters = sums
    crossing = np.array([float(sum(float(activations[k]) for k in nodes)) for nodes in augmented])
    return AntichainStates(antichains=augmented, closure=closure, compute=compute, activation=activation,
                           parameters=parameters, crossing=crossing, ancestor_runs=shape.runs,
                           ancestor_starts=shape.starts, ancestor_ends=shape.ends)


@dataclass(frozen=True)
class _Shape:
    """What the states depend on besides costs: the DAG alone (shared by every profile of a network)."""

    augmented: tuple[tuple[int, ...], ...]
    closure: tuple[tuple[tuple[int, int], ...], ...]
    runs: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    source: int


@functools.lru_cache(maxsize=8)
def _shape(producers: tuple[tuple[int, ...], ...], successors_list: tuple[tuple[int, ...], ...],
           max_states: int) -> _Shape:
    """The states of the DAG given by each node's producers and consumers, in PipeDream's order."""
    n = len(producers)
    before = _Reach(lambda node: (1 << node) - 1)  # strict predecessors
    for node in range(n):
        before.put(node, functools.reduce(operator.or_, (before[p] | 1 << p for p in producers[node]), 0))
    everything = (1 << n) - 1
    after = _Reach(lambda node: everything >> (node + 1) << (node + 1))  # strict successors
    for node in reversed(range(n)):
        after.put(node, functools.reduce(operator.or_, (after[c] | 1 << c for c in successors_list[node]), 0))
    sources = [k for k in range(n) if not producers[k]]
    if not sources:
        raise InputError("the profile has no source node", field="edges")

    # Only a node with two or more consumers can be added: a path from a single-consumer node p to
    # an antichain node passes through p's one consumer, which is then not outside.
    consumers_of = {node: sum(1 << child for child in set(successors_list[node])) for node in range(n)
                    if len(successors_list[node]) > 1}
    branching = sum(1 << node for node in consumers_of)
    augmented_cache: dict[tuple[int, ...], list[int]] = {}

    def augment(antichain: list[int]) -> list[int]:
        """PipeDream's augment_antichain: add each predecessor p of an antichain node a that still
        has a consumer other than a outside a's predecessors."""
        key = tuple(sorted(antichain))
        if key not in augmented_cache:
            extra = 0
            for node in antichain:
                inside = before[node]
                candidates = inside & branching
                while candidates:
                    low = candidates & -candidates
                    p = low.bit_length() - 1
                    if consumers_of[p] & ~(inside | 1 << node):
                        extra |= low
                    candidates ^= low
            augmented_cache[key] = [k for k in range(extra.bit_length()) if extra >> k & 1] + list(antichain)
        return augmented_cache[key]

    augmented, done, edges, order = discover(sources[0], successors_list, before, after, augment, max_states)
    closure = [_runs(bits) for bits in done]
    runs, starts, ends = _ancestor_runs(order, edges, {state: k for k, state in enumerate(order)})
    return _Shape(tuple(tuple(nodes) for nodes in augmented), tuple(closure), runs, starts, ends, sources[0])


def discover(source: int, successors_list: Sequence[Sequence[int]], before: _Reach | Sequence[int],
             after: _Reach | Sequence[int], augment: Callable[[list[int]], list[int]], max_states: int):
    """PipeDream's antichain_dag() and topological_sort(): the antichains reachable from [source] one
    node at a time, found breadth first (ids and edge order as the released code), then numbered in
    its depth-first order. Returns, per state in that order, its augmented antichain and the bit set
    of nodes done after it; each state's successors by discovery id; and the order (ids). ``before``
    and ``after``: each node's strict predecessors and successors as bit sets; ``augment``:
    augment_antichain, passed in so the first-written version kept in the tests reaches the same
    states by the same walk. Public: the frozen reference (tests/pipedream_reference.py) shares it
    rather than copying it."""

    def deaugment(augmented: list[int]) -> list[int]:
        inside = 0
        for node in augmented:
            inside |= 1 << node
        kept: list[int] = []
        for node in augmented:
            if not after[node] & inside and node not in kept:
                kept.append(node)
        return kept

    next_cache: dict[tuple[int, ...], list[list[int]]] = {}

    def next_antichains(antichain: list[int]) -> list[list[int]]:
        key = tuple(sorted(antichain))
        if key not in next_cache:
            found = []
            members = set(antichain)
            augmented = augment(antichain)
            inside = 0
            for node in augmented:
                inside |= 1 << node
            for node in augmented:
                for nxt in successors_list[node]:
                    if nxt in members or after[nxt] & inside:
                        continue
                    found.append(deaugment([nxt if x == node else x for x in augmented]))
            next_cache[key] = found
        return next_cache[key]

    # Breadth-first discovery (ids and edge order as PipeDream's antichain_dag()).
    first = [source]
    ids: dict[tuple[int, ...], int] = {tuple(sorted(first)): 0}
    chains: list[list[int]] = [first]
    edges: list[list[int]] = [[]]
    queue = collections.deque([first])
    expanded: set[tuple[int, ...]] = set()
    while queue:
        antichain = queue.popleft()
        key = tuple(sorted(antichain))
        if key in expanded:
            continue
        expanded.add(key)
        for nxt in next_antichains(antichain):
            nkey = tuple(sorted(nxt))
            if nkey not in ids:
                if len(chains) >= max_states:
                    raise InputError(f"more than {max_states} antichain states: too many for PipeDream's state "
                                     "search (and a hierarchy's states² × machines tables); merge parallel branches "
                                     "first (PipeDream's scripts/compress_graph_branches.py)", field="edges")
                ids[nkey] = len(chains)
                chains.append(nxt)
                edges.append([])
            edges[ids[key]].append(ids[nkey])
            queue.append(nxt)
    order = _depth_first_order(edges)
    augmented = [augment(chains[s]) for s in order]
    done = []
    for nodes in augmented:
        bits = 0
        for node in nodes:
            bits |= before[node] | 1 << node
        done.append(bits)
    return augmented, done, edges, order


def _ancestor_runs(order: list[int], edges: list[list[int]], number: dict[int, int]):
    """Each state's ancestors (by state number) as merged runs, in CSR form (see AntichainStates)."""
    parents: list[list[int]] = [[] for _ in order]
    for s in order:
        for child in edges[s]:
            parents[number[child]].append(number[s])
    found: list[list[tuple[int, int]]] = []
    for state in range(len(order)):  # numbers are topological: parents come first
        pieces = sorted(itertools.chain.from_iterable(found[p] + [(p, p)] for p in set(parents[state])))
        merged: list[tuple[int, int]] = []
        for start, end in pieces:
            if merged and start <= merged[-1][1] + 1:
                if end > merged[-1][1]:
                    merged[-1] = (merged[-1][0], end)
            else:
                merged.append((start, end))
        found.append(merged)
    runs = np.zeros(len(order) + 1, dtype=np.int64)
    runs[1:] = np.cumsum([len(f) for f in found])
    flat = [run for f in found for run in f]
    starts = np.array([a for a, _ in flat], dtype=np.int64)
    ends = np.array([b for _, b in flat], dtype=np.int64)
    return runs, starts, ends


def _depth_first_order(edges: list[list[int]]) -> list[int]:
    """PipeDream's topological_sort: DFS from state 0, children in discovery order, each finished
    state put in front (iteratively: deep networks exceed Python's recursion limit)."""
    order: list[int] = []
    done = [False] * len(edges)
    for root in range(len(edges)):
        if done[root]:
            continue
        stack = [(root, iter(edges[root]))]
        active = {root}
        while stack:
            state, children = stack[-1]
            for child in children:
                if not done[child] and child not in active:
                    active.add(child)
                    stack.append((child, iter(edges[child])))
                    break
            else:
                stack.pop()
                active.discard(state)
                done[state] = True
                order.append(state)
    order.reverse()
    return order


def _exact_prefix_sums(values: np.ndarray) -> np.ndarray | None:
    """Every prefix's sum when the values are whole numbers whose magnitudes total less than 2⁵³:
    then every partial sum is exact, so any order of summation (np.sum's pairwise one included)
    gives these same floats. None otherwise (prefixes are then summed as np.sum does)."""
    as_float = np.asarray(values, dtype=float)
    if not (np.all(as_float == np.round(as_float)) and float(np.sum(np.abs(as_float))) < 2.0 ** 53):
        return None
    return np.cumsum(as_float)


class _Reach:
    """Each node's strict predecessors (or successors) as bit sets, kept only where they are not
    ``full(node)`` (every earlier, or later, node): a chain keeps none, so memory follows the
    branching, not n²."""

    def __init__(self, full: Callable[[int], int]) -> None:
        self.full = full
        self.kept: dict[int, int] = {}

    def put(self, node: int, bits: int) -> None:
        if bits != self.full(node):
            self.kept[node] = bits

    def __getitem__(self, node: int) -> int:
        bits = self.kept.get(node)
        return self.full(node) if bits is None else bits


def _runs(bits: int) -> tuple[tuple[int, int], ...]:
    """A bit set as ascending runs (first, last) of set bits."""
    runs = []
    offset = 0
    while bits:
        skip = (bits & -bits).bit_length() - 1
        bits >>= skip
        length = (~bits & (bits + 1)).bit_length() - 1
        runs.append((offset + skip, offset + skip + length - 1))
        bits >>= length
        offset += skip + length
    return tuple(runs)


def _bits(runs: tuple[tuple[int, int], ...]) -> int:
    return sum((1 << (last + 1)) - (1 << first) for first, last in runs)


def mask(bits: int, n: int) -> np.ndarray:
    """The bit set ``bits`` over nodes 0..n−1 as booleans. Public: the frozen reference
    (tests/pipedream_reference.py) shares it rather than copying it."""
    raw = np.frombuffer(bits.to_bytes((n + 7) // 8, "little"), dtype=np.uint8)
    return np.unpackbits(raw, bitorder="little")[:n].astype(bool)


__all__ = ["AntichainStates", "antichain_states", "discover", "mask"]
