"""The timeline outputs several sub-commands write (a Gantt, a Chrome trace, torch's schedule CSV), and the
check every simulated timeline passes before any of them is written."""

from __future__ import annotations

import argparse
from collections.abc import Collection
from typing import TYPE_CHECKING

from archsim.output_targets import output_flag

if TYPE_CHECKING:
    from archsim.sim.timeline import Timeline


def add_timeline_outputs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gantt", type=output_flag, default=None, metavar="OUT.html", help="write a plotly Gantt of the timeline")
    parser.add_argument("--chrome-trace", dest="trace", type=output_flag, default=None, metavar="OUT.json",
                        help="Chrome trace JSON of the timeline (opens in Perfetto)")
    parser.add_argument("--trace", dest="trace", type=output_flag, help=argparse.SUPPRESS)  # older name; cluster's --trace is its input
    parser.add_argument("--schedule-csv", type=output_flag, default=None, metavar="OUT.csv",
                        help="per-rank action CSV in torch.distributed.pipelining's layout")


def iteration_title(model: str, par) -> str:
    """The title of a training iteration's Gantt, one for ``train`` and for ``search``'s row: the layout of
    ``par`` (a :class:`~archsim.training.parallel.Parallelism`; CP and its exchange where CP is above 1, a mixture
    of experts' EP where above 1 and its experts' ETP where it is not TP's), the schedule that ran and its model
    chunks."""
    chunks = f", {par.interleave} chunks per rank" if par.interleave > 1 else ""
    cp = f" CP{par.cp} ({par.cp_comm})" if par.cp > 1 else ""
    ep = f" EP{par.ep}" if par.ep > 1 else ""
    ep += f" ETP{par.expert_tp}" if par.expert_tp != par.tp else ""
    return f"{model}: TP{par.tp}{cp}{ep} PP{par.pp} DP{par.dp}, {par.schedule_name}{chunks}"


def iteration_caption(iteration_seconds: float, timeline, par=None, post=()) -> str:
    """The note under a training iteration's Gantt: the chart draws the pipeline's passes, and each rank's
    work after its last backward ends the iteration later, named as the run's ``par`` (a
    :class:`~archsim.training.parallel.Parallelism`) syncs: the gradient all-reduces left to run, the distributed
    optimizer's reduce-scatter and all-gather, or FSDP's collectives the compute did not hide (every micro-batch's,
    added after the last bar); then the optimizer step. ``post``: each rank's seconds after its last backward
    (``TrainResult.post``); a collective no rank spends time on (DP 1, untied embeddings, PP 1) is not named; with
    fp8, the weights' cast once an iteration too.
    Both figures in seconds, as the chart's axis."""
    after = iteration_seconds - timeline.makespan
    if par is not None and par.fsdp and par.fsdp_grad_sync == "step":
        work = ("FSDP's once-a-step all-gathers and reduce-scatters the compute did not hide, added here; the "
                "optimizer step")
    elif par is not None and par.fsdp:
        work = ("FSDP's all-gathers and reduce-scatters the compute did not hide, every micro-batch's, added "
                "here; the optimizer step")
    else:
        work = _collectives_left(par, post) + "the optimizer step"
    if par is not None and par.fp8:  # in the run the first micro-batch's forward casts them (fp8_scaling.py)
        work += " and the fp8 weights' cast, priced here"
    return (f"Each pipeline rank's forward and backward passes. What a rank runs after its last backward ("
            f"{work}) is not drawn: the iteration ends {after:.4g} s after the last bar, at {iteration_seconds:.4g} s.")


def _collectives_left(par, post) -> str:
    """The DP and embedding collectives some rank of ``post`` spends seconds on, as the caption names them
    ("" when none runs); without ``post`` both are named, as before it was given."""
    dp = not post or any(s > 0 for rank in post for name, s in rank.items() if name.startswith("dp_"))
    embedding = not post or any(rank.get("embedding_allreduce", 0.0) > 0 for rank in post)
    sharded = par is not None and par.distributed_optimizer
    if sharded:
        names = (["the distributed optimizer's DP reduce-scatter and all-gather"] if dp else []) + \
            (["the embedding all-reduce"] if embedding else [])
    elif dp and embedding:
        names = ["the DP and embedding all-reduces"]
    else:
        names = ["the DP all-reduce"] if dp else ["the embedding all-reduce"] if embedding else []
    return f"{' and '.join(names)} left to run, " if names else ""


RANK_ROWS = "pipeline rank"  # the Gantt's rows for a training iteration (r0, r1, …), not array processors


def write_timeline_outputs(args: argparse.Namespace, timeline, title: str, unit: str = "cycles",
                           borrowed: Collection[tuple[str, str]] = (), caption: str = "",
                           rows_title: str | None = None) -> None:
    """The Gantt, Chrome trace and schedule CSV asked for; ``unit``: the timeline's time unit, the
    Gantt's x axis title (cycles for arrays, seconds for GPUs) and the Chrome trace's scale (seconds written
    in its µs); ``borrowed``: (layer, kind) of the
    ops the Gantt hatches (a plan's :attr:`~archsim.partition.result.Partition.borrowed_ops`); ``caption``:
    a note under the Gantt (a training iteration's: :func:`iteration_caption`); ``rows_title``: the Gantt's rows
    axis where its rows are not processors (a plan's: stage / channel). Each file written is named on stderr
    by its ``wrote FILE`` line, as ``--out``'s (:func:`~archsim.output_files.note_written`)."""
    from archsim.output_files import note_written

    if args.gantt:
        from archsim.report.gantt import write_gantt  # plotly: only when a chart is asked for

        page = write_gantt(timeline, args.gantt, title=title, caption=caption, unit=unit, borrowed=borrowed,
                           rows_title=rows_title)
        note_written(f"wrote {page}")
    if args.trace or args.schedule_csv:
        from archsim.report.export import write_chrome_trace, write_pipeline_schedule_csv

        if args.trace:
            note_written(f"wrote {write_chrome_trace(timeline, args.trace, unit)}")
        if args.schedule_csv:
            note_written(f"wrote {write_pipeline_schedule_csv(timeline, args.schedule_csv)}")


def validated(timeline: object) -> Timeline:
    """``timeline`` after the independent validator found nothing wrong with it (else an
    AssertionError listing the violations: a simulator bug, not a user's mistake)."""
    from archsim.sim.timeline import Timeline
    from archsim.sim.validate import assert_valid

    assert isinstance(timeline, Timeline), type(timeline)
    assert_valid(timeline.problem, timeline)
    return timeline
