"""Hierarchical context parallelism (``--cp-comm a2a+p2p --cp-hierarchy A P``): TransformerEngine's
``cp_comm_type="a2a+p2p"`` as Megatron-LM runs it with ``--hierarchical-context-parallel-sizes A P`` (A·P = CP).
TransformerEngine: ``AttnFuncWithCPAndKVP2P`` given ``cp_group = [a2a group, p2p group]`` (``transformer_engine/
pytorch/attention/dot_product_attention/context_parallel.py``, commit d0067d0d); Megatron-LM:
``create_hierarchical_groups`` (``megatron/core/parallel_state.py``) and the checks of ``arguments.py``.

The CP group's ranks form CP/A inner groups of A consecutive CP ranks (Megatron's first level: [g0, g1], [g2, g3],
…) and A outer groups of P ranks, every A-th (the second level: [g0, g2], [g1, g3], …; TE's ring sends to CP rank
((i + 1) mod P)·A + j) (:func:`cp_subgroups`). Forward: Q, K and V all-to-all'd over the inner group, as a2a's
(:mod:`~archsim.training.context_parallel_a2a`, the rank's s/CP tokens at all of its TP rank's heads each), leave
each rank 1/A of the heads over the inner group's s/P tokens — chunks j and 2·P − 1 − j of 2·P, Megatron's
load-balanced pair at P; then p2p's ring over the outer group (P steps at heads/A, K/V of s/P tokens at K/V
heads/A each: the bytes of p2p's s/CP tokens at all of them), then the output all-to-all'd back. Backward: dO
all-to-all'd, the ring backward, dQ, dK, dV all-to-all'd. TE runs A = 1 as p2p and P = 1 as a2a
(``attn_forward_func_with_cp``), and so does archsim (:func:`effective_comm`)."""

from __future__ import annotations

from archsim.console import route, setting


def effective_comm(cp_comm: str, hierarchy: tuple[int, int] | None) -> str:
    """The exchange TransformerEngine runs: a2a+p2p with an inner group of 1 is p2p, with an outer group of 1
    a2a (``attn_forward_func_with_cp`` swaps the type); every other name as given."""
    if cp_comm != "a2a+p2p" or hierarchy is None:
        return cp_comm
    return "p2p" if hierarchy[0] == 1 else "a2a" if hierarchy[1] == 1 else cp_comm


def hierarchy_problem(cp: int, cp_comm: str, hierarchy: tuple[int, int] | None) -> str:
    """Why ``hierarchy`` (A, P) cannot go with CP ``cp`` and ``cp_comm`` ('' when it can): Megatron-LM requires the
    sizes with a2a+p2p and asserts A·P = CP; another exchange has no levels (refused, as it would change nothing)."""
    if hierarchy is None:
        return (f"{setting('cp-comm', 'a2a+p2p')} needs {setting('cp-hierarchy', placeholder='A P')}: an all-to-all "
                f"over A ranks, a p2p ring over P of them, A × P = CP (Megatron-LM's "
                "--hierarchical-context-parallel-sizes)" if cp_comm == "a2a+p2p" else "")
    if cp_comm != "a2a+p2p":
        return (f"{setting('cp-hierarchy')} splits CP for {setting('cp-comm', 'a2a+p2p')} only, not "
                f"{setting('cp-comm', cp_comm)}")
    if len(hierarchy) != 2 or any(not isinstance(n, int) or isinstance(n, bool) or n <= 0 for n in hierarchy):
        return f"takes two positive integers A P, got {' '.join(map(str, hierarchy))}"
    if hierarchy[0] * hierarchy[1] != cp:
        return (f"{hierarchy_setting(*hierarchy)} makes "
                f"{hierarchy[0] * hierarchy[1]} ranks, not CP {cp}: A × P must be CP (Megatron-LM asserts it)")
    return ""


def hierarchy_setting(a: int, p: int) -> str:
    """``--cp-hierarchy 4 2`` from a command, ``cp_hierarchy=(4, 2)`` from the library."""
    return route(f"--cp-hierarchy {a} {p}", f"cp_hierarchy=({a}, {p})")


def cp_subgroups(ranks: range, hierarchy: tuple[int, int]) -> tuple[list[range], list[range]]:
    """A CP group's ``ranks`` (global GPU numbers, CP rank order) as its inner all-to-all groups (A consecutive CP
    ranks each) and its outer p2p rings (every A-th CP rank, P each): Megatron-LM's two levels."""
    a, p = hierarchy
    return [ranks[j * a:(j + 1) * a] for j in range(p)], [ranks[i::a] for i in range(a)]


__all__ = ["cp_subgroups", "effective_comm", "hierarchy_problem", "hierarchy_setting"]
