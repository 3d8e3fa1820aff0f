"""The sample of NeuSight's kernel measurements in tests/data/neusight_kernels/ read with the csv module, the
reference the validate-gpu and kernel-time tests compare against, and a command's JSON output read back."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from archsim.cli import main

KERNELS = Path(__file__).resolve().parent / "data" / "neusight_kernels"


def csv_records(name: str) -> list[dict[str, str]]:
    """The rows of the sample's ``name``.csv (linear, bmm, …) as the csv module reads them."""
    with open(KERNELS / f"{name}.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def json_output(capsys, argv: list[str]) -> dict:
    """``archsim ARGV`` (exit 0), its stdout read as JSON."""
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)
