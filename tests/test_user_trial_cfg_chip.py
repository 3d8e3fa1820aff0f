"""An accelerator architect's SCALE-Sim ``.cfg`` (one 64 × 64 weight-stationary array, 256/256/128 KiB of
SRAM) made a device (16 arrays at 1 GHz, 32 GiB of HBM at 800 GB/s, 100 GB/s links) and trained on 8 and
64 chips: what a newcomer following docs/own-model.md and docs/formats.md ran into, each pinned here."""

from pathlib import Path

import pytest

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
GPT2 = str(ROOT / "configs" / "transformers" / "gpt2.json")

CFG = """[general]
run_name = mychip

[architecture_presets]
ArrayHeight:    64
ArrayWidth:     64
IfmapSramSzkB:    256
FilterSramSzkB:   256
OfmapSramSzkB:    128
Bandwidth : 400
Dataflow : ws

[archsim]
ClockGHz = 1.0

[device]
name = mychip_x16
arrays = 16

[memory]
hbm_gib = 32
hbm_gbps = 800

[links]
intra_gbps = 100
"""


@pytest.mark.parametrize("command", [("train", GPT2, "--dp", "8", "--global-batch", "64"),
                                     ("search", GPT2, "--global-batch", "64"),
                                     ("plan", "layerpipe_sample", "--microbatches", "4")])
def test_a_cfg_device_given_as_the_cluster_says_what_it_is(tmp_path, capsys, command):
    """``--cluster mychip.cfg`` (the device, not a cluster naming it) was refused as 'not valid TOML
    (Invalid value (at line 2, column 12))', SCALE-Sim's ``key: value`` read as TOML; a device TOML in
    the same place was already told to go in a cluster's [[servers]]. Now the .cfg is too, in one line."""
    path = tmp_path / "mychip.cfg"
    path.write_text(CFG)
    assert main([*command, "--cluster", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not valid TOML" not in err
    assert "field 'cluster': this is a SCALE-Sim .cfg, not a cluster file" in err
    assert "configs/clusters/scalesim_32x32_device.toml" in err
    broken = tmp_path / "broken.toml"  # a cluster TOML of bad syntax is still a syntax error
    broken.write_text("[cluster\n")
    assert main([*command, "--cluster", str(broken)]) == 2
    assert "not valid TOML" in capsys.readouterr().err
