"""The ``archsim search`` Pareto page: iteration time against memory per GPU (``--objective time``) or
against the objective (cost or energy per iteration), the front's configurations joined, the ranked
rows beside them, colour = GPUs used; built by the one page builder (:mod:`archsim.report.html_page`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from archsim.report.html_page import Figures, esc, section, table, write_document
from archsim.report.style import table_number

AXIS = {"time": ("peak_memory_gib", "memory per GPU (GiB)"), "cost": ("cost_usd", "cost per iteration (USD)"),
        "energy": ("energy_j", "energy per iteration (J, {basis})")}
HOVER_UNIT = {"time": "GiB per GPU", "cost": "USD", "energy": "J"}  # a point's y value in its hover, as the axis says
BOARD_POWER = "GPUs at board power"  # how energy_j is found on catalog GPUs and tile devices
COLUMNS = ["gpus", "tp", "cp", "cp_comm", "pp", "dp", "micro_batch", "recompute", "schedule", "interleave", "sequence_parallel",
           "stage_layers", "iteration_seconds", "peak_memory_gib", "cost_usd", "energy_j", "uneven_gain", "mfu",
           "tflops_per_gpu", "hardware_tflops_per_gpu", "tokens_per_second"]
# The tables' units (their headers are the rows' JSON keys, so a column reads as the key it is in JSON and CSV).
UNITS = ("iteration_seconds: s; peak_memory_gib: GiB per GPU, the fullest; cost_usd: USD per iteration; energy_j: J "
         "per iteration; uneven_gain, mfu: fractions; tflops_per_gpu: model TFLOP/s per GPU (no recompute); "
         "hardware_tflops_per_gpu: TFLOP/s per GPU the GPUs run, recompute counted (Narayanan et al. 2021); "
         "tokens_per_second: tokens/s, the whole cluster's")
RATES = ("gpus", "tflops_per_gpu", "hardware_tflops_per_gpu", "tokens_per_second")  # a point's hover, in this order


def _label(row: dict) -> str:
    chunks = f" v{row['interleave']}" if row["interleave"] > 1 else ""
    split = f" [{row['stage_layers']}]" if row["stage_layers"] else ""
    cp = f" CP{row['cp']} {row['cp_comm']}" if row.get("cp", 1) > 1 else ""
    cp += f" {row['cp_hierarchy'].replace(' ', '×')}" if row.get("cp_hierarchy") else ""
    cp += f" EP{row['ep']}" if row.get("ep", 1) > 1 else ""
    cp += f" ETP{row['etp']}" if row.get("etp", row["tp"]) != row["tp"] else ""
    return (f"TP{row['tp']}{cp} PP{row['pp']} DP{row['dp']} mb{row['micro_batch']} {row['recompute']} "
            f"{row['schedule']}{chunks}{' sp' if row['sequence_parallel'] else ''}{split}")


def _axis(objective: str, energy_basis: str) -> tuple[str, str]:
    """The objective's column and axis title; ``energy_basis``: how ``energy_j`` was found (board power × time,
    or the energy model's joules on an array device), so the axis does not name board power it did not use."""
    column, title = AXIS[objective]
    return column, title.format(basis=energy_basis)


def front_figure(front: Sequence[dict], rows: Sequence[dict], objective: str, energy_basis: str = BOARD_POWER) -> go.Figure:
    """Time (x) against the objective's second axis (y); the front as a line, the ranked rows as points, each
    point's hover with its GPUs, model and hardware TFLOP/s per GPU and tokens/s (:data:`RATES`). Colour is GPUs
    on one scale over both traces, the bar's ticks the whole GPU counts the rows run."""
    column, title = _axis(objective, energy_basis)
    counts = sorted({r["gpus"] for r in [*front, *rows]})  # one colour scale for both traces (TP × CP × PP × DP)
    scale = {"cmin": counts[0], "cmax": counts[-1]} if counts else {}
    fig = go.Figure()
    for name, part, mode in (("Pareto front", front, "lines+markers"), ("ranked rows", rows, "markers")):
        if not part:
            continue
        fig.add_trace(go.Scatter(
            x=[r["iteration_seconds"] for r in part], y=[r[column] for r in part], mode=mode, name=name,
            text=[_label(r) for r in part], customdata=[[r[k] for k in RATES] for r in part],
            marker={"size": 9 if mode == "markers" else 7, "symbol": "circle-open" if mode == "markers" else "circle",
                    "color": [r["gpus"] for r in part], "colorscale": "Viridis", **scale,
                    "showscale": mode != "markers", "colorbar": {"title": "GPUs", "tickvals": counts}},
            hovertemplate=f"%{{text}}<br>%{{x:.4g}} s, %{{y:.4g}} {HOVER_UNIT[objective]}<br>"
                          "%{customdata[0]} GPUs: %{customdata[1]:.4g} model, "
                          "%{customdata[2]:.4g} hardware TFLOP/s per GPU (recompute counted)<br>"
                          "%{customdata[3]:.4g} tokens/s<extra></extra>"))
    fig.update_layout(xaxis_title="iteration (s)", yaxis_title=title, height=520,
                      legend={"orientation": "h", "y": -0.2})
    return fig


def _columns(rows: Sequence[dict]) -> list[str]:
    """:data:`COLUMNS`, with a mixture of experts' ``ep`` (and ``etp``, where a search tried ETPs) after CP's where
    the rows carry them (a dense model's do not), so two rows that differ in EP or ETP alone read apart."""
    experts = [name for name in ("ep", "etp") if any(name in r for r in rows)]
    at = COLUMNS.index("cp_comm") + 1
    return [*COLUMNS[:at], *experts, *COLUMNS[at:]]


def write_front_page(path: str | Path, title: str, front: Sequence[dict], rows: Sequence[dict], objective: str,
                     energy_basis: str = BOARD_POWER) -> Path:
    """The page: the figure, then the front's and the ranked rows' tables, each with its units (:data:`UNITS`)."""
    figures = Figures()
    units = f'<p class="caption">Units: {esc(UNITS)}</p>'
    columns = _columns(rows)
    frame = lambda part: pd.DataFrame([{k: r.get(k) for k in columns} for r in part], columns=columns)
    parts = [section("Time against " + _axis(objective, energy_basis)[1],
                     figures(front_figure(front, rows, objective, energy_basis))),
             section("Pareto front", table(frame(front), float_format=table_number), units),  # 71,552, not 7.155e+04,
             section("Ranked configurations", table(frame(rows), float_format=table_number), units)]  # as every page
    return write_document(path, title, parts)


__all__ = ["BOARD_POWER", "RATES", "UNITS", "front_figure", "write_front_page"]
