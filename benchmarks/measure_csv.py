"""The CSV a GPU measuring script writes (``gpu_train_measure.py``, ``gpu_efficiency_probe.py``): ``# key:
value`` metadata lines, then a header and one line per measurement, rewritten whole (atomically) after every
step so a run stopped from outside keeps what it measured."""

from __future__ import annotations

import datetime
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from archsim.outputs import atomic_write_text


def csv_text(meta: Mapping[str, object], columns: Sequence[str], rows: Sequence[Mapping[str, object]]) -> str:
    """``# key: value`` lines (each value on one line), then ``columns`` and one line per row."""
    head = "".join(f"# {key}: {' '.join(str(value).split())}\n" for key, value in meta.items())
    body = [",".join(columns)] + [",".join(str(row[c]) for c in columns) for row in rows]
    return head + "\n".join(body) + "\n"


def write_csv(out: Path, meta: Mapping[str, object], columns: Sequence[str],
              rows: Sequence[Mapping[str, object]]) -> None:
    """:func:`csv_text` to ``out``, replacing it whole."""
    atomic_write_text(out, csv_text(meta, columns, rows))


def command_line(script: str, argv: list[str] | None) -> str:
    """How the run was started, for the ``command`` metadata line: ``python3 benchmarks/<script>.py ARGS``."""
    return shlex.join(["python3", f"benchmarks/{script}.py", *(argv if argv is not None else sys.argv[1:])])


def utc_now() -> str:
    """The ``date`` metadata line: now, UTC, to the second (ISO 8601)."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
