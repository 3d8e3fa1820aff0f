"""docs/own-model.md's figures beside the commands it names are those commands' output today: the energy of
tiny_resnet under both engines and SRAM sizes, and the trial chip's joules with and without `--fp8 hybrid` (which
moved with 1F1B's blocking sends, the default since 2026-12-05). The commands run in-process, a few seconds
together, so the checks are in the long tier."""

from __future__ import annotations

import json

import pytest
from device_files import trial_array_chip_toml
from test_docs import ROOT

from archsim.cli import main

pytestmark = pytest.mark.long


def page() -> str:
    return " ".join((ROOT / "docs" / "own-model.md").read_text(encoding="utf-8").split())


def document(argv: list[str], capsys) -> dict:
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_tiny_resnet_energy_by_engine_and_sram(capsys):
    """Joules in mJ at the digits the page shows (1 pJ = 10⁻⁹ mJ)."""
    def mj(engine: str, sram_kb: int) -> float:
        rows = document(["energy", str(ROOT / "docs" / "examples" / "tiny_resnet.csv"), "--array", "256x256", "--batch",
                         "8", "--sram-kb", str(sram_kb), "--engine", engine, "--format", "json"], capsys)["rows"]
        return next(row["energy_pj"] for row in rows if row["op"] == "TOTAL") / 1e9

    small, large = mj("analytic", 32), mj("analytic", 32768)
    cycle_small, cycle_large = mj("cycle", 32), mj("cycle", 32768)
    assert (f"spends {small:.2f} mJ with 32 KiB SRAMs and {large:.2f} mJ with 32 MiB ones under `analytic`, "
            f"but {cycle_small:.1f} mJ and {cycle_large:.2f} mJ under `cycle`") in page()


def test_trial_chip_joules_with_and_without_fp8(tmp_path, capsys):
    """tests/device_files.py's trial chip, 8 in one server, GPT-2 at TP 2 × PP 2 × DP 2, batch 16."""
    (tmp_path / "chip.toml").write_text(trial_array_chip_toml(), encoding="utf-8")
    cluster = tmp_path / "cluster.toml"
    cluster.write_text('[cluster]\nname = "trial"\n\n[[servers]]\ncount = 1\ngpus = 8\ndevice = "chip.toml"\n',
                       encoding="utf-8")
    base = ["train", str(ROOT / "configs" / "transformers" / "gpt2.json"), "--cluster", str(cluster), "--tp", "2",
            "--pp", "2", "--dp", "2", "--global-batch", "16", "--format", "json"]
    fp8 = document(base + ["--fp8", "hybrid"], capsys)["meta"]["energy_j"]
    plain = document(base, capsys)["meta"]["energy_j"]
    assert f"gives {fp8:.2f} J with `--fp8 hybrid`, {plain:.2f} J without" in page()
