"""A search candidate laid out on a GPU cluster: each pipeline rank's GPU memory, the planner's
uneven split of its layers (:mod:`archsim.training.stage_split`, per model chunk where a rank holds
several) and whether every rank fits its own GPU — what :mod:`archsim.training.search` checks before
timing a candidate, on the file's server order or on each order a planned placement tries."""

from __future__ import annotations

from dataclasses import replace

from archsim.training.mla_ops import deepseek_rule
from archsim.training.search_space import Candidate, peak_memory_bytes, rank_memories
from archsim.training.stage_split import each_once, nearest_even_split, planned_split, stage_layer_counts


def rank_capacities(cluster, par) -> list[float] | None:
    """Each pipeline rank's GPU memory a job may allocate (bytes: :meth:`~archsim.training.cluster.GpuCluster.capacity`),
    or None when a rank's GPUs mix types."""
    if not cluster.heterogeneous:
        return [cluster.capacity(cluster.gpu)] * par.pp
    kinds = cluster.rank_gpus(par)
    return None if kinds is None else [cluster.capacity(g) for g in kinds]


def plan_candidate(c, cluster, global_batch: int, k: Candidate, pieces=None) -> Candidate | None:
    """``k`` with the planner's stage split (:func:`~archsim.training.stage_split.planned_split`, each
    rank's pieces from ``pieces(par, machine)``, the search's cache, when given), or None when no split
    fits each rank's memory or the planner does not split ``c`` so (:func:`planner_refuses`)."""
    par = k.parallelism(global_batch)
    if planner_refuses(c, par):
        return None
    machines = cluster.rank_wise(par) or (cluster.machine(par),) * k.pp
    capacities = rank_capacities(cluster, par)
    split = None if capacities is None else planned_split(
        c, par, machines, capacities, None if pieces is None else each_once(machines, lambda m: pieces(par, m)))
    return None if split is None else replace(k, stage_layers=stage_layer_counts(split))


def planner_refuses(c, par) -> bool:
    """Whether the planner does not split ``c`` under ``par`` (train's refusal of ``--balance planned``,
    :func:`~archsim.training.mla_ops.deepseek_rule`: layers of several kinds over several chunks a rank)."""
    return deepseek_rule(c, par.cp, par.fp8, par.fsdp, par.schedule_name, par.chunks, planned=True) is not None


def even_candidate(c, cluster, global_batch: int, k: Candidate, nearest: bool = False) -> Candidate | None:
    """``k`` with Megatron's even split written out (as a planned split is), or None where it cannot
    run: PP × chunks does not divide the layers (``nearest``: then the split nearest to even,
    :func:`~archsim.training.stage_split.nearest_even_split`, given a layer a chunk), a rank mixes GPU types or a
    rank's GPU is too small."""
    stages = k.pp * replace(k, stage_layers=None).parallelism(global_batch).chunks
    if c.layers % stages and not (nearest and c.layers >= stages):
        return None
    k = replace(k, stage_layers=nearest_even_split(c.layers, stages))  # the even split where S divides L
    par = k.parallelism(global_batch)
    capacities = rank_capacities(cluster, par)
    if capacities is None or not memory_fits(c, cluster, par, capacities)[1]:
        return None
    return k


def faster_split(c, cluster, global_batch: int, planned: Candidate, seconds) -> Candidate:
    """``planned`` or, where it runs and ``seconds`` (candidate → s: the row's own model) times it
    faster, the even split (:func:`even_candidate`): ``--balance planned`` never ranks a split its
    own timing says is slower than the even one (ties keep the planner's)."""
    even = even_candidate(c, cluster, global_batch, planned)
    if even is None or even.stage_layers == planned.stage_layers:
        return planned
    return even if seconds(even) < seconds(planned) else planned


def fit_candidate(c, cluster, global_batch: int, k: Candidate, balance: str,
                  coster=None) -> tuple[Candidate, float] | str:
    """``k`` laid out on ``cluster`` (its layers split by the planner when ``balance`` is planned, or
    evenly where ``coster`` times that faster: :func:`faster_split`; where the planner refuses the model, as
    near evenly as Megatron can: :func:`even_candidate`'s ``nearest``) and its largest GPU's bytes, or why
    it cannot run; ``coster``: the search's :class:`~archsim.training.search_cost.Coster` (its cache of
    layer pieces and its seconds)."""
    par = k.parallelism(global_batch)
    why = cluster.problem(par) if cluster.heterogeneous else None
    if why is not None:
        return why
    if balance == "planned" and k.plannable:
        # where the planner does not split the model (train's refusal), Megatron's split nearest to even, which
        # train runs as --stage-layers
        planned = even_candidate(c, cluster, global_batch, k, nearest=True) if planner_refuses(c, par) else \
            plan_candidate(c, cluster, global_batch, k, None if coster is None else coster.pieces_of)
        if planned is None:
            return "out-of-memory"
        if coster is not None:
            planned = faster_split(c, cluster, global_batch, planned, lambda x: coster.seconds(x)[0])
        k, par = planned, planned.parallelism(global_batch)
    capacities = rank_capacities(cluster, par)
    assert capacities is not None  # problem() refused mixed ranks
    memory, fits = memory_fits(c, cluster, par, capacities)
    return (k, memory) if fits else "out-of-memory"


def memory_fits(c, cluster, par, capacities: list[float]) -> tuple[float, bool]:
    """The largest GPU's bytes and whether every rank fits its own GPU."""
    if not cluster.heterogeneous:
        peak = peak_memory_bytes(c, par, cluster.dtype)
        return peak, peak <= capacities[0]
    sizes = [m.total for m in rank_memories(c, par, dtype=cluster.dtype)]
    return max(sizes), all(size <= cap for size, cap in zip(sizes, capacities))


__all__ = ["even_candidate", "faster_split", "fit_candidate", "memory_fits", "plan_candidate", "planner_refuses",
           "rank_capacities"]
