"""Every command's output carries the same names in every format, and every name is documented.

Runs the invocations of ``output_commands.py`` in json and csv (and table): the CSV header is the JSON
rows' keys followed by the meta's single values (nothing JSON has is lost, and nothing is renamed);
every name printed — and every column of a small design sweep's results.csv and summary.csv, and of a
device sweep's results.csv — is in
docs/formats.md's "Output columns" tables with a unit and a meaning, and every name documented there is
printed by one of them (no stale entries). No two names of one quantity (SYNONYMS: today's name and the
names it replaced or could be mistaken for) are printed anywhere, by any command.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import shutil
import tempfile
from functools import cache
from pathlib import Path

import pytest
from output_commands import CFG_SWEEP_SPEC, COMMANDS, DEVICE_SWEEP_SPEC, SWEEP_SPEC
from test_docs import ROOT

from archsim.cli import main

NESTED = {"levels", "time_per_stage_by_machines", "memory_per_rank", "after_backward_seconds",
          "timeline", "pareto"}  # JSON-only meta (lists, objects): documented as such
FLATTENED = {"rejected", "breakdown_seconds", "compute_split_seconds", "intra_server",
             "inter_server", "energy_breakdown_j", "stage_counts", "baselines_seconds", "steps_by_up_levels",
             "critical_path_flops_by_up_levels",
             "work_flops_by_up_levels", "energy_figures", "jacobian_density"}  # JSON's lists/objects that csv (and table) carry as one line of text
# One quantity, one name: each group lists today's name first, then names that must never be printed
# (names it replaced — results.csv's old ones are still read, see test_results_old_names.py — or synonyms).
SYNONYMS = (
    ("single_processor_cycles", "single_cycles"),
    ("iteration_cycles", "cycles_per_iteration", "bottleneck_cycles"),
    ("iteration_seconds", "seconds_per_iteration", "iteration_time_s", "iteration_time"),
    ("mandatory_comm_bytes", "mandatory_bytes"),
    ("additional_comm_bytes", "comm_overhead_bytes"),
    ("bandwidth_words_per_cycle", "bandwidth"),
    ("bubble_fraction", "bubble_rate", "bubble"),  # zb_bubble_rate is another quantity (the paper's span-based rate)
    ("peak_activation_bytes", "peak_stash_bytes"),  # the stash alone (schedule printed it as peak_memory_bytes)
    ("peak_memory_bytes", "peak_bytes"),  # all of a device's memory; train, search: peak_memory_gib
    ("memory_capacity_bytes", "capacity_bytes"),  # train: memory_capacity_gib
    ("gpus", "device_count", "num_gpus", "num_gpu"),
    ("scan_steps", "bppsa_steps"),
    ("scan_critical_path_flops", "bppsa_critical_path_flops"),
    ("microbatches", "micro_batches", "num_microbatches"),
    ("makespan", "makespan_cycles"),
    ("type", "kind", "layer_kind"),  # a layer's kind (an op's is `op`: F, G, D)
)


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


def _not_json(constant: str) -> float:
    raise ValueError(f"{constant} is not JSON (RFC 8259)")


@pytest.mark.parametrize("form", COMMANDS)
def test_json_is_what_a_strict_parser_reads(form):
    """NaN and infinities are null: parsed as JavaScript, jq, Go and Rust do (tests/test_strict_json.py)."""
    assert isinstance(json.loads(output(form, "json"), parse_constant=_not_json), dict)


@pytest.mark.parametrize("form", COMMANDS)
def test_csv_carries_what_json_has(form):
    columns, meta = json_names(form)
    rows = list(csv.reader(io.StringIO(output(form, "csv"))))
    scalars = [key for key, value in meta.items() if key not in columns and not isinstance(value, (list, dict))]
    flattened = [key for key in rows[0] if key not in columns + scalars]
    assert set(flattened) <= FLATTENED & set(meta), flattened  # a nested entry's one-line text, nothing else
    assert [key for key in rows[0] if key not in flattened] == columns + scalars
    doc_rows = json.loads(output(form, "json"))["rows"]
    assert len(rows) - 1 == len(doc_rows)
    for key in scalars:  # the meta's values, not only their names
        value = meta[key]
        cell = rows[1][rows[0].index(key)]
        assert cell == ("" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)), key


@pytest.mark.parametrize("form", COMMANDS)
def test_the_table_shows_the_meta_too(form):
    _, meta = json_names(form)
    table = output(form, "table")
    for key, value in meta.items():
        if not isinstance(value, (list, dict)):
            assert f"# {key}: " in table, key


ROW = r"^\| ((?:`[^`]+`(?:, )?)+) \| ([^|]*) \| ([^|]*) \|$"  # names | unit | meaning


def documented() -> dict[str, tuple[str, str]]:
    text = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8").split("## Output columns\n", 1)[1]
    entries = {}
    for names, unit, meaning in re.findall(ROW, text, flags=re.MULTILINE):  # a row may name several (`ep`, `etp`)
        for name in re.findall(r"`([^`]+)`", names):
            assert name not in entries, f"{name} documented twice"
            entries[name] = (unit.strip(), meaning.strip())
    return entries


def test_every_documented_name_has_a_unit_and_a_meaning():
    entries = documented()
    section = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8").split("## Output columns\n", 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert len(entries) > 100 and len(rows) == len(re.findall(ROW, section, flags=re.MULTILINE))  # none unparsed
    assert all(unit and meaning for unit, meaning in entries.values())


@cache
def sweep_names() -> tuple[str, ...]:
    """The header names of a design sweep's results.csv and summary.csv, a .cfg array sweep's results.csv, and
    a device sweep's results.csv."""
    from contextlib import redirect_stderr, redirect_stdout

    names = []
    with tempfile.TemporaryDirectory() as folder:
        shutil.copy(ROOT / "configs" / "arrays" / "scalesim_32x32_ws.cfg", Path(folder) / "columns.cfg")
        for text, files in ((SWEEP_SPEC, ("results.csv", "summary.csv")), (CFG_SWEEP_SPEC, ("results.csv",)),
                            (DEVICE_SWEEP_SPEC, ("results.csv",))):
            spec = Path(folder) / "columns.toml"
            spec.write_text(text, encoding="utf-8")
            out = Path(folder) / f"out{len(names)}"
            with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()) as err:
                code = main(["sweep", str(spec), "--out", str(out), "--quiet"])
            assert code == 0, err.getvalue()
            for name in files:
                with (out / name).open(newline="", encoding="utf-8") as handle:
                    names += next(csv.reader(handle))
    return tuple(dict.fromkeys(names))


def test_the_sweep_writes_its_design_columns():
    assert {"single_processor_cycles", "speedup", "clock_ghz", "energy_pj", "improvement_vs_pipedream_pct"} <= set(sweep_names())
    assert {"hbm_gbps", "gpus", "fits_memory", "pareto_optimal", "energy_j"} <= set(sweep_names())  # a device sweep's


def table_meta_names(form: str) -> list[str]:
    """The ``# name: value`` lines above a table (the table may add notes JSON has not)."""
    return [line[2:].split(":", 1)[0] for line in output(form, "table").splitlines() if line.startswith("# ")]


@cache
def printed_names() -> dict[str, set[str]]:
    """Every name any command prints in any format (and the sweep writes) → the forms that print it."""
    printed: dict[str, set[str]] = {name: {"sweep"} for name in sweep_names()}
    for form in COMMANDS:
        columns, meta = json_names(form)
        csv_header = next(csv.reader(io.StringIO(output(form, "csv"))))
        for name in [*columns, *meta, *csv_header, *table_meta_names(form)]:
            printed.setdefault(name, set()).add(form)
    return printed


def test_every_printed_name_is_documented_and_every_documented_name_is_printed():
    printed = set(printed_names())
    names = set(documented())
    assert sorted(printed - names) == [], "printed but not documented"
    assert sorted(names - printed) == [], "documented but printed by none of output_commands.py"
    assert NESTED <= names


def test_one_quantity_is_printed_under_one_name_only():
    printed = printed_names()
    for group in SYNONYMS:
        assert group[0] in printed, f"{group[0]} is printed by none of output_commands.py"
        for other in group[1:]:
            assert other not in printed, f"{other} (printed by {sorted(printed[other])}) is {group[0]}"
    documented_names = documented()
    for group in SYNONYMS:
        assert group[0] in documented_names and not set(group[1:]) & set(documented_names), group


def test_every_documented_unit_is_a_unit():
    """The unit column names a unit, a count or a kind of value: never blank, never a sentence."""
    for name, (unit, _) in documented().items():
        assert unit and len(unit) <= 60, name
