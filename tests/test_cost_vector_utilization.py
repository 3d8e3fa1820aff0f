"""``archsim cost`` prints utilization 0 on pool, elementwise and batchnorm layers: they run on the vector
unit, no MAC on the PE array. The column's documentation (docs/formats.md, "cost") says so, names every
such kind, and the rows agree with what it says."""

from __future__ import annotations

import json
import math
import re

import pytest
from test_docs import ROOT

from archsim.cli import main
from archsim.lowering import lower_network
from archsim.workload import load_network

BATCH, ROWS, COLS = 2, 16, 16


def _vector_kinds(name: str) -> set[str]:
    """The layer kinds whose every op is vector-unit work (no GEMM), read from the lowering."""
    lowered = lower_network(load_network(name), BATCH, "exact", 1)
    return {item.layer.kind for item in lowered if item.ops and all(not op.gemms for op in item.ops)}


def _doc_row(column: str) -> str:
    text = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    section = text[text.index("### cost\n"):]
    return re.search(rf"^\| `{column}` \|.*$", section, re.MULTILINE).group(0)


def test_the_utilization_column_says_why_vector_layers_read_zero():
    kinds = _vector_kinds("resnet50")
    assert kinds == {"pool", "elementwise", "batchnorm"}
    row = _doc_row("F_utilization")
    assert "0 by definition" in row and "vector unit" in row and "⌈elements / array columns⌉" in row
    for kind in kinds:
        assert f"`{kind}`" in row
    for column in ("G_utilization", "D_utilization"):
        assert "0 on vector-unit layers" in _doc_row(column)


def test_cost_rows_agree_with_the_documented_reason(capsys):
    assert main(["cost", "resnet50", "--batch", str(BATCH), "--array", f"{ROWS}x{COLS}", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    by_name = {row["layer"]: row for row in rows}
    lowered = lower_network(load_network("resnet50"), BATCH, "exact", 1)
    macs = cycles = 0
    for item in lowered:
        row = by_name[item.layer.name]
        for op in item.ops:
            if op.kind == "F":
                cycles += row["F_cycles"]
                macs += sum(g.m * g.k * g.n * g.count for g in op.gemms)
            if op.gemms:
                continue
            # a vector-unit op: one lane per array column, and no PE busy
            assert row[f"{op.kind}_cycles"] == math.ceil(op.vector_elements / COLS)
            assert row[f"{op.kind}_utilization"] == 0
    # TOTAL: the forward MACs over every forward cycle on every PE, the vector unit's cycles counted idle
    assert by_name["TOTAL"]["F_utilization"] == pytest.approx(macs / (cycles * ROWS * COLS), rel=1e-12)
