"""docs/quickstart.md's sentence on `archsim gemm --m 64 --k 40 --n 48 --array 8x8 --dataflow ws` states its
cycles and folds; here they are counted by hand, as SCALE-Sim's weight-stationary schedule has them."""

from __future__ import annotations

import io
import math

import pandas as pd
from test_docs import ROOT

from archsim.cli import main


def test_the_quickstart_gemm_figures_are_the_hand_count(capsys):
    m, k, n, rows, cols = 64, 40, 48, 8, 8
    folds = math.ceil(k / rows) * math.ceil(n / cols)  # ws: the K × N filter tiled over the array: 5 × 6
    per_fold = 2 * rows + cols + m - 2  # fill, M ifmap rows streamed, drain (SCALE-Sim's ws fold)
    cycles = folds * per_fold - 1  # SCALE-Sim counts the last cycle's index
    assert main(["gemm", "--m", str(m), "--k", str(k), "--n", str(n), "--array", "8x8", "--dataflow", "ws",
                 "--format", "csv"]) == 0
    row = pd.read_csv(io.StringIO(capsys.readouterr().out), comment="#").iloc[0]
    assert (int(row["cycles"]), int(row["folds"])) == (cycles, folds)
    assert abs(row["utilization"] - m * k * n / (cycles * rows * cols)) < 1e-9
    page = " ".join((ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8").split())
    assert f"It prints {cycles:,} cycles in {folds} `folds`" in page
