"""A sweep says what it ran: LayerPipe's ``alpha`` and ``split_axes``.

What failed before: a spec's ``alpha = 1.5`` beside ``methods = ["pipedream"]`` ran (it changes no row, where
``pipeline --alpha`` beside another ``--method`` is refused), and ``results.csv``/``summary.csv`` had no ``alpha`` or
``split_axes`` column, so two folders run at two alphas gave LayerPipe rows that could not be told apart. Now the
spec key is refused in one line naming it, and both files carry the two columns right after ``method``: the spec's
values on LayerPipe's rows, empty on the others'. Older folders still read: a results.csv without the columns is
reported as before, and cache entries without them assemble today's results.csv without recomputing.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from test_robustness import clean_error, json_rows

from archsim.cli import main
from archsim.errors import InputError
from archsim.sweep import load_spec

BASE = """[sweep]
name = "settings"
networks = ["layerpipe_sample"]
arrays = ["16x16"]
batches = [4]
processors = [2, 3]
"""
# The header as docs/formats.md lists the columns: the settings right after method, written by hand.
HEADER = ["network", "only", "rows", "cols", "dataflow", "batch", "mode", "processors", "method", "alpha",
          "split_axes", "stages", "single_processor_cycles", "iteration_cycles", "speedup", "mandatory_comm_bytes",
          "additional_comm_bytes", "network_path", "network_sha256"]
SUMMARY_KEYS = ["network", "only", "mode", "processors", "method", "alpha", "split_axes"]


def _spec(tmp_path: Path, extra: str, methods: str = '["layerpipe", "pipedream"]') -> Path:
    path = tmp_path / "settings.toml"
    path.write_text(BASE + f"methods = {methods}\n" + extra, encoding="utf-8")
    return path


def _rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    text = path.read_text(encoding="utf-8")
    return next(csv.reader(io.StringIO(text))), list(csv.DictReader(io.StringIO(text)))


@pytest.mark.parametrize("key, value, methods", [
    ("alpha", "1.5", '["pipedream"]'),
    ("alpha", "1.001", '["pipedream", "gpipe"]'),  # even at the default: stated, it says something that is not so
    ("split_axes", '["channels"]', '["gpipe"]'),
])
def test_a_layerpipe_setting_without_layerpipe_is_refused(tmp_path, capsys, key, value, methods):
    spec = _spec(tmp_path, f"{key} = {value}\n", methods)
    line = clean_error(capsys, "sweep", spec, "--out", tmp_path / "out", "--quiet")
    assert f"field '{key}'" in line and str(spec) in line and "list layerpipe in methods" in line
    assert not (tmp_path / "out").exists()  # refused as the spec is read: nothing written
    with pytest.raises(InputError, match=f"{key} tunes LayerPipe's Algorithm 1") as caught:
        load_spec(spec)
    assert caught.value.where.field == key


def test_a_layerpipe_setting_beside_layerpipe_is_taken(tmp_path):
    spec = load_spec(_spec(tmp_path, 'alpha = 1.5\nsplit_axes = ["channels"]\n'))
    assert (spec.alpha, spec.split_axes) == (1.5, ("channels",))


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> Path:
    """One folder run at alpha 1.5 on the channel axis alone (``res15``), one at the defaults (``res``)."""
    root = tmp_path_factory.mktemp("settings")
    for name, extra in (("res15", 'alpha = 1.5\nsplit_axes = ["channels"]\n'), ("res", "")):
        folder = root / name
        folder.mkdir()
        assert main(["sweep", str(_spec(folder, extra)), "--out", str(folder / "out"), "--quiet"]) == 0
    return root


def test_results_csv_names_the_settings_after_method(swept, capsys):
    """The spec's values on LayerPipe's rows, each the setting its plan used: ``pipeline`` at that alpha and axis
    (a separate run) gives the row's cycles. PipeDream's rows, which read neither, leave both empty."""
    header, rows = _rows(swept / "res15" / "out" / "results.csv")
    assert header == HEADER
    assert {(r["method"], r["alpha"], r["split_axes"]) for r in rows} == {("layerpipe", "1.5", "channels"),
                                                                          ("pipedream", "", "")}
    for row in rows:
        if row["method"] == "layerpipe":
            meta, _ = json_rows(capsys, "pipeline", "layerpipe_sample", "--array", "16x16", "--batch", "4",
                                "--mode", "exact", "--processors", row["processors"], "--alpha", "1.5",
                                "--split-axes", "channels")
            assert float(row["iteration_cycles"]) == meta["iteration_cycles"]


def test_two_alphas_give_rows_told_apart(swept):
    """The same configuration at two alphas: LayerPipe's cycles differ (1.5 lets a stage exceed the bound more) and
    now so do the rows' settings; the defaults are docs/formats.md's, 1.001 and every split axis."""
    _, fast = _rows(swept / "res" / "out" / "results.csv")
    _, slow = _rows(swept / "res15" / "out" / "results.csv")
    layerpipe = [(a, b) for a, b in zip(fast, slow, strict=True) if a["method"] == "layerpipe"]
    assert {(a["alpha"], a["split_axes"]) for a, _ in layerpipe} == {("1.001", "channels+reduction+rows")}
    assert any(a["iteration_cycles"] != b["iteration_cycles"] for a, b in layerpipe)


def test_summary_csv_keys_its_rows_by_the_settings(swept):
    header, rows = _rows(swept / "res15" / "out" / "summary.csv")
    assert header[:len(SUMMARY_KEYS)] == SUMMARY_KEYS
    assert {(r["method"], r["alpha"], r["split_axes"]) for r in rows} == {("layerpipe", "1.5", "channels"),
                                                                          ("pipedream", "", "")}
    assert len(rows) == 2 * 2  # processors × methods: no row split off or dropped by an empty setting


def test_cache_entries_from_before_the_columns_give_todays_results(swept, tmp_path):
    """Entries whose rows lack the settings (an older version's) take them from the unit each records: the same
    results.csv, nothing recomputed."""
    spec = _spec(tmp_path, 'alpha = 1.5\nsplit_axes = ["channels"]\n')
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    today = (out / "results.csv").read_bytes()
    entries = sorted((out / "cache").glob("*.json"))
    for entry in entries:
        record = json.loads(entry.read_text(encoding="utf-8"))
        record["rows"] = [{k: v for k, v in row.items() if k not in ("alpha", "split_axes")} for row in record["rows"]]
        entry.write_text(json.dumps(record), encoding="utf-8")
    written = {entry: entry.read_bytes() for entry in entries}
    (out / "results.csv").unlink()
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    assert (out / "results.csv").read_bytes() == today
    assert {entry: entry.read_bytes() for entry in sorted((out / "cache").glob("*.json"))} == written


def _without_settings(text: str) -> str:
    """A results.csv as written before the settings were columns (no cell of these holds a comma)."""
    lines = text.splitlines(keepends=True)
    at = lines[0].split(",").index("alpha")
    return "".join(",".join(line.rstrip("\n").split(",")[:at] + line.rstrip("\n").split(",")[at + 2:]) + "\n"
                   for line in lines)


@pytest.mark.long
def test_an_old_results_csv_without_the_settings_is_the_same_page(swept, tmp_path):
    """A folder written before the columns is still reported, and its page is today's: the report draws its
    LayerPipe schedule at spec.json's settings, not the rows'."""
    out = swept / "res15" / "out"
    today = (out / "results.csv").read_text(encoding="utf-8")
    pages = []
    try:
        for text in (today, _without_settings(today)):
            (out / "results.csv").write_text(text, encoding="utf-8")
            assert main(["report", str(out), "--out", str(tmp_path / "report.html")]) == 0
            page = (tmp_path / "report.html").read_text(encoding="utf-8")
            pages.append(re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "ID", page))
    finally:
        (out / "results.csv").write_text(today, encoding="utf-8")
    assert "alpha" not in _without_settings(today).split("\n", 1)[0]
    assert pages[0] == pages[1] and "--alpha 1.5" in pages[0]


@pytest.mark.parametrize("column, cell, said", [("alpha", "2.0", "alpha 2"), ("split_axes", "rows", "split_axes 'rows'")])
def test_a_layerpipe_row_of_another_setting_is_refused_by_the_report(swept, tmp_path, capsys, column, cell, said):
    """Rows left by a run at another alpha under this spec.json's record (an edited spec rerun and stopped before
    its results were written) are refused, as rows off the spec's axes are, naming the column and the line."""
    out = swept / "res15" / "out"
    today = (out / "results.csv").read_text(encoding="utf-8")
    header, rows = _rows(out / "results.csv")
    line = next(i for i, row in enumerate(rows, 2) if row["method"] == "layerpipe")
    rows[line - 2][column] = cell
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, header, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    try:
        (out / "results.csv").write_text(buffer.getvalue(), encoding="utf-8")
        said_line = clean_error(capsys, "report", out, "--out", tmp_path / "r.html")
    finally:
        (out / "results.csv").write_text(today, encoding="utf-8")
    assert f"line {line}, field '{column}'" in said_line and f"layerpipe's {said} is not the folder's spec.json's" \
        in said_line
    assert not (tmp_path / "r.html").exists()
