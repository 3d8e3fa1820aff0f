"""The cluster report: one self-contained HTML page (plotly) in the style of the SPB paper's Fig. 4.

JCT CDF per policy (Fig. 4(b)), utilization over time, migrations per iteration CDF (Fig. 4(c)),
and — over several seeds — makespan and mean JCT per policy with their spread (Fig. 4(a)). Every
figure's caption carries the command that regenerates the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from archsim.cluster.jobs import SimResult
from archsim.cluster.metrics import jct_cdf, migrations_per_iteration, utilization_series
from archsim.report.html_page import Figures, esc, write_document
from archsim.report.html_page import table as html_table

STYLE_CSS = ("body{font-family:sans-serif;max-width:1100px;margin:auto}"
             "figcaption{color:#444;font-size:90%}code{background:#f3f3f3}"
             "table.numbers td{text-align:right;padding:0 .6em}")
COLORS = {"jigsaw": "#E45756", "gandiva": "#4C78A8", "tiresias": "#72B7B2", "jigsaw-nospb": "#F58518"}


def jct_figure(results: Sequence[SimResult]) -> go.Figure:
    fig = go.Figure()
    for r in results:
        cdf = jct_cdf(r)
        fig.add_trace(go.Scatter(x=cdf.jct_s, y=cdf.fraction, mode="lines", name=r.policy,
                                 line={"color": COLORS.get(r.policy)}))
    fig.update_layout(title="CDF of job completion time", xaxis_title="JCT (s, log)", yaxis_title="fraction of jobs",
                      xaxis_type="log")
    return fig


def utilization_figure(results: Sequence[SimResult], bin_s: float) -> go.Figure:
    fig = go.Figure()
    for r in results:
        series = utilization_series(r, bin_s)
        fig.add_trace(go.Scatter(x=series.time_s, y=series.utilization, mode="lines", name=r.policy,
                                 line={"color": COLORS.get(r.policy), "shape": "hv"}))
    fig.update_layout(title=f"Device utilization over time ({bin_s:g} s bins; busy computing)",
                      xaxis_title="time (s)", yaxis_title="utilization", yaxis_range=[0, 1.05])
    return fig


def migration_figure(results: Sequence[SimResult]) -> go.Figure:
    fig = go.Figure()
    for r in results:
        values = np.sort(migrations_per_iteration(r).to_numpy())
        fig.add_trace(go.Scatter(x=values, y=np.arange(1, len(values) + 1) / len(values), mode="lines",
                                 name=r.policy, line={"color": COLORS.get(r.policy), "shape": "hv"}))
    fig.update_layout(title="CDF of migrations per iteration, per job", xaxis_title="migrations / iterations",
                      yaxis_title="fraction of jobs")
    return fig


def spread_figure(summaries: pd.DataFrame) -> go.Figure:
    """Makespan and mean JCT per policy (Fig. 4(a)): mean over seeds, bars from min to max; of one run (a trace
    file, or one seed) the run's own figures, without bars."""
    fig = go.Figure()
    seeds = summaries.seed.nunique()
    for metric, label in (("makespan_seconds", "makespan"), ("jct_mean_seconds", "mean JCT")):
        stats = summaries.groupby("policy", sort=False)[metric].agg(["mean", "min", "max"])
        spread = ({"error_y": {"type": "data", "symmetric": False, "array": stats["max"] - stats["mean"],
                               "arrayminus": stats["mean"] - stats["min"]}} if seeds > 1 else {})
        fig.add_trace(go.Bar(x=stats.index, y=stats["mean"], name=label, **spread))
    title = (f"Makespan and mean JCT per policy (mean over {seeds} seeds; bars: min–max)" if seeds > 1 else
             "Makespan and mean JCT per policy (one run)")
    fig.update_layout(title=title, yaxis_title="seconds", barmode="group")
    return fig


def _table(frame: pd.DataFrame) -> str:
    from archsim.report.style import table_number

    # a wide summary scrolls inside its box instead of widening the page
    return '<div style="overflow-x:auto">' + html_table(frame, table_number, classes="numbers") + "</div>"


def spread_tables(summary: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """The statistics over seeds (:func:`archsim.cluster.metrics.aggregate`'s columns, ``M_mean`` ``M_std``
    ``M_min`` ``M_max``) as two tables a reader can scan: per policy, each metric's mean ± sample standard
    deviation in one cell (the mean alone where it is undefined, one run), and each metric's min – max (None
    where every policy ran once: then min = max = mean). Columns are the metrics' names as the CSV spells them,
    less the statistic; cells are text, each number shown as the page shows numbers
    (:func:`archsim.report.style.table_number`)."""
    import pandas as pd

    from archsim.report.style import table_number
    from archsim.validate import is_nan

    metrics = [column.removesuffix("_mean") for column in summary.columns if column.endswith("_mean")]
    spread = pd.DataFrame({"policy": summary.policy, "runs": summary.runs})
    ranges = spread.copy()
    for metric in metrics:
        spread[metric] = [table_number(mean) + ("" if is_nan(std) else f" ± {table_number(std)}")
                          for mean, std in zip(summary[f"{metric}_mean"], summary[f"{metric}_std"], strict=True)]
        if f"{metric}_min" in summary:
            ranges[metric] = [f"{table_number(low)} – {table_number(high)}"
                              for low, high in zip(summary[f"{metric}_min"], summary[f"{metric}_max"], strict=True)]
    return spread, (ranges if (summary.runs > 1).any() else None)


def _summary(summary: pd.DataFrame) -> str:
    """The page's summary: one row per run (one policy), or the statistics over seeds as :func:`spread_tables`'s
    two tables (29 columns of mean, std, min and max side by side were too wide to read; the CSV keeps them)."""
    if "runs" not in summary:
        return "<h2>Summary</h2>" + _table(summary)
    spread, ranges = spread_tables(summary)
    runs = int(summary.runs.max())
    parts = ["<h2>Summary</h2><p>Each metric's mean ± sample standard deviation over the runs (seeds) of each "
             f"policy{'' if runs > 1 else '; one run each, so no deviation'}; "
             "<code>jigsaw_gain_*_pct</code>: how much lower Jigsaw's figure is, in % of the policy's, paired by seed. "
             "<code>--format csv</code> prints every statistic as a column.</p>" + _table(spread)]
    if ranges is not None:
        parts.append("<h3>Range over seeds (min – max)</h3>" + _table(ranges))
    return "".join(parts)


def write_cluster_report(path: str | Path, results: Sequence[SimResult], command: str, *, bin_s: float = 60.0,
                         summary: pd.DataFrame | None = None, per_seed: pd.DataFrame | None = None,
                         notes: str = "") -> Path:
    """Write the page atomically; ``per_seed`` (one summary per policy and seed) gives the makespan and JCT figure its
    spread over seeds (None: each policy's one run in ``results``)."""
    figures = [(jct_figure(results), "JCT CDF per policy"),
               (utilization_figure(results, bin_s), "Utilization over time per policy"),
               (migration_figure(results), "Migrations per iteration")]
    if per_seed is None:  # one run of each policy shown (until 2026-12-06 such a page had no Fig. 4(a))
        from archsim.cluster.metrics import summarize

        per_seed = pd.DataFrame([{**summarize(r), "seed": 0} for r in results])
    several = per_seed.seed.nunique() > 1
    figures.insert(0, (spread_figure(per_seed), "Makespan and JCT over seeds" if several else "Makespan and mean JCT"))
    cmd = esc(command)
    parts = [f"<p>Regenerate this page: <code>{cmd}</code></p>"]
    if notes:
        parts.append(f"<p>{esc(notes)}</p>")
    if summary is not None:
        parts.append(_summary(summary))
    figure = Figures()
    for fig, caption in figures:
        parts.append(f"<figure>{figure(fig)}<figcaption>{esc(caption)}. Regenerate: <code>{cmd}</code>"
                     "</figcaption></figure>")
    return write_document(path, "archsim cluster report", parts, heading=report_heading([r.policy for r in results]),
                          style=STYLE_CSS)


HEADINGS = {"jigsaw": "Jigsaw + SPB", "jigsaw-nospb": "Jigsaw without SPB", "gandiva": "Gandiva-like gang scheduling",
            "tiresias": "Tiresias gang scheduling"}


def report_heading(policies: Sequence[str]) -> str:
    """The page's heading for the policies it shows: the comparison's, or the one policy's own (until 2026-12-06 a
    page of ``jigsaw-nospb`` or one gang baseline alone was headed "Jigsaw + SPB vs gang baselines")."""
    if len(policies) == 1:
        return f"Cluster scheduling: {HEADINGS.get(policies[0], policies[0])}"
    return "Cluster scheduling: Jigsaw + SPB vs gang baselines"
