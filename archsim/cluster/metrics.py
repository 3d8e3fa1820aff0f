"""Cluster metrics (SPB paper §4.2, Fig. 4): makespan, JCT statistics and CDF, utilization over time,
migrations per iteration — each a pure function of a :class:`~archsim.cluster.jobs.SimResult`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from archsim.cluster.jobs import SimResult

if TYPE_CHECKING:
    import pandas as pd  # the figures' frames only: summarize (what ``archsim cluster`` prints) needs none


def utilization_series(result: SimResult, bin_s: float) -> pd.DataFrame:
    """Fraction of device time busy computing in each ``bin_s`` bin from 0 to the makespan (the last bin
    shorter where the makespan is not a whole number of bins).

    Busy segments (start, end, devices) integrate exactly: the cumulative busy device-seconds is
    piecewise linear between segment ends, so it is evaluated at the bin edges by interpolation.
    """
    import pandas as pd

    horizon = result.makespan_s
    if horizon > 0:  # the last bin ends at the makespan: a full-width one would count idle time after the end
        starts = np.arange(0.0, horizon, bin_s)
        edges = np.append(starts[starts < horizon - 1e-9 * bin_s], horizon)
    else:
        edges = np.array([0.0, bin_s])
    busy = result.busy
    if len(busy) == 0:
        return pd.DataFrame({"time_s": edges[:-1], "utilization": np.zeros(len(edges) - 1)})
    times = np.concatenate([busy[:, 0], busy[:, 1]])
    rates = np.concatenate([busy[:, 2], -busy[:, 2]])
    order = np.argsort(times, kind="stable")
    times, rates = times[order], rates[order]
    level = np.cumsum(rates)  # busy devices just after each event
    area = np.concatenate([[0.0], np.cumsum(level[:-1] * np.diff(times))])
    cumulative = np.interp(edges, times, area, left=0.0, right=area[-1])
    width = np.diff(edges)
    return pd.DataFrame({"time_s": edges[:-1], "utilization": np.diff(cumulative) / (width * result.devices)})


def busy_device_seconds(result: SimResult) -> float:
    busy = result.busy
    return float(((busy[:, 1] - busy[:, 0]) * busy[:, 2]).sum()) if len(busy) else 0.0


def jct_cdf(result: SimResult) -> pd.DataFrame:
    """Empirical CDF of job completion times (Fig. 4(b))."""
    import pandas as pd

    jct = np.sort(result.jobs.jct_s.to_numpy())
    return pd.DataFrame({"jct_s": jct, "fraction": np.arange(1, len(jct) + 1) / len(jct)})


def migrations_per_iteration(result: SimResult) -> pd.Series:
    """Per job: migrations / iterations (Fig. 4(c))."""
    return result.jobs.migrations / result.jobs.iterations


# The names summarize() used before it took the command's (``archsim cluster`` prints these keys): one set of names
RENAMED = {"makespan_s": "makespan_seconds", "jct_mean_s": "jct_mean_seconds", "jct_median_s": "jct_median_seconds",
           "jct_p95_s": "jct_p95_seconds"}


class Summary(dict):
    """One run's summary, keyed as ``archsim cluster`` prints it; an old name (``makespan_s``) read from it
    raises a KeyError naming the new one instead of a bare one."""

    def __missing__(self, key: object) -> object:
        if key in RENAMED:
            raise KeyError(f"{key!r} is now {RENAMED[key]!r} (the names archsim cluster prints)")
        raise KeyError(key)


def summarize(result: SimResult) -> dict[str, float | str]:
    """Makespan, JCT mean/median/p95 (seconds), mean utilization and migrations per iteration of one run, under the
    names ``archsim cluster`` prints (numpy's NaN-skipping statistics: the same floats pandas' Series methods gave,
    which they call)."""
    jct = result.column("jct_s").astype(np.float64)
    makespan = result.makespan_s
    finished = jct[~np.isnan(jct)]
    return Summary({
        "policy": result.policy,
        "jobs": len(jct),
        "makespan_seconds": makespan,
        "jct_mean_seconds": float(np.nanmean(jct)) if len(finished) else float("nan"),
        "jct_median_seconds": float(np.nanmedian(jct)) if len(finished) else float("nan"),
        "jct_p95_seconds": float(np.percentile(finished, [95.0], method="linear")[0]) if len(finished) else float("nan"),
        "utilization": busy_device_seconds(result) / (makespan * result.devices) if makespan > 0 else 0.0,
        "migrations_per_iteration": float(result.column("migrations").sum() / result.column("iterations").sum()),
    })


# Decimal places of a gain in percent: simulated times are long float sums, so two policies that reach
# the same schedule can differ in the last bits (1533.4500000000007 s against 1533.45 s); a gain below
# 1e-9 percentage points (relative difference < 1e-11) is that noise and reads as an exact 0.
GAIN_PCT_DECIMALS = 9


def gain_pct(reference: np.ndarray | pd.Series, other: np.ndarray | pd.Series) -> np.ndarray | pd.Series:
    """How much smaller ``reference`` is than ``other``, in % of ``other``: 100 · (other − ref) / other,
    rounded to :data:`GAIN_PCT_DECIMALS` places (ties to float noise are 0, never −0)."""
    return np.round(100 * (other - reference) / other, GAIN_PCT_DECIMALS) + 0.0


def aggregate(summaries: Sequence[dict], reference: str = "jigsaw") -> pd.DataFrame:
    """Runs (one per seed), mean, standard deviation, min and max over seeds per policy, and the reference policy's mean
    improvement (%) over each policy, paired by seed: :func:`gain_pct`, 100 · (1 − ref / other). The standard
    deviation is the sample's (ddof 1): of one run it is undefined, NaN (JSON ``null``, an empty CSV cell, ``nan`` in the
    table, as every undefined figure archsim writes), not 0, which would claim runs that agreed."""
    import pandas as pd

    frame = pd.DataFrame(list(summaries))
    metrics = ["makespan_seconds", "jct_mean_seconds", "jct_median_seconds", "jct_p95_seconds", "utilization",
               "migrations_per_iteration"]
    rows = []
    for policy, part in frame.groupby("policy", sort=False):
        row: dict[str, object] = {"policy": policy, "runs": len(part)}  # "seeds" is the meta's list
        for metric in metrics:
            row[f"{metric}_mean"] = part[metric].mean()
            row[f"{metric}_std"] = part[metric].std(ddof=1)  # NaN for one run (pandas' own)
            row[f"{metric}_min"] = part[metric].min()
            row[f"{metric}_max"] = part[metric].max()
        if reference in set(frame.policy):
            ref = frame[frame.policy == reference].set_index("seed")
            mine = part.set_index("seed")
            for metric in ("makespan_seconds", "jct_mean_seconds"):
                gain = gain_pct(ref[metric], mine[metric])
                row[f"{reference}_gain_{metric.removesuffix('_seconds')}_pct_mean"] = gain.mean()
                row[f"{reference}_gain_{metric.removesuffix('_seconds')}_pct_std"] = gain.std(ddof=1)
        rows.append(row)
    return pd.DataFrame(rows)
