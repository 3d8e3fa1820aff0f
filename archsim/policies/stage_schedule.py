"""``archsim schedule`` on per-stage costs without a network (the zero-bubble paper's setting), for the command
and :func:`archsim.schedule` alike: the per-stage profile read from the flags' values (``stages``, ``stage_times``,
``stage_profile``, ...), the order run on it, and the row the command prints.

Reports makespan, cost (the longest rank span), bubble_fraction (idle rank time / (ranks × makespan),
as the network form), zb_bubble_rate ((cost − work)/cost, the paper's §5.3) and the peak activation
memory of every rank (``;``-separated, rank 0 first).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING

from archsim.choices.schedules import STAGE_ONLY_POLICIES, ZB_SCHEDULES
from archsim.console import field_name, route, setting, switch_on
from archsim.errors import InputError
from archsim.policies.stage_profile import MAX_STAGE_VALUE
from archsim.validate import INT32_MAX
from archsim.value_parsers import comma_items, parse_float

if TYPE_CHECKING:
    from archsim.policies.actions import StageOrder
    from archsim.sim.timeline import Timeline

STAGE_POLICIES = (*ZB_SCHEDULES, "gpipe", *STAGE_ONLY_POLICIES)  # gpipe on per-stage costs: the stages' fill-drain
STAGE_ONLY = STAGE_ONLY_POLICIES  # the others also run on a NETWORK's layers
STAGE_UNIT = "the stage times' unit"  # per-stage times are numbers in whatever unit the user gave


def stage_mode(args: SimpleNamespace) -> bool:
    return args.torch_steps or any(getattr(args, name) is not None for name in (
        "stages", "stage_times", "stage_profile", "torch_schedule", "schedule_csv_in"))


def _numbers(text: str, count: int, flag: str) -> list[float]:
    items = comma_items(text, field_name(flag))  # an empty one refused as every comma list's is
    try:
        values = [parse_float(x, high=MAX_STAGE_VALUE, what="a non-negative number") for x in items]
    except ValueError as exc:
        raise InputError(f"expected {count} comma-separated numbers ({exc})", field=field_name(flag)) from None
    if len(values) != count:
        raise InputError(f"expected {count} comma-separated numbers, got {text!r}", field=field_name(flag))
    return values


def profile_from_args(args: SimpleNamespace):
    from archsim.policies.stage_profile import StageProfile, read_stage_profile

    if args.stage_profile:
        if args.stage_times or args.stages:
            raise InputError(f"give {setting('stage-profile')} or {setting('stages')} with {setting('stage-times')}, "
                             "not both", field=field_name("stage-profile"))
        profile = read_stage_profile(args.stage_profile, args.link_bandwidth)
        check_stage_job(args, profile.stages, uniform=False)
        return profile
    if args.stages is None and args.processors is not None:
        args.stages = args.processors  # --processors P means the same as --stages P here
    if args.stages is None or not args.stage_times:
        raise InputError(f"per-stage mode needs {setting('stages', placeholder='P')} and "
                         f"{setting('stage-times', placeholder='F,B,W')} (or {setting('stage-profile')})",
                         field=field_name("stage-times"))
    if args.stages <= 0:
        raise InputError(f"{setting('stages')} must be positive, got {args.stages}", field=field_name("stages"))
    check_stage_job(args, args.stages)
    if args.link_bandwidth is not None:
        raise InputError(f"{setting('link-bandwidth')} needs send_bytes per stage: give them in "
                         f"{setting('stage-profile')}", field=field_name("link-bandwidth"))
    f, b, w = _numbers(args.stage_times, 3, "stage-times")
    if f + b + w == 0:  # nothing to schedule: a makespan of 0 and a bubble of 0/0
        raise InputError(f"every op would take no time: give a positive F, B or W, got {args.stage_times!r}",
                         field=field_name("stage-times"))
    mb, mw = _numbers(args.stage_memory, 2, "stage-memory")
    return StageProfile.uniform(args.stages, f, b, w, args.comm, mb, mw)


def stage_job_ops(policy: str, stages: int, microbatches: int, chunks: int) -> int:
    """Ops of a per-stage run, counted from the flags alone (F, B and W per stage, chunk and micro-batch;
    the published schedules' own count where they have one)."""
    from archsim.choices.schedules import ZB_SCHEDULES
    from archsim.policies import zero_bubble as zb

    if policy in ZB_SCHEDULES:
        return zb.op_count(policy, stages, microbatches, chunks)
    return 3 * stages * microbatches * (chunks if policy == "looped-bfs" else 1)


def check_stage_job(args: SimpleNamespace, stages: int, uniform: bool = True) -> None:
    """Refuse, before the profile or any order is built, a run over the op limit or an exact search over
    ``--max-orders`` combinations, with the estimate and the flag that lifts the limit."""
    from archsim.validate import check_job_size

    policy = args.torch_schedule or args.policy or "1f1b"
    check_job_size(stage_job_ops(policy if not args.torch_schedule else "looped-bfs", stages, args.microbatches,
                                 args.chunks), args.max_ops)
    if uniform and policy.endswith("-exact"):  # a profile's own memories: the search counts them itself
        mb, mw = _numbers(args.stage_memory, 2, "stage-memory")
        check_exact_search(policy, stages, args.microbatches, mb, mw, args.max_orders)


def check_exact_search(policy: str, stages: int, microbatches: int, mb: float, mw: float, limit: int) -> None:
    """The exact search's size: each stage's memory-feasible orders are counted (not listed) first."""
    from archsim.policies.zb_exact import count_stage_orders

    factor = 1 if policy == "zb-1p-exact" else 2
    per_stage = count_stage_orders(microbatches, mb, mw, factor * stages * mb, cap=limit)
    if per_stage <= 1 or stages * math.log10(per_stage) <= math.log10(limit) + 1e-12:
        return  # none (the search says so), or few enough
    exact = microbatches <= 40  # the count itself is cheap to finish there (≤ 40³ lattice states)
    if exact:
        per_stage = count_stage_orders(microbatches, mb, mw, factor * stages * mb)
    digits = stages * math.log10(per_stage)
    size = f"{per_stage ** stages:,}" if digits < 30 else f"about 10^{digits:.0f}"
    orders_gb = stages * per_stage * (24 * microbatches + 64) / 1e9  # a tuple of 3m pointers and its list slot
    amount = f"{size} combinations ({per_stage:,} orders per stage, over {orders_gb:.3g} GB to list them)" if exact \
        else f"more than {limit:,} combinations"
    reachable = exact and digits < 9.3 and per_stage ** stages <= INT32_MAX
    lift = f"give {setting('max-orders', per_stage ** stages)} to run it anyway, or" if reachable else \
        f"that is beyond {setting('max-orders')}' range ({INT32_MAX:,}):"
    raise InputError(f"{policy} would search {amount}, above the limit of {limit:,}; {lift} use "
                     f"{policy[:-6]}'s heuristic", field=field_name("max-orders"))


def stage_row(name: str, stages: int, microbatches: int, run) -> dict[str, object]:
    """The output row of a per-stage run: ``bubble_fraction`` as the network form defines it (one name,
    one quantity), beside the zero-bubble paper's span-based rate under its own name."""
    from archsim.policies.ooo import schedule_metrics

    metrics = run.metrics()
    return {"policy": name, "stages": stages, "microbatches": microbatches, "makespan": metrics["makespan"],
            "cost": metrics["cost"], "bubble_fraction": schedule_metrics(run.problem, run.timeline)["bubble_fraction"],
            "zb_bubble_rate": metrics["bubble_rate"], "peak_memory": metrics["peak_memory"]}


def run_stages(args: SimpleNamespace) -> ScheduleRun:
    """A per-stage run as the flags' values ask (``args``, checked by
    :func:`~archsim.policies.schedule_flags.check_policy_flags`): its row, meta, timeline and order."""
    from archsim.policies import stage_orders as so
    from archsim.policies.stage_run import run_order
    from archsim.policies.torch_csv import read_order_csv
    from archsim.policies.zero_bubble import published_run

    if args.network:
        raise InputError(f"per-stage mode ({setting('stages')}, {setting('stage-profile')}, ...) takes no "
                         f"{route('NETWORK', 'network')}", field="network")
    if args.torch_steps:
        return _torch_steps(args)
    profile = profile_from_args(args)
    p, m = profile.stages, args.microbatches
    if m is not None and not args.schedule_csv_in:  # the stage count a profile file gives, by check_stage_job's count
        from archsim.validate import check_job_size

        counted = "looped-bfs" if args.torch_schedule else (args.policy or "1f1b")
        check_job_size(stage_job_ops(counted, p, m, args.chunks), args.max_ops)
    if args.schedule_csv_in or args.torch_schedule:
        if args.schedule_csv_in and args.torch_schedule:
            raise InputError(f"give {setting('torch-schedule')} or {setting('schedule-csv-in')}, not both",
                             field=field_name("torch-schedule"))
        if args.torch_schedule:
            args.torch_schedule = so.torch_schedule_name(args.torch_schedule)
            order = so.published_order(args.torch_schedule, p, m, args.chunks)
        else:
            order = read_order_csv(args.schedule_csv_in)
            if len(order.ranks) != p:
                raise InputError(f"{args.schedule_csv_in}: {len(order.ranks)} ranks, but the profile has {p} stages",
                                 field="stages")
            m = order.microbatches
        run = run_order(order, profile.on_ranks(order.rank_of_stage()))
        name = args.torch_schedule or order.name
    else:
        policy = args.policy or "1f1b"
        if policy not in STAGE_POLICIES:
            raise InputError(f"policy {policy!r} needs a {route('NETWORK', 'network')}; per-stage policies: "
                             f"{', '.join(STAGE_POLICIES)}", field="policy")
        run = published_run(profile, m, policy, args.chunks, max_orders=args.max_orders)
        name = policy
    meta = {"unit": STAGE_UNIT, "comm": str(profile.comm),
            "bubble_fraction": "idle rank time / (ranks × makespan), as every schedule reports it",
            "zb_bubble_rate": "(longest rank span - busiest rank's work) / longest rank span (zero-bubble paper §5.3)"}
    return ScheduleRun(stage_row(name, p, m, run), meta, run.timeline, run.order,
                    f"{name}: {p} stages, {m} micro-batches", f"time ({STAGE_UNIT})")


def _torch_steps(args: SimpleNamespace) -> ScheduleRun:
    """Steps of torch's dry-run simulator for a compute_comms CSV (no costs needed)."""
    from pathlib import Path

    from archsim.policies.torch_steps import parse_comm_schedule, torch_steps
    from archsim.validate import read_text

    if not args.schedule_csv_in:
        raise InputError(f"{switch_on('torch-steps')} needs {setting('schedule-csv-in', placeholder='FILE')} with "
                         "SEND/RECV actions", field=field_name("torch-steps"))
    text = read_text(args.schedule_csv_in, "schedule CSV")
    ranks = parse_comm_schedule(text, args.schedule_csv_in)
    row = {"schedule": Path(args.schedule_csv_in).stem, "ranks": len(ranks), "steps": torch_steps(ranks)}
    return ScheduleRun(row, {"unit": "torch dry-run steps"}, None, None, "", "")


@dataclass(frozen=True)
class ScheduleRun:
    """What a schedule run gives its caller to print or return: the command's one output ``row`` and its ``meta``,
    the validated ``timeline`` (None where there is none: multistream's totals, torch's step count), a per-stage
    run's action ``order`` (torch's schedule CSV), the Gantt's ``title`` and the timeline's ``unit``, and
    ``used``: the devices an out-of-order allocation gives layers (None for other runs), for the note on those
    it leaves idle (:func:`archsim.planners.idle_line`)."""

    row: dict
    meta: dict
    timeline: Timeline | None
    order: StageOrder | None
    title: str
    unit: str
    used: int | None = None
