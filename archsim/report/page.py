"""A self-contained HTML study page: figures and tables, each followed by its caption.

Shared by the study commands (BPPSA, GPU validation) so every page looks and loads alike:
plotly.js is inlined once, tables print numbers to 4 significant digits, the file is written
atomically.
"""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from archsim.outputs import atomic_write_text
from archsim.report.style import table_number

Section = tuple[go.Figure | pd.DataFrame, str]  # (figure or table, caption HTML)

STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:auto}.caption{color:#333;margin:0 0 2em}"
         "table{border-collapse:collapse}td,th{padding:2px 8px;text-align:right}")


def page(title: str, sections: list[Section]) -> str:
    """One HTML document: plotly.js inlined once, each figure or table followed by its caption."""
    parts, first = [], True
    for item, caption in sections:
        if isinstance(item, pd.DataFrame):
            parts.append(item.to_html(index=False, border=0, float_format=table_number))
        else:
            parts.append(pio.to_html(item, include_plotlyjs=first, full_html=False, default_width="100%"))
            first = False
        parts.append(f'<p class="caption">{caption}</p>')
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>{''.join(parts)}</body></html>")


def write_page(path: str | Path, title: str, sections: list[Section]) -> Path:
    """Write :func:`page` atomically."""
    return atomic_write_text(path, page(title, sections))
