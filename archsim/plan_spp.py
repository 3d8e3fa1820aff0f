"""``archsim plan``'s SPP run (every method but ``pipedream``): SPP's plan, or a baseline's makespan beside SPP's,
with the baselines ``--baselines`` names run for the meta; the rows and meta the command prints, and SPP's
simulated timeline. Seconds throughout (the profile's unit)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from archsim.console import Speak, say, setting
from archsim.errors import InputError
from archsim.plan_flags import (
    BASELINE_CONFIGS,
    BASELINE_METHODS,
    MAKESPAN_METHODS,
    PAPER_BASELINES,
    TIMELINE_METHODS,
    micro_batch,
)
from archsim.plan_result import PlanRun


def stage_rows_caption(rows: list[dict]) -> str:
    """What a plan's Gantt rows stand for, from its table's rows: each stage row sN runs on all its GPUs at once
    (a micro-batch split over its replicas), chN is the channel from sN to sN+1, arN sN's all-reduce."""
    stages = "; ".join(f"s{r['stage']}: {_span(r['first_layer'], r['last_layer'])} on {r['devices']}" for r in rows)
    return (f"Rows: {stages}. A stage row's bars are its replicas' work together (each micro-batch split over "
            "them); chN is the channel from sN to sN+1 (cf forward, cb backward); arN is sN's all-reduce.")


def _span(first: str, last: str) -> str:
    """A stage's layers, ``first–last``, or one layer named once (as :func:`plan_stages` writes a baseline's)."""
    return first if first == last else f"{first}–{last}"


def plan_stages(partition) -> str:
    """A baseline's (or LayerPipe's) plan in one line, as the Gantt caption names SPP's stages: each stage's layers
    (first–last, in forward order) and GPUs, ``s1: conv1_1–conv3_3 on g0 g1; s2: conv4_1 on g2``, and the δs (or
    δ′/δ″ parts: D, D1, D2 as ``pipeline``'s ``split_ops``) it runs for layers of earlier stages, ``borrows
    D1:conv2``; a stage of borrowed work alone names no layer. Only the makespan was printed before: which layers
    ran where could not be read."""
    parts = []
    for n, stage in enumerate(partition.stages):
        devices = partition.devices[n] if partition.devices else ()
        layers = stage.layers
        span = _span(layers[0], layers[-1]) if layers else ""
        borrowed = " ".join(f"{op.kind}:{op.layer}" for op in stage.ops if op.borrowed)
        what = ", ".join(x for x in (span, f"borrows {borrowed}" if borrowed else "") if x)
        parts.append(f"s{n + 1}: {what} on {' '.join(f'g{d}' for d in devices)}")
    return "; ".join(parts)


def baseline_timeline(method: str, profile, topology, partition, microbatches: int):
    """The PE timeline of a baseline's (or LayerPipe's) one pipeline, ``partition`` (:data:`TIMELINE_METHODS`), on
    the stage and channel times its makespan was priced from (GPipe in its fill-drain order): the Gantt SPP's
    plan has, checked to end at the makespan the baseline printed."""
    from archsim.spp.layerpipe_cluster import layerpipe_stage_plans
    from archsim.spp.pe import pe_makespan
    from archsim.spp.plan import stage_plans
    from archsim.spp.prm import PRMPlan

    if method == "layerpipe":
        plans = layerpipe_stage_plans(profile, partition, [d[0] for d in partition.devices], topology.bandwidth,
                                      topology.latency)
    else:
        bounds, first = [], 0
        for stage in partition.stages:
            bounds.append((first, first + len(stage.layers)))
            first += len(stage.layers)
        plan = PRMPlan(0.0, tuple(bounds), tuple(len(d) for d in partition.devices), partition.devices)
        plans = stage_plans(profile, plan, topology.bandwidth, topology.latency, topology.links)
    makespan, timeline = pe_makespan(plans, microbatches, "gpipe" if method == "gpipe" else "pe")
    assert abs(makespan - float(partition.makespan)) <= 1e-9 * makespan, (method, makespan, partition.makespan)
    return replace(timeline, unit=profile.unit)


def server_gpus(servers: tuple[int, ...]) -> str:
    """Each server's GPUs in the cluster file's order (``count`` expanded), ``g0-g3; g4-g5; g6-g9``, from each GPU's
    server index: what ``device_order`` and a stage's ``devices`` need beside them to say which server, of which
    in-server link, a stage runs on."""
    from archsim.spp.profiles import equal_runs

    runs = equal_runs(servers)
    return "; ".join(f"g{run[0]}" if len(run) == 1 else f"g{run[0]}-g{run[-1]}" for run in runs)


def _too_few_samples(devices: int, stages: int, samples: int) -> InputError:
    """Why no plan exists: every GPU holds a stage or a replica, and with each replica taking whole samples a stage
    has at most m (``samples``) replicas, so ``stages`` stages reach at most stages × m of the ``devices`` GPUs."""
    most = stages * samples
    return InputError(f"no plan puts all {devices} GPUs to work: a replica takes whole samples, so a stage of a "
                      f"{samples}-sample micro-batch has at most {samples} replica{'s' if samples > 1 else ''} and {stages} stage"
                      f"{'s' if stages > 1 else ''} at most {most} GPUs; give a larger {setting('micro-batch')}, "
                      f"more {setting('max-stages')} where the layers allow, a cluster of fewer GPUs, or "
                      f"{setting('replication', 'paper')} "
                      "(each replica 1/r of a micro-batch)", field="replication")


def memory_line(stages: list[tuple[str, list[int]]], profile, memory: tuple[float, str, float, str] | None) -> str | None:
    """A warning where a plan's stage cannot fit a GPU: each replica holds its stage's weights and their gradients
    (2 × its layers' ``weight_bytes``, a lower bound: no optimizer state or activations counted), against
    ``memory`` (bytes per GPU, where the figure is from, and the unit to state it in: bytes and name); None where
    every stage fits or no memory is known. Why: SPP, as the paper, plans time alone, so a model too large for the
    GPUs was planned without a word."""
    if memory is None:
        return None
    capacity, source, unit, unit_name = memory
    for name, layers in stages:
        held = 2.0 * float(sum(profile.weight_bytes[i] for i in layers))
        if held > capacity:
            return (f"{name} holds {held / unit:.4g} {unit_name} of weights and their gradients on each of its GPUs, "
                    f"more than {source}'s {capacity / unit:.4g} {unit_name}: the plan cannot train (plan, as SPP, "
                    "prices time alone, not memory); give more GPUs, GPUs of more memory, or a smaller model")
    return None


def run_spp(args: Any, topology, profile, priced_on: dict[str, str], speak: Speak = say,
            memory: tuple[float, str, float, str] | None = None) -> PlanRun:
    """SPP's plan, or a baseline's (or LayerPipe's) makespan beside SPP's (``args.method``), with the baselines ``args.baselines``
    names run for the meta; a ``max_stages`` above what the layers and GPUs allow noted as capped; a plan whose
    stage cannot hold its weights and gradients in ``memory`` (bytes per GPU, its source) warned
    (:func:`memory_line`)."""
    from archsim.planners import idle_line, plan_on_cluster
    from archsim.progress import progress
    from archsim.spp.plan import check_search_size, spp, stage_count_limit, stage_plans

    samples = micro_batch(args) if getattr(args, "replication", "paper") == "exact" else None  # None: SPP's 1/r
    limit = stage_count_limit(profile, topology, args.max_stages)
    if samples is not None and topology.devices > limit * samples:  # before the search: no plan would fill the GPUs
        raise _too_few_samples(topology.devices, limit, samples)
    methods = list({"archsim": BASELINE_METHODS, "paper": PAPER_BASELINES}.get(args.baselines, ()))
    if args.method in MAKESPAN_METHODS and args.method not in methods:
        methods.append(args.method)
    check_search_size(profile, topology, args.max_stages, args.max_search_steps, methods,  # pipedream-prm's too
                      droppable=args.method == "spp" and "pipedream-prm" in methods)

    # one bar for all the work: the PRM tables' levels (nearly all of SPP's time; a bar over stage counts alone sat
    # at 0 until they were built), SPP's stage counts, then the baselines (seconds each on a large profile)
    with progress(max(limit - 1, 0) + limit + len(methods), "SPP", "step") as bar:
        result = spp(profile, topology, args.microbatches, max_stages=args.max_stages, samples=samples,
                     objective=getattr(args, "objective", "paper"),
                     on_level=lambda _: bar.update(), on_stage_count=lambda _: bar.update())
        others, chosen = {}, None
        for method in methods:
            bar.set_postfix_str(f"baseline {method}")
            # --baselines none runs no baseline; LayerPipe beside it (not one of them) runs as under archsim's
            config = args.baselines if args.baselines in BASELINE_CONFIGS else BASELINE_CONFIGS[0]
            baseline = plan_on_cluster(profile, topology, method, args.microbatches, config=config)
            assert baseline.makespan is not None, "a plan on a cluster is scheduled"
            others[method] = float(baseline.makespan)
            chosen = baseline if method == args.method else chosen
            if method == args.method and method in ("gpipe", "layerpipe"):  # one GPU a stage, no replicas: fewer
                # stages than GPUs leave some idle, said as pipeline says it (the others replicate stages; HetPipe's
                # plan shows one server's)
                idle = idle_line(f"{method}'s plan", len(baseline.stages), topology.devices)
                if idle:
                    speak("note", idle.replace("processors", "GPUs"))
            bar.update()
    if args.max_stages is not None and args.max_stages > limit:  # "at most": said once, after the search
        speak("note", f"{setting('max-stages', args.max_stages)} is more stages than a plan of {len(profile)} layer"
                      f"{'s' if len(profile) != 1 else ''} on {topology.devices} GPU"
                      f"{'s' if topology.devices != 1 else ''} can have (one layer and one GPU a stage at least): "
                      f"SPP tries at most {limit}")
    config = {"baselines": args.baselines} if args.baselines != "archsim" else {}
    if args.links != "paper":
        config["links"] = args.links
    if samples is not None:
        config["replication"] = "exact"
    if getattr(args, "objective", "paper") != "paper":
        config["objective"] = args.objective
    names = profile.names
    times = stage_plans(profile, result.plan, topology.bandwidth, topology.latency, topology.links, samples)
    rows = [{"stage": n + 1, "first_layer": names[a], "last_layer": names[b - 1], "layer_count": b - a,
             "replicas": len(d), "devices": " ".join(f"g{x}" for x in d), "microbatch_forward_seconds": t.forward,
             "microbatch_backward_seconds": t.backward, "allreduce_seconds": t.allreduce}
            for n, ((a, b), d, t) in enumerate(zip(result.plan.stages, result.plan.devices, times))]
    if args.method == "spp":
        planned = [(f"SPP's stage {n + 1} ({names[a]}–{names[b - 1]})", list(range(a, b)))
                   for n, (a, b) in enumerate(result.plan.stages)]
    else:
        assert chosen is not None, args.method  # run above, as methods holds it
        where = {name: i for i, name in enumerate(names)}
        planned = [(f"{args.method}'s stage {n + 1} ({stage.layers[0]}–{stage.layers[-1]})",
                    [where[x] for x in stage.layers if x in where]) for n, stage in enumerate(chosen.stages) if stage.layers]
    line = memory_line(planned, profile, memory)
    if line:
        speak("warning", line)
    if args.method != "spp":
        row = {"method": args.method, "makespan_seconds": others[args.method], "spp_makespan_seconds": result.makespan}
        assert chosen is not None, args.method  # run above, as methods holds it
        stages = plan_stages(chosen) + (" (the slowest server's pipeline; each server runs its own, then an "
                                        "all-reduce across servers)" if args.method == "hetpipe" else "")
        meta = {"method": args.method, "cluster": topology.name, "gpus": topology.devices,  # as SPP's meta names it
                "microbatches": args.microbatches, **config, "stage_plan": stages, **priced_on}
        if args.method not in TIMELINE_METHODS:  # dp, hetpipe: no one pipeline's schedule
            return PlanRun([row], meta)
        caption = (f"Rows: {stages}. A stage row's bars are its replicas' work together (each micro-batch split over "
                   "them); chN is the channel from sN to sN+1 (cf forward, cb backward); arN is sN's all-reduce.")
        return PlanRun([row], meta, baseline_timeline(args.method, profile, topology, chosen, args.microbatches),
                       f"{args.method} on {topology.name}, {args.microbatches} micro-batches", caption,
                       unit=profile.unit)

    meta = {"method": args.method, "cluster": topology.name, "gpus": topology.devices,
            "microbatches": args.microbatches, "makespan_seconds": result.makespan,
            "stage_counts": [{"stages": int(s), "makespan_seconds": float(t)} for s, _, t in result.by_stage_count],
            "baselines_seconds": {m: float(t) for m, t in others.items()}, **config,
            "device_order": " ".join(f"g{x}" for x in result.order), "servers": server_gpus(topology.servers),
            **priced_on}
    from archsim.sim.timeline import Timeline

    assert isinstance(result.timeline, Timeline), type(result.timeline)  # SPP's PE schedule, simulated
    return PlanRun(rows, meta, result.timeline, f"SPP on {topology.name}, {args.microbatches} micro-batches",
                   stage_rows_caption(rows), unit=profile.unit)


__all__ = ["baseline_timeline", "memory_line", "plan_stages", "run_spp", "server_gpus", "stage_rows_caption"]
