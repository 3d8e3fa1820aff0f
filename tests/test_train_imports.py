"""A single `archsim train` keeps pandas, numba and scipy out of its process (it prints through
archsim.rows and simulates uncompiled). That the uncompiled simulation equals the compiled one is
tests/test_sim_engine_equal.py's; outputs recorded from archsim itself are not kept as expectations."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
T, C = ROOT / "configs" / "transformers", ROOT / "configs" / "clusters"
GPT3_175B = [T / "gpt3_175b.toml", "--cluster", C / "dgx_a100_superpod.toml", "--tp", "8", "--pp", "8", "--dp", "16",
             "--global-batch", "1536"]


def test_one_train_imports_neither_pandas_nor_numba_nor_scipy(tmp_path):
    """A single `train` prints through archsim.rows and simulates uncompiled: the three heavy imports
    (a quarter to half a second each) stay out of the process."""
    import subprocess
    import sys

    argv = ["train", *map(str, GPT3_175B), "--format", "json", "--out", str(tmp_path / "o.json")]
    code = (f"import sys\nfrom archsim.cli import main\nassert main({argv!r}) == 0\n"
            "print(','.join(m for m in ('pandas', 'numba', 'scipy') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.strip().splitlines()[-1:] in ([], [""])
    assert json.loads((tmp_path / "o.json").read_text())["meta"]["iteration_seconds"] > 0
