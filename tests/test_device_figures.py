"""A device file's figures judged against one another (archsim/devices/device_figures.py), each test's chip stated
from its vendor's datasheet: an HBM bandwidth written in Gbit/s (8× its GB/s) lies inside the GB/s bounds for most
chips, and is warned by its bytes per FLOP of the chip's 16-bit peak."""

from __future__ import annotations

from pathlib import Path

import pytest
from device_files import device_message, device_toml, write_file

from archsim.cli import main
from archsim.devices.device_file import implausible_figures, load_device

ROOT = Path(__file__).resolve().parents[1]

# (chip, arrays, rows, cols, clock MHz giving the datasheet's dense 16-bit peak, HBM GB/s from the datasheet):
# A100 SXM4 80GB 312 TFLOP/s (432 tensor cores of 16 × 16 at 1410 MHz) and 2,039 GB/s; V100 SXM2 125 TFLOP/s
# (640 of 8 × 8 at 1530 MHz) and 900 GB/s; AMD MI250X 383 TFLOP/s (written as 440 arrays of 16 × 16 at
# 1700 MHz: 383.0) and 3,276.8 GB/s; L4 121 TFLOP/s (232 tensor cores of 8 × 16 at 2040 MHz) and 300 GB/s of GDDR6;
# Google's TPU v2 46 TFLOP/s (2 MXUs of 128 × 128 at 700 MHz) and 700 GB/s (Jouppi et al., CACM 2020)
CHIPS = [("A100", 432, 16, 16, 1410, 2039), ("V100", 640, 8, 8, 1530, 900), ("MI250X", 440, 16, 16, 1700, 3276.8),
         ("L4", 232, 8, 16, 2040, 300), ("TPU v2", 2, 128, 128, 700, 700)]


def _device(tmp_path: Path, arrays: int, rows: int, cols: int, mhz: float, gbps: float):
    text = device_toml(name="Chip", arrays=arrays, rows=rows, cols=cols, clock_mhz=mhz, sram_kib=768, hbm_gib=80,
                       hbm_gbps=gbps, intra_gbps=300)
    return load_device(write_file(tmp_path, "chip.toml", text))


@pytest.mark.parametrize(("chip", "arrays", "rows", "cols", "mhz", "gbps"), CHIPS)
def test_a_datasheet_chip_in_gb_per_s_is_not_warned(tmp_path, chip, arrays, rows, cols, mhz, gbps):
    assert not [line for line in implausible_figures(_device(tmp_path, arrays, rows, cols, mhz, gbps))
                if "hbm_gbps" in line]


@pytest.mark.parametrize(("chip", "arrays", "rows", "cols", "mhz", "gbps"), CHIPS)
def test_the_same_chip_in_gbit_per_s_is_warned_with_its_gb_per_s(tmp_path, chip, arrays, rows, cols, mhz, gbps):
    (line,) = [line for line in implausible_figures(_device(tmp_path, arrays, rows, cols, mhz, gbps * 8))
               if "hbm_gbps" in line]
    assert line.endswith(f"if it is in Gbit/s, write hbm_gbps = {gbps:g}")  # the datasheet's figure
    assert "bytes per FLOP" in line


def test_the_a100_slip_stays_within_the_gb_per_s_bounds_and_train_warns_it(tmp_path, capsys):
    """2,039 GB/s written as Gbit/s, 16,312, is below the bounds' 20,000 GB/s: before, no line said it."""
    write_file(tmp_path, "chip.toml", device_toml(name="A100ish", arrays=432, rows=16, cols=16, clock_mhz=1410,
                                                  sram_kib=768, hbm_gib=80, hbm_gbps=16312, intra_gbps=300))
    cluster = write_file(tmp_path, "cluster.toml", '[cluster]\n[[servers]]\ncount = 1\ngpus = 8\n'
                         'intra_server_gbps = 4800\ndevice = "chip.toml"\n')
    assert main(["train", str(ROOT / "configs" / "transformers" / "gpt2.json"), "--cluster", str(cluster),
                 "--dp", "8", "--global-batch", "8", "--format", "csv"]) == 0
    (warning,) = [w for w in capsys.readouterr().err.splitlines() if "hbm_gbps" in w]
    assert warning.startswith("archsim train: warning: A100ish: [memory] hbm_gbps = 16312 GB/s")
    assert warning.endswith("write hbm_gbps = 2039")


# static power (W per chip): a part of the chip's whole power
TPU_V4 = ROOT / "configs" / "devices" / "tpu_v4_like.toml"  # 192 W at most per chip (Google's TPU v4 documentation)


def _with_device_keys(tmp_path: Path, lines: str) -> Path:
    text = TPU_V4.read_text().replace('gemm = "arrays"\n', f'gemm = "arrays"\n{lines}')
    return write_file(tmp_path, "tpu.toml", text)


def test_a_static_power_above_the_chips_own_board_power_is_refused(tmp_path):
    """Static power is a part of the chip's whole power: 200 W of it on a 192 W chip is one figure wrong."""
    message = device_message(_with_device_keys(tmp_path, "board_watts = 192\nstatic_watts = 200\n"))
    assert "static_watts" in message and "board_watts = 192 W" in message
    assert load_device(_with_device_keys(tmp_path, "board_watts = 192\nstatic_watts = 40\n")).static_watts == 40


def test_a_static_power_in_milliwatts_is_warned_with_its_watts(tmp_path):
    """50 W of leakage written in mW, 50,000, is above any package's whole power (AMD's MI355X board: 1,400 W)."""
    (line,) = [w for w in implausible_figures(load_device(_with_device_keys(tmp_path, "static_watts = 50000\n")))
               if "static_watts" in w]
    assert line.startswith("TPU v4-like: [device] static_watts = 50000 W per chip")
    assert line.endswith("if it is in mW, write static_watts = 50")
    assert not implausible_figures(load_device(_with_device_keys(tmp_path, "static_watts = 1400\n")))


def test_the_cli_refuses_the_static_power_above_board_power_in_one_line(tmp_path, capsys):
    _with_device_keys(tmp_path, "board_watts = 192\nstatic_watts = 200\n")
    cluster = write_file(tmp_path, "cluster.toml", '[cluster]\n[[servers]]\ncount = 1\ngpus = 4\n'
                         'device = "tpu.toml"\n')
    assert main(["train", str(ROOT / "configs" / "transformers" / "gpt2.json"), "--cluster", str(cluster),
                 "--dp", "4", "--global-batch", "4"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "tpu.toml" in line and "static_watts" in line and "192 W" in line


# 4 arrays of 128 × 128 at 1 GHz: a 16-bit peak of 2 · 4 · 128² · 1e9 = 131.072 TFLOP/s, fp8 at 2 MACs per PE twice it
FP8_CHIP = device_toml(name="Fp8ish", arrays=4, rows=128, cols=128, clock_mhz=1000, sram_kib=4096, hbm_gib=32,
                       hbm_gbps=1200, intra_gbps=300).replace("clock_mhz = 1000", "clock_mhz = 1000\nmacs_per_pe = { fp8 = 2 }")


def _fp8_spec(tmp_path: Path, gbps: float, fp8: bool):
    from archsim.sweep.device_points import implausible_points
    from archsim.sweep.spec import load_spec

    write_file(tmp_path, "chip.toml", FP8_CHIP)
    spec = write_file(tmp_path, "s.toml", '[sweep]\nmodel = "gpt2"\ndevice = "chip.toml"\nchips = [1]\n'
                      f'global_batch = 8\ndtype = "bf16"\nhbm_gbps = [{gbps:g}]\n' + ('fp8 = "hybrid"\n' if fp8 else ""))
    return [line for line in implausible_points(load_spec(spec)) if "hbm_gbps" in line]


def test_a_sweep_judges_its_hbm_by_the_peak_of_the_dtype_it_runs(tmp_path):
    """3,200 GB/s is 3200e9 / 131.072e12 = 0.0244 bytes per FLOP of the 16-bit peak (warned in bf16) but 0.0122 of
    the fp8 peak an fp8 sweep runs at, a well-fed chip's (not warned); 6,400 is 0.0244 of the fp8 peak, warned by it."""
    assert "0.0244 bytes per FLOP of its 131.1 TFLOP/s 16-bit peak" in _fp8_spec(tmp_path, 3200, False)[0]
    assert _fp8_spec(tmp_path, 3200, True) == []
    (line,) = _fp8_spec(tmp_path, 6400, True)
    assert "0.0244 bytes per FLOP of its 262.1 TFLOP/s fp8 peak" in line and line.endswith("write hbm_gbps = 800")
