"""An accelerator designer (4 weight-stationary 64 × 64 bf16 arrays at 1 GHz, 24 MiB of SRAM, 600 GB/s of HBM, two
chips linked at 100 GB/s) costs ResNet-50, BERT-large and a GPT on the chip: ``cost``, ``energy`` and ``gemm`` on the
device file, ``train`` and ``search`` on a cluster of two such chips.

Each test here failed on the code before its fix (the docstring says how). The references are outside the code:
hand counts of the chip's figures and docs/formats.md's rules for device files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

CHIP = """[device]
name = "trialchip"

[compute]
arrays = 4
rows = 64
cols = 64
dataflow = "ws"
clock_mhz = 1000

[memory]
sram_kib_per_array = 6144
hbm_gib = 32
hbm_gbps = 600

[links]
intra_gbps = 100
"""


def _cluster(tmp_path: Path) -> Path:
    (tmp_path / "chip.toml").write_text(CHIP)
    cluster = tmp_path / "cluster.toml"
    cluster.write_text('[cluster]\nname = "two"\n\n[[servers]]\ncount = 1\ngpus = 2\ndevice = "chip.toml"\n')
    return cluster


@pytest.mark.parametrize("command", ["train", "search"])
def test_a_shipped_array_network_as_model_says_what_it_is(tmp_path, capsys, command):
    """Failed before: ``archsim train bert_large`` (``cost bert_large`` and ``energy bert_large`` take the name) was
    refused as 'no such file, and no shipped transformer of that name', listing the transformers, with no word that
    ``bert_large`` is a topology CSV of the array commands nor what train takes for BERT instead."""
    from archsim.cli import main

    layout = ["--tp", "1", "--pp", "1", "--dp", "2"] if command == "train" else []
    code = main([command, "bert_large", "--cluster", str(_cluster(tmp_path)), "--global-batch", "8", *layout])
    err = capsys.readouterr().err
    assert code == 2
    [line] = err.strip().splitlines()
    assert "bert_large is a shipped topology CSV" in line and "config.json" in line, line
    assert "cost, energy" in line


def test_a_name_that_is_no_network_is_refused_as_before(tmp_path, capsys):
    """The hint names a shipped network only: a name that is neither keeps the plain refusal."""
    from archsim.cli import main

    assert main(["train", "bertlarge", "--cluster", str(_cluster(tmp_path)), "--global-batch", "8"]) == 2
    line = capsys.readouterr().err.strip()
    assert "no shipped transformer of that name; shipped: " in line and "topology CSV" not in line
