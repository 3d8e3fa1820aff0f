"""The one HTML page builder: every archsim page (Gantt, plan, cluster, sweep, report, study pages)
is assembled here, and every string that can come from a user's file or flag is escaped on its way in.

Why one place: a network, layer, GPU or cluster name is the user's text, and a page built from
someone else's model file must not run that file's script. Three channels reach the browser:

* page text (``<title>``, headings, captions, code) — :func:`esc`, applied by :func:`document`
  and :func:`section` to everything they are given as text;
* tables — pandas' ``to_html`` escapes cells and headers (``escape=True``, kept on in :func:`table`);
* plotly figures — plotly.js renders titles, trace names, category labels and hover text as a
  small HTML dialect (``<b>``, ``<br>``, ``<a href>``), so :func:`safe_figure` escapes each such
  string (plotly shows the entities as the characters), leaving archsim's own templates
  (``hovertemplate``) alone; plotly writes the figure's JSON with ``<``/``>`` as ``\\u003c``, so
  nothing in it can close the ``<script>`` it sits in.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from archsim.output_files import write_output

# A table wider than the page scrolls inside itself (the page, its headings and figures stay put), and a cell
# ("interleaved-zb", "0.999–1.4") is never broken across lines: every page's style starts with these rules.
# A column's header aligns as its cells: text left, numbers right (their digits in line) — a column of numbers
# is named by its table's class numN (N from 1, :func:`table`), up to NUMBER_COLUMNS columns (later ones left).
NUMBER_COLUMNS = 40
TABLE_STYLE = ("table{border-collapse:collapse;display:block;max-width:100%;overflow-x:auto}td,th{padding:2px 8px}"
               "td{white-space:nowrap}th{text-align:left}"
               + ",".join(f"table.num{n} td:nth-child({n}),table.num{n} th:nth-child({n})"
                          for n in range(1, NUMBER_COLUMNS + 1)) + "{text-align:right}")
BASE_STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:auto}section{margin:2em 0}" + TABLE_STYLE +
              ".caption{color:#333;margin:0 0 2em}.cmd{color:#555;font-size:90%}")
# Keys of a plotly figure whose strings plotly.js renders as (its dialect of) HTML.
TEXT_KEYS = frozenset({"text", "name", "hovertext", "ticktext", "tickvals", "categoryarray", "title", "x", "y",
                       "labels", "label"})


def esc(text: object) -> str:
    """``text`` as HTML text or attribute value: ``& < > " '`` as entities."""
    return html.escape(str(text), quote=True)


def _escaped(value: Any) -> Any:  # any plotly JSON value
    if isinstance(value, str):  # archsim's own line breaks (\n: names never hold control characters) as plotly's
        return esc(value).replace("\n", "<br>")
    if isinstance(value, (list, tuple)):
        return [_escaped(v) for v in value]
    if hasattr(value, "dtype") and getattr(value.dtype, "kind", "") in "OUS":  # numpy arrays of strings
        return [_escaped(v) for v in value.tolist()]
    return value


def _walk(node: Any, key: str | None = None) -> Any:
    if isinstance(node, dict):
        return {k: _escaped(v) if k in TEXT_KEYS and not isinstance(v, dict) else _walk(v, k) for k, v in node.items()}
    if isinstance(node, list):
        return [_walk(v, key) for v in node]
    return node


def safe_figure(fig: go.Figure) -> dict:
    """``fig`` as a figure dict whose every rendered string (titles, names, categories, hover text,
    annotations, button labels) is escaped; templates, numbers and plotly's theme untouched."""
    spec = fig.to_dict()
    layout = dict(spec.get("layout", {}))
    theme = layout.pop("template", None)  # plotly's own theme: no user text, and large
    layout = _walk(layout)
    if theme is not None:
        layout["template"] = theme
    return {"data": _walk(spec.get("data", [])), "layout": layout}


def figure(fig: go.Figure, *, first: bool) -> str:
    """A ``<div>`` with the escaped figure; plotly.js inlined when ``first`` (once per page)."""
    return pio.to_html(safe_figure(fig), include_plotlyjs=first, full_html=False, default_width="100%",
                       validate=False)  # validated when ``fig`` was built


# A cell that shows a number: digits with an optional sign, thousands commas, decimals and exponent (a page's
# pre-formatted "0.918", "1,234", "1e+05").
NUMBER_TEXT = re.compile(r"[-+−]?(?=\.?\d)[\d,]*(?:\.\d*)?(?:[eE][-+]?\d+)?")


def is_number_column(column: pd.Series) -> bool:
    """Whether a table column shows numbers: a numeric dtype (not bool), or values each a number or a string
    that reads as one (a page may format its numbers before the table; a blank or NaN cell counts as neither)."""
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    if is_bool_dtype(column.dtype):
        return False
    if is_numeric_dtype(column.dtype):
        return True
    shown = [value for value in column.dropna() if not (isinstance(value, str) and not value.strip())]
    return bool(shown) and all(
        isinstance(value, str) and NUMBER_TEXT.fullmatch(value.strip()) is not None
        or isinstance(value, (int, float)) and not isinstance(value, bool) for value in shown)


def table(frame: pd.DataFrame, float_format: Callable[[float], str] | None = None, **options) -> str:
    """``frame`` as an HTML table, cells and headers escaped; each column of numbers (:func:`is_number_column`)
    named in the table's classes (``numN``), which :data:`TABLE_STYLE` aligns right, header and cells alike."""
    given = options.pop("classes", None)
    classes = ([given] if isinstance(given, str) else list(given or [])) + [
        f"num{n}" for n in range(1, frame.shape[1] + 1) if is_number_column(frame.iloc[:, n - 1])]
    return frame.to_html(index=False, border=0, float_format=float_format, escape=True, classes=classes or None,
                         **options)


def section(title: str, body_html: str, footer_html: str = "") -> str:
    """``<section>`` with an escaped heading; ``body_html``/``footer_html`` are already-safe markup."""
    return f"<section><h2>{esc(title)}</h2>{body_html}{footer_html}</section>"


class Figures:
    """Renders a page's figures in order, inlining plotly.js with the first only."""

    def __init__(self) -> None:
        self.first = True

    def __call__(self, fig: go.Figure) -> str:
        text = figure(fig, first=self.first)
        self.first = False
        return text


def document(title: str, parts: Iterable[str], *, heading: str | None = None, intro_html: str = "",
             style: str = BASE_STYLE) -> str:
    """A whole page: escaped ``<title>`` and ``<h1>`` (``heading``, default the title), then
    ``intro_html`` and ``parts`` (markup built with this module's functions)."""
    shown = title if heading is None else heading
    head = f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{esc(title)}</title><style>{style}</style></head>"
    h1 = f"<h1>{esc(shown)}</h1>" if shown else ""
    return f"{head}<body>{h1}{intro_html}{''.join(parts)}</body></html>"


def write_document(path: str | Path, title: str, parts: Iterable[str], **options) -> Path:
    """:func:`document`, written atomically."""
    return write_output(path, document(title, parts, **options))


