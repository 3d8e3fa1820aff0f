"""``validate-gpu --show kernels``' split column holds the ways the model cut a kernel's GEMM over the arrays: the
reduction under ``os`` (split-K) and, since ws and is GEMMs of few folds split their streamed dimension, M under
``ws`` and N under ``is`` too. It was named ``split_k``, which said the reduction alone: a ``ws`` run with split-K
off (``--no-split-k``) showed splits in a column that named split-K. Now it is ``split``."""

from __future__ import annotations

import json
from pathlib import Path

from archsim.cli import main
from archsim.devices.array_waves import SPLIT_AXIS

V100 = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "deepbench_v100_kernels.csv"


def _rows(capsys, *flags: str) -> list[dict]:
    assert main(["validate-gpu", "--csv", str(V100), "--show", "kernels", "--format", "json", *flags]) == 0
    return json.loads(capsys.readouterr().out)["rows"]


def test_a_ws_run_without_split_k_shows_its_streamed_splits_as_split(capsys):
    assert SPLIT_AXIS["ws"] == 0  # ws cuts M, its streamed rows, not the reduction (k is axis 1)
    rows = _rows(capsys, "--dataflow", "ws", "--no-split-k")
    assert "split_k" not in rows[0] and any(row["split"] > 1 for row in rows)


def test_an_os_run_without_split_k_splits_nothing(capsys):
    rows = _rows(capsys, "--dataflow", "os", "--no-split-k")
    assert {row["split"] for row in rows} == {1}
