"""An accelerator designer's first trial of archsim on a chip of their own: 4 weight-stationary arrays of
64 × 64 PEs at 1 GHz, 2 MiB of SRAM per array, 16 GiB of HBM at 400 GB/s. Each test is a defect found
by running the commands the README and docs/formats.md describe, with that chip's device files.

References are hand calculations: the arrays' peak is 2 FLOPs per PE per clock,
2 · 4 · 64 · 64 · 10⁹ = 32.768 TFLOP/s (docs/formats.md, "Device files", `[compute.peak_tflops]`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from device_files import device_toml

from archsim.cli import main
from archsim.devices.device_file import load_device
from archsim.errors import InputError

CHIP_TOML = device_toml(name="mychip", gemm="arrays", arrays=4, rows=64, cols=64, dataflow="ws", clock_mhz=1000,
                        sram_kib=2048, hbm_gib=16, hbm_gbps=400, intra_gbps=100)

# the chip as a SCALE-Sim .cfg device file (the chip_cfg fixture: tests/device_files.py's scalesim_chip_cfg)
CHIP = {"arrays": 4, "hbm_gbps": 400, "run_name": "mychip", "device_name": "mychip_cfg"}

ARRAYS_PEAK_TFLOPS = 2 * 4 * 64 * 64 * 1e9 / 1e12  # 32.768, by hand


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_bandwidth_axis_the_analytic_engine_drops_is_refused(tmp_path, capsys):
    """``bandwidths = [10, 100, 400]`` in a sweep on the analytic engine (the default) gave three rows of
    identical cycles, seconds, energy and area per design: an HBM-bandwidth sweep that reads as "bandwidth
    does not matter". ``archsim cost --bandwidth`` refuses the same input without ``--engine cycle``."""
    spec = _write(tmp_path, "dse.toml", '[sweep]\nname = "dse"\nnetworks = ["layerpipe_sample"]\n'
                  'arrays = ["32x32", "64x64"]\nbatches = [8]\nprocessors = [4]\nmethods = ["pipedream"]\n'
                  'bandwidths = [10, 100, 400]\n')
    assert main(["sweep", str(spec), "--out", str(tmp_path / "r"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "bandwidths" in err and 'engine = "cycle"' in err
    assert not (tmp_path / "r" / "results.csv").exists()


def test_the_same_sweep_on_the_cycle_engine_is_accepted(tmp_path):
    from archsim.sweep.spec import load_spec

    spec = _write(tmp_path, "dse.toml", '[sweep]\nnetworks = ["layerpipe_sample"]\narrays = ["32x32"]\n'
                  'batches = [8]\nprocessors = [4]\nmethods = ["pipedream"]\nengine = "cycle"\n'
                  'bandwidths = [10, 100, 400]\n')
    assert [u.design.bandwidth for u in load_spec(spec).units()] == [10, 100, 400]


@pytest.mark.parametrize("stated", [10.0, 100.0])
def test_a_stated_peak_the_arrays_do_not_compute_is_refused(tmp_path, stated):
    """With ``gemm = "arrays"`` a GEMM is timed on the arrays, whatever ``[compute.peak_tflops]`` says; the
    stated peak was only MFU's denominator. ``fp16 = 10`` on arrays that compute 32.768 TFLOP/s printed
    ``mfu: 1.284`` (more than the chip's peak); ``fp16 = 100`` a third of the true MFU."""
    text = CHIP_TOML.replace("[memory]", f"[compute.peak_tflops]\nfp16 = {stated}\n\n[memory]")
    with pytest.raises(InputError) as caught:
        load_device(_write(tmp_path, "chip.toml", text))
    assert caught.value.where.field == "compute.peak_tflops.fp16"
    assert "32.77" in caught.value.message


def test_a_stated_peak_equal_to_the_arrays_is_accepted(tmp_path):
    text = CHIP_TOML.replace("[memory]", f"[compute.peak_tflops]\nfp16 = {ARRAYS_PEAK_TFLOPS}\n"
                             "fp64 = 1\n\n[memory]")  # fp64: no GEMM of archsim runs it; a datasheet figure
    device = load_device(_write(tmp_path, "chip.toml", text))
    assert device.peak("fp16") == pytest.approx(ARRAYS_PEAK_TFLOPS * 1e12)


def test_the_arrays_peak_without_a_stated_one_is_the_hand_figure(tmp_path):
    device = load_device(_write(tmp_path, "chip.toml", CHIP_TOML))
    assert device.peak("fp16") == pytest.approx(ARRAYS_PEAK_TFLOPS * 1e12)


def test_a_cfg_device_file_refuses_a_second_sram_size(tmp_path, chip_cfg):
    """A ``.cfg`` device file's SRAM per array is its three SCALE-Sim SRAMs (683 + 683 + 682 KiB here);
    a ``[memory] sram_kib_per_array = 8`` beside them was silently dropped (train's energy unchanged)."""
    text = chip_cfg(**CHIP).replace("hbm_gbps = 400", "hbm_gbps = 400\nsram_kib_per_array = 8")
    with pytest.raises(InputError) as caught:
        load_device(_write(tmp_path, "chip.cfg", text))
    assert caught.value.where.field == "memory.sram_kib_per_array"
    assert "IfmapSramSzkB" in caught.value.message
    assert main(["cost", "layerpipe_sample", "--config", str(tmp_path / "chip.cfg")]) == 2  # every reader alike


def test_a_cfg_device_sections_unknown_key_lists_the_array_count(tmp_path, chip_cfg):
    """``[device] clock_mhz = 500`` in a ``.cfg`` was refused with "[device] takes name, gemm, split_k,
    board_watts" — but a ``.cfg``'s ``[device]`` also takes ``arrays`` and ``arrays_per_core``."""
    text = chip_cfg(**CHIP).replace("arrays = 4", "arrays = 4\nclock_mhz = 500")
    with pytest.raises(InputError) as caught:
        load_device(_write(tmp_path, "chip.cfg", text))
    assert caught.value.where.field == "device.clock_mhz"
    assert "arrays," in caught.value.message and "arrays_per_core" in caught.value.message


def test_a_cluster_naming_a_missing_device_file_names_the_cluster_file(tmp_path, capsys):
    """A cluster's ``device = "chip.toml"`` that is not there gave "sub/chip.toml: device file not found",
    naming neither the cluster file nor that the path is read from the cluster file's folder."""
    folder = tmp_path / "clusters"
    folder.mkdir()
    _write(tmp_path, "chip.toml", CHIP_TOML)  # beside the cluster folder, not in it
    cluster = _write(folder, "mine.toml", '[cluster]\nname = "mine"\n\n[[servers]]\ngpus = 8\n'
                     'intra_server_gbps = 800\ndevice = "chip.toml"\n')
    config = Path(__file__).resolve().parents[1] / "configs" / "transformers" / "gpt2.json"
    assert main(["train", str(config), "--cluster", str(cluster), "--tp", "1", "--pp", "1", "--dp", "8",
                 "--global-batch", "8", "--micro-batch", "1"]) == 2
    err = capsys.readouterr().err
    assert str(cluster) in err and "device" in err and "relative to" in err


def test_cost_on_a_device_file_of_four_arrays_says_it_times_one(tmp_path, capsys, chip_cfg):
    """``archsim cost --config chip.cfg`` on a device of 4 arrays prints one array's cycles and seconds
    (docs/formats.md) but said nothing of it: its seconds read as the chip's, 4× what train deals over
    the 4 arrays."""
    path = _write(tmp_path, "chip.cfg", chip_cfg(**CHIP))
    assert main(["cost", "layerpipe_sample", "--config", str(path)]) == 0
    err = capsys.readouterr().err
    assert "4 arrays" in err and "one" in err
    assert main(["gemm", "--m", "1024", "--k", "768", "--n", "2304", "--config", str(path)]) == 0
    assert "4 arrays" in capsys.readouterr().err  # gemm reads --config on its own path
    plain = _write(tmp_path, "plain.cfg", chip_cfg(**CHIP).split("[device]")[0])
    assert main(["cost", "layerpipe_sample", "--config", str(plain)]) == 0
    assert "arrays" not in capsys.readouterr().err  # a plain SCALE-Sim file is one array: nothing to say


@pytest.mark.parametrize("name, field", [("chip.cfg", "device.arrays_per_core"),
                                         ("chip.toml", "compute.arrays_per_core")])
def test_arrays_per_core_that_do_not_divide_the_arrays_name_the_key(tmp_path, capsys, chip_cfg, name, field):
    """``arrays_per_core = 3`` beside 4 arrays was refused by train as field 'device.per_core' (a key no file
    has), and ``cost --config`` took the same ``.cfg`` — though docs/formats.md says every reader refuses a
    bad value of a device file alike."""
    text = (chip_cfg(**CHIP) if name.endswith(".cfg") else CHIP_TOML).replace("arrays = 4",
                                                                             "arrays = 4\narrays_per_core = 3")
    path = _write(tmp_path, name, text)
    with pytest.raises(InputError) as caught:
        load_device(path)
    assert caught.value.where.field == field
    if name.endswith(".cfg"):
        assert main(["cost", "layerpipe_sample", "--config", str(path)]) == 2
        assert "arrays_per_core" in capsys.readouterr().err


def test_plan_on_a_cluster_of_the_chip_prices_on_the_chip(tmp_path, capsys, chip_cfg):
    """``archsim plan NETWORK --cluster`` on a cluster whose servers name a device file priced every layer on
    the default 32 × 32 array at 1 GHz (only a stderr note said so): the same makespan for a cluster of
    this chip, of TPU-v4-like chips and of H100s. It now prices them on the
    chip: 4 arrays of 64 × 64 (16 times the default array's PEs) plan a shorter makespan than the default
    array does on the same links (given explicitly with --array, which keeps the array and says so)."""
    import json

    _write(tmp_path, "chip.cfg", chip_cfg(**CHIP))
    cluster = _write(tmp_path, "mine.toml", '[cluster]\nname = "mine"\n\n[[servers]]\ngpus = 4\n'
                     'intra_server_gbps = 1600\ndevice = "chip.cfg"\n')  # the chip's own 100 GB/s: no note
    assert main(["plan", "layerpipe_sample", "--cluster", str(cluster), "--microbatches", "4", "--format", "json"]) == 0
    captured = capsys.readouterr()
    on_chip = json.loads(captured.out)["meta"]
    assert "note" not in captured.err and on_chip["priced_on"] == "mychip_cfg"
    assert main(["plan", "layerpipe_sample", "--cluster", str(cluster), "--microbatches", "4", "--format", "json",
                 "--array", "32x32"]) == 0
    captured = capsys.readouterr()
    on_array = json.loads(captured.out)["meta"]
    assert "chip.cfg" in captured.err and "--array" in captured.err and "32x32" in captured.err
    assert on_chip["makespan_seconds"] < on_array["makespan_seconds"]
    spp = Path(__file__).resolve().parents[1] / "configs" / "clusters" / "testbed_v100.toml"  # names no device
    assert main(["plan", "layerpipe_sample", "--cluster", str(spp), "--microbatches", "4"]) == 0
    assert "note" not in capsys.readouterr().err
