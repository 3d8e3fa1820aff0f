"""A self-contained HTML study page: figures and tables, each followed by its caption.

Shared by the study commands (BPPSA, GPU validation) so every page looks and loads alike:
plotly.js is inlined once, tables print numbers to 4 significant digits, the file is written
atomically.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from archsim.output_files import write_output
from archsim.report.html_page import TABLE_STYLE, Figures, document, table
from archsim.report.style import table_number

Section = tuple[go.Figure | pd.DataFrame, str]  # (figure or table, caption HTML)

STYLE = "body{font-family:sans-serif;max-width:1100px;margin:auto}.caption{color:#333;margin:0 0 2em}" + TABLE_STYLE


def page(title: str, sections: list[Section]) -> str:
    """One HTML document (:mod:`archsim.report.html_page`): plotly.js inlined once, each figure or
    table followed by its caption (already-safe markup: callers escape the user's text in it)."""
    figures, parts = Figures(), []
    for item, caption in sections:
        parts.append(table(item, table_number) if isinstance(item, pd.DataFrame) else figures(item))
        parts.append(f'<p class="caption">{caption}</p>')
    return document(title, parts, style=STYLE)


def write_page(path: str | Path, title: str, sections: list[Section]) -> Path:
    """Write :func:`page` atomically."""
    return write_output(path, page(title, sections))
