"""The GPU-validation report: an HTML page (plotly) and a Markdown summary, both written atomically.

The HTML holds a log–log modeled-vs-measured scatter per op type, the statistics, the D ∥ G stream
effect and the assumptions; the Markdown holds the same tables for a results folder under git.
"""

from __future__ import annotations

import html
import math
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from archsim.output_files import write_output
from archsim.report.page import Section, page
from archsim.validation.gpu_compare import RHO_BAR, below_bar, outliers, tensor_core_subset
from archsim.validation.gpu_csv import KERNEL_OPS
from archsim.validation.gpu_study import GpuStudy

OP_NAMES = {"F": "forward (F)", "D": "input gradient (D, δ)", "G": "weight gradient (G)"}
NETWORK_COLORS = ("#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2")


def scatter_figure(joined: pd.DataFrame, op: str, seconds: bool = False) -> go.Figure:
    """Modeled vs measured time of every layer × batch of one op, log–log, with y = x and the one-scale fit;
    ``seconds``: the device model's ``predicted_seconds`` (in ms) instead of the arrays view's cycles."""
    data = joined[joined["op"] == op]
    if seconds:
        data = data[data["predicted_seconds"].notna()].assign(modeled_ms=lambda f: f["predicted_seconds"] * 1e3)
    fig = go.Figure()
    groups = list(data.groupby(["gpu", "network"]))
    for index, ((gpu, network), part) in enumerate(groups):
        label = network if data["gpu"].nunique() == 1 else f"{network} ({gpu})"
        shapes = part["tensor_core_shape"].astype(bool) if "tensor_core_shape" in part else pd.Series(True, part.index)
        fig.add_trace(go.Scatter(
            x=part["measured_ms"], y=part["modeled_ms"], mode="markers", name=label,
            marker={"color": NETWORK_COLORS[index % len(NETWORK_COLORS)], "size": 7,
                    "symbol": np.where(shapes, "circle", "x")},
            text=part["layer"] + " · batch " + part["batch"].astype(str),
            hovertemplate="%{text}<br>measured %{x:.4g} ms<br>modeled %{y:.4g} ms<extra></extra>"))
    if len(data):
        low = float(min(data["measured_ms"].min(), data["modeled_ms"].min()))
        high = float(max(data["measured_ms"].max(), data["modeled_ms"].max()))
        ratio = float(np.median(data["modeled_ms"] / data["measured_ms"]))
        fig.add_trace(go.Scatter(x=[low, high], y=[low, high], mode="lines", name="modeled = measured",
                                 line={"dash": "dash", "color": "#555"}))
        fig.add_trace(go.Scatter(x=[low, high], y=[low * ratio, high * ratio], mode="lines",
                                 name=f"modeled = {ratio:.3g} × measured (median)", line={"dash": "dot", "color": "#999"}))
    view = "the device model's seconds" if seconds else "the arrays view"
    fig.update_layout(title=f"{OP_NAMES.get(op, op)}: archsim ({view}) vs GPU, every conv/fc layer and batch",
                      xaxis_title="measured (ms)", yaxis_title="modeled (ms)", xaxis_type="log", yaxis_type="log")
    return fig


def streams_figure(streams: pd.DataFrame) -> go.Figure:
    """Speedup of D ∥ G on two streams over D then G on one, per layer × batch, against the serial time."""
    fig = go.Figure()
    for index, ((gpu, network), part) in enumerate(streams.groupby(["gpu", "network"])):
        color = NETWORK_COLORS[index % len(NETWORK_COLORS)]
        label = network if streams["gpu"].nunique() == 1 else f"{network} ({gpu})"
        text = part["layer"] + " · batch " + part["batch"].astype(str)
        fig.add_trace(go.Scatter(x=part["serial_ms"], y=part["speedup"], mode="markers", name=f"{label}: measured",
                                 marker={"color": color}, text=text,
                                 hovertemplate="%{text}<br>serial %{x:.4g} ms<br>speedup %{y:.3f}<extra></extra>"))
        fig.add_trace(go.Scatter(x=part["serial_ms"], y=part["modeled_speedup"], mode="markers",
                                 name=f"{label}: modeled", marker={"color": color, "symbol": "circle-open"}, text=text,
                                 hovertemplate="%{text}<br>serial %{x:.4g} ms<br>modeled %{y:.3f}<extra></extra>"))
    fig.add_hline(y=1.0, line_dash="dash", line_color="#555")
    fig.update_layout(title="D ∥ G on two CUDA streams: speedup over D then G on one stream",
                      xaxis_title="measured D + G back-to-back (ms)", yaxis_title="serial / concurrent",
                      xaxis_type="log")
    return fig


def _rounded(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for column in out.columns:
        if pd.api.types.is_float_dtype(out[column]):
            out[column] = out[column].map(lambda x: "" if isinstance(x, float) and math.isnan(x) else f"{x:.3g}")
    return out


def _caption(text: str, command: str) -> str:
    return f"{text}<br><b>Regenerate:</b> <code>{html.escape(command)}</code>"


STATS_NOTE = ("rho: Spearman rank correlation of modeled and measured time (the bar is ≥ 0.9 per op type); "
              "median_ratio: median of modeled / measured; median_abs_err: median |ratio − 1|; mape: mean |ratio − 1|; scaled_abs_err: "
              "median |ratio / median_ratio − 1|, the error one constant cannot absorb; *_mem: the same with the "
              "memory floor max(modeled, memory_ms). seconds_mape, seconds_median_ratio, seconds_rho: MAPE, median "
              "predicted / measured and ρ of predicted_seconds, the same ops timed by the one device model "
              "(archsim.devices.kernel_ops: tiles in waves, HBM roofline, launch; see the assumptions' "
              "predicted_seconds line) — times, where the arrays view's cycles rank.")


SUBSET_NOTE = ("The same statistics over layers whose channels and filters are multiples of 8 — the shapes "
               "cuDNN runs on fp16 tensor cores as they are; left_out counts the kernels of the other layers "
               "(first layers with 1–3 input channels), which may run on CUDA cores that the model does not describe.")
OUTLIER_NOTE = ("Largest disagreements once each op's median scale is fixed: ratio_vs_median far from 1 means the "
                "model ranks this kernel wrongly; memory_share near or above 1 means DRAM traffic alone explains "
                "the measured time (a memory-bound kernel the compute-only model cannot see).")


def report_sections(study: GpuStudy, command: str) -> list[Section]:
    """Assumptions, statistics, one scatter per op, the stream effect, and the dataflow sensitivity."""
    missed = below_bar(study.stats)
    verdict = ("every op type meets ρ ≥ 0.9" if missed.empty else
               "below ρ ≥ 0.9: " + ", ".join(f"{r.op} ({r.rho:.3g})" for r in missed.itertuples()) +
               " — see the largest disagreements")
    sections: list[Section] = [
        (study.assumptions, _caption("What the model assumes (archsim.validation.gpu). Verdict: "
                                     + html.escape(verdict) + ".", command)),
        (_rounded(study.stats), _caption(html.escape(STATS_NOTE), command)),
    ]
    subset = tensor_core_subset(study.joined)
    if len(subset) and subset["left_out"].sum() > 0:
        sections.append((_rounded(subset), _caption(html.escape(SUBSET_NOTE), command)))
    for op in KERNEL_OPS:
        if (study.joined["op"] == op).any():
            sections.append((scatter_figure(study.joined, op), _caption(
                f"Each point is one layer at one batch size (×: channels or filters not a multiple of 8, not a "
                f"tensor-core shape); measured: the CSV's times (archsim's timing script: median of CUDA-event "
                f"timings; see each CSV's metadata); modeled: archsim {html.escape(study.mode)} mode on the "
                f"GPU-like arrays.", command)))
        timed = study.joined[(study.joined["op"] == op)]
        if "predicted_seconds" in timed and timed["predicted_seconds"].notna().any():
            sections.append((scatter_figure(study.joined, op, seconds=True), _caption(
                "The same kernels timed by the one device model (predicted_seconds: archsim.devices.kernel_ops "
                "on the catalog GPU; the assumptions' predicted_seconds line says which path and constants).",
                command)))
    if len(study.streams):
        sections.append((streams_figure(study.streams), _caption(
            "Measured: D and G launched on two CUDA streams vs back-to-back on one (the single-device "
            "out-of-order backprop idea). Open markers: the model's ideal sharing of the tensor cores.", command)))
        sections.append((_rounded(study.streams_summary), _caption(
            "share_ge_1.05: fraction of layers whose D+G time falls ≥ 5 % with two streams; total_saving: "
            "1 − Σ concurrent / Σ serial over the layers.", command)))
    sections.append((_rounded(outliers(study.joined)), _caption(html.escape(OUTLIER_NOTE), command)))
    sections.append((_rounded(study.sensitivity), _caption(
        "Sensitivity to the assumptions: ρ and median ratio per op type under each tensor-core dataflow, with and "
        "without split-K (os only).",
        command)))
    return sections


def write_report(study: GpuStudy, path: str | Path, command: str) -> Path:
    """Write the HTML report atomically (plotly.js inlined once, so the file works offline)."""
    title = "archsim vs GPU kernels: " + ", ".join(sorted(study.joined["gpu"].unique()))
    return write_output(path, page(title, report_sections(study, command)))


def markdown_table(frame: pd.DataFrame) -> str:
    """A GitHub Markdown table (no extra dependency)."""
    shown = _rounded(frame).astype(str)
    lines = ["| " + " | ".join(shown.columns) + " |", "|" + "---|" * len(shown.columns)]
    lines += ["| " + " | ".join(v.replace("|", "\\|") for v in row) + " |" for row in shown.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def markdown_report(study: GpuStudy, command: str) -> str:
    """The report's tables as Markdown, for ``benchmarks/results/`` (the HTML is regenerated, not committed)."""
    per_op = study.stats[study.stats["group"] == "op"]
    parts = [f"# archsim vs GPU kernels ({', '.join(sorted(study.joined['gpu'].unique()))})\n",
             (f"Measured: {', '.join(f'`{s}`' for s in study.sources)}. Regenerate this and the HTML report: "
              f"`{command}`\n"), "## Assumptions\n", markdown_table(study.assumptions),
             "\n## Per op type\n", markdown_table(per_op), "\n" + STATS_NOTE + "\n",
             "\n## Per network and per batch\n", markdown_table(study.stats[study.stats["group"] != "op"])]
    if len(study.streams_summary):
        parts += ["\n## D ∥ G on two CUDA streams\n", markdown_table(study.streams_summary)]
    subset = tensor_core_subset(study.joined)
    if len(subset) and subset["left_out"].sum() > 0:
        parts += ["\n## Tensor-core shapes only\n", markdown_table(subset), "\n" + SUBSET_NOTE + "\n"]
    parts.append(verdict_markdown(study))
    parts += ["\n## Largest disagreements\n", markdown_table(outliers(study.joined)), "\n" + OUTLIER_NOTE + "\n",
              "\n## Dataflow sensitivity\n", markdown_table(study.sensitivity)]
    return "\n".join(parts)


def verdict_markdown(study: GpuStudy) -> str:
    """Which op types meet the ρ ≥ 0.9 bar; for those that miss it, what the data says about why."""
    missed = below_bar(study.stats)
    if missed.empty:
        return f"\n## Verdict\n\nEvery op type meets the bar ρ ≥ {RHO_BAR}.\n"
    lines = [f"\n## Verdict: below the ρ ≥ {RHO_BAR} bar\n"]
    subset = tensor_core_subset(study.joined).set_index(["gpu", "op"])
    for row in missed.itertuples(index=False):
        helped = ("the memory floor lifts it to " + f"{row.rho_mem:.3g}") if row.rho_mem > row.rho else \
            "the memory floor does not help"
        shapes = ""
        if (row.gpu, row.op) in subset.index and subset.loc[(row.gpu, row.op), "left_out"] > 0:
            kept = subset.loc[(row.gpu, row.op)]
            shapes = (f"; without the {kept['left_out']} kernels of layers whose channels or filters are not "
                      f"multiples of 8 (not tensor-core shapes) ρ = {kept['rho']:.3g} over {kept['kernel_count']}")
        lines.append(f"- {row.gpu} {OP_NAMES.get(row.op, row.op)}: ρ = {row.rho:.3g} over {row.kernel_count} kernels; {helped}"
                     f"{shapes}. See the largest disagreements below.")
    return "\n".join(lines) + "\n"


def write_markdown(study: GpuStudy, path: str | Path, command: str) -> Path:
    return write_output(path, markdown_report(study, command))
