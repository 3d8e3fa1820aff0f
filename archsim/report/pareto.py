"""Pareto fronts of design sweeps (time, energy, area — all minimized) and their report figures; a
device sweep's time/energy figure (its front marked by :mod:`archsim.sweep.device_points`)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from archsim.pareto_rule import pareto_mask
from archsim.validate import is_nan

OBJECTIVES = ("iteration_seconds", "energy_pj", "area_mm2")


def time_column(results: pd.DataFrame) -> str:
    """Seconds when every row has a clock, else cycles."""
    seconds = results.get("iteration_seconds")
    return "iteration_seconds" if seconds is not None and seconds.notna().all() else "iteration_cycles"


WORKLOAD = ("network", "batch")


TIME_UNITS = {"iteration_seconds": "s", "iteration_cycles": "cycles"}
# an energy axis's ticks in pJ as powers of ten (10⁹), not Plotly's SI prefixes: "4G" pJ would read as a unit
PJ_TICKS = "power"


def with_front(results: pd.DataFrame) -> pd.DataFrame:
    """``results`` plus ``pareto`` (bool): non-dominated in (time, energy, area) within each workload
    (network and batch), equal designs all kept (:mod:`archsim.pareto_rule`, ``ties="all"``). A batch is work, not a design choice: batch 8's iteration does 8× batch 1's work,
    so one front over both batches would keep only the smallest batch's designs."""
    out = results.copy()
    objectives = [time_column(results), "energy_pj", "area_mm2"]
    out["pareto"] = False
    for _, part in out.groupby(list(WORKLOAD)):
        out.loc[part.index, "pareto"] = pareto_mask(part[objectives].to_numpy(), ties="all")
    return out


def width(frame: pd.DataFrame, bytes_unit: str = " B") -> pd.Series:
    """Each row's element width as its spec named it: the dtype (a ``dtypes`` sweep's ``dtype`` column),
    else the bytes per element."""
    if "dtype" in frame.columns:
        return frame["dtype"].astype(str)
    return frame["element_bytes"].astype(str) + bytes_unit


def _dram(frame: pd.DataFrame, words: str) -> pd.Series:
    """Each row's DRAM words/cycle in ``words`` ("" where the row has none: the analytic engine reads no
    bandwidth, so a label names none)."""
    return frame["bandwidth_words_per_cycle"].map(lambda bw: "" if is_nan(bw) else words.format(f"{bw:g}"))


def point_label(frame: pd.DataFrame) -> pd.Series:
    """Each design point's hover label: batch, array, SRAM, DRAM rate (where the engine read one) and clock."""
    return ("batch " + frame["batch"].astype(str) + ", "
            + frame["rows"].astype(str) + "x" + frame["cols"].astype(str) + " " + frame["dataflow"].astype(str)
            + ", SRAM " + frame["sram_kb"].astype(str) + " KiB"
            + _dram(frame, ", DRAM {} words/cycle")
            + ", " + frame["clock_ghz"].map(lambda c: "no clock" if is_nan(c) else f"{c:g} GHz")
            + ", " + width(frame) + ", M=" + frame["microbatches"].astype(str)
            + ", P=" + frame["processors"].astype(str) + " " + frame["method"].astype(str)
            + ", " + frame["energy_table"].astype(str))


def pareto_figure(results: pd.DataFrame, network: str) -> go.Figure:
    """Time vs energy per iteration (pJ, the unit of the front's table beside it, ``energy_pj``: until 2026-12-05 mJ,
    4.153 beside the table's 4.153e+09), colour = area on one scale over every design; the non-dominated designs
    ringed and joined."""
    data = with_front(results[results.network == network])
    time = time_column(data)
    scale = {"cmin": float(data["area_mm2"].min()), "cmax": float(data["area_mm2"].max())}  # one for both traces
    fig = go.Figure()
    for on_front, part in data.groupby("pareto"):
        fig.add_trace(go.Scatter(
            x=part[time], y=part["energy_pj"], mode="markers", text=point_label(part),
            name="Pareto-optimal (time, energy, area)" if on_front else "dominated",
            marker={"color": part["area_mm2"], "colorscale": "Viridis", **scale, "size": 11 if on_front else 6,
                    "symbol": "diamond" if on_front else "circle", "line": {"width": 2 if on_front else 0,
                                                                            "color": "#d62728"},
                    "showscale": bool(on_front), "colorbar": {"title": "area mm²"}},
            hovertemplate=("%{text}<br>time %{x:.4g} " + TIME_UNITS[time]
                           + "<br>energy %{y:.4g} pJ<br>area %{marker.color:.3g} mm²")))
    fig.update_layout(title=f"{network}: time vs energy per iteration (colour: area; ◆ ringed: not dominated in "
                            "time, energy and area by a design at its batch)", xaxis_title=time.replace("_", " "),
                      yaxis_title="energy per iteration (pJ)", xaxis_type="log", yaxis_type="log",
                      yaxis_exponentformat=PJ_TICKS)
    return fig


def device_pareto_figure(results: pd.DataFrame) -> go.Figure:
    """A device sweep's seconds vs joules per iteration (the unit of the page's table, ``energy_j``: a small model's
    0.028 kJ read as 28 J beside it), one marker per design, the front (its
    ``pareto_optimal`` column) ringed and each of its points named beside it (arrays, HBM GB/s, chips and
    whatever else was swept; every point's full design on hover); a point that does not fit memory is drawn
    hollow and is never on the front."""
    fig = go.Figure()
    sram = (", SRAM " + results["sram_kib_per_array"].map(lambda k: f"{k:g}") + " KiB per array"
            if "sram_kib_per_array" in results.columns else "")  # a sweep of it names it
    clock = (", " + results["clock_ghz"].map(lambda c: f"{c:g}") + " GHz" if "clock_ghz" in results.columns else "")
    layout = (" (TP " + results["tp"].astype(str) + " × PP " + results["pp"].astype(str) + " × DP "
              + results["dp"].astype(str) + ")" if "tp" in results.columns else "")  # so do the clock and TP, PP
    label = (results["arrays"].astype(str) + " arrays" + sram + clock + ", HBM "
             + results["hbm_gbps"].map(lambda g: f"{g:g}") + " GB/s, " + results["gpus"].astype(str) + " chips"
             + layout + ", peak " + results["peak_memory_gib"].map(lambda g: f"{g:.1f}") + " GiB")
    short = (results["arrays"].astype(str) + ("" if isinstance(sram, str) else sram.str.replace(" per array", ""))
             + clock + ", " + results["hbm_gbps"].map(lambda g: f"{g:g}") + " GB/s, " + results["gpus"].astype(str)
             + " chips" + layout)  # written beside each front point: a page read as a picture names its designs
    front, fits = results["pareto_optimal"].astype(bool), results["fits_memory"].astype(bool)
    groups = (("Pareto-optimal (time, energy)", front, "diamond", 12), ("dominated", ~front & fits, "circle", 8),
              ("does not fit memory", ~fits, "circle-open", 8))
    for name, keep, symbol, size in groups:
        part = results[keep]
        fig.add_trace(go.Scatter(x=part["iteration_seconds"], y=part["energy_j"], mode="markers",
                                 text=label[keep], name=name, marker={"symbol": symbol, "size": size},
                                 hovertemplate="%{text}<br>time %{x:.4g} s<br>energy %{y:.4g} J<extra></extra>"))
    for seconds, joules, text in zip(results.loc[front, "iteration_seconds"], results.loc[front, "energy_j"],
                                     short[front], strict=True):  # above the markers, on a pale ground
        fig.add_annotation(x=seconds, y=joules, text=text, showarrow=False, xanchor="left", xshift=8,
                           font={"size": 10}, bgcolor="rgba(255,255,255,0.75)")
    line = results[front].sort_values("iteration_seconds")
    fig.add_trace(go.Scatter(x=line["iteration_seconds"], y=line["energy_j"], mode="lines",
                             name="front", hoverinfo="skip", line={"dash": "dot"}))
    first = results.iloc[0]
    fig.update_layout(title=f"{first['model']} on {first['gpu']}: time vs energy per iteration "
                            "(◆: not beaten in both by a design that fits memory)",
                      xaxis_title="iteration time (s)", yaxis_title="energy per iteration (J)",
                      showlegend=True)  # Plotly's default hides it with one group drawn: hollow would go unnamed
    return fig


def energy_parts_figure(results: pd.DataFrame, network: str) -> go.Figure:
    """Energy per iteration by part, one bar for each design on the front. Designs that differ only in
    processors, method or clock are bars of their own: with leakage their energies differ. pJ, as the front's
    table and :func:`pareto_figure` (until 2026-12-05 mJ)."""
    data = with_front(results[results.network == network])
    front = data[data["pareto"]].sort_values(time_column(data))
    clock = front["clock_ghz"].map(lambda c: "" if is_nan(c) else f" {c:g}GHz")
    labels = ("b" + front["batch"].astype(str) + " " + front["rows"].astype(str) + "x" + front["cols"].astype(str)
              + " " + front["dataflow"].astype(str) + " S" + front["sram_kb"].astype(str) + _dram(front, " bw{}")
              + clock + " " + width(front, "B") + " M" + front["microbatches"].astype(str)
              + " P" + front["processors"].astype(str) + " " + front["method"].astype(str)
              + " " + front["energy_table"].astype(str))
    fig = go.Figure()
    for part, color in (("mac_pj", "#4C78A8"), ("register_pj", "#72B7B2"), ("sram_pj", "#F58518"),
                        ("dram_pj", "#E45756"), ("vector_pj", "#54A24B"), ("leakage_pj", "#B279A2")):
        fig.add_trace(go.Bar(x=labels, y=front[part], name=part[:-3], marker_color=color))
    fig.update_layout(barmode="stack", title=f"{network}: energy per iteration by part, Pareto-optimal designs "
                                             "(fastest first)", yaxis_title="pJ",
                      yaxis_exponentformat=PJ_TICKS)
    return fig


def front_table(results: pd.DataFrame, network: str) -> pd.DataFrame:
    data = with_front(results[results.network == network])
    columns = ["batch", "rows", "cols", "dataflow", "sram_kb", "bandwidth_words_per_cycle", "clock_ghz", "element_bytes",
               *(["dtype"] if "dtype" in data.columns else []), "microbatches", "processors", "method", "energy_table",
               time_column(data), "energy_pj", "area_mm2"]
    if data["bandwidth_words_per_cycle"].isna().all():  # the analytic engine's rows: no DRAM figure to show
        columns.remove("bandwidth_words_per_cycle")
    return data[data["pareto"]][columns].sort_values(columns[-3]).reset_index(drop=True)
