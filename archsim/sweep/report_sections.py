"""An array sweep's report, per network: its per-layer costs and a LayerPipe Gantt of one of its configurations,
and in a design sweep its Pareto front; each network's sections follow its speedup sections, in the spec's order
of networks (:func:`archsim.report.sweep_order.network_order`). Cycles are array clock cycles."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from archsim.choices.partitions import BORROW_PAPER, LAYERPIPE_ALPHA, LAYERPIPE_BORROW
from archsim.console import shell_word
from archsim.split_axis import SPLIT_AXES
from archsim.sweep.report import array_path, report_network, row_microbatches, sweep_array
from archsim.sweep.results_check import recorded_borrow

if TYPE_CHECKING:  # pandas and plotly load when a report is written
    import pandas as pd

    from archsim.report.sweep_report import Section


def spec_networks(record: dict) -> tuple[str, ...]:
    """The networks of a results folder's spec.json in the spec's order, as the report names them (a file's
    stem, a shipped name as given; two of one stem by :func:`~archsim.sweep.network_names.display_names`);
    () where the folder records none."""
    from archsim.sweep.network_names import display_names

    networks = record.get("networks")
    return tuple(display_names(map(str, networks)).values()) if isinstance(networks, list) else ()


def spec_methods(record: dict) -> tuple[str, ...]:
    """The methods of a results folder's spec.json in the spec's order; () where the folder records none."""
    methods = record.get("methods")
    return tuple(str(m) for m in methods) if isinstance(methods, list) else ()


def network_sections(results: pd.DataFrame, order: list[str], folder: Path, own_networks: tuple[str, ...],
                     record: dict, redraw: str) -> dict[str, list[Section]]:
    """Per network of ``order``, the sections that follow its speedups: its per-layer costs and Gantt (where its
    file may be read, :func:`archsim.sweep.report.report_network`) and, in a design sweep, its front (``redraw``:
    the command that redraws those)."""
    counts = sorted(results.processors.unique())
    processors = int(counts[len(counts) // 2])  # the median count (the upper one of an even number)
    alpha = record.get("alpha")  # the spec's, as its LayerPipe plans used
    alpha = float(alpha) if isinstance(alpha, (int, float)) and not isinstance(alpha, bool) else LAYERPIPE_ALPHA
    sections = {}
    for name in order:
        rows = results[results.network == name]
        sections[name] = _detail_sections(rows, folder, own_networks, record, processors, alpha, len(counts) > 1)
        if "energy_pj" in results.columns:
            sections[name] += _design_sections(results, name, redraw)
    return sections


def _detail_row(results: pd.DataFrame) -> pd.Series:
    """The configuration the per-layer and Gantt sections of a network (``results``: its rows) show: in a design
    sweep its fastest design at its smallest batch (the point a designer looks for first), else its smallest
    array at its smallest batch."""
    if "energy_pj" not in results.columns:
        return results.sort_values(["network", "rows", "batch"], kind="stable").iloc[0].copy()
    from archsim.report.pareto import time_column

    order = ["network", "batch", time_column(results), "rows"]
    return results.sort_values(order, kind="stable").iloc[0].copy()


def _detail_sections(rows: pd.DataFrame, folder: Path, own_networks: tuple[str, ...], record: dict, processors: int,
                     alpha: float, median: bool) -> list[Section]:
    """One network's per-layer F/G/D cycles and LayerPipe Gantt at :func:`_detail_row`'s configuration; none
    where its file is not read. The heading carries the long title; each figure draws a short one of its own
    (:func:`figure_title`), which a plot saved alone (plotly's camera button) keeps."""
    from archsim.array.costing import cost_network
    from archsim.lowering import check_mode
    from archsim.report.sweep_report import layer_breakdown_figure

    first = _detail_row(rows)
    recorded = first.get("network_path")
    name = recorded if isinstance(recorded, str) and recorded else str(first.network)
    network = report_network(name, folder, own_networks)
    if network is None:
        return []
    if str(first.network) != Path(name).stem:  # one of two networks of one stem: its headings by its own name
        network = replace(network, name=str(first.network))
    _check_unchanged(first)
    first["network"] = name
    if first["only"] != "all":
        network = network.only(*str(first["only"]).split("+"))
    array, engine, memory = sweep_array(record, first)
    costs = cost_network(network, array, _micro_batch(first), check_mode(str(first["mode"])), engine)
    title = (f"{network.name}: per-layer F/G/D cycles ({first.rows}x{first.cols} {first.dataflow}{_width(array)}, "
             f"{_batch_words(first)}{', memory-aware' if engine == 'cycle' else ''})")
    command = (f"archsim cost {shell_word(first.network)} {_array_flags(first)} --dataflow {first.dataflow} "
               f"--batch {_micro_batch(first)} --mode {first['mode']}" + (f" --only {first['only'].replace('+', ',')}"
                                                                          if first["only"] != "all" else "") + memory)
    axes = record.get("split_axes")  # the spec's δ split axes (spec.json holds them as a list)
    axes = tuple(axes) if isinstance(axes, list) and axes and set(axes) <= set(SPLIT_AXES) else SPLIT_AXES
    borrow = recorded_borrow(record)[0]  # the spec's first borrow value (the printed walk where it runs that first)
    borrow = borrow if borrow in LAYERPIPE_BORROW else BORROW_PAPER
    return [(title, layer_breakdown_figure(costs, figure_title(network.name, "F/G/D cycles by layer", first, array)),
             command),
            gantt_section(network, array, first, processors, engine, memory, alpha, median=median, axes=axes,
                           borrow=borrow)]


def figure_title(network: str, shows: str, first, array) -> str:
    """A report figure's own title, short enough for one line above its legend: the network, what it shows, the
    array (rows x cols, dataflow, element size where not 1 byte) and the samples per micro-batch it costs."""
    return f"{network}: {shows}, {first.rows}x{first.cols} {first.dataflow}{_width(array)}, batch {_micro_batch(first)}"


def _micro_batch(first) -> int:
    """The samples one micro-batch of ``first``'s design holds (batch / M, what its rows' profile costs; the whole
    batch in a plain sweep): the ``--batch`` of the commands that re-cost it."""
    return int(first.batch) // row_microbatches(first)


def _batch_words(first) -> str:
    """``first``'s batch as a title says it: ``batch 4``, or a design's ``batch 2 (one of 2 micro-batches of 4)``."""
    count = row_microbatches(first)
    return f"batch {first.batch}" if count == 1 else \
        f"batch {_micro_batch(first)} (one of {count} micro-batches of {first.batch})"


def _width(array) -> str:
    """The element size a title names beside the array: none for 1-byte words (the commands' default)."""
    return "" if array.element_bytes == 1 else f", {array.element_bytes}-byte elements"


def _array_flags(first) -> str:
    """``cost``'s and ``pipeline``'s flags for ``first``'s array: ``--config`` its .cfg, else ``--array ROWSxCOLS``."""
    path = array_path(first)
    return f"--config {shell_word(path)}" if path else f"--array {first.rows}x{first.cols}"


def _check_unchanged(row) -> None:
    """The network file must still be the one the results were computed from (its SHA-256)."""
    from archsim.sweep.spec_files import check_unchanged

    recorded, path = row.get("network_sha256"), row.get("network_path")
    if isinstance(recorded, str):
        check_unchanged(str(path), recorded, "since the sweep ran")


def _design_sections(results: pd.DataFrame, network: str, command: str) -> list[Section]:
    """A design sweep's network: Pareto front of time, energy and area, energy by part, and the front's table."""
    from archsim.report.html_page import table as html_table
    from archsim.report.pareto import energy_parts_figure, front_table, pareto_figure

    table = front_table(results, network)
    return [(f"{network}: time vs energy vs area (Pareto front)", pareto_figure(results, network), command),
            (f"{network}: energy per iteration of the Pareto-optimal designs", energy_parts_figure(results, network),
             command),
            (f"{network}: the {len(table)} Pareto-optimal designs", html_table(table, lambda x: f"{x:.4g}"), command)]


def _whole_batches(microbatches: int, batch: int) -> str:
    """What a plain sweep's Gantt runs, said in its title: ``microbatches`` micro-batches of the row's whole batch
    each (a steady state), ``microbatches`` times the samples of the row's iteration, which "8 micro-batches
    (…, batch 8)" alone read as batch 8 split in 8."""
    return f" each, {microbatches * batch:,} samples: {microbatches}× the sweep row's" if microbatches > 1 else ""


def gantt_section(network, array, first, processors: int, engine: str = "analytic", memory: str = "",
                   alpha: float = LAYERPIPE_ALPHA, microbatches: int | None = None, *, median: bool = False,
                   axes: tuple[str, ...] = SPLIT_AXES, borrow: str = BORROW_PAPER) -> Section:
    """LayerPipe's schedule of one configuration, δ-first policy, in the simulator: ``microbatches`` of it, by
    default a design row's own M micro-batches of batch / M (its iteration) where it splits its batch, else 8 of
    the whole batch (a plain sweep's row: a pipeline's steady state, which one micro-batch would not show).
    ``median``: ``processors`` is the median of the sweep's counts, which the title says. The title names
    the stages the plan uses too: LayerPipe's plan may use fewer stages than it is given processors, and a
    chart of 7 stages titled only "8 processors" reads as one missing. The title is the section's heading (in
    the figure too it wrapped onto a second line above the legend); the figure's own is short (:func:`figure_title`). ``borrow``: LayerPipe's --borrow,
    said in the title and command only where it is not the printed walk's."""
    from archsim.lowering import check_mode
    from archsim.partition import build_profile
    from archsim.planners import partition
    from archsim.policies.pipeline import simulate_partition
    from archsim.report.gantt import gantt_figure
    from archsim.report.style import table_number
    from archsim.sim.timeline import Timeline

    split = row_microbatches(first)
    microbatches = microbatches or (split if split > 1 else 8)
    profile = build_profile(network, array, _micro_batch(first), check_mode(str(first["mode"])), engine)
    plan = partition(profile, processors, "layerpipe", alpha=alpha, axes=axes, borrow=borrow)
    timeline = simulate_partition(plan, profile, microbatches, "layerpipe").timeline
    assert isinstance(timeline, Timeline)
    which = " (the sweep's median)" if median else ""
    gainful = borrow != BORROW_PAPER
    title = (f"{network.name}: LayerPipe{f' (borrow {borrow})' if gainful else ''} schedule on {processors} {'processor' if processors == 1 else 'processors'}{which}, {len(plan.stages)} "
             f"{'stage' if len(plan.stages) == 1 else 'stages'} used, {microbatches} micro-batches "
             f"({first.rows}x{first.cols} {first.dataflow}{_width(array)}, batch {_micro_batch(first)}"
             f"{f' each, the design splitting batch {first.batch} in {split}' if split > 1 else _whole_batches(microbatches, _micro_batch(first))}"
             f"); makespan "
             f"{table_number(timeline.makespan)} cycles")
    command = (f"archsim pipeline {shell_word(first.network)} --processors {processors} --method layerpipe {_array_flags(first)}"
               f" --dataflow {first.dataflow} --batch {_micro_batch(first)} --mode {first['mode']}"
               + (f" --only {first['only'].replace('+', ',')}" if first["only"] != "all" else "")
               + memory + (f" --alpha {alpha!r}" if alpha != LAYERPIPE_ALPHA else "")
               + (f" --split-axes {','.join(axes)}" if axes != SPLIT_AXES else "")
               + (f" --borrow {borrow}" if gainful else "")
               + f" --microbatches {microbatches} --gantt gantt.html")
    shows = f"LayerPipe on {processors} {'processor' if processors == 1 else 'processors'}"
    return title, gantt_figure(timeline.to_frame(), figure_title(network.name, shows, first, array),
                               borrowed=plan.borrowed_ops), command


__all__ = ["gantt_section", "network_sections", "spec_methods", "spec_networks"]
