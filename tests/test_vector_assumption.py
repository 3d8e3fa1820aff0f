"""A device file without ``[vector]``: its fused attention kernel's exponentials and FP32 row work run on an assumed
one lane per array row, a figure that moves the answer, so train and search say it once on stderr (naming the count
and the key that states the unit) and train's JSON meta records it; a file stating the unit, or a run with no fused
kernel, says nothing (its meta as before)."""

import json
from pathlib import Path

import pytest

from archsim.cli import main
from archsim.devices.device_file import load_device
from archsim.devices.nonmatmul import assumed_lanes, nonmatmul_rates

# 4 arrays of 128 × 128 at 1 GHz: one lane per array row is 4 × 128 = 512 lanes
CHIP = """[device]
name = "trial"
gemm = "arrays"
[compute]
arrays = 4
rows = 128
cols = 128
dataflow = "ws"
clock_mhz = 1000
[memory]
sram_kib_per_array = 4096
hbm_gib = 32
hbm_gbps = 1200
[links]
intra_gbps = 300
"""
MODEL = '[transformer]\nfamily = "gpt"\nlayers = 2\nhidden = 256\nheads = 4\nvocab = 1000\nseq = 512\n'
NOTE = "assumed 512 lanes"


def _files(tmp_path: Path, chip: str) -> tuple[str, str]:
    (tmp_path / "chip.toml").write_text(chip, encoding="utf-8")
    (tmp_path / "c.toml").write_text('[cluster]\nname = "x"\n[[servers]]\ngpus = 1\ndevice = "chip.toml"\n',
                                     encoding="utf-8")
    (tmp_path / "m.toml").write_text(MODEL, encoding="utf-8")
    return str(tmp_path / "m.toml"), str(tmp_path / "c.toml")


def _train(capsys, tmp_path: Path, chip: str, *extra: str) -> tuple[dict, str]:
    model, cluster = _files(tmp_path, chip)
    assert main(["train", model, "--cluster", cluster, "--global-batch", "4", "--format", "json", *extra]) == 0
    out = capsys.readouterr()
    return json.loads(out.out)["meta"], out.err


def test_the_assumed_lanes_are_one_per_array_row(tmp_path):
    """4 arrays × 128 rows: 512 lanes, the rate nonmatmul_rates runs at (512 × 1 GHz a second)."""
    (tmp_path / "chip.toml").write_text(CHIP, encoding="utf-8")
    device = load_device(tmp_path / "chip.toml")
    assert assumed_lanes(device) == 512
    assert nonmatmul_rates(device) == pytest.approx((512e9, 512e9))


def test_train_says_the_assumption_once_and_records_it(capsys, tmp_path):
    meta, err = _train(capsys, tmp_path, CHIP)  # --attention flash, the default
    assert err.count(NOTE) == 1 and "[vector] lanes" in err
    assert meta["assumed_vector_lanes"] == 512


def test_a_stated_unit_or_no_fused_kernel_says_nothing(capsys, tmp_path):
    stated, err = _train(capsys, tmp_path, CHIP + "[vector]\nlanes = 4096\ncores = 1\n")
    assert "lanes" not in err and "assumed_vector_lanes" not in stated
    lanes, err = _train(capsys, tmp_path, CHIP.replace("clock_mhz = 1000", "clock_mhz = 1000\nlanes = 64"))
    assert "lanes" not in err and "assumed_vector_lanes" not in lanes  # [compute] lanes state where it runs
    standard, err = _train(capsys, tmp_path, CHIP, "--attention", "standard")
    assert NOTE not in err and "assumed_vector_lanes" not in standard


def test_search_says_it_once(capsys, tmp_path):
    model, cluster = _files(tmp_path, CHIP)
    assert main(["search", model, "--cluster", cluster, "--global-batch", "4", "--format", "json"]) == 0
    assert capsys.readouterr().err.count(NOTE) == 1
    assert main(["search", model, "--cluster", cluster, "--global-batch", "4", "--format", "json",
                 "--attention", "standard"]) == 0
    assert NOTE not in capsys.readouterr().err
