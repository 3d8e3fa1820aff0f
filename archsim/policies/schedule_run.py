"""``archsim schedule``'s runs, once for the command and :func:`archsim.schedule`: every policy on a network
(the out-of-order pipelines, data parallel, the published zero-bubble orders, their list-scheduled versions,
multistream), a block network (one layer per transformer block), a :class:`~archsim.partition.profile.LayerProfile`
as is (the out-of-order pipelines; :func:`archsim.schedule`'s), or per-stage costs
(:mod:`archsim.policies.stage_schedule`). :func:`run_schedule` takes the flags' values as keywords of the same
names, refuses what the command refuses with the same lines, and returns the row and meta the command prints."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING

from archsim.choices.schedules import DP_POLICIES, LIST_SCHEDULES, OOO_POLICIES, ZB_SCHEDULES
from archsim.console import Speak, field_name, route, setting, switch_on
from archsim.errors import InputError
from archsim.policies.allocation_meta import allocation_meta, ooo_allocation
from archsim.policies.dp_window import data_parallel_window
from archsim.policies.hop_link import sync_bytes_per_cycle
from archsim.policies.schedule_array import costs_meta, run_array, unit_costs_scope, with_clock_flag, with_memory_flags
from archsim.policies.stage_schedule import STAGE_ONLY, ScheduleRun
from archsim.progress import Phases, quiet_phases
from archsim.value_parsers import comma_items

if TYPE_CHECKING:  # the profiles, policies and simulator load when a schedule runs
    from archsim.partition.profile import LayerProfile
    from archsim.policies.stage_profile import StageProfile
    from archsim.sim.timeline import Timeline
    from archsim.workload.layer import Network

TIMELINE_OUTPUTS = ("--gantt", "--chrome-trace", "--schedule-csv")  # what multistream, a row of totals, cannot draw


def run_schedule(network=None, *, policy=None, processors=None, microbatches=None, unit_costs=None, flush=None,
                 group=None, streams=None, region_size=None, chunks=None, reverse_k=None, sync=None, comm_units=None,
                 array=None, dataflow=None, config=None, dtype=None, element_bytes=None, engine=None,
                 dram_bandwidth=None, sram_kb=None, clock_ghz=None, batch=None, mode=None, only=None, shapes=None,
                 unsupported=None, input_shape=None, dim=None, max_ops=None, stages=None, stage_times=None,
                 comm=None, stage_memory=None, stage_profile=None, link_bandwidth=None, torch_schedule=None,
                 schedule_csv_in=None, max_orders=None, torch_steps=False, drawn: Sequence[str] = (),
                 read_device: Callable[..., object] | None = None,
                 loader: Callable[[str, SimpleNamespace], Network] | None = None, speak: Speak | None = None,
                 phases: Phases = quiet_phases) -> ScheduleRun:
    """One ``archsim schedule`` run: each keyword the value of its flag (``reverse_k`` ``--reverse-k``; None where not
    given, its default filled in where the run reads it, refused where it does not), already of the flag's type.
    ``drawn``: the timeline outputs the caller will write (``--gantt``, …; multistream has none); ``loader``: a
    NETWORK name or path and the run's settings (the keywords, defaults filled in) → its :class:`Network` (default :func:`archsim.workload.load_network` with the network
    keywords, its notes spoken); ``speak(kind, text)``: a note or warning (default: stderr); ``phases``: the
    progress bar over costs, build, simulate and validate (default none). ``network`` may be a LayerProfile: its costs as is.
    ``read_device``: the reader of a device TOML given as ``config`` (``cost``'s,
    :func:`archsim.device_toml.device_toml_notes`; None: refused as a ``.cfg`` reader refuses it); with a device file as
    ``config``, ``processors`` defaults to its arrays, one device each (multistream's one device aside)."""
    from archsim.console import say
    from archsim.partition.profile import LayerProfile
    from archsim.policies.schedule_flags import check_policy_flags
    from archsim.policies.stage_schedule import run_stages, stage_mode
    from archsim.validate import DEFAULT_MAX_OPS

    args = SimpleNamespace(
        network=network, policy=policy, processors=processors, microbatches=microbatches, unit_costs=unit_costs,
        flush=flush, group=group, streams=streams, region_size=region_size, chunks=chunks, k=reverse_k, sync=sync,
        comm_units=comm_units, array=array, dataflow=dataflow, config=config, dtype=dtype,
        element_bytes=element_bytes, engine=engine, dram_bandwidth=dram_bandwidth, sram_kb=sram_kb,
        clock_ghz=clock_ghz, batch=batch, mode=mode, only=only, shapes=shapes, unsupported=unsupported,
        input_shape=input_shape, dim=dim, max_ops=DEFAULT_MAX_OPS if max_ops is None else max_ops, stages=stages,
        stage_times=stage_times, comm=comm, stage_memory=stage_memory, stage_profile=stage_profile,
        link_bandwidth=link_bandwidth, torch_schedule=torch_schedule, schedule_csv_in=schedule_csv_in,
        max_orders=max_orders, torch_steps=torch_steps, read_device=read_device)
    speak = speak or say
    check_policy_flags(args, stage_mode(args))  # before anything is read or written
    if stage_mode(args):
        return _counted(_labelled(run_stages(args)))
    if isinstance(network, LayerProfile):
        return _counted(_labelled(_profile_run(args, phases)))
    return _counted(_labelled(_network_run(args, tuple(drawn), loader or _loader(speak), speak, phases)))


# the units a makespan counts in: the array's clock cycles and --unit-costs' units (the meta's unit); seconds and the
# stage times' unit are times, whatever their value
COUNTED_UNITS = ("cycles", "units")


def counted_makespan(makespan: float, unit: str) -> int | float:
    """A schedule's ``makespan`` as its ``unit`` states it: an int where the unit counts (:data:`COUNTED_UNITS`)
    and the schedule ends on a whole one (Fig. 5's 16 units, not 16.0); a float otherwise — half a cycle (an
    interleaved order's half-size chunks), or a time (seconds, the stage times' unit)."""
    return int(makespan) if unit in COUNTED_UNITS and float(makespan).is_integer() else makespan


def _counted(run: ScheduleRun) -> ScheduleRun:
    """``run`` with its row's makespan as :func:`counted_makespan` states it in the meta's unit."""
    from dataclasses import replace

    if "makespan" not in run.row:  # torch's dry-run steps: a count of steps, no makespan
        return run
    return replace(run, row={**run.row, "makespan": counted_makespan(run.row["makespan"], run.meta.get("unit", ""))})


def _labelled(run: ScheduleRun, layers: Sequence[str | None] | None = None) -> ScheduleRun:
    """``run`` with its timeline marked a schedule's (``processor_layers``: ``layers`` per processor, or those it
    has, or none known), so its ``to_frame()`` adds the ``device`` and ``layers`` every schedule family shares."""
    from dataclasses import replace

    timeline = run.timeline
    if timeline is None or timeline.problem is None:
        return run
    known = tuple(layers) if layers is not None else timeline.processor_layers
    held = known if known is not None else (None,) * len(timeline.problem.processors)
    return replace(run, timeline=replace(timeline, processor_layers=held))


def _loader(speak: Speak) -> Callable[[str, SimpleNamespace], Network]:
    """The network keywords' loader: ``load_network`` as NETWORK and ``--only``, ``--shapes``, ``--unsupported``,
    ``--input-shape``, ``--dim`` load it, its notes spoken (a batch its file fixes among them, as the command's)."""
    def load(source, args: SimpleNamespace) -> Network:
        from archsim.workload import load_network
        from archsim.workload.layer import Network
        from archsim.workload.shipped import dims_of, file_batch_note

        network = source if isinstance(source, Network) else load_network(
            source, geometry="archsim", unsupported=args.unsupported, dims=dims_of(args.dim or []),
            shapes=args.shapes, input_shape=args.input_shape)
        for line in (*network.notes, file_batch_note(network, args.batch if isinstance(args.batch, int) else None)):
            if line:
                speak("note", line)
        return network.only(*comma_items(args.only, "only")) if args.only else network
    return load


def _network_run(args: SimpleNamespace, drawn: tuple[str, ...], loader, speak, phases) -> ScheduleRun:
    from dataclasses import replace

    from archsim.partition import build_profile
    from archsim.partition.profile import collapse_profile
    from archsim.policies import zero_bubble as zb
    from archsim.policies.ooo import default_flush, unit_costs
    from archsim.validate import check_operand
    from archsim.workload.shipped import (
        BLOCK_NETWORKS,
        UnknownNetwork,
        block_groups,
        block_network_of,
        shipped_networks,
    )

    if args.policy == "multistream" and args.processors not in (None, 1):
        raise InputError(f"multistream schedules one device's streams: {setting('processors', 1)} (or none), got "
                         f"{args.processors}", field=field_name("processors"))
    if args.policy == "multistream" and drawn:  # one device's two streams: a row of totals, no timeline to draw
        raise InputError(f"{drawn[0]}: multistream writes one row of totals and no timeline; drop "
                         f"{' and '.join(drawn)}", field=drawn[0].lstrip("-"))
    if args.policy == "multistream" and args.microbatches != 1:
        raise InputError(f"multistream schedules one iteration's streams: {setting('microbatches', 1)}, got "
                         f"{args.microbatches}", field=field_name("microbatches"))
    if args.policy in DP_POLICIES and args.microbatches != 1:  # the window is read once, never split: M went unread
        raise InputError(f"{args.policy} times one device's data-parallel iteration window (its backward, then the "
                         f"next forward), which splits its batch into no micro-batches: {setting('microbatches', 1)} "
                         f"(or none), got {args.microbatches}", field=field_name("microbatches"))
    one_device = args.policy == "multistream"
    if args.processors is None and args.config is not None and not one_device and not args.unit_costs:
        from archsim.array.device_notes import device_array_count

        args.processors = device_array_count(args.config)  # a device file's arrays, one device each
    for name, value in (("network", args.network), ("policy", args.policy), ("processors", args.processors)):
        if value is None and not (one_device and name == "processors"):
            named = route("NETWORK", "network") if name == "network" else setting(name)
            raise InputError(f"{named} is required (or give per-stage costs: {setting('stages', placeholder='P')} "
                             f"{setting('stage-times', placeholder='F,B,W')})", field=field_name(name))
    if args.policy in STAGE_ONLY:
        raise InputError(f"{args.policy} runs on per-stage costs: use {setting('stages')}/{setting('stage-times')} or "
                         f"{setting('stage-profile')}", field=field_name("policy"))
    key = args.network.strip().lower().replace("-", "_") if isinstance(args.network, str) else None
    blocks = BLOCK_NETWORKS.get(key) if key else None
    if blocks is not None and args.policy not in OOO_POLICIES:
        raise InputError(f"{args.network} (one layer per transformer block) is for the out-of-order backprop "
                         f"pipelines ({', '.join(OOO_POLICIES)}); schedule {blocks} with {args.policy}",
                         field="network")
    if isinstance(args.network, str):  # a blank one listed with every name schedule takes, as an unknown one
        check_operand(args.network, "NETWORK", "a network's", shipped_networks(blocks=True))
    try:
        network = loader(blocks or args.network, args)
    except UnknownNetwork as exc:  # the list of every name schedule takes: the block networks too
        raise exc.among(shipped_networks(blocks=True)) from None
    groups = block_groups(network) if blocks else None
    name = key if blocks and key else network.name
    flush = args.flush if args.flush is not None else default_flush(args.policy)
    _check_size(args, len(groups) if groups else len(network), flush, first_delta=groups is not None)
    if args.policy == "multistream":
        return _multistream(args, network, speak)
    with phases(f"schedule {args.policy}", ("costs", "build", "simulate", "validate")) as phase:
        phase("costs")
        if args.unit_costs:  # F = D = G = 1 per layer: per block on a block network
            costs = replace(unit_costs(len(groups)), names=tuple(g for g, _ in groups)) if groups else \
                unit_costs(len(network), network)
            unit = "units"
        else:
            array = with_memory_flags(run_array(args, speak), args, speak)
            costs = build_profile(network, array, args.batch, args.mode, args.engine)
            if groups:
                costs = collapse_profile(costs, groups)
            unit = "cycles"
        extra: dict = {}
        stage_layers: tuple[str, ...] | None = None  # a stage schedule's layers per device, where costs split them
        extra_bytes: LayerProfile | None = None  # an out-of-order pipeline's: its output gradients, held when deferred
        link = _link(args)
        split: dict[str, str] = {}  # how the layers were dealt to the devices (data parallel: every layer on each)
        if args.policy in DP_POLICIES:
            problem, extra, split = data_parallel_window(args, costs, network, phase,
                                                         None if args.unit_costs else array.element_bytes,
                                                         sync_bytes_per_cycle(link))
        elif args.policy in ZB_SCHEDULES + LIST_SCHEDULES:
            stage_profile, split, stage_layers = _stage_profile(args, costs, link)
            phase("build")
            problem = zb.zb_build(stage_profile, args.microbatches, args.policy, args.chunks)
        else:
            split = ooo_allocation(args, len(costs))
            phase("build")
            # a first block's δ holds its inner ops' (needed for their G); its first op's is in it only
            # where the mode counts it (paper), so a block network always schedules it
            first_delta = (args.mode == "paper" or groups is not None) and not args.unit_costs
            problem = _ooo_problem(args, costs, flush, first_delta, block_network_of(network.name))
            extra_bytes = costs
        timeline, row = _simulated(args, problem, phase, flush, extra, extra_bytes)
    meta = {**costs_meta(args, name, unit, None if args.unit_costs else array), **split}
    if link is not None:  # a link the flag stated: said, as pipeline says it
        meta["link_bytes_per_cycle"] = link
    clock = None if args.unit_costs else with_clock_flag(run_array(args), args).clock_hz
    if clock is not None:  # seconds beside cycles when a clock is known
        meta["clock_ghz"] = clock / 1e9
        meta["makespan_seconds"] = float(row["makespan"]) / clock
    return _labelled(ScheduleRun(row, meta, timeline, None, f"{name}: {args.policy}, {args.processors} devices", unit,
                                 _used(args, len(costs))), stage_layers)


def _profile_run(args: SimpleNamespace, phases) -> ScheduleRun:
    """An out-of-order pipeline on a :class:`~archsim.partition.profile.LayerProfile` given as is (the caller's
    own costs, or :func:`archsim.profile`'s), through a network run's build, simulation, validation and row:
    its first layer's δ runs only where the cost model priced one; unit costs are F = D = G = 1 a layer."""
    from archsim.policies.ooo import default_flush, unit_costs

    if args.policy not in OOO_POLICIES:  # the per-stage and data-parallel runs cost a network themselves
        raise InputError(f"a profile runs the out-of-order pipelines ({', '.join(OOO_POLICIES)}), not "
                         f"{args.policy}", field=field_name("policy"))
    profile = args.network
    costs = unit_costs(len(profile.names)) if args.unit_costs else profile
    first_delta = not args.unit_costs and bool(profile.lowered) and bool(profile.delta[0] > 0)
    flush = default_flush(args.policy) if args.flush is None else args.flush
    _check_size(args, len(profile.names), flush, first_delta)  # as a network's run checks it, before the build
    with phases(f"schedule {args.policy}", ("build", "simulate", "validate")) as phase:
        phase("build")
        problem = _ooo_problem(args, costs, flush, first_delta)
        timeline, row = _simulated(args, problem, phase, flush, None, costs)
    unit = "units" if args.unit_costs else profile.unit
    meta = {"unit": unit, "costs": "unit", "unit_costs": unit_costs_scope(args.policy)} if args.unit_costs else \
        {"unit": unit, "costs": "profile"}
    meta.update(ooo_allocation(args, len(costs)))
    return ScheduleRun(row, meta, timeline, None,
                       f"profile: {args.policy}, {args.processors} devices", unit, _used(args, len(costs)))


def _ooo_problem(args: SimpleNamespace, costs: LayerProfile, flush: bool, first_delta: bool, block: str | None = None):
    """The out-of-order pipeline's problem on ``costs`` (a chain: ``block``, the block network it came from, names
    the fix of a refusal); ``first_delta``: the first layer's δ is scheduled."""
    from archsim.policies.ooo import ooo_problem, require_chain

    require_chain(costs, block)
    return ooo_problem(costs, args.processors, args.microbatches, args.policy, flush=flush, group=args.group,
                       first_layer_delta=first_delta)


def _simulated(args: SimpleNamespace, problem, phase, flush: bool, extra: dict | None = None,
               chain: LayerProfile | None = None) -> tuple[Timeline, dict]:
    """``problem`` simulated and validated (a failure is a simulator bug, not a user's mistake), and the run's row;
    ``chain``: an out-of-order pipeline's layer costs, whose output gradients its peak counts where a weight gradient
    waits past its δ (:func:`archsim.policies.ooo.held_peaks`)."""
    from archsim.policies.ooo import devices_used, output_gradients, schedule_metrics, used_devices_bubble
    from archsim.sim import simulate
    from archsim.sim.validate import assert_valid

    phase("simulate")
    timeline = simulate(problem)
    phase("validate")
    assert_valid(timeline.problem, timeline)
    takes_flush = {"flush": flush} if args.policy in OOO_POLICIES else {}  # a blank cell would shift a table's row
    metrics = schedule_metrics(problem, timeline, None if chain is None else output_gradients(chain))
    if args.policy in DP_POLICIES:  # its iteration window allocates no stash: a 0 would read as "holds none"
        del metrics["peak_activation_bytes"]
    if args.policy in OOO_POLICIES and chain is not None:  # an allocation can leave devices without layers
        used = devices_used(len(chain.names), args.processors, args.policy, args.group)
        metrics["bubble_fraction_used_devices"] = used_devices_bubble(timeline, used)
    row = {"policy": args.policy, "processors": args.processors, "microbatches": args.microbatches,
           **takes_flush, **metrics, **(extra or {})}
    return timeline, row


def _used(args: SimpleNamespace, layers: int) -> int | None:
    """The devices an out-of-order allocation gives layers (it can leave some without: the caller says so); None
    for other policies."""
    from archsim.policies.ooo import devices_used

    return devices_used(layers, args.processors, args.policy, args.group) if args.policy in OOO_POLICIES else None


def _check_size(args: SimpleNamespace, layers: int, flush: bool, first_delta: bool = False) -> None:
    """Refuse, before any work, a run of more ops than ``--max-ops`` (:func:`~archsim.validate.check_job_size`):
    the one check of a network's run and a profile's, so their refusals are one line."""
    from archsim.validate import check_job_size

    check_job_size(_op_count(args, layers, flush, first_delta), args.max_ops)


def _op_count(args: SimpleNamespace, layers: int, flush: bool, first_delta: bool = False) -> int:
    """The ops the policy's problem will have, counted before building it (exact but for dualpipev's bound);
    ``first_delta``: the first layer's δ is scheduled whatever the mode (a block network's)."""
    from archsim.policies import zero_bubble as zb
    from archsim.policies.ooo import op_count as ooo_op_count

    if args.policy in ZB_SCHEDULES:
        return zb.op_count(args.policy, args.processors, args.microbatches, args.chunks)
    if args.policy in LIST_SCHEDULES:
        return 3 * args.processors * args.microbatches
    if args.policy in OOO_POLICIES:
        return ooo_op_count(layers, args.microbatches, first_layer_delta=(args.mode == "paper" or first_delta) and not args.unit_costs,
                            flush=flush)
    return 5 * layers  # one iteration window of data parallelism (F, F', S per layer; G, D in the backward order)


def _link(args: SimpleNamespace) -> float | None:
    """Bytes per cycle of the link a network run's policy reads (:mod:`archsim.policies.hop_link`, pipeline's rule:
    ``--link-bandwidth``, else None, free hops): the published schedules' hops and data-parallel sync. The ``list-…``
    variants and the out-of-order pipelines model no transfer, and unit costs none: no link."""
    if args.unit_costs or args.policy not in DP_POLICIES + ZB_SCHEDULES or args.link_bandwidth is None:
        return None
    return float(args.link_bandwidth)


def _multistream(args: SimpleNamespace, network, speak) -> ScheduleRun:
    """One device, main stream (F, δ) and sub-stream (G) under the documented co-run model."""
    from archsim.policies import multistream as ms

    if args.unit_costs:
        raise InputError(f"multistream needs utilizations from the array model; drop {switch_on('unit-costs')}",
                         field=field_name("unit-costs"))
    if args.engine != "analytic":
        raise InputError("multistream splits arrays by the analytic model's utilizations; use "
                         f"{setting('engine', 'analytic')}", field=field_name("engine"))
    array = run_array(args, speak)
    ops = ms.device_ops(network, array, args.batch, args.mode)
    single = ms.run(ops, "single").makespan
    result = ms.run(ops, args.streams, region_size=args.region_size)
    work = sum(t * u for t, u in zip(ops.forward + ops.delta + ops.weight_grad,
                                     ops.forward_util + ops.delta_util + ops.weight_grad_util))
    row = {"policy": f"multistream-{args.streams}", "processors": 1, "microbatches": 1,
           "makespan": result.makespan, "idle_pe_fraction": 1.0 - work / result.makespan,
           "peak_activation_bytes": result.peak_held_bytes, "speedup_vs_single_stream": single / result.makespan}
    meta = {**costs_meta(args, network.name, "cycles", array),
            "idle_pe_fraction": "idle PE-cycles / (makespan × PEs): one device, so PEs, not devices, idle"}
    return ScheduleRun(row, meta, None, None, "", "cycles")


def _stage_profile(args: SimpleNamespace, costs: LayerProfile, link: float | None = None
                   ) -> tuple[StageProfile, dict[str, str], tuple[str, ...] | None]:
    """Per-stage F, I (= δ) and W (= G): equal units, or layers split into stages by PipeDream's DP;
    activation M_B a stage's stashed layer inputs, send bytes its next stage's first input, comm
    --comm, and in cycles a link of ``link`` bytes per cycle (None: hops take --comm's latency alone, as
    ``pipeline``'s are free without a link; unit costs: latency only); and the split's meta
    (:func:`~archsim.policies.allocation_meta.allocation_meta`; none with unit costs, which price stages, not layers),
    and each stage's layers by name, comma-joined (None with unit costs)."""
    from archsim.partition import pipedream_partition, profile_from_costs
    from archsim.policies.stage_profile import StageProfile

    if args.unit_costs:
        ones = (1.0,) * args.processors  # M_B = 1 (peaks count micro-batches) and no M_W: integer peaks
        return StageProfile(ones, ones, ones, args.comm, (1,) * args.processors), {}, None
    if args.processors > len(costs):  # said in schedule's terms: PipeDream's check speaks of pipeline's methods
        raise InputError(f"{setting('policy', args.policy)} runs one stage of whole layers on each processor "
                         f"(PipeDream's DP splits the chain): this network has {len(costs)} layer"
                         f"{'' if len(costs) == 1 else 's'}, so at most {len(costs)} processor"
                         f"{'' if len(costs) == 1 else 's'}, got {args.processors} ("
                         f"{route('archsim pipeline --method layerpipe', 'archsim.pipeline(method=' + repr('layerpipe') + ')')}"
                         " splits δs over more)", field=field_name("processors"))
    names = [f"l{i}" for i in range(len(costs))]
    # PipeDream's DP over the costs alone, as a chain (no activation or weight bytes): the split balances F + I + W
    plan = pipedream_partition(profile_from_costs(names, costs.forward, costs.weight_grad, costs.delta), args.processors)
    stash = [int(x) for x in costs.stash_bytes]
    sums: dict[str, list[float]] = {kind: [] for kind in "FDG"}
    for stage in plan.stages:
        for kind in "FDG":
            sums[kind].append(sum(op.cost for op in stage.ops if op.kind == kind))
    activation = [sum(stash[names.index(n)] for n in stage.layers) for stage in plan.stages]
    # a stage sends the next stage its first layer's input activation (and gets its gradient back)
    send = [stash[names.index(nxt.layers[0])] for nxt in plan.stages[1:]] + [0]
    split = allocation_meta("PipeDream's DP over the layer chain: whole layers a device, balancing F + I + W",
                             [len(stage.layers) for stage in plan.stages])
    layers = tuple(",".join(costs.names[names.index(n)] for n in stage.layers) for stage in plan.stages)
    return StageProfile(tuple(sums["F"]), tuple(sums["D"]), tuple(sums["G"]), args.comm, tuple(activation),
                        send_bytes=tuple(send), bandwidth=link), split, layers
