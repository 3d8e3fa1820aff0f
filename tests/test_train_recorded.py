"""`archsim train`'s JSON equals outputs recorded before the speed work (tests/data/train_recorded/):
GPT-3 175B on a DGX A100 SuperPOD and, interleaved, on 384 A100 servers; GPT-3 1.3B with sequence
parallelism on one A100 node, on a TPU-v4-like device file and with zb-h1 on mixed GPUs. Exact: the
list-based simulation and pandas-free printing must reproduce every float. And a single `train`
keeps pandas, numba and scipy out of its process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "tests" / "data" / "train_recorded"
T, C = ROOT / "configs" / "transformers", ROOT / "configs" / "clusters"
GPT3 = ["--tp", "8", "--pp", "8", "--dp", "16", "--global-batch", "1536"]
CASES = {
    "gpt3_175b_superpod.json": [T / "gpt3_175b.toml", "--cluster", C / "dgx_a100_superpod.toml", *GPT3],
    "gpt3_175b_a100_384_interleaved.json": [T / "gpt3_175b.toml", "--cluster", C / "a100_384_servers.toml", *GPT3,
                                            "--interleave", "2", "--attention", "standard"],
    "gpt3_1.3b_a100_node.json": [T / "gpt3_1.3b.toml", "--cluster", C / "a100_node.toml", "--tp", "2", "--pp", "2",
                                 "--dp", "2", "--global-batch", "64", "--micro-batch", "2", "--recompute", "none",
                                 "--sequence-parallel"],
    "gpt3_1.3b_tpu_v4_like_slice.json": [T / "gpt3_1.3b.toml", "--cluster", C / "tpu_v4_like_slice.toml", "--tp", "4",
                                         "--pp", "2", "--dp", "2", "--global-batch", "32"],
    "gpt3_1.3b_mixed_zb_h1.json": [T / "gpt3_1.3b.toml", "--cluster", C / "mixed_h100_a100_v100.toml", "--tp", "2",
                                   "--pp", "4", "--dp", "4", "--global-batch", "64", "--schedule", "zb-h1"],
}


def shortened(out: dict) -> dict:
    """The recorded form: the timeline as its slot count and first and last 12 slots."""
    slots = out["meta"]["timeline"]
    out["meta"]["timeline"] = {"slots": len(slots), "first": slots[:12], "last": slots[-12:]}
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_train_json_equals_the_recorded_output(name, capsys):
    assert main(["train", *map(str, CASES[name]), "--format", "json"]) == 0
    got = shortened(json.loads(capsys.readouterr().out))
    recorded = json.loads((RECORDED / name).read_text(encoding="utf-8"))
    assert got["meta"]["timeline"]["slots"] > 24  # a real pipeline, longer than the kept ends
    assert got == recorded


def test_one_train_imports_neither_pandas_nor_numba_nor_scipy(tmp_path):
    """A single `train` prints through archsim.rows and simulates uncompiled: the three heavy imports
    (a quarter to half a second each) stay out of the process."""
    import subprocess
    import sys

    argv = ["train", *map(str, CASES["gpt3_175b_superpod.json"]), "--format", "json", "--out", str(tmp_path / "o.json")]
    code = (f"import sys\nfrom archsim.cli import main\nassert main({argv!r}) == 0\n"
            "print(','.join(m for m in ('pandas', 'numba', 'scipy') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.strip().splitlines()[-1:] in ([], [""])
    assert json.loads((tmp_path / "o.json").read_text())["meta"]["iteration_seconds"] > 0
