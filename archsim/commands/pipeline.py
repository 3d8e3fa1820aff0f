"""``archsim pipeline``: partition a network over P processors (LayerPipe Table III style)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from archsim.choices.partitions import (
    BORROW_PAPER,
    FLUSHED_SCHEDULES,
    LAYERPIPE_ALPHA,
    LAYERPIPE_BORROW,
    MAX_ALPHA,
    METHOD_SCHEDULES,
    OPTIMIZER_STATES,
)
from archsim.choices.schedules import PARTITION_SCHEDULES
from archsim.commands import Command
from archsim.commands.common import (
    add_job_limit_argument,
    add_layer_cost_arguments,
    add_output_arguments,
    config_array,
    emit,
    phases,
    positive_int,
    warn_sram_unused,
    width_meta,
)
from archsim.commands.network_args import add_network_arguments, network_from_args
from archsim.commands.timeline_outputs import add_timeline_outputs, validated, write_timeline_outputs
from archsim.console import note, say_after_run, warn
from archsim.errors import InputError
from archsim.fits import memory_warning
from archsim.output_targets import output_flag
from archsim.planners import PARTITIONERS, fewer_processors_note, idle_processors_note, partition
from archsim.seconds import add_seconds
from archsim.split_axis import SPLIT_AXES, split_axes
from archsim.validate import check_job_size
from archsim.value_parsers import float_flag, positive_float_flag, processors_flag

if TYPE_CHECKING:
    from archsim.partition.result import Partition


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_network_arguments(parser)
    parser.add_argument("--processors", type=processors_flag, default=None,
                        help="processors (arrays) the network is split over, one pipeline stage each (required, "
                             "unless --config is a device file: then its arrays, one processor each)")
    parser.add_argument("--method", default="layerpipe", choices=PARTITIONERS,
                        help="partitioner: layerpipe (LayerPipe's Algorithm 1: balanced stages, δs borrowed and split), "
                             "pipedream (PipeDream's optimizer: whole layers, best contiguous split), gpipe (equal "
                             "layer counts), ooo (the out-of-order backprop paper's ⌈L/P⌉ layers per device)")
    add_layer_cost_arguments(parser)
    parser.add_argument("--split-axes", default=None,
                        help=f"δ split axes LayerPipe may use (default {','.join(SPLIT_AXES)})")
    parser.add_argument("--alpha", type=float_flag(1.0, MAX_ALPHA, low_open=True, what="a relaxation factor"), default=None,
                        help=f"LayerPipe target relaxation factor (default: {LAYERPIPE_ALPHA})")
    parser.add_argument("--borrow", default=None, choices=LAYERPIPE_BORROW,
                        help="which δ moves LayerPipe's plan keeps: paper (every one Algorithm 1 makes; default) or "
                             "gainful (a moved δ goes back to its layer's processor where the iteration does not grow)")
    parser.add_argument("--microbatches", type=positive_int, default=None,
                        help="also simulate M micro-batches of --batch samples each and report the makespan")
    parser.add_argument("--schedule", default=None, choices=PARTITION_SCHEDULES,
                        help="with --microbatches: the order the stages run them in — gpipe and 1f1b (torch's "
                             "ScheduleGPipe and Schedule1F1B orders), layerpipe (1F1B's window, δ before G before F), "
                             "gpipe-newest-first and 1f1b-window (archsim's earlier list schedules), "
                             "1f1b-delta-before-g (1f1b with each layer's δ pieces before its G in a backward action) "
                             "(default: the method's own: layerpipe for layerpipe, gpipe for gpipe, 1f1b otherwise)")
    parser.add_argument("--link-bandwidth", type=positive_float_flag, default=None, metavar="BYTES",
                        help="with --microbatches: bytes per cycle of the link a stage-to-stage hop crosses, each "
                             "activation and gradient taking bytes/BYTES cycles, as schedule's (default: none, hops are free, "
                             "LayerPipe's model; a device file's [links] intra_gbps joins chips, not its arrays)")
    parser.add_argument("--memory", action="store_true",
                        help="with --microbatches: bytes per processor (weights × versions, gradients, optimizer "
                             "state, peak stashed activations of the simulated schedule)")
    parser.add_argument("--optimizer", default=None, choices=tuple(OPTIMIZER_STATES),
                        help="optimizer state for --memory (or --capacity-gb): sgd none, momentum 1×, adam 2× the "
                             "weights (default: sgd)")
    parser.add_argument("--capacity-gb", type=float_flag(0.0, 1e9, low_open=True, what="a positive number of GB"),
                        default=None, metavar="GB",
                        help="with --memory: per-processor memory (GB = 1e9 bytes); a plan over it still prints its table, "
                             "with a warning on stderr (as train does)")
    parser.add_argument("--dfg", type=output_flag, default=None, metavar="OUT.json",
                        help="with --method layerpipe: write the plan's pipelined, retimed training DFG (LayerPipe "
                             "§III: nodes F/G/D/U with stage and cost, edge delays before and after retiming, each "
                             "layer's retiming and delayed gradients, the iteration bound and its critical loop) as "
                             "JSON, or as Graphviz DOT where the file ends in .dot")
    add_timeline_outputs(parser)
    add_output_arguments(parser)
    add_job_limit_argument(parser)


def check_flags(args: argparse.Namespace) -> None:
    """Flag combinations, checked before the network is read or searched; --processors from a device file's
    arrays where not given (:func:`archsim.array.device_notes.device_array_count`)."""
    if args.processors is None:
        from archsim.array.device_notes import device_array_count

        args.processors = None if args.config is None else device_array_count(args.config)
        if args.processors is None:
            raise InputError("--processors is required (or a device file as --config: its arrays, one processor "
                             "each)", field="processors")
    if (args.gantt or args.trace or args.schedule_csv) and not args.microbatches:
        raise InputError("--gantt, --chrome-trace and --schedule-csv need --microbatches", field="microbatches")
    if args.schedule is not None and not args.microbatches:
        raise InputError("--schedule orders the simulated micro-batches: give it with --microbatches",
                         field="microbatches")
    if args.link_bandwidth is not None and not args.microbatches:
        raise InputError("--link-bandwidth prices the simulated micro-batches' hops between stages: give it with "
                         "--microbatches", field="microbatches")
    given = [flag for flag, value in (("--alpha", args.alpha), ("--split-axes", args.split_axes),
                                      ("--borrow", args.borrow)) if value is not None]
    # a flag beside another method: the line names both flags as typed, not a field label ("field 'method'")
    if given and args.method != "layerpipe":
        raise InputError(f"{given[0]} tunes LayerPipe's Algorithm 1, which --method {args.method} does not run: "
                         "give it with --method layerpipe")
    if args.dfg and args.method != "layerpipe":
        raise InputError(f"--dfg writes LayerPipe's pipelined training DFG, which --method {args.method} does not "
                         "make: give it with --method layerpipe")
    if args.dfg and args.schedule in FLUSHED_SCHEDULES:
        raise InputError(f"--dfg writes the pipeline with delayed gradients; --schedule {args.schedule} flushes "
                         "every iteration (one weight version): leave --schedule out or choose one that does not flush",
                         field="schedule")
    if (args.memory or args.capacity_gb is not None) and not args.microbatches:
        raise InputError("--memory and --capacity-gb need --microbatches (the schedule decides the stash)",
                         field="microbatches")
    if args.optimizer is not None and not (args.memory or args.capacity_gb is not None):
        raise InputError("--optimizer sizes the optimizer state of --memory's table: give it with --memory (or "
                         "--capacity-gb) and --microbatches", field="optimizer")


def run(args: argparse.Namespace) -> int:
    from archsim.device_toml import device_toml_dtype
    from archsim.outputs import render
    from archsim.partition import build_profile
    from archsim.rows import Rows

    check_flags(args)
    options: dict[str, Any] = {}  # the partitioner's keywords
    if args.method == "layerpipe":
        options = {"alpha": LAYERPIPE_ALPHA if args.alpha is None else args.alpha, "axes": split_axes(args.split_axes),
                   "borrow": args.borrow or BORROW_PAPER}
    network = network_from_args(args)
    if args.microbatches:  # F, δ and G of every layer per micro-batch: a floor on the plan's ops, known now
        check_job_size(args.microbatches * 3 * len(network), args.max_ops)
    args.dtype = device_toml_dtype(args.config, args.dtype, args.element_bytes)  # a device TOML's: train's
    array = config_array(args)
    warn_sram_unused(args, "pipeline's analytic layer cycles and stage costs")
    profile = build_profile(network, array, args.batch, args.mode, args.engine)
    from archsim.progress import progress

    # Algorithm 1's δ splits step their sub-GEMMs on the cycle engine (seconds): a bar while the plan is made
    stepped = args.method == "layerpipe" and args.engine == "cycle"
    with progress(1, f"pipeline {args.method}", "plan", enabled=stepped) as bar:
        plan = partition(profile, args.processors, args.method, **options)
        bar.update()
    single = float(profile.total.sum())
    records = plan.to_rows()  # plain rows: pandas only for --memory's footprint table
    meta: dict[str, object] = {
        "network": network.name, "method": plan.method, "processors": args.processors,
        "stages": len(plan.stages),  # fewer than processors where a partitioner leaves some idle
        "array": f"{array.rows}x{array.cols}", "dataflow": array.dataflow, "batch": args.batch, "mode": args.mode,
        **width_meta(args, array),
        "single_processor_cycles": single, "iteration_cycles": plan.max_stage_cost,
        "speedup": single / plan.max_stage_cost,
        "mandatory_comm_bytes": plan.mandatory_bytes, "additional_comm_bytes": plan.additional_bytes,
    }
    if plan.method == "pipedream":  # which of the optimizer's settings LayerPipe's comparison uses
        meta["settings"] = "; ".join(plan.notes)
    elif plan.method == "layerpipe":  # the defaults that decide Algorithm 1's plan, said rather than implied
        meta["settings"] = f"Algorithm 1: alpha {options['alpha']:g}; δ split axes {','.join(options['axes'])}" + (
            f"; borrow {options['borrow']}" if options["borrow"] != BORROW_PAPER else "")
    elif plan.method in ("gpipe", "ooo"):  # a split by layer count, which the table alone does not say
        meta["settings"] = count_split_words(plan)
    if args.dfg:
        write_dfg(args.dfg, plan, profile, dict(meta))
    from archsim.partition.profile import unstashed_layers

    schedule = args.schedule or METHOD_SCHEDULES.get(plan.method, "1f1b")
    stash, slower = stash_depths(plan, network, schedule, unstashed_layers(profile)), lent_slower(plan, schedule)
    if slower:  # a borrower's versions depend on the micro-batches: the simulated --memory column states them
        stash = None
    makespan: float | None = None
    warning: str | None = None
    if stash is not None:
        for record, versions in zip(records, stash):
            record["weight_versions"] = versions
    if args.microbatches:
        from archsim.policies.pipeline import simulate_partition

        check_job_size(args.microbatches * sum(len(stage.ops) for stage in plan.stages), args.max_ops)
        link = None if args.link_bandwidth is None else float(args.link_bandwidth)  # schedule's rule: the flag, or free hops
        with phases(f"pipeline {plan.method}", ("build", "simulate", "validate")) as phase:
            result = simulate_partition(plan, profile, args.microbatches, args.schedule, link,
                                        phase=phase)
            phase("validate")
            timeline = validated(result.timeline)
        makespan = timeline.makespan
        meta["microbatches"] = args.microbatches
        if args.schedule is not None:  # a chosen schedule is stated; the method's own stays as it was printed
            meta["schedule"] = result.schedule
        from archsim.policies.pipeline import schedule_variant

        meta["schedule_variant"] = schedule_variant(result.schedule, plan)  # which gpipe: not schedule's layer-wise
        meta["makespan"] = makespan
        if link is not None:  # a link the flag stated: said, as schedule says it
            meta["link_bytes_per_cycle"] = link
        utilization = timeline.utilization()
        for i, record in enumerate(records):
            record["utilization"] = utilization.get(f"p{i + 1}", 0.0)
        if args.memory or args.capacity_gb is not None:
            from archsim.footprint import footprint_frame, partition_footprint

            optimizer = args.optimizer or "sgd"
            memory = partition_footprint(plan, profile, timeline, result.schedule, optimizer)
            # the schedule's own versions (GPipe flushes: 1) replace the DFG's PipeDream stash depths
            frame = Rows.of(records).frame().drop(columns="weight_versions", errors="ignore").join(
                footprint_frame(memory).drop(columns="processor"))
            records = frame.to_dict(orient="records")
            meta["optimizer"] = optimizer
            if args.capacity_gb is not None:  # a what-if, as train's: the table, and a warning when over
                capacity = args.capacity_gb * 1e9
                meta["memory_capacity_bytes"] = capacity
                warning = memory_warning([(f"processor {m.processor}", "memory (--capacity-gb)", m.peak_bytes,
                                           capacity) for m in memory], "processors")
                meta["fits_memory"] = warning is None
            elif args.config:  # a device file's hbm_gib is train's; here only the flag is checked
                from archsim.array.device_notes import device_capacity_note

                unchecked = device_capacity_note(args.config)
                if unchecked:
                    say_after_run("note", unchecked)
        chosen = f", {args.schedule} schedule" if args.schedule is not None else ""
        write_timeline_outputs(args, timeline, f"{network.name}: {plan.method}, {args.processors} processors{chosen}",
                               borrowed=plan.borrowed_ops)
    if array.clock_hz is not None:
        meta["clock_ghz"] = array.clock_hz / 1e9
        meta["single_processor_seconds"] = single / array.clock_hz
        meta["iteration_seconds"] = float(plan.max_stage_cost) / array.clock_hz
        if makespan is not None:
            meta["makespan_seconds"] = float(makespan) / array.clock_hz
    if args.format == "table":
        records = _compact(records, plan, [layer.name for layer in network.layers])
        meta["split_ops"] = ("D1/D2 are the parts δ′/δ″ of a split δ (input gradient); * marks a part run here "
                             "for a layer on an earlier processor; --format csv lists every op")
    if warning:
        warn(warning)
    emit(render(add_seconds(Rows.of(records), array.clock_hz), args.format, precision=args.precision, meta=meta),
         args)
    idle = idle_processors_note(plan, args.processors)
    if idle:
        note(idle)
    fewer = fewer_processors_note(profile, plan, args.processors, **options)
    if fewer:
        note(fewer)
    from archsim.partition.superlinear import superlinear_note

    above = superlinear_note(profile, plan, args.processors)
    if above:
        note(above)
    if slower and "weight_versions" not in records[0]:
        note(f"processors that run only borrowed δ parts and are slower than every processor holding layers "
             f"({', '.join(f'p{p}' for p in slower)}) pace their lenders (a lender's 1F1B window, or under an "
             "action order the forward after its backward, waits for the δ parts it lends): the weight versions "
             "they hold are bounded by that window but depend on the timing, so the table states no "
             "weight_versions (--memory --microbatches M does; see docs/concepts.md)")
    elif stash is None and "weight_versions" not in records[0]:
        note(branching_versions_note(network))
    return 0


def branching_versions_note(network) -> str:
    """Why a branching network's table has no ``weight_versions`` column, where a chain's has one: the stash depth
    S − s + 1 is a chain's (:func:`stash_depths`); the column came and went with the network and nothing said why."""
    first = next(layer for layer in network.layers if len(layer.inputs) != 1)
    return (f"the network branches ({first.name} reads {len(first.inputs)} inputs): PipeDream's stash depth, "
            "S − s + 1 versions for the s-th of S stages, is a chain's, so the table states no weight_versions "
            "(--memory --microbatches M simulates them)")


def write_dfg(path: str, plan, profile, meta: dict[str, object]) -> None:
    """``--dfg``: the plan's pipelined, retimed training DFG (:mod:`archsim.dfg`) into ``path`` through the
    one writer, in the run's output set (nothing half-written); DOT by the suffix, else JSON with ``meta``."""
    from archsim.dfg.document import dfg_text
    from archsim.dfg.of_plan import plan_dfg
    from archsim.output_files import note_written, write_output

    result = plan_dfg(plan, profile)
    if result.borrowed_only:
        shown = ", ".join(f"p{p}" for p in result.borrowed_only)
        note(f"--dfg: processors that run only borrowed δ parts ({shown}) are DFG stages holding no layer and 1 "
             "weight version; the DFG's weight_versions_needed are what the dependences need, the table's "
             "weight_versions what the simulated 1F1B window holds, which counts those processors as stages "
             "(one version more on each processor before them where their part adds no boundary; see docs/concepts.md)")
    title = f"{meta['network']}: {plan.method}, {meta['processors']} processors, pipelined and retimed training DFG"
    note_written(f"wrote {write_output(path, dfg_text(result, path, meta, title))}")


def _compact(records: list[dict], plan, order: list[str]) -> list[dict]:
    """The table's short form: a range of layers per processor, and only the split/borrowed ops."""
    position = {name: i for i, name in enumerate(order)}
    ranges = []
    for stage in plan.stages:
        spots = [position.get(name, -1) for name in stage.layers]
        if len(spots) > 2 and -1 not in spots and spots == list(range(spots[0], spots[0] + len(spots))):
            ranges.append(f"{stage.layers[0]}…{stage.layers[-1]} ({len(spots)})")
        else:
            ranges.append(" ".join(stage.layers))
    shown = []
    for record, layers, stage in zip(records, ranges, plan.stages):
        row = {}
        for key, value in record.items():
            if key != "ops":
                row[key] = layers if key == "layers" else value
            if key == "total_cycles":
                row["split_ops"] = " ".join(f"{op.kind}:{op.layer}" + ("*" if op.borrowed else "") for op in stage.ops
                                            if op.borrowed or op.kind in ("D1", "D2")) or "-"
        shown.append(row)
    return shown


def stash_depths(plan, network, schedule: str, unstashed: frozenset[str] = frozenset()) -> list[int] | None:
    """Weight versions each processor stashes (chains only): S − s + 1 for the s-th of S non-empty
    stages, what the LayerPipe DFG (:mod:`archsim.dfg`, ``--dfg``) derives from the pipelined training DFG (PipeDream's
    stash depth), and 1 under a schedule that flushes (GPipe keeps one version). Stated here so the command
    needs no networkx or integer program; a test checks the two agree on every chain and stage assignment up
    to 7 layers. A stage holding only ``unstashed`` layers (no δ reads their weights: ``exact`` mode's first
    layer) and no borrowed op keeps 1.

    A stage that runs only borrowed δ parts is one of the S for the stages before it (the 1F1B window
    archsim simulates counts it) and holds 1 version itself: the one its running part reads, while the
    lender still stashes it. That holds where it keeps pace (:func:`lent_slower` names those that do not)."""
    if any(len(layer.inputs) != 1 for layer in network.layers):
        return None
    busy = [stage.index for stage in plan.stages if stage.layers or getattr(stage, "ops", ())]
    single = {stage.index for stage in plan.stages if stage.layers and set(stage.layers) <= unstashed
              and not any(op.borrowed for op in getattr(stage, "ops", ()))}
    if schedule in FLUSHED_SCHEDULES:
        return [1 if stage.index in busy else 0 for stage in plan.stages]
    lent = {stage.index for stage in plan.stages if not stage.layers} & set(busy)
    return [1 if stage.index in single | lent else len(busy) - busy.index(stage.index) if stage.index in busy else 0
            for stage in plan.stages]


def lent_slower(plan, schedule: str) -> list[int]:
    """Processors (1-based) that run only borrowed δ parts and cost more per micro-batch than every stage
    holding layers, under a weight-stashing schedule: the lenders let go of each version at their G, before
    such a processor's part of it ends, so how many it holds (:func:`archsim.footprint.lent_versions`) needs a
    simulation. The lenders wait for their parts and so bound that count: a window (``layerpipe``, ``1f1b-window``)
    admits F(b) after them of b − W, an action order (``1f1b``) runs the F after B(b) after B(b)'s parts."""
    pace = max((stage.total_cost for stage in plan.stages if stage.layers), default=0.0)
    return [] if schedule in FLUSHED_SCHEDULES else [
        stage.index + 1 for stage in plan.stages if not stage.layers and stage.ops and stage.total_cost > pace]


COMMAND = Command("pipeline", "partition a network over processors (layerpipe, pipedream, gpipe, ooo)", add_arguments, run)


def count_split_words(plan: Partition) -> str:
    """gpipe's and ooo's split in words: both place layers by count, not by cost (GPipe's own partitioner balances
    the stages' costs), so a reader of the table is told so: ``equal layer counts (4,3,3,3), not balanced by cost``."""
    counts = ",".join(str(len(stage.layers)) for stage in plan.stages)
    rule = "equal layer counts" if plan.method == "gpipe" else "⌈L/P⌉ consecutive layers a processor"
    return f"{rule} ({counts}), in order, not balanced by cost"
