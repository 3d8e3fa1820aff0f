"""PipeDream's states: the antichain DAG of a profile's node DAG (SOSP'19 §3.1, the released
``graph.py``), which lets its dynamic program cut a branching network anywhere a set of tensors
can cross.

A *state* is an antichain of nodes; everything it and its predecessors compute is "done". Its
*augmented* antichain adds the predecessors whose output is still read by a node not yet done (a
ResNet shortcut's source, say): every tensor crossing the cut after this state. States are
reached from the first source by advancing one node at a time, and numbered in the order
PipeDream's ``topological_sort`` gives them (depth-first from the first state, children in the
order they were found, each finished state put in front), so state numbers match the optimizer's.

Sets of nodes and of states are Python integers used as bit sets (bit k = node k), and a state's
ancestors are handed on packed, so memory grows as n²/8 bytes, not n² integers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from archsim.errors import InputError
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
                inside = _mask(before[node], n)
                outside = ~inside
                outside[node] = False
                extra.update(np.flatnonzero(inside & (reads @ outside.astype(np.int8) > 0)).tolist())
            augmented_cache[key] = sorted(extra) + list(antichain)
        return augmented_cache[key]

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
    first = [sources[0]]
    ids: dict[tuple[int, ...], int] = {tuple(sorted(first)): 0}
    chains: list[list[int]] = [first]
    edges: list[list[int]] = [[]]
    queue = [first]
    expanded: set[tuple[int, ...]] = set()
    while queue:
        antichain = queue.pop(0)
        key = tuple(sorted(antichain))
        if key in expanded:
            continue
        expanded.add(key)
        for nxt in next_antichains(antichain):
            nkey = tuple(sorted(nxt))
            if nkey not in ids:
                if len(chains) >= max_states:
                    raise InputError(f"more than {max_states} antichain states: PipeDream's optimizer keeps "
                                     "states² × machines tables, too large here; merge parallel branches first "
                                     "(PipeDream's scripts/compress_graph_branches.py)", field="edges")
                ids[nkey] = len(chains)
                chains.append(nxt)
                edges.append([])
            edges[ids[key]].append(ids[nkey])
            queue.append(nxt)
    order = _depth_first_order(edges)
    number = {state: k for k, state in enumerate(order)}

    augmented = [augment(chains[s]) for s in order]
    closure = []
    for nodes in augmented:
        done = 0
        for node in nodes:
            done |= before[node] | 1 << node
        closure.append(done)
    if closure[-1] != (1 << n) - 1:
        missing = [profile.names[k] for k in range(n) if not closure[-1] >> k & 1]
        raise InputError(f"no antichain path from the first source {profile.names[sources[0]]} reaches "
                         f"{len(missing)} node(s), e.g. {missing[0]}: PipeDream's states would drop their cost",
                         field="edges")
    total, weights, activations = profile.total, profile.weight_bytes, profile.activation_bytes
    masks = [_mask(done, n) for done in closure]
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


def _mask(bits: int, n: int) -> np.ndarray:
    """The bit set ``bits`` over nodes 0..n−1 as booleans."""
    raw = np.frombuffer(bits.to_bytes((n + 7) // 8, "little"), dtype=np.uint8)
    return np.unpackbits(raw, bitorder="little")[:n].astype(bool)


def _edge_matrix(producers, n: int) -> sparse.csr_matrix:
    rows = [p for node in range(n) for p in producers[node]]
    cols = [node for node in range(n) for _ in producers[node]]
    return sparse.csr_matrix((np.ones(len(rows), dtype=np.int32), (rows, cols)), shape=(n, n))


__all__ = ["AntichainStates", "antichain_states"]
