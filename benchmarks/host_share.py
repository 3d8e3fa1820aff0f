"""How much of a predicted iteration is the host floor, beside that prediction's error (bench_vtrain_e2e.py).

A row is bench_vtrain_e2e's per-run dict: ``predicted_ms``, ``host_bound_ms`` (archsim train's
``host_bound_seconds``, in ms), ``error`` (predicted / measured − 1), ``hidden``, ``layers``, ``recompute``,
``global_batch`` and ``micro_batch``. The host time per op is a constant fitted on vTrain's A100 servers, so a
row whose prediction is mostly host floor tests that constant as much as the GPU model: the split and the figure
keep the two apart.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def host_share(row: dict) -> float:
    """The share of the predicted iteration that is the host issuing ops beyond the GPU's work (0–1)."""
    return row["host_bound_ms"] / row["predicted_ms"]


def host_bound(row: dict) -> bool:
    """The prediction rests on the host floor: its :func:`host_share` is over
    :data:`~archsim.training.table_lines.HOST_NOTE_SHARE`, where ``train``'s table says so; the error of such a row
    says as much about the A100-fitted host time per op as about the GPU model."""
    from archsim.training.table_lines import HOST_NOTE_SHARE

    return row["host_bound_ms"] > HOST_NOTE_SHARE * row["predicted_ms"]


def host_split(rows: list[dict], key: str = "error") -> dict[str, dict]:
    """``{"host_bound": …, "gpu_bound": …}``, each ``{"runs": n, "mape": …, "signed_mean": …}`` of the rows'
    ``key`` (a signed error, predicted / measured − 1) on the rows :func:`host_bound` picks and on the others;
    MAPE and signed mean None where a side has no row."""
    out = {}
    for name, side in (("host_bound", True), ("gpu_bound", False)):
        errors = [r[key] for r in rows if host_bound(r) == side and r[key] is not None]
        out[name] = {"runs": len(errors), "mape": float(np.mean(np.abs(errors))) if errors else None,
                     "signed_mean": float(np.mean(errors)) if errors else None}
    return out


def error_figure(rows: list[dict], title: str):
    """A plotly figure: x = :func:`host_share` (%), y = signed error (%), one marker per row, one trace (colour)
    per recompute, the row's model, recompute, global batch B and micro-batch b on hover."""
    import plotly.graph_objects as go

    figure = go.Figure()
    for recompute in sorted({r["recompute"] for r in rows}):
        pick = [r for r in rows if r["recompute"] == recompute]
        figure.add_trace(go.Scatter(
            x=[100 * host_share(r) for r in pick], y=[100 * r["error"] for r in pick], mode="markers",
            name=f"recompute {recompute}",
            text=[f"h{r['hidden']} L{r['layers']} recompute {r['recompute']} B{r['global_batch']} b{r['micro_batch']}"
                  for r in pick]))
    figure.update_layout(title=title, xaxis_title="host floor's share of the predicted iteration (%)",
                         yaxis_title="error, predicted / measured − 1 (%)", width=1000, height=700)
    return figure


def write_error_figure(rows: list[dict], path: Path, title: str) -> Path:
    """:func:`error_figure` as HTML at ``path``, plotly.js from its CDN (as the project's other figures)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    error_figure(rows, title).write_html(str(path), include_plotlyjs="cdn")
    return path
