"""The order and key a sweep's rows are read in, for the report's page and its headline alike: which array a row
ran on (:func:`array_key`), and the networks' and methods' order on the page (:func:`network_order`,
:func:`method_order`). Kept apart from the page's figures (:mod:`archsim.report.sweep_report`, which loads plotly) so
that the headline (:mod:`archsim.report.headline`), which the page draws first, reads them without importing the
page back."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from archsim.report.style import METHOD_COLORS


def _in_order(present: set[str], first: Sequence[str]) -> list[str]:
    """``present``'s names in ``first``'s order, then any other alphabetically."""
    ordered = list(dict.fromkeys(name for name in first if name in present))
    return ordered + sorted(present - set(ordered))


def network_order(results: pd.DataFrame, first: Sequence[str] = ()) -> list[str]:
    """The order the page shows the networks in: ``first`` (the spec's order, as the results folder's spec.json
    records it) for those the rows hold, then any other alphabetically (a folder without spec.json: all of them)."""
    return _in_order(set(results["network"].astype(str)), first)


def method_order(results: pd.DataFrame, first: Sequence[str] = ()) -> list[str]:
    """The order the page lists, draws and stacks the methods in: ``first`` (the spec's ``methods``, as spec.json
    records them), then any other in LayerPipe's paper's order (layerpipe, pipedream, gpipe: :data:`METHOD_COLORS`'),
    then alphabetically. A method keeps its colour whatever its place."""
    return _in_order(set(results["method"].astype(str)), (*first, *METHOD_COLORS))


def array_key(data: pd.DataFrame) -> pd.Series:
    """One value per array a sweep ran: its shape, and its .cfg file where one was read."""
    key = data["rows"].astype(str) + "x" + data["cols"].astype(str)
    if "array_path" in data.columns:
        key = key + " " + data["array_path"].fillna("").astype(str)
    return key


__all__ = ["array_key", "method_order", "network_order"]
