"""An array design sweep's report re-costs its detail row (per-layer F/G/D cycles and the LayerPipe Gantt) at the
row's own element size and micro-batches, and prints the ``cost`` and ``pipeline`` commands that reproduce it. A
design row of M micro-batches is M × one micro-batch of batch / M (docs/formats.md: ``single_processor_cycles``
"of its M micro-batches"), each costed in the design's element size. Failed before: the section re-costed the
whole batch in 1-byte words, and its commands (``--batch 4``, no ``--element-bytes``) reproduced neither the row
nor the figures beside them."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pandas as pd
import pytest
from device_files import scalesim_chip_cfg

from archsim.cli import main

# one 16 × 16 array with 4 KiB SRAMs at 0.8 GHz with 4 GB/s of HBM: 3 words/cycle of 2-byte words (4 ÷ (2 × 0.8) =
# 2.5, a half up), slow enough that the element size changes the cycle engine's stalls
SLOW = scalesim_chip_cfg(1, 0.8, 4, "slow", "slow", size=16, sram_kb=(4, 4, 4))
LAYERS = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
          "fc1, 1, 1, 1, 1, 128, 64, 1,\nfc2, 1, 1, 1, 1, 64, 128, 1,\n")


def _sweep(folder: Path, array: str, design: str) -> pd.DataFrame:
    """The cycle-engine design sweep of the two layers on ``array`` at batch 4 over 1 and 2 processors; its rows."""
    (folder / "slow.cfg").write_text(SLOW)
    (folder / "fc.csv").write_text(LAYERS)
    spec = folder / "spec.toml"
    spec.write_text(f'[sweep]\nname = "recost"\nnetworks = ["fc.csv"]\narrays = ["{array}"]\nbatches = [4]\n'
                    f'processors = [1, 2]\nmethods = ["layerpipe"]\nengine = "cycle"\n{design}\n')
    assert main(["sweep", str(spec), "--out", str(folder / "res"), "--quiet"]) == 0
    return pd.read_csv(folder / "res" / "results.csv")


def _sections(folder: Path, rows: pd.DataFrame):
    """The report's per-layer and Gantt sections of the network: (title, figure, command) each."""
    from archsim.sweep.report import spec_record
    from archsim.sweep.report_sections import network_sections

    sections = network_sections(rows, ["fc"], folder / "res", (str(folder / "fc.csv"),), spec_record(folder / "res"),
                                "redraw")
    return sections["fc"][:2]


def _run(command: str, folder: Path, capsys) -> dict:
    """The JSON output of a printed command, run as typed (its ``--gantt`` file written into ``folder``)."""
    argv = shlex.split(command)
    assert argv[0] == "archsim"
    argv = [str(folder / "gantt.html") if word == "gantt.html" else word for word in argv[1:]]
    capsys.readouterr()
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.long  # two cycle-engine sweeps and their commands: about 1 s each
@pytest.mark.parametrize("array", ["slow.cfg", "16x16"])
def test_the_sections_and_their_commands_reproduce_a_two_byte_row_of_two_micro_batches(tmp_path, capsys, array):
    rows = _sweep(tmp_path, array, "element_bytes = [2]\nmicrobatches = [2]")
    (layers_title, figure, cost_command), (gantt_title, _, gantt_command) = _sections(tmp_path, rows)
    cost = _run(cost_command, tmp_path, capsys)
    per_layer = {row["layer"]: row for row in cost["rows"] if row["layer"] != "TOTAL"}
    (total,) = [row for row in cost["rows"] if row["layer"] == "TOTAL"]
    one = rows[rows.processors == 1].iloc[0]
    assert one.single_processor_cycles == 2 * total["total_cycles"]  # the row: 2 micro-batches of 2, 2-byte words
    for trace, kind in zip(figure.data, "FGD"):  # the figure's bars: the command's per-layer cycles
        assert dict(zip(trace.x, trace.y)) == {name: row[f"{kind}_cycles"] for name, row in per_layer.items()}
    assert "2-byte elements, batch 2 (one of 2 micro-batches of 4)" in layers_title
    pipeline = _run(gantt_command, tmp_path, capsys)["meta"]
    two = rows[rows.processors == 2].iloc[0]
    assert two.iteration_cycles == 2 * pipeline["iteration_cycles"]  # the row's iteration: 2 × its slowest stage
    assert pipeline["microbatches"] == 2 and pipeline["element_bytes"] == 2
    makespan = float(re.search(r"makespan ([\d,]+) cycles", gantt_title).group(1).replace(",", ""))
    assert makespan == pipeline["makespan"]
    assert "2 micro-batches (16x16 ws, 2-byte elements, batch 2 each, the design splitting batch 4 in 2)" in gantt_title


@pytest.mark.long  # a cycle-engine sweep and its commands: about 1 s
def test_a_dtypes_row_is_named_by_its_dtype_and_one_micro_batch_keeps_eight_in_the_gantt(tmp_path, capsys):
    """A ``dtypes`` sweep's row is re-costed under ``--dtype``, its name; a design of one micro-batch is costed at its
    whole batch, and its Gantt draws 8 micro-batches of it, as a plain sweep's."""
    rows = _sweep(tmp_path, "slow.cfg", 'dtypes = ["fp16"]')
    (_, _, cost_command), (gantt_title, _, gantt_command) = _sections(tmp_path, rows)
    assert " --dtype fp16" in cost_command and "--batch 4 " in cost_command
    (total,) = [row for row in _run(cost_command, tmp_path, capsys)["rows"] if row["layer"] == "TOTAL"]
    assert rows[rows.processors == 1].iloc[0].single_processor_cycles == total["total_cycles"]
    pipeline = _run(gantt_command, tmp_path, capsys)["meta"]
    assert rows[rows.processors == 2].iloc[0].iteration_cycles == pipeline["iteration_cycles"]
    assert pipeline["microbatches"] == 8 and "8 micro-batches (16x16 ws, 2-byte elements, batch 4 each, 32 samples: 8× the sweep row's)" in gantt_title
