"""Sweep outputs written before every quantity took one name (docs/formats.md, "Output columns") are
still read: a results.csv with the old column names gives `archsim report` the same page as today's,
and cached unit rows with the old keys assemble today's results.csv without recomputing."""

from __future__ import annotations

import gzip
import io
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from archsim.cli import main
from archsim.sweep.report import read_results

DATA = Path(__file__).parent / "data" / "sweep_reference"
# today's name → the name results.csv (and its cache) used before, as the recorded files had them
OLD = {"single_processor_cycles": "single_cycles", "iteration_cycles": "cycles_per_iteration",
       "mandatory_comm_bytes": "mandatory_bytes", "additional_comm_bytes": "comm_overhead_bytes",
       "iteration_seconds": "seconds_per_iteration", "bandwidth_words_per_cycle": "bandwidth"}
# the header line of tests/data/sweep_reference/*.results.csv.gz as recorded (tests/data/README.md)
RECORDED_HEADER = ("network,only,rows,cols,dataflow,batch,mode,processors,method,stages,single_cycles,"
                   "cycles_per_iteration,speedup,mandatory_bytes,comm_overhead_bytes,network_path,network_sha256")
SPEC = """[sweep]
name = "old_names"
networks = ["layerpipe_sample"]
arrays = ["16x16"]
batches = [4]
processors = [2, 3]
methods = ["layerpipe", "pipedream"]
sram_kb = [64]
clocks_ghz = [1.0]
"""


def with_old_header(text: str) -> str:
    header, rest = text.split("\n", 1)
    return ",".join(OLD.get(name, name) for name in header.split(",")) + "\n" + rest


def test_the_recorded_header_reads_as_todays_names(tmp_path):
    today = gzip.decompress((DATA / "exact_mix.results.csv.gz").read_bytes()).decode()
    old = RECORDED_HEADER + "\n" + today.split("\n", 1)[1]
    assert with_old_header(today) == old  # OLD covers every renamed column of the recorded file
    for name, text in (("old", old), ("new", today)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.csv").write_text(text, encoding="utf-8")
    pd.testing.assert_frame_equal(read_results(tmp_path / "old"), read_results(tmp_path / "new"))
    assert list(read_results(tmp_path / "old").columns) == today.split("\n", 1)[0].split(",")


@pytest.mark.long
def test_report_on_an_old_results_csv_is_the_same_page(tmp_path):
    spec = tmp_path / "old_names.toml"
    spec.write_text(SPEC, encoding="utf-8")
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    today = (out / "results.csv").read_text(encoding="utf-8")
    assert {"iteration_seconds", "bandwidth_words_per_cycle"} <= set(today.split("\n", 1)[0].split(","))
    pages = []
    for text in (today, with_old_header(today)):
        (out / "results.csv").write_text(text, encoding="utf-8")
        assert main(["report", str(out), "--out", str(tmp_path / "report.html")]) == 0
        page = (tmp_path / "report.html").read_text(encoding="utf-8")
        pages.append(re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "ID", page))  # plotly's div ids
    assert text != today and pages[0] == pages[1] and "Pareto" in pages[0]


def test_cached_rows_with_old_names_assemble_todays_results(tmp_path):
    spec = tmp_path / "old_names.toml"
    spec.write_text(SPEC, encoding="utf-8")
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    today = (out / "results.csv").read_bytes()
    cache = sorted((out / "cache").glob("*.json"))
    for file in cache:  # the unit files an older version wrote
        record = json.loads(file.read_text(encoding="utf-8"))
        record["rows"] = [{OLD.get(k, k): v for k, v in row.items()} for row in record["rows"]]
        file.write_text(json.dumps(record), encoding="utf-8")
    written = {file: file.read_bytes() for file in cache}
    (out / "results.csv").unlink()
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    assert (out / "results.csv").read_bytes() == today
    assert {file: file.read_bytes() for file in sorted((out / "cache").glob("*.json"))} == written  # nothing recomputed
    assert "single_cycles" not in pd.read_csv(io.BytesIO(today)).columns
