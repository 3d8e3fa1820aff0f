"""Reports: plotly figures and self-contained HTML pages, written atomically."""
