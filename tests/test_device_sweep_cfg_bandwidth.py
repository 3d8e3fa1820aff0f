"""A device sweep of ``hbm_gbps`` over a SCALE-Sim .cfg device that also states ``Bandwidth``
(words/cycle): each point is the file with both figures restated consistently (Bandwidth the whole
words/cycle nearest the swept GB/s at the file's clock), so it equals ``archsim train`` on such a file;
a figure no whole Bandwidth matches within the readers' 1% is refused in one line naming ``hbm_gbps``."""

from __future__ import annotations

import csv
import json

import pytest
from test_device_sweep_spec import GPT2
from test_robustness import clean_error, write

from archsim.cli import main
from archsim.devices.device_file import load_device

# a 4 × 32 × 32 array device at 0.5 GHz: Bandwidth 100 words/cycle × 2 B × 0.5 GHz = 100 GB/s = hbm_gbps
DEVICE = """[general]
run_name = small

[architecture_presets]
ArrayHeight:    32
ArrayWidth:     32
IfmapSramSzkB:    64
FilterSramSzkB:   64
OfmapSramSzkB:    64
IfmapOffset:    0
FilterOffset:   10000000
OfmapOffset:    20000000
Dataflow : ws
Bandwidth : {words}

[archsim]
ClockGHz = 0.5

[device]
name = small
arrays = 4

[memory]
hbm_gib = 16
hbm_gbps = {gbps}

[links]
intra_gbps = 50
"""
SPEC = """[sweep]
name = "cfgbw"
model = "gpt2"
device = "small.cfg"
hbm_gbps = {axis}
chips = [2]
global_batch = 2
"""


def test_each_point_is_train_on_a_cfg_stating_both_figures(tmp_path, capsys):
    write(tmp_path / "small.cfg", DEVICE.format(words=100, gbps=100))
    spec = write(tmp_path / "s.toml", SPEC.format(axis="[100, 300]"))
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    capsys.readouterr()
    with (tmp_path / "out" / "results.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [float(r["hbm_gbps"]) for r in rows] == [100.0, 300.0]
    # hand-written: 300 GB/s = 300 words/cycle × 2 B × 0.5 GHz, both figures stated, as a designer edits it
    for row, words, gbps in zip(rows, (100, 300), (100, 300), strict=True):
        point = write(tmp_path / f"p{gbps}.cfg", DEVICE.format(words=words, gbps=gbps))
        assert load_device(point).hbm_bytes_per_s == gbps * 1e9  # a file every reader accepts
        cluster = write(tmp_path / f"c{gbps}.toml", '[cluster]\nname = "c"\n[[servers]]\ncount = 1\ngpus = 2\n'
                                                    f'intra_server_gbps = 800\ndevice = "p{gbps}.cfg"\n')
        assert main(["train", str(GPT2), "--cluster", str(cluster), "--dp", "2", "--global-batch", "2",
                     "--format", "json"]) == 0
        meta = json.loads(capsys.readouterr().out)["meta"]
        assert float(row["iteration_seconds"]) == pytest.approx(meta["iteration_seconds"], rel=1e-12)
        assert float(row["energy_j"]) == pytest.approx(meta["energy_j"], rel=1e-12)
        assert float(row["peak_memory_gib"]) == pytest.approx(meta["peak_memory_gib"], rel=1e-12)
    assert float(rows[1]["iteration_seconds"]) < float(rows[0]["iteration_seconds"])  # the field really changes


def test_a_figure_no_whole_bandwidth_matches_is_refused_before_anything_is_written(tmp_path, capsys):
    """3 GB/s at 0.5 GHz is 3 words/cycle exactly; 2.5 GB/s lies between 2 (2 GB/s) and 3 (3 GB/s): 20% off."""
    write(tmp_path / "small.cfg", DEVICE.format(words=100, gbps=100))
    spec = write(tmp_path / "s.toml", SPEC.format(axis="[100, 2.5]"))
    err = clean_error(capsys, "sweep", spec, "--out", tmp_path / "out", "--quiet")
    assert "hbm_gbps" in err and "2.5 GB/s" in err and "Bandwidth" in err
    assert not (tmp_path / "out").exists()


def test_a_cfg_without_bandwidth_takes_any_figure(tmp_path, capsys):
    """No Bandwidth line: [memory] hbm_gbps is the file's only memory figure, nothing to restate."""
    write(tmp_path / "small.cfg", DEVICE.format(words=100, gbps=100).replace("Bandwidth : 100\n", ""))
    spec = write(tmp_path / "s.toml", SPEC.format(axis="[2.5]"))
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    capsys.readouterr()
