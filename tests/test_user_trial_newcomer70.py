"""An accelerator designer's first hour: a SCALE-Sim ``.cfg`` of their own array grown into a device file, costed
with ``pipeline`` against ``energy`` and swept into a report. ``pipeline``'s and ``schedule``'s ``--batch`` is each
micro-batch's size (M × BATCH samples an iteration) where ``energy --microbatches`` and a sweep split the batch,
yet their help said "mini-batch size"; ``ClockGHz`` or ``hbm_gbps`` written beside ``ArrayHeight`` was refused as
"a typo?" with no word of the section that reads it; a plain sweep's Gantt ran 8 micro-batches of the row's whole
batch under a title that read as the batch split in 8."""

from __future__ import annotations

import html
import json
import re

import pytest

from archsim.cli import main
from archsim.errors import InputError

CFG = """[general]
run_name = mine

[architecture_presets]
ArrayHeight:    16
ArrayWidth:     16
IfmapSramSzkB:    32
FilterSramSzkB:   32
OfmapSramSzkB:    16
IfmapOffset:    0
FilterOffset:   10000000
OfmapOffset:    20000000
Dataflow : os
{extra}
"""


@pytest.fixture(autouse=True)
def _root(monkeypatch):
    from test_docs import ROOT

    monkeypatch.chdir(ROOT)


def _help(capsys, command: str) -> str:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    return " ".join(capsys.readouterr().out.split())


def _json(capsys, argv: list[str]) -> dict:
    capsys.readouterr()
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_pipeline_batch_help_says_per_micro_batch_as_it_runs(capsys):
    """The help's rule, checked by hand on one processor, where nothing overlaps: 2 micro-batches of --batch 4 take
    twice cost's cycles at batch 4 (8 samples), not one batch of 4 split in two."""
    for command in ("pipeline", "schedule"):
        text = _help(capsys, command)
        assert "--batch BATCH samples per micro-batch: with --microbatches M an iteration runs M × BATCH" in text
    assert "pipeline's and schedule's --microbatches run M of --batch each instead" in _help(capsys, "energy")
    rows = _json(capsys, ["cost", "layerpipe_sample", "--batch", "4"])["rows"]
    (total,) = [row["total_cycles"] for row in rows if row["layer"] == "TOTAL"]
    meta = _json(capsys, ["pipeline", "layerpipe_sample", "--batch", "4", "--processors", "1", "--method",
                          "pipedream", "--microbatches", "2"])["meta"]
    assert meta["makespan"] == 2 * total


@pytest.mark.parametrize("line, home", [("ClockGHz: 1.0", "ClockGHz is an [archsim] key"),
                                        ("hbm_gbps = 800", "hbm_gbps is a [memory] key"),
                                        ("arrays = 4", "arrays is a [device] key"),
                                        ("intra_gbps = 100", "intra_gbps is a [links] key"),
                                        ("clock_mhz = 1000", "a .cfg states clock_mhz as [archsim] ClockGHz, in GHz")])
def test_a_device_key_under_architecture_presets_names_its_section(tmp_path, line, home):
    from archsim.array.config import read_scalesim_cfg

    path = tmp_path / "mine.cfg"
    path.write_text(CFG.format(extra=line))
    with pytest.raises(InputError) as caught:
        read_scalesim_cfg(path)
    assert str(caught.value).endswith(f"unknown key in [architecture_presets] (no SCALE-Sim version reads it: {home})")


def test_the_named_section_reads_it_and_a_plain_typo_keeps_its_hint(tmp_path):
    """Moved where the refusal says, ClockGHz is read (the clock SCALE-Sim's sections do not have); a misspelt
    SCALE-Sim key still gets the nearest SCALE-Sim key."""
    from archsim.array.config import read_scalesim_cfg

    path = tmp_path / "mine.cfg"
    path.write_text(CFG.format(extra="\n[archsim]\nClockGHz = 2.0"))
    assert read_scalesim_cfg(path).clock_hz == 2.0e9
    path.write_text(CFG.format(extra="Bandwith : 10"))
    with pytest.raises(InputError, match=r"reads it: did you mean 'Bandwidth'\?\)$"):
        read_scalesim_cfg(path)


@pytest.mark.long  # a sweep and its report: about 1 s
def test_a_plain_sweeps_gantt_title_says_it_runs_the_whole_batch_each(tmp_path, capsys):
    """A plain sweep's row is one iteration of batch 2; its Gantt runs 8 micro-batches of 2 samples each, 16 samples
    (the Regenerate command's --batch × --microbatches), which the title now says."""
    spec = tmp_path / "s.toml"
    spec.write_text('[sweep]\nname = "s"\nnetworks = ["layerpipe_sample"]\narrays = ["32x32"]\nbatches = [2]\n'
                    'processors = [2]\nmethods = ["layerpipe"]\n')
    report = tmp_path / "r.html"
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--quiet", "--report", str(report)]) == 0
    page = html.unescape(report.read_text(encoding="utf-8"))
    command = re.search(r"Regenerate: <code>archsim (pipeline [^<]*) --gantt gantt\.html</code>", page).group(1).split()
    samples = int(command[command.index("--batch") + 1]) * int(command[command.index("--microbatches") + 1])
    assert samples == 16
    assert "8 micro-batches (32x32 ws, batch 2 each, 16 samples: 8× the sweep row's); makespan" in page
