"""Modeled vs measured GPU kernels: rank correlation and ratio errors, and the two-stream effect.

Spearman's ρ asks whether archsim orders the layers as the GPU does (the issue's bar: ρ ≥ 0.9 per
op type); the median ratio modeled/measured says how far the absolute scale is off (one number
for clock, efficiency and overheads); the scaled error — |ratio / median ratio − 1| — is what is
left after that one scale is fixed, i.e. the shape error a constant cannot absorb.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from archsim.validation.gpu_csv import KERNEL_OPS

GROUPINGS: tuple[tuple[str, ...], ...] = (("op",), ("network", "op"), ("batch", "op"))
STAT_COLUMNS = ("group", "gpu", "network", "batch", "op", "kernel_count", "rho", "median_ratio", "median_abs_err", "mape",
                "scaled_abs_err", "rho_mem", "median_ratio_mem", "seconds_mape", "seconds_median_ratio", "seconds_rho")


def spearman(modeled: Sequence[float], measured: Sequence[float]) -> float:
    """Spearman's ρ (ties get average ranks); NaN with fewer than 3 points or a constant side."""
    x = np.asarray(modeled, dtype=float)
    y = np.asarray(measured, dtype=float)
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(spearmanr(x, y).statistic)


def ratio_errors(modeled: Sequence[float], measured: Sequence[float]) -> dict[str, float]:
    """median_ratio = median(modeled/measured); median_abs_err = median |ratio − 1|;
    mape = mean |ratio − 1| (mean absolute percentage error, as a fraction);
    scaled_abs_err = median |ratio / median_ratio − 1|."""
    ratio = np.asarray(modeled, dtype=float) / np.asarray(measured, dtype=float)
    if ratio.size == 0:
        return {"median_ratio": float("nan"), "median_abs_err": float("nan"), "mape": float("nan"),
                "scaled_abs_err": float("nan")}
    middle = float(np.median(ratio))
    return {"median_ratio": middle, "median_abs_err": float(np.median(np.abs(ratio - 1))),
            "mape": float(np.mean(np.abs(ratio - 1))),
            "scaled_abs_err": float(np.median(np.abs(ratio / middle - 1)))}


def compare(joined: pd.DataFrame, groupings: Sequence[Sequence[str]] = GROUPINGS) -> pd.DataFrame:
    """One row per group of F/D/G kernels: n, ρ and ratio errors of ``modeled_ms`` (and of
    ``roofline_ms``, the model with the memory floor, as ``*_mem``) against ``measured_ms``; and
    ``seconds_*``: MAPE, median ratio and ρ of the device model's ``predicted_seconds`` against the
    measured seconds (NaN where the rows were not timed).

    Every layer row counts (a shape ResNet repeats counts once per layer, as per-layer costs do).
    """
    kernels = joined[joined["op"].isin(KERNEL_OPS)]
    gpu = kernels["gpu"] if "gpu" in kernels.columns else pd.Series("", index=kernels.index)
    kernels = kernels.assign(gpu=gpu)
    rows = []
    for keys in groupings:
        by = ["gpu", *keys]
        for values, part in kernels.groupby(by, sort=True):
            label = dict(zip(by, values))
            errors = ratio_errors(part["modeled_ms"], part["measured_ms"])
            memory = ratio_errors(part["roofline_ms"], part["measured_ms"])
            predicted = part["predicted_seconds"] if "predicted_seconds" in part else pd.Series(float("nan"), part.index)
            timed = ratio_errors(predicted, part["measured_ms"] / 1e3)
            rows.append({"group": "×".join(keys), "gpu": label["gpu"], "network": label.get("network", "all"),
                         "batch": str(label.get("batch", "all")), "op": label["op"], "kernel_count": len(part),
                         "rho": spearman(part["modeled_ms"], part["measured_ms"]), **errors,
                         "rho_mem": spearman(part["roofline_ms"], part["measured_ms"]),
                         "median_ratio_mem": memory["median_ratio"], "seconds_mape": timed["mape"],
                         "seconds_median_ratio": timed["median_ratio"],
                         "seconds_rho": spearman(predicted, part["measured_ms"])})
    frame = pd.DataFrame(rows, columns=list(STAT_COLUMNS))
    order = {op: i for i, op in enumerate(KERNEL_OPS)}
    frame["_op"] = frame["op"].map(order)
    return frame.sort_values(["gpu", "_op"], kind="stable").drop(columns="_op").reset_index(drop=True)


CONCURRENCY_COLUMNS = ("gpu", "network", "layer", "batch", "d_ms", "g_ms", "serial_ms", "concurrent_ms", "speedup",
                       "modeled_serial_ms", "modeled_concurrent_ms", "modeled_speedup")


def concurrency(joined: pd.DataFrame) -> pd.DataFrame:
    """Per layer and batch: D and G alone, D+G back-to-back on one stream, D ∥ G on two streams.

    speedup = serial / concurrent (> 1: the second stream helped); modeled_* the same from the model.
    Layers without both stream rows are left out.
    """
    data = joined.assign(gpu=joined["gpu"] if "gpu" in joined.columns else "")
    keys = ["gpu", "network", "layer", "batch"]
    measured = data.pivot_table(index=keys, columns="op", values="measured_ms", aggfunc="first")
    modeled = data.pivot_table(index=keys, columns="op", values="modeled_ms", aggfunc="first")
    needed = ["D", "G", "DG_serial", "DG_concurrent"]
    if not set(needed) <= set(measured.columns):
        return pd.DataFrame(columns=list(CONCURRENCY_COLUMNS))
    both = measured[needed].dropna().index
    m, p = measured.loc[both], modeled.loc[both]
    frame = pd.DataFrame({"d_ms": m["D"], "g_ms": m["G"], "serial_ms": m["DG_serial"],
                          "concurrent_ms": m["DG_concurrent"], "speedup": m["DG_serial"] / m["DG_concurrent"],
                          "modeled_serial_ms": p["DG_serial"], "modeled_concurrent_ms": p["DG_concurrent"],
                          "modeled_speedup": p["DG_serial"] / p["DG_concurrent"]}).reset_index()
    return frame[list(CONCURRENCY_COLUMNS)]


def concurrency_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per GPU × network × batch (and per GPU overall): median and best measured speedup of D ∥ G,
    the share of layers it speeds up by ≥ 5 %, the time saved over the network, and the modeled median."""
    rows = []
    for keys, part in [(k, p) for k, p in table.groupby(["gpu", "network", "batch"])] + \
            [((gpu, "all", "all"), p) for gpu, p in table.groupby("gpu")]:
        rows.append({"gpu": keys[0], "network": keys[1], "batch": str(keys[2]), "layers": len(part),
                     "median_speedup": float(part["speedup"].median()), "max_speedup": float(part["speedup"].max()),
                     "share_ge_1.05": float((part["speedup"] >= 1.05).mean()),
                     "total_saving": float(1 - part["concurrent_ms"].sum() / part["serial_ms"].sum()),
                     "modeled_median_speedup": float(part["modeled_speedup"].median())})
    return pd.DataFrame(rows)


def outliers(joined: pd.DataFrame, count: int = 12) -> pd.DataFrame:
    """The F/D/G rows the model gets most wrong once the median scale is fixed (|log(ratio / median)|
    largest, median per op), with the memory floor beside them: where a disagreement comes from."""
    kernels = joined[joined["op"].isin(KERNEL_OPS)].copy()
    if kernels.empty:
        return kernels
    ratio = kernels["modeled_ms"] / kernels["measured_ms"]
    scale = ratio.groupby(kernels["op"]).transform("median")
    kernels["ratio_vs_median"] = ratio / scale
    kernels["memory_share"] = kernels["memory_ms"] / kernels["measured_ms"]
    kernels["_off"] = np.abs(np.log(kernels["ratio_vs_median"]))
    columns = [c for c in ("gpu", "network", "layer", "batch", "op", "measured_ms", "modeled_ms", "memory_ms",
                           "ratio_vs_median", "memory_share") if c in kernels.columns]
    return kernels.nlargest(count, "_off")[columns].reset_index(drop=True)


def tensor_core_subset(joined: pd.DataFrame) -> pd.DataFrame:
    """Per-op statistics over the layers with tensor-core shapes only (``tensor_core_shape``), with
    how many kernels that leaves out: separates "the model mis-ranks tensor-core GEMMs" from "some
    layers do not run on tensor cores at all"."""
    kernels = joined[joined["op"].isin(KERNEL_OPS)]
    if "tensor_core_shape" not in kernels.columns:
        return pd.DataFrame(columns=[*STAT_COLUMNS, "left_out"])
    kept = kernels[kernels["tensor_core_shape"].astype(bool)]
    stats = compare(kept, groupings=(("op",),)) if len(kept) else pd.DataFrame(columns=list(STAT_COLUMNS))
    total = kernels.assign(gpu=kernels.get("gpu", "")).groupby(["gpu", "op"]).size()
    stats["left_out"] = [int(total.get((g, op), 0)) - int(n) for g, op, n in zip(stats["gpu"], stats["op"], stats["kernel_count"])]
    return stats.assign(group="op, tensor-core shapes")


RHO_BAR = 0.9
"""The issue's acceptance bar: Spearman ρ ≥ 0.9 per op type, or the report explains the disagreement."""


def below_bar(stats: pd.DataFrame, bar: float = RHO_BAR) -> pd.DataFrame:
    """Per-op rows (group ``op``) whose ρ is under the bar or undefined: what the report must explain."""
    per_op = stats[stats["group"] == "op"]
    return per_op[~(per_op["rho"] >= bar)].reset_index(drop=True)
