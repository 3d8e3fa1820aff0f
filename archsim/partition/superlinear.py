"""Why a plan's speedup can exceed its processor count, said rather than left for the reader to puzzle over.

Speedup is one processor's cost (every layer's whole F, G and δ) over the plan's iteration. LayerPipe's
Algorithm 1 replaces a δ by two sub-GEMMs, δ′ and δ″ (``D1``, ``D2``); under the ``cycle`` engine a smaller GEMM
can stall far less on DRAM refetch than the whole one (SCALE-Sim's refetch, docs/concepts.md), so the parts
together cost fewer cycles than the δ they replace and the plan does less work than one processor. On
``layerpipe_sample`` (paper mode, batch 1, 32×32, ``--engine cycle --bandwidth 4 --sram-kb 32``) 3 processors
reach a speedup of 3.02: a gain of the split's tiling, not of the pipeline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from archsim.partition.profile import LayerProfile
    from archsim.partition.result import Partition

SPLIT_KINDS = ("D1", "D2")  # δ′ and δ″ of a split δ
RELATIVE_SLACK = 1e-12  # float sums' last bits are no gain


def above_processors(speedup, processors):
    """Whether a ``speedup`` is above its ``processors`` count by more than float sums' last bits: the one test of
    :func:`superlinear_note` (one plan) and :func:`archsim.sweep.superlinear_rows.superlinear_rows_line` (a sweep's
    rows; ``speedup`` and ``processors`` columns, elementwise)."""
    return speedup > processors * (1 + RELATIVE_SLACK)


def split_saving(profile: LayerProfile, plan: Partition) -> float:
    """The whole δs of the layers whose δ ``plan`` split, less the parts it runs instead, in the plan's unit
    (positive where the parts cost less; 0 where nothing was split)."""
    parts: dict[str, float] = {}
    for stage in plan.stages:
        for op in stage.ops:
            if op.kind in SPLIT_KINDS:
                parts[op.layer] = parts.get(op.layer, 0.0) + op.cost
    whole = dict(zip(profile.names, profile.delta, strict=True))
    return sum(float(whole[layer]) - cost for layer, cost in parts.items())


def superlinear_note(profile: LayerProfile, plan: Partition, processors: object) -> str | None:
    """The line ``archsim pipeline`` (stderr) and :func:`archsim.pipeline` (a UserWarning) say when ``plan``'s
    speedup is above ``processors``: how much less its split δ parts cost than the whole δs. None otherwise, and
    for a cluster (``processors`` not a count)."""
    if not isinstance(processors, int) or isinstance(processors, bool) or plan.max_stage_cost <= 0:
        return None
    single = float(profile.total.sum())
    speedup = single / plan.max_stage_cost
    if not above_processors(speedup, processors):
        return None
    saved = split_saving(profile, plan)
    cause = (f"its split δ parts (D1 + D2) cost {saved:.6g} {plan.unit} less than the whole δs they replace "
             f"({saved / single:.1%} of one processor's {single:.6g}; under the {profile.engine} engine a smaller "
             "GEMM can stall less), so part of the speedup is the split's, not the pipeline's"
             if saved > 0 else f"its ops cost less than one processor's {single:.6g} {plan.unit}")
    return f"{plan.method}'s speedup {speedup:.4g} is above its {processors} processors: {cause}"


__all__ = ["above_processors", "split_saving", "superlinear_note"]
