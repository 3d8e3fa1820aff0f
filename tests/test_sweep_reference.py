"""Sweeps against files recorded before their code path was sped up: results.csv and summary.csv
must stay byte-identical.

Recorded with the code of commit 2f42dea (before LayerPipe's split search was rebuilt, networks and
lowerings were shared across a sweep's units, and tasks were sent in chunks):
``run_sweep(load_spec(SPEC), OUT)`` with one worker, OUT's results.csv and summary.csv gzipped
(mtime 0) into ``tests/data/sweep_reference/NAME.{results,summary}.csv.gz``. The two specs: the
default sweep (paper mode, ws) and ``exact_mix.toml`` (exact mode, all dataflows, small and
non-square arrays), which exercises every split axis's search. The files' header lines were since
renamed to today's column names, values untouched, and the files were regenerated four times, for the
stranded-δ′ accounting, for a borrowed whole δ's weights, for reduction partial sums counted once and for
one partial sum crossing when both reduction pieces are borrowed, each moving only ``additional_comm_bytes``
(tests/data/README.md says which and why). ``summary.csv``'s last column,
``improvement_upto_vs_pipedream_pct``, came after the recording: the recorded columns must be unchanged
byte for byte, and the new one must be the recorded ``speedup_upto`` over PipeDream's, less one, in percent.
The ``alpha`` and ``split_axes`` columns after ``method`` (both files) came later still: neither spec states them, so
LayerPipe's rows must carry the documented defaults (docs/formats.md: alpha 1.001, every split axis) and the other
methods' rows nothing; without them the files are the recorded bytes.
"""

import csv
import gzip
import io
from pathlib import Path

import pytest

from archsim.sweep import load_spec, run_sweep

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data" / "sweep_reference"


def first_difference(actual: bytes, expected: bytes) -> str:
    for number, (a, e) in enumerate(zip(actual.splitlines(), expected.splitlines()), 1):
        if a != e:
            return f"line {number}:\n  now     {a.decode()}\n  before  {e.decode()}"
    return f"{len(actual.splitlines())} lines now, {len(expected.splitlines())} before"


@pytest.mark.long
@pytest.mark.parametrize("name, spec, workers", [
    ("layerpipe_paper", ROOT / "configs" / "sweeps" / "layerpipe_paper.toml", 1),
    ("exact_mix", DATA / "exact_mix.toml", 2),
])
def test_sweep_files_are_byte_identical_to_the_recorded_ones(tmp_path, name, spec, workers):
    run_sweep(load_spec(spec), tmp_path, workers=workers, progress=False)
    for kind in ("results", "summary"):
        actual = _without_settings((tmp_path / f"{kind}.csv").read_bytes())
        expected = gzip.decompress((DATA / f"{name}.{kind}.csv.gz").read_bytes())
        if kind == "summary":
            actual = _recorded_columns(actual, expected)
        assert actual == expected, f"{name} {kind}.csv differs, {first_difference(actual, expected)}"


UPTO = "improvement_upto_vs_pipedream_pct"
DEFAULT_SETTINGS = ("1.001", "channels+reduction+rows")  # docs/formats.md's defaults, as the file writes them


def _without_settings(actual: bytes) -> bytes:
    """``actual`` without its ``alpha`` and ``split_axes`` columns (right after ``method``), once each row's are
    checked: the defaults on LayerPipe's rows, empty on the others'. No cell of these sweeps holds a comma."""
    lines = actual.decode().splitlines(keepends=True)
    header = lines[0].rstrip("\n").split(",")
    at = header.index("method") + 1
    assert header[at:at + 2] == ["alpha", "split_axes"]
    kept = []
    for line in lines:
        cells = line.rstrip("\n").split(",")
        if line is not lines[0]:
            assert tuple(cells[at:at + 2]) == (DEFAULT_SETTINGS if cells[at - 1] == "layerpipe" else ("", "")), line
        kept.append(",".join(cells[:at] + cells[at + 2:]) + "\n")
    return "".join(kept).encode()


def _recorded_columns(actual: bytes, expected: bytes) -> bytes:
    """``actual`` without the column added after the recording, once that column is checked against the
    recorded speed-ups: each LayerPipe/GPipe row's best speed-up with at most P processors over
    PipeDream's at the same network, mode and P."""
    lines = actual.decode().splitlines(keepends=True)
    assert lines[0].rstrip("\n").endswith("," + UPTO)
    rows = list(csv.DictReader(io.StringIO(expected.decode())))
    upto = [float(row[UPTO]) if row[UPTO] else None for row in csv.DictReader(io.StringIO(actual.decode()))]
    pipedream = {(r["network"], r["only"], r["mode"], r["processors"]): float(r["speedup_upto"])
                 for r in rows if r["method"] == "pipedream"}
    for row, value in zip(rows, upto, strict=True):
        base = pipedream.get((row["network"], row["only"], row["mode"], row["processors"]))
        if base is None or value is None:
            continue
        assert value == pytest.approx((float(row["speedup_upto"]) / base - 1.0) * 100.0, rel=1e-9, abs=1e-9)
    return "".join(line[:line.rstrip("\n").rindex(",")] + "\n" for line in lines).encode()
