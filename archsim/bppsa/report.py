"""The BPPSA study pages' sections (Fig. 8's trends, Fig. 10's shape), drawn by archsim.report.page.

Each figure's caption gives the command that regenerates it and what the model assumes.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from archsim.report.page import Section, write_page


def _caption(command: str, what: str, assumes: str) -> str:
    return (f"{html.escape(what)} <br><b>Regenerate:</b> <code>{html.escape(command)}</code>"
            f"<br><b>Model assumes:</b> {html.escape(assumes)}")


RNN_ASSUMES = ("n = T dense H×H transposed Jacobians per sample, B samples scanned independently; BP = T−1 "
               "dependent batched GEMMs (B×H)·(H×H) with rows split over min(p, B) arrays; BPPSA = Algorithm 1's "
               "2⌈log₂(T+1)⌉−1 levels, each level's products in waves of p (one product per array per wave); "
               "products costed by archsim.array.analytic.gemm_cost (compute cycles, no memory stalls); "
               "moves with the identity are free; Jacobian generation in the forward pass is not counted.")


def bound_words(bounds: Mapping[int, float]) -> str:
    """The speedup's limit at each p (:func:`archsim.bppsa.rnn_cost.speedup_bound`), as the first caption names it:
    ``1.82× at p = 64, 29.1× at p = 1024``."""
    return ", ".join(f"{bound:.3g}× at p = {p}" for p, bound in sorted(bounds.items()))


def rnn_sections(frame: pd.DataFrame, command: str, array: str, bounds: Mapping[int, float]) -> list[Section]:
    """Speedup vs T per p (Fig. 8b), latency vs T (Fig. 8a), speedup vs p (Fig. 8e), memory (§3.6); ``bounds``: the
    speedup's limit as T grows at each p (:func:`archsim.bppsa.rnn_cost.speedup_bound`), which the first caption
    states."""
    speed, latency, by_p, memory = go.Figure(), go.Figure(), go.Figure(), go.Figure()
    for p, part in frame.groupby("processors"):
        speed.add_trace(go.Scatter(x=part.seq_len, y=part.speedup, mode="lines+markers", name=f"p = {p}"))
        latency.add_trace(go.Scatter(x=part.seq_len, y=part.scan_cycles, mode="lines+markers", name=f"BPPSA, p = {p}"))
        latency.add_trace(go.Scatter(x=part.seq_len, y=part.bp_cycles, mode="lines", line={"dash": "dot"},
                                     name=f"BP, p = {p}"))
    for t, part in frame.groupby("seq_len"):
        by_p.add_trace(go.Scatter(x=part.processors, y=part.speedup, mode="lines+markers", name=f"T = {t}"))
    longest = frame[frame.seq_len == frame.seq_len.max()]
    memory.add_trace(go.Scatter(x=longest.processors, y=longest.bppsa_bytes_per_worker, mode="lines+markers",
                                name="BPPSA: ⌈B(n+1)/p⌉·M_Jacob"))
    memory.add_trace(go.Scatter(x=longest.processors, y=longest.pipeline_bytes_per_worker, mode="lines+markers",
                                name="pipeline: (⌈n/p⌉+p)·M_x"))
    speed.update_layout(title=f"Backward-pass speedup of BPPSA over BP ({array})", xaxis_title="sequence length T",
                        yaxis_title="speedup", xaxis_type="log")
    latency.update_layout(title="Backward-pass latency", xaxis_title="sequence length T", yaxis_title="cycles",
                          xaxis_type="log", yaxis_type="log")
    by_p.update_layout(title="Speedup as the processors grow", xaxis_title="processors p", yaxis_title="speedup",
                       xaxis_type="log")
    memory.update_layout(title=f"Per-worker memory at T = {int(frame.seq_len.max())}", xaxis_title="processors p",
                         yaxis_title="bytes", xaxis_type="log", yaxis_type="log")
    return [
        (speed, _caption(command, "Speedup grows with T while T·B ≲ p (log-depth levels), then plateaus below "
                         "p·c_BP / (B·(c_mm + c_mv)), far below p: once every level is p-wide the scan costs "
                         "≈ (B·T/p)(c_mm + c_mv) cycles against BP's T·c_BP (c: one product's or BP step's cycles) — "
                         f"{bound_words(bounds)}.", RNN_ASSUMES)),
        (latency, _caption(command, "Latency of BP (dotted) and BPPSA per processor count.", RNN_ASSUMES)),
        (by_p, _caption(command, "Speedup vs p at fixed T (Fig. 8d–e's axis is 1/B, workers per sample).",
                        RNN_ASSUMES)),
        (memory, _caption(command, "§3.6 space: BPPSA's per-worker share falls to one Jacobian; pipeline "
                          "parallelism's grows linearly with p (Appendix B).",
                          RNN_ASSUMES + " M_Jacob = H²·element bytes (one sample's Jacobian; the B scans' arrays spread over "
                                          "the p arrays as their products do), M_x = B·H·element bytes.")),
        (frame, _caption(command, "All points.", RNN_ASSUMES)),
    ]


VGG_ASSUMES = ("VGG-11 conv stack (21 operators) on one 32×32×3 image; conv/linear weights pruned at random to the "
               "given sparsity (seeded); transposed Jacobians in CSR with their input-independent pattern (ReLU "
               "diagonal, whole pooling windows) under --zeros pattern, or only this input's nonzero values under "
               "--zeros values; FLOPs = multiplies + adds of a CSR·CSR (Gustavson) or CSR·dense-"
               "vector product counted from the patterns (symbolic product), dense = r·c·(2k−1); critical = the "
               "largest operation of each sequential step, one worker per operation.")


def vgg_sections(frame: pd.DataFrame, summary: pd.DataFrame, command: str) -> list[Section]:
    """Fig. 10's scatter (sparse vs dense FLOPs per step) and FLOPs per sequential step vs BP."""
    scatter, steps = go.Figure(), go.Figure()
    styles = {("bppsa", "mv"): "circle", ("bppsa", "mm"): "square", ("bp", "mv"): "diamond"}
    real = frame[frame["product"] != "id"]
    for (method, kind, critical), part in real.groupby(["method", "product", "critical"]):
        if method == "bp" and not critical:
            continue
        name = "BP (baseline)" if method == "bp" else f"BPPSA {kind}{' critical' if critical else ''}"
        scatter.add_trace(go.Scatter(
            x=part.dense_flops, y=part.flops, mode="markers", name=name,
            marker={"symbol": styles[(method, kind)], "size": 11 if critical else 8,
                    "color": "green" if method == "bp" else None, "line": {"width": 1}},
            text=[f"{r.phase} level {r.level}: a[{r.left}]◇a[{r.right}]" for r in part.itertuples()]))
    scatter.update_layout(title="FLOPs per step: sparse vs dense (Fig. 10)", xaxis_title="FLOPs if dense",
                          yaxis_title="FLOPs in CSR", xaxis_type="log", yaxis_type="log")
    for method, part in frame[frame.critical].groupby("method", sort=False):
        steps.add_trace(go.Bar(x=part.seq_step, y=part.flops, name=f"{method}: critical-path FLOPs per step"))
    steps.update_layout(title="Critical path: FLOPs of each sequential step", xaxis_title="sequential step",
                        yaxis_title="FLOPs", yaxis_type="log", barmode="group")
    return [
        (scatter, _caption(command, "Each ◇ of BPPSA and each gradient operator of BP.", VGG_ASSUMES)),
        (steps, _caption(command, "BPPSA has fewer sequential steps; whether its critical path is cheaper "
                         "depends on the fill-in of the up-sweep's matrix products.", VGG_ASSUMES)),
        (summary, _caption(command, "Critical path and work per up-sweep depth (0 = linear scan = BP).",
                           VGG_ASSUMES)),
        (frame, _caption(command, "Every step.", VGG_ASSUMES)),
    ]


def write_rnn_page(path: str, frame: pd.DataFrame, command: str, array: str, bounds: Mapping[int, float]) -> Path:
    """``bppsa rnn``'s page of ``frame`` (its rows) at ``path``, ``bounds`` the speedup's limit at each p; returns the
    path written."""
    return write_page(path, "BPPSA: tanh RNN backward pass on systolic arrays",
                      rnn_sections(frame, command, array, bounds))


def write_vgg_page(path: str, frame: pd.DataFrame, summary: pd.DataFrame, sparsity: float, command: str) -> Path:
    """``bppsa pruned-vgg11``'s page of ``frame`` (its steps as the command prints them, ``product`` naming each
    step's mv, mm or id) and ``summary`` at ``path``; returns the path written."""
    return write_page(path, f"BPPSA: pruned VGG-11 ({sparsity:.0%} pruned), FLOPs per step",
                      vgg_sections(frame, summary, command))


NETWORK_ASSUMES = ("the network's rows as a chain of conv, fc (linear), pool (max pooling) and one-input elementwise "
                   "(ReLU, sigmoid or tanh; ReLU where a row names none) operators, conv and fc weights He-initialized from the seed, no bias; one random input "
                   "from the seed; transposed Jacobians in CSR with their input-independent pattern (an elementwise "
                   "operator's diagonal, whole pooling windows); FLOPs = multiplies + adds counted from the patterns, dense = r·c·(2k−1), "
                   "times the batch (B independent chains); critical = the largest operation of each sequential "
                   "step, one worker per operation.")


def network_sections(frame: pd.DataFrame, rows: pd.DataFrame, command: str) -> list[Section]:
    """The critical path's FLOPs per sequential step, BPPSA's against BP's, and the scan's steps."""
    steps = go.Figure()
    for method, part in frame[frame.critical].groupby("method", sort=False):
        steps.add_trace(go.Bar(x=part.seq_step, y=part.flops, name=f"{method}: critical-path FLOPs per step"))
    steps.update_layout(title="Critical path: FLOPs of each sequential step", xaxis_title="sequential step",
                        yaxis_title="FLOPs", barmode="group")
    return [
        (steps, _caption(command, "BPPSA has fewer sequential steps; whether its critical path is cheaper "
                         "depends on the fill-in of the up-sweep's matrix products.", NETWORK_ASSUMES)),
        (rows, _caption(command, "Every sequential step of the scan.", NETWORK_ASSUMES)),
    ]


def write_network_page(path: str, frame: pd.DataFrame, rows: pd.DataFrame, network: str, command: str) -> Path:
    """``bppsa network``'s page: ``frame`` (every ◇ of both methods, as :func:`~archsim.bppsa.vgg.scan_flops`) and
    ``rows`` (the scan's steps) at ``path``; returns the path written."""
    return write_page(path, f"BPPSA: {network}, FLOPs per scan step", network_sections(frame, rows, command))
