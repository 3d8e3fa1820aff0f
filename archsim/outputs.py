"""Writing results: atomic files and the table/csv/json renderings every command shares."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from archsim.errors import InputError

FORMATS = ("table", "csv", "json")


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` via a temp file in the same folder and ``os.replace``.

    A crash mid-write leaves the old file (or none), never half a file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file the usual permissions
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _plain(value: object) -> object:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def render(frame: pd.DataFrame, fmt: str, *, meta: dict[str, object] | None = None,
           float_format: str = "{:.4g}") -> str:
    """Render a result frame as an aligned table, CSV, or JSON (``{"meta": …, "rows": […]}``)."""
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}", field="format")
    if fmt == "csv":
        return frame.to_csv(index=False)
    if fmt == "json":
        rows = [{k: _plain(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]
        return json.dumps({"meta": meta or {}, "rows": rows}, indent=2) + "\n"
    shown = frame.copy()
    for column in shown.columns:
        if pd.api.types.is_float_dtype(shown[column]):
            shown[column] = shown[column].map(lambda x: float_format.format(x))
    header = "".join(f"# {k}: {v}\n" for k, v in (meta or {}).items())
    return header + shown.to_string(index=False) + "\n"
