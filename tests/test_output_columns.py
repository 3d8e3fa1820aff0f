"""Every command's output carries the same names in every format, and every name is documented.

Runs the invocations of ``output_commands.py`` in json and csv (and table): the CSV header is the JSON
rows' keys followed by the meta's single values (nothing JSON has is lost, and nothing is renamed);
every name printed — and every column of a small design sweep's results.csv and summary.csv — is in
docs/formats.md's "Output columns" tables with a unit and a meaning, and every name documented there is
printed by one of them (no stale entries).
"""

from __future__ import annotations

import csv
import io
import json
import re
import tempfile
from functools import cache
from pathlib import Path

import pytest

from archsim.cli import main
from output_commands import COMMANDS, SWEEP_SPEC
from test_docs import ROOT, table_keys

NESTED = {"levels", "time_per_stage_by_machines"}  # JSON-only meta (lists): documented as such


@cache
def output(form: str, fmt: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    from contextlib import redirect_stderr, redirect_stdout

    with redirect_stdout(out), redirect_stderr(err):
        code = main(COMMANDS[form] + ["--format", fmt])
    assert code == 0, err.getvalue()
    return out.getvalue()


def json_names(form: str) -> tuple[list[str], dict]:
    doc = json.loads(output(form, "json"))
    return list(dict.fromkeys(key for row in doc["rows"] for key in row)), doc["meta"]


@pytest.mark.parametrize("form", COMMANDS)
def test_csv_carries_what_json_has(form):
    columns, meta = json_names(form)
    rows = list(csv.reader(io.StringIO(output(form, "csv"))))
    scalars = [key for key, value in meta.items() if key not in columns and not isinstance(value, (list, dict))]
    assert rows[0] == columns + scalars
    doc_rows = json.loads(output(form, "json"))["rows"]
    assert len(rows) - 1 == len(doc_rows)
    for key in scalars:  # the meta's values, not only their names
        value = meta[key]
        cell = rows[1][rows[0].index(key)]
        assert cell == ("" if value is None else str(value)), key


@pytest.mark.parametrize("form", COMMANDS)
def test_the_table_shows_the_meta_too(form):
    _, meta = json_names(form)
    table = output(form, "table")
    for key, value in meta.items():
        if not isinstance(value, (list, dict)):
            assert f"# {key}: " in table, key


def documented() -> dict[str, tuple[str, str]]:
    text = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8").split("## Output columns\n", 1)[1]
    entries = {}
    for name, unit, meaning in re.findall(r"^\| `([^`]+)` \| ([^|]*) \| ([^|]*) \|$", text, flags=re.M):
        assert name not in entries, f"{name} documented twice"
        entries[name] = (unit.strip(), meaning.strip())
    return entries


def test_every_documented_name_has_a_unit_and_a_meaning():
    entries = documented()
    assert len(entries) > 100 and sum(len(t) for t in table_keys("formats.md", "## Output columns")) == len(entries)
    assert all(unit and meaning for unit, meaning in entries.values())


@cache
def sweep_names() -> tuple[str, ...]:
    """The header names of a design sweep's results.csv and summary.csv."""
    from contextlib import redirect_stderr, redirect_stdout

    with tempfile.TemporaryDirectory() as folder:
        spec = Path(folder) / "columns.toml"
        spec.write_text(SWEEP_SPEC, encoding="utf-8")
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()) as err:
            code = main(["sweep", str(spec), "--out", str(Path(folder) / "out"), "--quiet"])
        assert code == 0, err.getvalue()
        names = []
        for name in ("results.csv", "summary.csv"):
            with (Path(folder) / "out" / name).open(newline="", encoding="utf-8") as handle:
                names += next(csv.reader(handle))
    return tuple(dict.fromkeys(names))


def test_the_sweep_writes_its_design_columns():
    assert {"single_processor_cycles", "speedup", "clock_ghz", "energy_pj", "improvement_vs_pipedream_pct"} <= set(sweep_names())


def test_every_printed_name_is_documented_and_every_documented_name_is_printed():
    printed = set(sweep_names())
    for form in COMMANDS:
        columns, meta = json_names(form)
        printed |= set(columns) | set(meta)
    names = set(documented())
    assert sorted(printed - names) == [], "printed but not documented"
    assert sorted(names - printed) == [], "documented but printed by none of output_commands.py"
    assert NESTED <= names
