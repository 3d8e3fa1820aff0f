"""docs/formats.md's SCALE-Sim section says which commands' ``--config`` also takes a device TOML: checked
against the commands themselves (until 2026-12-04 it named ``energy`` alone, though ``cost``, ``gemm``,
``pipeline`` and ``schedule`` take one too)."""

from __future__ import annotations

import re
from pathlib import Path

from archsim.cli import main

ROOT = Path(__file__).parent.parent
CHIP = str(ROOT / "configs" / "devices" / "tpu_v4_like.toml")
CLUSTER = str(ROOT / "configs" / "clusters" / "a100_node.toml")
RUNS = {"cost": ["cost", "ffnn8"], "energy": ["energy", "ffnn8"], "gemm": ["gemm", "--m", "64", "--k", "64", "--n", "64"],
        "pipeline": ["pipeline", "ffnn8"], "schedule": ["schedule", "ffnn8", "--policy", "multistream"],
        "plan": ["plan", "ffnn8", "--cluster", CLUSTER, "--microbatches", "2"]}


def _takes_toml(command: str) -> bool:
    try:
        return main([*RUNS[command], "--config", CHIP]) in (0, None)
    except SystemExit as exc:
        return exc.code in (0, None)


def test_the_docs_name_the_commands_whose_config_takes_a_device_toml(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    text = (ROOT / "docs" / "formats.md").read_text()
    sentence = re.search(r"`--config FILE\.cfg` \(([^)]*)\)", text, re.DOTALL)
    assert sentence, "the SCALE-Sim section's --config sentence"
    listed = re.findall(r"`(\w+)`", sentence.group(1).split(";")[0])
    assert set(listed) == set(RUNS)
    takes = {command for command in RUNS if _takes_toml(command)}
    capsys.readouterr()
    assert takes == {"cost", "energy", "gemm", "pipeline", "schedule"}
    said = sentence.group(1).split(";")[1]
    stated = set(listed) - {"plan"} if "all but `plan`" in said else set(re.findall(r"`(\w+)` takes", said))
    assert stated == takes
