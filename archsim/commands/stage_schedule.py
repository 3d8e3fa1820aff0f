"""``archsim schedule``'s per-stage flags (no network: the zero-bubble paper's setting); the runs they ask for are
:mod:`archsim.policies.stage_schedule`'s.

    archsim schedule --stages 8 --stage-times 18.522,18.086,9.337 --comm 0.601 --microbatches 24 \\
        --policy zb-h1 --format json
    archsim schedule --stage-profile stages.csv --microbatches 24 --policy zb-2p
    archsim schedule --stages 4 --stage-times 1,1,1 --microbatches 8 --torch-schedule ScheduleInterleaved1F1B
    archsim schedule --stages 4 --stage-times 1,1,1 --schedule-csv-in order.csv
"""

from __future__ import annotations

import argparse

from archsim.policies.schedule_flags import DEFAULT_COMM, DEFAULT_STAGE_MEMORY, EXACT_SEARCH_LIMIT
from archsim.policies.stage_profile import MAX_STAGE_VALUE
from archsim.validate import MAX_PROCESSORS
from archsim.value_parsers import float_flag, positive_float_flag, positive_int_flag, processors_flag


def add_stage_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("per-stage costs (no NETWORK)")
    group.add_argument("--stages", type=processors_flag, default=None, metavar="P",
                       help=f"devices (pipeline stages, at most {MAX_PROCESSORS})")
    group.add_argument("--stage-times", default=None, metavar="F,B,W",
                       help="forward, backward-input and backward-weight time of every stage")
    group.add_argument("--comm", type=float_flag(0.0, MAX_STAGE_VALUE, what="a non-negative time"), default=None,
                       metavar="C", help=f"per-hop transfer time (T_comm) (default: {DEFAULT_COMM:g})")
    group.add_argument("--stage-memory", default=None, metavar="M_B,M_W",
                       help="activation memory of a micro-batch and the part kept until W (default "
                            f"{DEFAULT_STAGE_MEMORY}: "
                            "M_W/M_B of the zero-bubble paper's GPT layers, 32h/(34h + 5as) = 0.37-0.43)")
    group.add_argument("--stage-profile", default=None, metavar="FILE.csv",
                       help="per-stage forward,backward_input,backward_weight"
                            "[,comm,activation_bytes,weight_bytes,send_bytes]")
    group.add_argument("--link-bandwidth", type=positive_float_flag, default=None, metavar="BYTES",
                       help="bytes per time unit of a link between ranks: a hop takes comm + send_bytes/BYTES "
                            "(per-stage mode: send_bytes from --stage-profile; on a network: bytes per cycle of "
                            "the published schedules' hops, as pipeline's, and of data-parallel sync; default: free "
                            "hops and a 64 B/cycle sync, a device file's [links] intra_gbps unread)")
    group.add_argument("--torch-schedule", default=None, metavar="NAME",
                       help="simulate a torch.distributed.pipelining schedule class's order (e.g. Schedule1F1B)")
    group.add_argument("--schedule-csv-in", default=None, metavar="FILE.csv",
                       help="simulate an action order in torch's CSV layout")
    group.add_argument("--max-orders", type=positive_int_flag, default=None, metavar="N",
                       help="zb-1p-exact/zb-2p-exact: refuse searches over more combinations of per-stage orders "
                            f"than this (default {EXACT_SEARCH_LIMIT:,}), counted before any order is built")
    group.add_argument("--torch-steps", action="store_true",
                       help="with --schedule-csv-in of a schedule with SEND/RECV actions (torch's compute_comms "
                            "CSV): count steps as torch's dry-run simulator does")


