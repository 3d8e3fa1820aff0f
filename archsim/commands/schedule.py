"""``archsim schedule``: run one layer-wise schedule policy over devices and micro-batches."""

from __future__ import annotations

import argparse

from archsim.choices.schedules import POLICIES
from archsim.commands import Command
from archsim.commands.common import (
    add_job_limit_argument,
    add_layer_cost_arguments,
    add_output_arguments,
    emit,
    note_unread_keys,
    phases,
    positive_int,
)
from archsim.commands.network_args import add_network_arguments, network_from_args
from archsim.commands.stage_schedule import add_stage_arguments
from archsim.commands.timeline_outputs import add_timeline_outputs, write_timeline_outputs
from archsim.policies import multistream as ms  # light: its lowering loads when it makes ops
from archsim.policies.schedule_flags import (
    CHUNK_POLICIES,
    DEFAULT_CHUNKS,
    DEFAULT_COMM_UNITS,
    DEFAULT_GROUP,
    DEFAULT_REGION_SIZE,
    DEFAULT_REVERSE_K,
    DEFAULT_STREAMS,
    DEFAULT_SYNC,
    defer_defaults,
)
from archsim.value_parsers import non_negative_float_flag, processors_flag


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_network_arguments(parser, optional=True)
    parser.add_argument("--policy", default=None,
                        choices=POLICIES,
                        help="schedule policy (required; docs/cli.md and the papers' pages say what each runs). On a NETWORK "
                             "gpipe is out-of-order backprop's layer-wise GPipe (Oh et al., EuroSys 2022, Fig. 12a), "
                             "not pipeline --schedule gpipe's stage-wise fill-drain (Huang et al., NeurIPS 2019; "
                             "torch's ScheduleGPipe), which it runs on per-stage costs (--stages)")
    parser.add_argument("--processors", type=processors_flag, default=None,
                        help="devices (pipeline stages, or data-parallel replicas for dp-*): required with NETWORK")
    parser.add_argument("--microbatches", type=positive_int, default=1,
                        help="micro-batches per iteration, M micro-batches of --batch samples each (with 1, a pipeline "
                             "has no overlap to exploit; dp-* and multistream time one iteration: 1 only)")
    parser.add_argument("--unit-costs", action="store_true", help="F = D = G = 1 per layer (mp, gpipe, ooo-pipe1/2, dp-*: each sync takes --comm-units), or "
                             "F = I = W = 1 per stage, whatever its layers (1f1b, zb-*, list-*, …); no communication")
    parser.add_argument("--flush", action=argparse.BooleanOptionalAction, default=None,
                        help="backward ops wait for every forward (default: on, except for ooo-pipe2 and mp)")
    parser.add_argument("--group", type=positive_int, default=None,
                        help=f"ooo-pipe2 modulo group size, in layers (default: {DEFAULT_GROUP}; refused with "
                             "other policies)")
    parser.add_argument("--streams", default=None, choices=ms.SCHEDULES,
                        help="multistream: single (baseline), naive (G as soon as ready) or joint (Algorithm 1) "
                             f"(default: {DEFAULT_STREAMS}; refused with other policies)")
    parser.add_argument("--region-size", type=positive_int, default=None,
                        help=f"multistream: δ ops per region (default: {DEFAULT_REGION_SIZE}; refused with other "
                             "policies)")
    parser.add_argument("--chunks", type=positive_int, default=None,
                        help=f"model chunks per device of {', '.join(CHUNK_POLICIES)} and their torch classes "
                             f"(default: {DEFAULT_CHUNKS}; refused with other policies)")
    parser.add_argument("--reverse-k", dest="k", default=None,
                        help="dp-reverse-k: layers to reverse, or 'auto' (the paper's search) "
                             f"(default: {DEFAULT_REVERSE_K}; refused with other policies)")
    parser.add_argument("--k", dest="k", help=argparse.SUPPRESS)  # older name; gemm's --k is a GEMM dimension
    parser.add_argument("--sync", default=None, choices=("ring", "ps"),
                        help="data-parallel synchronization: ring all-reduce or a parameter server (ps) "
                             f"(default: {DEFAULT_SYNC}; refused with other policies)")
    # The link bandwidth is --link-bandwidth (per-stage group below); --bandwidth means DRAM words per
    # cycle in cost and pipeline, so schedule does not take it.
    parser.add_argument("--comm-units", type=non_negative_float_flag, default=None,
                        help="with --unit-costs: synchronization time of each layer (data parallel) "
                             f"(default: {DEFAULT_COMM_UNITS}; refused with other policies)")
    add_layer_cost_arguments(parser, bandwidth_flag="--dram-bandwidth")
    add_timeline_outputs(parser)
    add_output_arguments(parser)
    add_job_limit_argument(parser)
    add_stage_arguments(parser)
    defer_defaults(parser)  # a flag given at its default is seen, and refused where its run would ignore it
    parser.epilog = MAKESPAN_UNIT


# The output's makespan column carries no unit in its name (a documented column, shared with pipeline): said here,
# in lines of --help's width (the formatter keeps a description's and an epilog's line breaks)
MAKESPAN_UNIT = """makespan is in the array's clock cycles (the meta line `unit` says which: units
with --unit-costs, the stage times' unit on per-stage costs); makespan_seconds
gives it in seconds where a clock is known. GEMMs run at --dtype's MACs per PE
per cycle where --config states them ([compute] macs_per_pe, a .cfg's
[macs_per_pe] section), else at one."""


def run(args: argparse.Namespace) -> int:
    from archsim.array.device_sections import is_device_toml
    from archsim.console import note, say_after_run
    from archsim.device_toml import device_toml_dtype, device_toml_notes
    from archsim.outputs import render
    from archsim.policies.schedule_run import TIMELINE_OUTPUTS, run_schedule
    from archsim.rows import Rows

    settings = {name: value for name, value in vars(args).items() if name in SETTINGS}
    settings["dtype"] = device_toml_dtype(args.config, args.dtype, args.element_bytes)  # a device TOML's: train's
    drawn = tuple(flag for flag, value in zip(TIMELINE_OUTPUTS, (args.gantt, args.trace, args.schedule_csv)) if value)
    # the run's notes (a device file's arrays, its keys) after it: a refused run prints its error alone (docs/cli.md)
    done = run_schedule(**settings, reverse_k=args.k, drawn=drawn, phases=phases, speak=say_after_run,
                        read_device=device_toml_notes,  # a device TOML read as cost reads it, its notes said there
                        loader=lambda name, filled: network_from_args(argparse.Namespace(**{**vars(filled), "network": name})))
    if args.config and not is_device_toml(args.config):  # read only with the array's costs; policies/ reads no device
        note_unread_keys(args.config, rates_read=True)  # its [macs_per_pe] priced the costs (--dtype's rate)
    if done.order is not None:  # per-stage: torch's CSV of the order run, then the timeline's drawings
        if args.schedule_csv:
            from archsim.output_files import note_written, write_output
            from archsim.policies.torch_csv import order_csv

            note_written(f"wrote {write_output(args.schedule_csv, order_csv(done.order))}")
        if args.gantt or args.trace:
            write_timeline_outputs(argparse.Namespace(**{**vars(args), "schedule_csv": None}), done.timeline,
                                   done.title, unit=done.unit)
    elif done.timeline is not None:
        write_timeline_outputs(args, done.timeline, done.title, unit=done.unit)
    emit(render(Rows.of([done.row]), args.format, precision=args.precision, meta=done.meta), args)
    if done.used is not None:  # the paper's allocations can leave a device without layers: say so, as pipeline
        from archsim.planners import idle_line

        idle = idle_line(f"{args.policy}'s allocation", done.used, done.row["processors"])  # a device file's too
        if idle:
            note(idle)
    return 0


# the flags run_schedule takes by their own names (--reverse-k's value is args.k; the output flags are the command's)
SETTINGS = ("network", "policy", "processors", "microbatches", "unit_costs", "flush", "group", "streams",
            "region_size", "chunks", "sync", "comm_units", "array", "dataflow", "config", "dtype", "element_bytes",
            "engine", "dram_bandwidth", "sram_kb", "clock_ghz", "batch", "mode", "only", "shapes", "unsupported",
            "input_shape", "dim", "max_ops", "stages", "stage_times", "comm", "stage_memory", "stage_profile",
            "link_bandwidth", "torch_schedule", "schedule_csv_in", "max_orders", "torch_steps")


COMMAND = Command("schedule", "layer-wise schedules: pipelines (mp, gpipe, ooo-pipe1/2) and data parallel",
                  add_arguments, run)
