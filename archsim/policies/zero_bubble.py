"""Stage-level pipeline schedules with the backward split into I (input gradient: archsim's D, the
zero-bubble paper's B) and W (weight gradient, G) (Qi et al., "Zero Bubble Pipeline Parallelism",
ICLR 2024). Vocabulary as torch's (:mod:`archsim.policies.actions`): B is a full backward.

The published schedules (``SCHEDULES``: 1F1B, interleaved 1F1B, ZB-H1, ZB-H2, ZB-1p, ZB-2p and
torch's interleaved zero bubble) run the fixed per-rank orders their authors build
(:mod:`archsim.policies.stage_orders`, :mod:`archsim.policies.zb_auto`), timed with per-hop
communication by :mod:`archsim.policies.stage_run`.

archsim's own list schedules (``LIST_SCHEDULES``, named ``list-…``) are kept as variants: they are
not the published orders but greedy list schedules with the published in-flight limits (W fills
any idle slot), without communication. Greedy and non-preemptive, they may beat the published
orders they are named after or lose to them: on stages of F (2, 1, 3), I (2, 2, 1), W (1, 3, 1) time
units over 8 micro-batches, list-zb-h1 and list-zb-h2 take 53 and 52 against ZB-H1's and ZB-H2's 54,
but list-1f1b takes 69 against 1F1B's 57 — at t = 13 stage 2 has a forward and a backward ready, runs
the backward first, and stage 3 idles from 13 to 19 for that forward (tests/test_zero_bubble.py).

p stages, m micro-batches; per stage and micro-batch: F, I, W. F_s needs F_{s−1}; I_s needs I_{s+1}
(list-1f1b: stage s + 1's whole backward, I and W; the last stage's I needs its F); W_s needs I_s. Stage s admits micro-batch b only after the
backward of b − N_s, where N_s is the schedule's in-flight limit, and the priority on a stage is
I, then F, then W (W fills bubbles):

* ``list-1f1b``: I and W run as one backward (I immediately followed by W), N_s = p − s + 1;
* ``list-zb-h1``: I and W separate, N_s = p − s + 1 — 1F1B's activation memory, bubble
  (p − 1)(T_F + T_I − T_W);
* ``list-zb-h2``: N_s = 2(p − s) + 1 — more warm-up forwards fill the drain, 2p − 1 in flight on the
  first stage, bubble (p − 1)(T_F + T_I − 2T_W) (zero when F = I = W).

Activation memory is counted as the zero-bubble paper counts it: a micro-batch's activation is
held from its F to its backward — to W when I and W are fused, to I when they are split (W keeps
only its smaller weight-gradient inputs, not counted here).
"""

from __future__ import annotations

import numpy as np

from archsim.choices.schedules import LIST_SCHEDULES
from archsim.choices.schedules import ZB_SCHEDULES as SCHEDULES
from archsim.errors import InputError
from archsim.policies.actions import StageOrder
from archsim.policies.stage_orders import published_order
from archsim.policies.stage_profile import StageProfile
from archsim.policies.stage_run import StageRun, order_problem, run_order
from archsim.policies.zb_auto import zb_auto_order
from archsim.policies.zb_exact import zb_optimal_order
from archsim.sim import Problem, Processor, simulate
from archsim.sim.builder import build, repeat_flow
from archsim.sim.columns import DepColumns, OpColumns

# published orders run on per-stage costs only (on a network, ``gpipe`` is out-of-order backprop's policy)
STAGE_ONLY = ("gpipe", "looped-bfs", "zb-1p-exact", "zb-2p-exact")


def op_count(schedule: str, processors: int, microbatches: int, chunks: int = 2) -> int:
    """The ops a schedule's problem has (dualpipev: at most; its main phase fuses some backwards):
    per (virtual) stage and micro-batch one F and one B, or F, I and W when the backward is split."""
    stages = processors * (chunks if schedule.startswith("interleaved") else 2 if schedule in ("zb-v", "dualpipev")
                           else 1)
    fused = schedule in ("1f1b", "interleaved-1f1b")
    return stages * microbatches * (2 if fused else 3)


def in_flight(schedule: str, stages: int, stage: int) -> int:
    """N_s for 1-based stage s."""
    return 2 * (stages - stage) + 1 if schedule.endswith("zb-h2") else stages - stage + 1


def zb_problem(profile: StageProfile, microbatches: int, schedule: str) -> Problem:
    """The list-schedule variant ``list-1f1b``, ``list-zb-h1`` or ``list-zb-h2``, built as columns:
    one micro-batch's ops (F, I, W per stage) and dependencies repeated for every micro-batch.
    Reads the profile's F, I, W and activation (M_B; none given: no memory counted, as
    :mod:`~archsim.policies.stage_run` counts it); the list variants have no transfers, so its
    comm, send bytes and bandwidth are not read."""
    if schedule not in LIST_SCHEDULES:
        raise InputError(f"unknown list schedule {schedule!r}; choose one of {', '.join(LIST_SCHEDULES)}",
                         field="policy")
    p, m = profile.stages, microbatches
    fused = schedule == "list-1f1b"
    rank = {"I": 0, "F": 1, "W": -1 if fused else 2}
    template = [(s, kind) for s in range(1, p + 1) for kind in "FIW"]
    slot = {op: t for t, op in enumerate(template)}
    memory = [profile.activation[s - 1] if profile.activation else 0 for s, _ in template]
    cost = {"F": profile.forward, "I": profile.backward_input, "W": profile.backward_weight}
    freed = "W" if fused else "I"  # the backward that frees the activation (and admits the next micro-batch)
    b = np.repeat(np.arange(m, dtype=np.int64), len(template))
    ops = OpColumns(
        [f"{kind}{s}:{i}" for i in range(m) for s, kind in template],
        np.tile(np.array([s - 1 for s, _ in template], dtype=np.int64), m),
        np.tile(np.array([cost[kind][s - 1] for s, kind in template], dtype=np.float64), m),
        alloc=np.tile(np.array([x if kind == "F" else 0 for (_, kind), x in zip(template, memory)]), m),
        free=np.tile(np.array([x if kind == freed else 0 for (_, kind), x in zip(template, memory)]), m),
        priority=np.column_stack([np.tile(np.array([rank[kind] for _, kind in template], dtype=np.int64), m), b]),
        tags=(("stage", [s for s, _ in template] * m), ("microbatch", b),
              ("kind", [{"F": "F", "I": "D", "W": "G"}[kind] for _, kind in template] * m)))
    # (source op, its micro-batch − this one, target op): a dependency exists where its source micro-batch does
    deps: list[tuple[int, int, int]] = []
    for s in range(1, p + 1):
        if s > 1:
            deps.append((slot[(s - 1, "F")], 0, slot[(s, "F")]))
        upstream = "W" if fused else "I"  # a fused backward sends δ only after its W
        deps.append((slot[(s + 1, upstream)] if s < p else slot[(s, "F")], 0, slot[(s, "I")]))
        deps.append((slot[(s, "I")], 0, slot[(s, "W")]))
        window = in_flight(schedule, p, s)  # admission: the backward of b − N_s has freed its activation
        deps.append((slot[(s, freed)], -window, slot[(s, "F")]))
        if fused:  # W right after its I: the next I waits for this W
            deps.append((slot[(s, "W")], -1, slot[(s, "I")]))
    src, offset, dst = (np.array(c, dtype=np.int64) for c in zip(*deps))
    flow = repeat_flow(DepColumns(src, dst), offset, len(template), m)
    return build(tuple(Processor(f"s{s}") for s in range(1, p + 1)), ops, flow)


def published_run(profile: StageProfile, microbatches: int, schedule: str, chunks: int = 2,
                  max_orders: int = 300_000) -> StageRun:
    """A published schedule (``SCHEDULES`` or ``STAGE_ONLY``) over one profile entry per device;
    ``max_orders`` bounds the exact searches' order count (counted before any order is built)."""
    return run_order(*_published(profile, microbatches, schedule, chunks, max_orders))


def _published(profile: StageProfile, microbatches: int, schedule: str, chunks: int,
               max_orders: int = 300_000) -> tuple[StageOrder, StageProfile]:
    """The order of a published schedule and the profile of its virtual stages: the one place a
    schedule's name picks its action-order generator. A profile without activation memory times and
    counts none (0 bytes held); the memory-limited searches (zb-1p/zb-2p and their exact forms) still
    need a unit for their limit of k·p·M_B, so they take M_B = 1 per stage there (their default)."""
    p = profile.stages
    if schedule in ("zb-1p-exact", "zb-2p-exact"):
        if isinstance(profile.comm, tuple):
            raise InputError(f"{schedule} takes one T_comm for every hop", field="comm")
        order = zb_optimal_order(profile.forward, profile.backward_input, profile.backward_weight, profile.comm,
                                 microbatches, 1 if schedule == "zb-1p-exact" else 2, profile.activation,
                                 profile.weight_memory, limit=max_orders)
        return order, profile
    if schedule in ("gpipe", "looped-bfs"):
        c = chunks if schedule == "looped-bfs" else 1
        return published_order(schedule, p, microbatches, c), profile.chunked(c)
    if schedule in ("zb-1p", "zb-2p"):
        hops = set(profile.comm) if isinstance(profile.comm, tuple) else {profile.comm}
        if len(hops) > 1:
            raise InputError(f"{schedule}: the automatic scheduler takes one T_comm for every hop, got "
                             f"{sorted(hops)}", field="comm")
        order = zb_auto_order(profile.forward, profile.backward_input, profile.backward_weight, hops.pop(),
                              microbatches, 1 if schedule == "zb-1p" else 2, profile.activation,
                              profile.weight_memory)
        return order, profile
    if schedule in ("interleaved-1f1b", "interleaved-zb"):
        return published_order(schedule, p, microbatches, chunks), profile.chunked(chunks)
    if schedule not in SCHEDULES:
        raise InputError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES + STAGE_ONLY)}",
                         field="policy")
    order = published_order(schedule, p, microbatches)
    return order, profile.on_ranks(order.rank_of_stage()) if order.stages != p else profile


def zb_build(profile: StageProfile, microbatches: int, schedule: str, chunks: int = 2) -> Problem:
    """The problem of a published schedule (hops timed from the profile's comm, send bytes and
    bandwidth) or a ``list-…`` variant (these have no transfers)."""
    if schedule in SCHEDULES:
        return order_problem(*_published(profile, microbatches, schedule, chunks))
    return zb_problem(profile, microbatches, schedule)


def zb_schedule(profile: StageProfile, microbatches: int, schedule: str, chunks: int = 2):
    """(problem, timeline) of a published schedule or a ``list-…`` variant (these have no transfers)."""
    problem = zb_build(profile, microbatches, schedule, chunks)
    return problem, simulate(problem)


__all__ = ["STAGE_ONLY", "in_flight", "op_count", "published_run", "zb_build",
           "zb_problem", "zb_schedule"]
