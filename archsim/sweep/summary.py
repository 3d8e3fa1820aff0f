"""Summaries the way LayerPipe's Table IV averages: over array and batch sizes (and dataflows)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from archsim.report.paper_tables import improvement_pct
from archsim.report.style import DESIGN_AXIS_WORDS
from archsim.sweep.network_names import labelled
from archsim.sweep.spec import BORROW_COLUMN, SETTING_COLUMNS

# A design sweep's own axes (archsim.sweep.design's columns that set a design, not its results): part of
# what one configuration is, so "best with at most P processors" never mixes two designs.
DESIGN_AXES = tuple(DESIGN_AXIS_WORDS)


def summarize(results: pd.DataFrame, networks: Sequence[str] = ()) -> pd.DataFrame:
    """Mean speedup and communication overhead per (network, processors, method and its LayerPipe settings), plus each
    method's improvement over PipeDream's mean speedup (Table IV's "Improvement").

    A network is keyed and named by its display name (:func:`archsim.sweep.network_names.labelled`; ``networks``:
    the spec's, as results.csv's ``network_path`` names them): its stem, unless another network of the sweep
    shares that stem (``a/net.csv`` beside ``b/net.csv``: ``a/net`` and ``b/net``, each its own rows).

    ``speedup_upto`` averages, per configuration, the best speedup over P′ ≤ P processors: Algorithm 1
    is greedy and not monotone in P, and a user would rather leave a processor idle.
    ``improvement_vs_pipedream_pct`` compares the raw speedups at P (the paper's column);
    ``improvement_upto_vs_pipedream_pct`` compares both methods' ``speedup_upto``, so a P where the greedy
    plan dips is not read as a loss a planner would accept.
    """
    # LayerPipe's settings key its rows too (a results.csv from before they were columns has none: keyed as then)
    # (and a sweep of LayerPipe's borrow values, :func:`archsim.sweep.results.borrow_cell`, by its borrow column)
    results = labelled(results, networks)
    settings = [c for c in [*SETTING_COLUMNS, BORROW_COLUMN] if c in results.columns]
    keys = ["network", "only", "mode", "processors", "method"] + settings
    config = ["network", "only", "rows", "cols", "dataflow", "batch", "mode", "method"]
    config += [BORROW_COLUMN] if BORROW_COLUMN in results.columns else []  # one borrow's best, never the other's
    config += [axis for axis in DESIGN_AXES if axis in results.columns]
    config += ["array_path"] if "array_path" in results.columns else []  # a .cfg's array: one of its shape's
    rank = borrow_rank(results[BORROW_COLUMN]) if BORROW_COLUMN in results.columns else None  # before sorting
    results = results.sort_values(config + ["processors"]).copy()
    if rank is not None:  # LayerPipe's rows in the spec's order of borrow, as results.csv's
        results["borrow_rank"] = rank
        keys.insert(keys.index(BORROW_COLUMN), "borrow_rank")
    # A planner may leave processors idle: the best speedup with at most P processors (of one design; an
    # axis a design leaves unset, a clock, is NaN and must not drop its rows).
    results["speedup_upto"] = results.groupby(config, dropna=False)["speedup"].cummax()
    summary = (results.groupby(keys, sort=True, dropna=False)  # another method's rows have no settings (NaN)
               .agg(speedup=("speedup", "mean"), speedup_min=("speedup", "min"), speedup_max=("speedup", "max"),
                    speedup_upto=("speedup_upto", "mean"),
                    additional_comm_bytes=("additional_comm_bytes", "mean"),
                    mandatory_comm_bytes=("mandatory_comm_bytes", "mean"), configs=("speedup", "size"))
               .reset_index().drop(columns="borrow_rank", errors="ignore"))
    at = ["network", "only", "mode", "processors"]
    baseline = summary[summary.method == "pipedream"].set_index(at)[["speedup", "speedup_upto"]]
    joined = summary.join(baseline.add_prefix("pipedream_"), on=at)
    summary["improvement_vs_pipedream_pct"] = improvement_pct(joined["speedup"], joined["pipedream_speedup"])
    summary["improvement_upto_vs_pipedream_pct"] = improvement_pct(joined["speedup_upto"], _upto_baseline(summary))
    return summary


def borrow_rank(borrow: pd.Series) -> pd.Series:
    """Each row's place in the order its ``borrow`` value first appears (results.csv's: the spec's order of
    ``borrow``), NaN where empty (another method's row): the sort key that keeps summary.csv in that order, where
    sorting the values themselves would put gainful before paper."""
    order = {value: place for place, value in enumerate(borrow.dropna().unique())}
    return borrow.map(order)


def _upto_baseline(summary: pd.DataFrame) -> pd.Series:
    """PipeDream's ``speedup_upto`` for each summary row: at its processor count, or, at a count PipeDream skipped
    (more processors than the network's layer groups: no row there), at the largest count below it that ran. Its
    best with at most P processors is that one's, the rest idle, as ``speedup_upto`` lets either method leave
    them; NaN where PipeDream ran at no count up to P (or not at all)."""
    at = ["network", "only", "mode"]
    base = summary.loc[summary.method == "pipedream", [*at, "processors", "speedup_upto"]]
    rows = summary[[*at, "processors"]].reset_index()
    found = pd.merge_asof(rows.sort_values("processors"), base.sort_values("processors"), on="processors", by=at,
                          direction="backward")
    return found.set_index("index")["speedup_upto"].sort_index()
