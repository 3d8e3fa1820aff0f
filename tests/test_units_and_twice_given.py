"""A clock 1000× off (MHz typed where GHz is asked, or GHz where MHz is) and a .cfg device file that states
its memory bandwidth twice, disagreeing: both refused in one line (docs/formats.md, "Clocks", "Device files")."""

from pathlib import Path

import pytest

from archsim.array.config import read_scalesim_cfg
from archsim.cli import main
from archsim.clock import clock_hz
from archsim.devices.device_file import load_device
from archsim.errors import InputError
from archsim.sweep.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]
DEVICE_CFG = ROOT / "configs" / "devices" / "scalesim_32x32_device.cfg"
TPU_TOML = ROOT / "configs" / "devices" / "tpu_v4_like.toml"


def test_the_range_is_10_mhz_to_10_ghz_in_every_unit():
    """The ends, by hand: 10 MHz = 0.01 GHz = 1e7 Hz; 10 GHz = 10000 MHz = 1e10 Hz."""
    assert clock_hz("0.01", "GHz") == pytest.approx(1e7) and clock_hz(10, "GHz") == pytest.approx(1e10)
    assert clock_hz("10", "MHz") == pytest.approx(1e7) and clock_hz(10000, "MHz") == pytest.approx(1e10)
    for value, unit in ((0.0099, "GHz"), (10.01, "GHz"), (9.9, "MHz"), (10001, "MHz"), (1000, "GHz")):
        with pytest.raises(ValueError, match="outside"):
            clock_hz(value, unit)


def test_ghz_typed_in_mhz_names_the_slip(capsys):
    """--clock-ghz 1000 (1 THz) ran, seconds 1000× short; now one line naming the flag and the slip."""
    assert main(["cost", "layerpipe_sample", "--clock-ghz", "1000"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--clock-ghz" in err and "1000 GHz" in err and "did you mean 1000 MHz = 1 GHz?" in err


def test_plan_takes_the_same_range(capsys):
    """plan's own --clock-ghz took up to 10^6 GHz."""
    cluster = str(ROOT / "configs" / "clusters" / "testbed_v100.toml")
    assert main(["plan", "layerpipe_sample", "--cluster", cluster, "--microbatches", "2", "--clock-ghz", "1000"]) == 2
    assert "did you mean 1000 MHz = 1 GHz?" in capsys.readouterr().err


def test_validate_gpu_clock_mhz_refuses_ghz(capsys):
    """--clock-mhz 1.41 (an A100's 1.41 GHz typed in GHz) is 1.41 MHz."""
    assert main(["validate-gpu", "--clock-mhz", "1.41"]) == 2
    assert "did you mean 1.41 GHz = 1410 MHz?" in capsys.readouterr().err


def test_cfg_clock_in_mhz_is_refused_naming_the_key(tmp_path):
    cfg = tmp_path / "dev.cfg"
    cfg.write_text(DEVICE_CFG.read_text().replace("ClockGHz = 1.0", "ClockGHz = 1000"))
    with pytest.raises(InputError, match="did you mean 1000 MHz = 1 GHz") as refused:
        read_scalesim_cfg(cfg)
    assert refused.value.where.field == "ClockGHz"
    with pytest.raises(InputError, match="1000 GHz"):
        load_device(cfg)


def test_device_toml_clock_in_ghz_is_refused_naming_the_key(tmp_path):
    toml = tmp_path / "dev.toml"
    toml.write_text(TPU_TOML.read_text().replace("clock_mhz = 1050", "clock_mhz = 1"))
    with pytest.raises(InputError, match="did you mean 1 GHz = 1000 MHz") as refused:
        load_device(toml)
    assert refused.value.where.field == "compute.clock_mhz"


def test_sweep_clock_in_mhz_is_refused(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('[sweep]\nnetworks = ["layerpipe_sample"]\narrays = ["8x8"]\nbatches = [4]\nprocessors = [2]\n'
                    'methods = ["gpipe"]\nclocks_ghz = [1.0, 1000]\n')
    with pytest.raises(InputError, match="did you mean 1000 MHz = 1 GHz") as refused:
        load_spec(spec)
    assert refused.value.where.field == "clocks_ghz"


def test_every_shipped_clock_is_in_range():
    """The shipped device files and sweep specs load under the range (clusters name these device files)."""
    for path in sorted((ROOT / "configs" / "devices").iterdir()):
        if path.suffix in (".toml", ".cfg"):
            assert 1e7 <= load_device(path).arrays.clock_hz <= 1e10, path
    for path in sorted((ROOT / "configs" / "sweeps").glob("*.toml")):
        load_spec(path)


def _device_cfg(tmp_path, bandwidth: str) -> Path:
    """The shipped 32×32 device (1 GHz, [memory] hbm_gbps = 400) with a SCALE-Sim Bandwidth line."""
    cfg = tmp_path / "dev.cfg"
    cfg.write_text(DEVICE_CFG.read_text().replace("Dataflow : ws\n", f"Dataflow : ws\nBandwidth : {bandwidth}\n"))
    return cfg


def test_a_device_cfg_with_two_disagreeing_bandwidths_is_refused_by_both_readers(tmp_path, capsys):
    """Bandwidth 10 words/cycle × 2 B × 1 GHz = 20 GB/s against hbm_gbps = 400 GB/s: cost --engine cycle
    modelled 20 GB/s, train 400, without a word."""
    cfg = _device_cfg(tmp_path, "10")
    with pytest.raises(InputError, match=r"Bandwidth = 10 words/cycle .* = 20 GB/s but \[memory\] hbm_gbps = 400 GB/s"):
        load_device(cfg)
    assert main(["cost", "layerpipe_sample", "--engine", "cycle", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "20 GB/s" in err and "400 GB/s" in err and "hbm_gbps" in err


def test_agreeing_bandwidths_load_and_keep_their_numbers(tmp_path):
    """200 words/cycle × 2 B × 1 GHz = 400 GB/s = hbm_gbps; 202 → 404 GB/s is within 1%, 203 → 406 is not."""
    for words in (200, 202):
        cfg = _device_cfg(tmp_path, str(words))
        assert load_device(cfg).hbm_bytes_per_s == pytest.approx(400e9)
        assert read_scalesim_cfg(cfg).bandwidth == (words,)
    with pytest.raises(InputError, match="406 GB/s"):
        load_device(_device_cfg(tmp_path, "203"))


def test_a_plain_scalesim_cfg_keeps_its_own_bandwidth(tmp_path):
    """Without [device]/[links] a .cfg's [memory] is SCALE-Sim's, not a device's: nothing to compare."""
    text = DEVICE_CFG.read_text().split("[device]")[0].replace("Dataflow : ws\n", "Dataflow : ws\nBandwidth : 10\n")
    cfg = tmp_path / "plain.cfg"
    cfg.write_text(text)
    assert read_scalesim_cfg(cfg).bandwidth == (10,)
