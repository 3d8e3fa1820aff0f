"""The sweep report: one self-contained HTML file of plotly figures and tables.

Every figure carries the command that regenerates it and the mode (paper/exact) that produced it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TypeVar

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from archsim.console import shell_word
from archsim.output_files import write_output
from archsim.report.headline import headline
from archsim.report.html_page import TABLE_STYLE, Figures, document, esc, section
from archsim.report.html_page import table as html_table
from archsim.report.paper_tables import (
    LAYERPIPE_TABLE_IV,
    LAYERPIPE_TABLE_IV_ARRAYS,
    LAYERPIPE_TABLE_IV_BATCHES,
    LAYERPIPE_TABLE_IV_IMPROVEMENT_PCT,
    improvement_pct,
)
from archsim.report.style import DESIGN_AXIS_WORDS, KIND_COLORS, KIND_LABELS, METHOD_COLORS, table_number
from archsim.report.sweep_order import array_key, method_order, network_order
from archsim.report.table_iv_notes import CYCLE_NOTE, TABLE_IV_NOTES, UPTO_NOTE, layerpipe_note

_Style = TypeVar("_Style")  # a line's dash or a box's fill
# Axis titles with their units: speedup is single-processor cycles / iteration cycles.
SPEEDUP_AXIS = "speedup (× one processor)"
# Every speedup axis starts at 0 (plotly's "tozero"), whatever the data's least value: speedup is a ratio, so on a
# zero-based axis a point twice as high is twice the speedup, as the headline's ratios say (from the data's least
# value, 2.5× over 1.5× would read as several times over).
SPEEDUP_RANGE = "tozero"
AXIS_TITLES = {"array": "array (PE rows × columns)", "batch": "mini-batch (samples)"}
LAYERPIPE_TABLE_NETWORKS = ("vgg16",)  # the shipped networks LayerPipe's Table IV reports
# Grouped markers (speedup_figure): the methods' points at one processor count span 1 − SCATTER_GAP of the gap
# between counts, so their error bars sit apart without reading as another count.
SCATTER_GAP = 0.7


def is_table_iv_setting(data: pd.DataFrame, network: str, results: pd.DataFrame | None = None,
                        engine: str | None = None) -> bool:
    """Whether these summary rows are Table IV's experiment: VGG16's conv layers in the paper's cost model and,
    given the sweep's ``results``, means over Table IV's grid of weight-stationary arrays and batches and nothing
    else (one array's speedups are another experiment than the paper's means), costed by the analytic engine
    (``engine``; None: not stated): the paper's processors exchange data "without any external memory", so its
    costs have no memory stalls, which the cycle engine adds. Only beside those does the report print the paper's
    numbers as the reference."""
    if not (network in LAYERPIPE_TABLE_NETWORKS and not data.empty and engine in (None, "analytic")
            and set(data["only"]) == {"conv"} and set(data["mode"]) == {"paper"}):
        return False
    if results is None:
        return True
    rows = results[results.network == network]
    return (set(averaged_axes(rows)) == {"arrays", "batches"}
            and set(zip(rows["rows"].astype(int), rows["cols"].astype(int), strict=True)) == LAYERPIPE_TABLE_IV_ARRAYS
            and set(rows["batch"].astype(int)) == LAYERPIPE_TABLE_IV_BATCHES
            and set(rows.get("dataflow", pd.Series(["ws"]))) == {"ws"})


# What the summary (archsim.sweep.summary) keys on beside network, processors and method: a line of its own each.
LINE_SETTINGS = ("mode", "only")
LINE_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
BOX_FILLS = (0.5, 0.1, 0.85, 0.3, 0.7, 0.2)  # a box's fill opacity per setting, as LINE_DASHES a line's dash
# The axes a summary's mean speedup averages over, in the words a title names them ("array": a shape and its
# .cfg file, :func:`~archsim.report.sweep_order.array_key`).
AVERAGED_AXES = {"array": "arrays", "batch": "batches", "dataflow": "dataflows", **DESIGN_AXIS_WORDS}


def averaged_axes(results: pd.DataFrame) -> list[str]:
    """The axes (:data:`AVERAGED_AXES`' words) that take several values within one mean of the summary, that is
    within one (only, mode, processors, method) of these rows; an axis a sweep holds fixed is not averaged."""
    if results.empty:
        return []
    frame = results.assign(array=array_key(results))
    groups = frame.groupby(["only", "mode", "processors", "method"], dropna=False)
    return [word for column, word in AVERAGED_AXES.items()
            if column in frame.columns and int(groups[column].nunique(dropna=False).max()) > 1]


def averaged_over(results: pd.DataFrame | None) -> str:
    """What a summary's mean speedup averages over (:func:`averaged_axes`, "arrays and batches" where the rows
    are not given), as a title says it; "" where each mean is of one row."""
    words = ["arrays", "batches"] if results is None else averaged_axes(results)
    return " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)


def several_settings(data: pd.DataFrame) -> list[str]:
    """The :data:`LINE_SETTINGS` that take several values in these rows: each value gets its own line or box."""
    return [key for key in LINE_SETTINGS if key in data.columns and data[key].nunique() > 1]


def setting_styles(data: pd.DataFrame, styles: Sequence[_Style]) -> dict[tuple, _Style]:
    """One of ``styles`` (dashes, fills) per (mode, only) of these rows, the same setting the same style."""
    return {setting: styles[i % len(styles)]
            for i, setting in enumerate(sorted(set(zip(data["mode"], data["only"], strict=True))))}


def line_name(method: str, setting: dict[str, str], several: list[str]) -> str:
    """A line's legend entry: the method, plus the mode and layer selection where the network's rows have several."""
    words = {"mode": f"{setting['mode']} mode",
             "only": "all layers" if setting["only"] == "all" else f"{setting['only']} layers"}
    return ", ".join([method, *(words[key] for key in several)])


def speedup_figure(summary: pd.DataFrame, network: str, results: pd.DataFrame | None = None,
                   methods: Sequence[str] = (), engine: str | None = None) -> go.Figure:
    """Mean speedup per processor count, one line per method and (where there are several) mode and layer
    selection; ``results``: the sweep's rows the summary averages, whose axes the title names
    (:func:`averaged_over`; None: arrays and batches); ``methods``: their order (:func:`method_order`), in the
    legend and side by side at a processor count."""
    data = summary[summary.network == network]
    several = several_settings(data)
    dashes = setting_styles(data, LINE_DASHES)
    rank = {method: i for i, method in enumerate(method_order(data, methods))}
    fig = go.Figure()
    for (method, mode, only), part in sorted(data.groupby(["method", *LINE_SETTINGS]),
                                             key=lambda group: rank[str(group[0][0])]):  # stable: settings sorted
        fig.add_trace(go.Scatter(
            x=part.processors, y=part.speedup, mode="lines+markers",
            name=(name := line_name(str(method), {"mode": str(mode), "only": str(only)}, several)), offsetgroup=name,
            line={"color": METHOD_COLORS.get(str(method)), "dash": dashes[(mode, only)] if several else None},
            error_y={"type": "data", "symmetric": False, "array": part.speedup_max - part.speedup,
                     "arrayminus": part.speedup - part.speedup_min}))
    if is_table_iv_setting(data, network, None if results is None else results[results.network == network], engine):
        procs = sorted(LAYERPIPE_TABLE_IV)
        for idx, method in enumerate(("layerpipe", "pipedream")):  # beside archsim's line of the same method
            fig.add_trace(go.Scatter(x=procs, y=[LAYERPIPE_TABLE_IV[p][idx] for p in procs], mode="lines",
                                     name=f"{method} (paper)", offsetgroup=method,
                                     line={"dash": "dot", "color": METHOD_COLORS[method]}))
    rows = None if results is None else results[results.network == network]
    over = averaged_over(rows)
    what = f"mean over {over}; bars: min–max" if over else "one configuration per point"
    # each method's points side by side at a processor count (its error bars apart), the values unchanged
    fig.update_layout(title=f"{network}: speedup over one processor ({what})",
                      xaxis_title="processors (count)", yaxis_title=SPEEDUP_AXIS, yaxis_rangemode=SPEEDUP_RANGE,
                      scattermode="group", scattergap=SCATTER_GAP)
    # ticks at the processor counts run, never between them (2.5 processors)
    fig.update_xaxes(tickmode="array", tickvals=sorted(int(p) for p in data.processors.unique()))
    return fig


def array_labels(data: pd.DataFrame) -> tuple[pd.Series, str]:
    """One label per array the sweep ran, and the axis title that says what the labels hold: the shape, plus
    the dataflow where the rows have several and the .cfg file's name where one was read, so that two
    arrays of one shape (a ws "64x16" and a 64×16 os ``.cfg``) are never one box."""
    labels = data["rows"].astype(str) + "x" + data["cols"].astype(str)
    title = "array (PE rows × columns"
    if "dataflow" in data.columns and data["dataflow"].nunique() > 1:
        labels = labels + " " + data["dataflow"].astype(str)
        title += ", dataflow"
    if "array_path" in data.columns and data["array_path"].notna().any():
        names = data["array_path"].map(lambda p: "" if pd.isna(p) or not str(p) else f" ({Path(str(p)).name})")
        labels = labels + names
        title += "; .cfg file"
    return labels, title + ")"


def distribution_figure(results: pd.DataFrame, network: str, by: str, methods: Sequence[str] = ()) -> go.Figure:
    """Speedup boxes by array or by batch (``by``), one per method and (where the rows have several) mode and
    layer selection, named, ordered (``methods``: :func:`method_order`) and grouped as :func:`speedup_figure`'s
    lines; each box pools the processor counts."""
    data = results[results.network == network].copy()
    data["array"], array_title = array_labels(data)
    column = "array" if by == "array" else "batch"
    several = several_settings(data)
    data["series"] = [line_name(str(row.method), {"mode": str(row.mode), "only": str(row.only)}, several)
                      for row in data.itertuples()] if several else data["method"]
    colors = {name: METHOD_COLORS[method] for name, method in zip(data["series"], data["method"], strict=True)
              if method in METHOD_COLORS}
    rank = {method: i for i, method in enumerate(method_order(data, methods))}
    series = sorted(set(zip(data["method"].astype(str), data["series"], strict=True)),
                    key=lambda pair: (rank[pair[0]], pair[1]))
    fig = px.box(data, x=column, y="speedup", color="series", color_discrete_map=colors, labels={"series": "method"},
                 category_orders={"series": [name for _, name in series]},
                 title=f"{network}: speedup by {'array size' if by == 'array' else 'batch size'} (all processor counts)")
    if several:  # a method's boxes share its colour; each mode/only its fill
        fills = setting_styles(data, BOX_FILLS)
        setting = {name: (mode, only) for name, mode, only in zip(data["series"], data["mode"], data["only"], strict=True)}
        fig.for_each_trace(lambda trace: trace.update(fillcolor=_faded(
            trace.marker.color, fills[setting[trace.name]])))
    fig.update_xaxes(type="category", title_text=array_title if column == "array" else AXIS_TITLES[column])
    fig.update_yaxes(title_text=SPEEDUP_AXIS, rangemode=SPEEDUP_RANGE)
    return fig


def _faded(color: str | None, opacity: float) -> str | None:
    """``#RRGGBB`` at ``opacity`` as ``rgba(…)`` (None: plotly's own colour, kept)."""
    if not color or not color.startswith("#"):
        return None
    red, green, blue = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{opacity})"


def layerpipe_series(summary: pd.DataFrame, methods: Sequence[str] = ()) -> list[str]:
    """The LayerPipe series a summary holds, in :func:`method_order`'s order: ``layerpipe`` (the printed walk) and
    each ``layerpipe (<borrow>)`` a sweep of LayerPipe's borrow values draws as a method of its own
    (archsim.sweep.report's ``borrow_label``), each compared with PipeDream in a table of its own."""
    return [m for m in method_order(summary, methods) if m == "layerpipe" or m.startswith("layerpipe (")]


def series_name(series: str) -> str:
    """A LayerPipe series' name in a table's columns and title: ``LayerPipe``, ``LayerPipe (gainful)``."""
    return "LayerPipe" + series.removeprefix("layerpipe")


def table_iv(summary: pd.DataFrame, network: str, results: pd.DataFrame | None = None,
             engine: str | None = None, series: str = "layerpipe") -> pd.DataFrame:
    """LayerPipe against PipeDream per processor count, with the paper's columns where the rows are Table IV's
    experiment (:func:`is_table_iv_setting`; ``results``: the sweep's rows, None: judged on the summary alone).
    ``series``: which LayerPipe series (:func:`layerpipe_series`), named in its columns; only the printed walk's,
    ``layerpipe``, is Table IV's algorithm and takes the paper's columns."""
    data = summary[summary.network == network]
    lp = data[data.method == series].set_index("processors")
    pd_ = data[data.method == "pipedream"].set_index("processors")
    rows = []
    paper_setting = series == "layerpipe" and is_table_iv_setting(data, network, results, engine)
    name = series_name(series)
    for p in sorted(lp.index) if not pd_.empty else []:
        taken = [q for q in pd_.index if q <= p]  # PipeDream skipped above its layer groups: its best below
        if not taken:
            continue
        ran = p in pd_.index
        pd_at = pd_.speedup[p] if ran else float("nan")
        pd_upto = pd_.speedup_upto[max(taken)]
        row = {"processors": p, name: lp.speedup[p], f"{name} (≤P)": lp.speedup_upto[p],
               "PipeDream": pd_at, "PipeDream (≤P)": pd_upto,
               "improvement %": improvement_pct(lp.speedup[p], pd_at) if ran else float("nan"),
               "improvement (≤P) %": improvement_pct(lp.speedup_upto[p], pd_upto),
               "comm overhead KiB per iteration": lp.additional_comm_bytes[p] / 1024}
        if paper_setting and p in LAYERPIPE_TABLE_IV:
            paper = LAYERPIPE_TABLE_IV[p]
            row.update({"paper LayerPipe": paper[0], "paper PipeDream": paper[1],
                        "paper improvement %": LAYERPIPE_TABLE_IV_IMPROVEMENT_PCT[p], "paper comm KiB": paper[2]})
        rows.append(row)
    return pd.DataFrame(rows)


def layer_breakdown_figure(costs: pd.DataFrame, title: str = "") -> go.Figure:
    """Stacked F/G/D cycles per layer on a linear axis (stacked bars on a log axis misstate the parts),
    with a linear/log toggle for when one layer dwarfs the rest (e.g. conv1's paper-mode δ); ``title``: none
    where a page's heading says it."""
    fig = go.Figure()
    for kind in ("F", "G", "D"):
        fig.add_trace(go.Bar(x=costs.layer, y=costs[f"{kind}_cycles"], name=KIND_LABELS[kind],
                             marker_color=KIND_COLORS[kind]))
    log_first = False
    buttons = [{"label": label, "method": "relayout", "args": [{"yaxis.type": kind}]}
               for label, kind in (("linear", "linear"), ("log", "log"))]
    fig.update_layout(barmode="stack", title=title, xaxis_title="layer", yaxis_title="cycles",
                      yaxis_type="log" if log_first else "linear",
                      updatemenus=[{"type": "buttons", "direction": "right", "buttons": buttons, "x": 1, "xanchor": "right",
                                    "y": 1.15, "active": 1 if log_first else 0}])
    return fig


def _section(title: str, body: str, command: str, mode: str) -> str:
    return section(title, body, f"<p class='cmd'>Mode: <b>{esc(mode)}</b>. Regenerate: <code>{esc(command)}</code></p>")


MODE_WORDS = {"paper": "paper mode: LayerPipe's lowering, δ of every layer costed as a dense convolution at full "
                       "input resolution",
              "exact": "exact mode: the lowering training does, stride-aware δ and none for the first layer"}
# What each partitioner of a sweep is, said on the page: the legends name the methods alone, and "gpipe" reads as GPipe's
# own partitioner, which balances the stages' costs, where the sweep's splits the layers by count
METHOD_WORDS = {"layerpipe": "LayerPipe's Algorithm 1 (balanced stages, δ borrowed and split)",
                "pipedream": "PipeDream's optimizer (the best contiguous split of whole layers)",
                "gpipe": "equal layer counts per processor, in order (LayerPipe's GPipe baseline; not balanced by "
                         "cost, as GPipe's own partitioner is)",
                "ooo": "the out-of-order backprop paper's ⌈L/P⌉ consecutive layers per processor",
                "layerpipe (gainful)": "the same with borrow gainful (a moved δ sent back home wherever that leaves the "
                                       "iteration no higher)"}
ENGINE_WORDS = {"analytic": "the analytic array engine (closed-form compute cycles, no memory stalls)",
                "cycle": "the cycle engine (SRAM and DRAM bandwidth stalls included)"}


def model_intro(results: pd.DataFrame, results_path: str, engine: str | None, order: Sequence[str] = (),
                methods: Sequence[str] = (), skipped: str | None = None, record: Mapping | None = None) -> str:
    """The page's first paragraph: what was swept and which model produced the numbers, with the docs to read;
    ``order``: the networks' (:func:`~archsim.report.sweep_order.network_order`), ``methods`` the methods' (:func:`~archsim.report.sweep_order.method_order`); ``skipped``:
    the line counting the points the sweep skipped (none: None)."""
    modes = sorted(results["mode"].unique())
    model = "; ".join(esc(MODE_WORDS.get(m, f"{m} mode")) for m in modes)
    if engine is not None:
        model += f"; {esc(ENGINE_WORDS.get(engine, f'the {engine} engine'))}"
    names, kinds = network_order(results, order), method_order(results, methods)
    networks, listed = ", ".join(esc(n) for n in names), ", ".join(esc(m) for m in kinds)
    # results.csv's rows, each method's run counted (the headline counts a network's configurations per method)
    over = f"over {len(names)} network{'s' * (len(names) != 1)} and {len(kinds)} method{'s' * (len(kinds) != 1)}"
    return (f"<p>{len(results)} configurations {over} from <code>{esc(results_path)}</code>: {networks}; {listed}. "
            f"Model: {model}. Cycles are array clock cycles; speedup is one processor's cycles over the pipeline's "
            f"iteration cycles.{method_words(kinds, results, record)} The modes and engines: docs/concepts.md (\"Lowering: paper and exact modes\", "
            "\"Sweeps and reports\"); the paper's numbers: docs/papers/layerpipe.md."
            + (f" {esc(skipped[0].upper() + skipped[1:])}." if skipped else "") + "</p>")


def method_words(methods: Sequence[str], results: pd.DataFrame | None = None, record: Mapping | None = None) -> str:
    """The sentence naming what each of the page's methods is (" Methods: gpipe: equal layer counts …"), empty where
    none has words (a method unknown here is left unsaid, never guessed); LayerPipe's with the settings its rows ran
    (α, the δ split axes: :func:`layerpipe_settings_words`), which change its numbers and were on the page only in a
    Gantt chart's command."""
    settings = layerpipe_settings_words(results, record) if results is not None else ""
    said = [f"{esc(m)}: {esc(METHOD_WORDS[m])}{esc(settings) if m.startswith('layerpipe') else ''}"
            for m in methods if m in METHOD_WORDS]
    return f" Methods: {'; '.join(said)}." if said else ""


def layerpipe_settings_words(results: pd.DataFrame, record: Mapping | None = None) -> str:
    """`` [α = 1.001, δ split along channels/reduction/rows]``: the values LayerPipe's rows ran with (several
    joined by "or"); where results.csv has no such column (a folder from before them), the folder's spec.json's
    ``record``, which its LayerPipe rows ran at, as the report's Gantt reads it; empty with neither, or no LayerPipe
    row."""
    rows = results[results["method"].astype(str).str.startswith("layerpipe")]
    record = record or {}
    alpha, axes = record.get("alpha"), record.get("split_axes")
    recorded = {"alpha": float(alpha) if isinstance(alpha, (int, float)) and not isinstance(alpha, bool) else None,
                "split_axes": "+".join(map(str, axes)) if isinstance(axes, list) and axes else None}
    parts = []
    for column, word in (("alpha", "α = "), ("split_axes", "δ split along ")):
        if column in rows.columns and rows[column].notna().any():
            cells = list(dict.fromkeys(rows[column].dropna()))
        elif column not in rows.columns and len(rows) and recorded[column] is not None:
            cells = [recorded[column]]
        else:
            continue
        values = [f"{v:g}" if isinstance(v, float) else str(v).replace("+", "/") for v in cells]
        parts.append(word + " or ".join(values))
    return f" [{', '.join(parts)}]" if parts else ""


Section = tuple[str, go.Figure | str, str]  # a section's title, its figure or markup, the command that redraws it


def build_report(results: pd.DataFrame, summary: pd.DataFrame, *, results_path: str, out: str | Path,
                 spec_command: str, extra_sections: Sequence[Section] = (), engine: str | None = None,
                 networks: Sequence[str] = (), network_sections: Mapping[str, Sequence[Section]] | None = None,
                 methods: Sequence[str] = (), skipped: str | None = None, record: Mapping | None = None) -> Path:
    """Assemble and atomically write the report HTML; returns its path. ``engine``: the sweep's array engine,
    which the page names and Table IV's columns need (None: not stated); ``skipped``: the line counting the points
    the sweep skipped; ``networks``: their order on the page (the spec's;
    :func:`~archsim.report.sweep_order.network_order`), ``methods`` the methods' (the spec's; :func:`~archsim.report.sweep_order.method_order`); ``network_sections``: per network, sections that follow its own (its per-layer
    costs, its Gantt); ``extra_sections`` close the page; ``record``: the folder's spec.json (LayerPipe's settings
    where results.csv predates their columns)."""
    parts: list[str] = []
    figure = Figures()

    modes = ", ".join(sorted(results["mode"].unique()))
    report_cmd = f"archsim report {shell_word(results_path)} --out {shell_word(out)}"
    order = network_order(results, networks)
    methods = method_order(results, methods)
    glance = headline(results, order, methods)
    if glance:
        parts.append(_section("At a glance: which schedule wins, by how much, where", glance, report_cmd, modes))
    for network in order:
        parts.append(_section(f"{network}: speedup vs processors", figure(speedup_figure(summary, network, results, methods, engine)),
                              f"{spec_command} && {report_cmd}", modes))
        for series in layerpipe_series(summary, methods):
            table = table_iv(summary, network, results, engine, series)
            if table.empty:
                continue
            printed = series == "layerpipe"  # the printed walk: Table IV's algorithm, the paper's columns beside it
            paper_setting = printed and is_table_iv_setting(summary[summary.network == network], network, results, engine)
            grid = printed and not paper_setting and is_table_iv_setting(summary[summary.network == network], network, results)
            skipped_note = ("<p>—: PipeDream did not run at that count (more processors than layer groups); its "
                            "(≤P) column is its best at the counts it took, as summary.csv's "
                            "improvement_upto_vs_pipedream_pct.</p>" if table["PipeDream"].isna().any() else "")
            notes = UPTO_NOTE + skipped_note + (TABLE_IV_NOTES.format(layerpipe=layerpipe_note(table)) if paper_setting else "")
            notes += CYCLE_NOTE if grid else ""
            paper = " (LayerPipe's Table IV)" if paper_setting else ""
            parts.append(_section(f"{network}: {series_name(series)} vs PipeDream{paper}",
                                  html_table(table, lambda x: table_number(x, 3), na_rep="—") + notes,
                                  report_cmd, modes))
        for by in ("array", "batch"):
            parts.append(_section(f"{network}: distribution over {by} size",
                                  figure(distribution_figure(results, network, by, methods)), report_cmd, modes))
        for title, content, command in (network_sections or {}).get(network, ()):
            parts.append(_section(title, figure(content) if isinstance(content, go.Figure) else content, command, modes))
    for title, content, command in extra_sections:
        body = figure(content) if isinstance(content, go.Figure) else content
        parts.append(_section(title, body, command, modes))
    style = ("body{font-family:sans-serif;max-width:1100px;margin:auto}section{margin:2em 0}" + TABLE_STYLE +
             "td,th{border-bottom:1px solid #ddd}.cmd{color:#555;font-size:90%}")
    intro = model_intro(results, results_path, engine, order, methods, skipped, record)
    return write_output(out, document("archsim report", parts, heading="archsim sweep report",
                                           intro_html=intro, style=style))
