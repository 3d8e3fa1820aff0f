"""An accelerator designer's own chip (4 arrays of 256 × 256 at 1.2 GHz, 32 MiB of SRAM per array, 48 GiB of
HBM at 1.6 TB/s, 200 GB/s links): a device-file figure whose unit slipped was read without a word — 32 MiB of SRAM
written as 32 (KiB) priced the iteration's joules lower, 1.6 (TB/s) as hbm_gbps made it 600 times slower. Now
train and search warn on stderr naming the key and the figure to write (docs/formats.md, "Device files"); and
search printed a cluster's warning twice, once as a Python UserWarning with a source line."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from device_files import device_toml

import archsim
from archsim.cli import main
from archsim.devices.catalog import GPUS
from archsim.devices.device_file import implausible_figures, load_device
from archsim.errors import InputError
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.rates import watts

ROOT = Path(__file__).resolve().parents[1]
GPT2 = str(ROOT / "configs" / "transformers" / "gpt2.json")

CHIP = device_toml(name="MyChip", arrays=4, rows=256, cols=256, clock_mhz=1200, sram_kib=32768, hbm_gib=48,
                   hbm_gbps=1600, intra_gbps=200)


def _chip(tmp_path: Path, old: str = "", new: str = "") -> Path:
    path = tmp_path / "chip.toml"
    path.write_text(CHIP.replace(old, new) if old else CHIP)
    return path


def _cluster(tmp_path: Path, old: str = "", new: str = "", extra: str = "") -> str:
    _chip(tmp_path, old, new)
    path = tmp_path / "cluster.toml"
    path.write_text(f'[cluster]\n{extra}\n[[servers]]\ncount = 1\ngpus = 8\nintra_server_gbps = 3200\n'
                    'device = "chip.toml"\n')
    return str(path)


SLIPS = [  # (the line as written, its key, the figure the warning says to write)
    ("sram_kib_per_array = 32\n", "sram_kib_per_array", "32768 KiB"),  # 32 MiB written as KiB
    ("sram_kib_per_array = 33554432\n", "sram_kib_per_array", "32768 KiB"),  # 32 MiB in bytes
    ("hbm_gbps = 1.6\n", "hbm_gbps", "hbm_gbps = 1600"),  # TB/s
    ("hbm_gbps = 1600000\n", "hbm_gbps", "hbm_gbps = 1600"),  # MB/s
    ("hbm_gib = 49152\n", "hbm_gib", "hbm_gib = 48"),  # MiB
]


@pytest.mark.parametrize(("line", "key", "fixed"), SLIPS)
def test_a_device_figure_whose_unit_slipped_is_warned_by_train(tmp_path, capsys, line, key, fixed):
    old = line.split("=")[0] + "= " + {"sram_kib_per_array": "32768", "hbm_gbps": "1600", "hbm_gib": "48"}[key] + "\n"
    cluster = _cluster(tmp_path, old, line)
    assert main(["train", GPT2, "--cluster", cluster, "--dp", "8", "--global-batch", "8", "--format", "csv"]) == 0
    err = capsys.readouterr().err
    (warning,) = [w for w in err.splitlines() if w.startswith("archsim train: warning: MyChip")]
    assert key in warning and warning.endswith(f"write {fixed}")


def test_the_sram_warning_says_why_one_fold_does_not_fit(tmp_path):
    """256 × 256 words at 2 bytes is 128 KiB; a third of 32 KiB (the energy model's operand buffer) is not."""
    (warning,) = implausible_figures(load_device(_chip(tmp_path, "= 32768", "= 32")))
    assert "256 × 256" in warning and "128 KiB" in warning and "32 KiB" in warning


def test_the_sram_floor_is_one_fold_per_third(tmp_path):
    """384 KiB is three buffers of exactly one 256 × 256 fold at 2 bytes: read without a word; 383 is not."""
    assert implausible_figures(load_device(_chip(tmp_path, "= 32768", "= 384"))) == ()
    assert len(implausible_figures(load_device(_chip(tmp_path, "= 32768", "= 383")))) == 1


def test_the_designers_honest_figures_and_the_shipped_devices_are_read_without_a_word(tmp_path):
    assert implausible_figures(load_device(_chip(tmp_path))) == ()
    for path in sorted((ROOT / "configs" / "devices").iterdir()):
        assert implausible_figures(load_device(path)) == (), path.name
    for name, gpu in GPUS.items():  # the catalog's boards: real figures, never warned
        assert implausible_figures(gpu) == (), name


def test_a_cfg_devices_three_srams_are_checked_alike(tmp_path, chip_cfg):
    """A .cfg's SRAM per array is its three SramSzkB together: 5 KiB each beside a 64 × 64 array (8 KiB a fold)."""
    text = chip_cfg(hbm_gbps=400, sram_kb=(5, 5, 5))
    path = tmp_path / "chip.cfg"
    path.write_text(text)
    (warning,) = implausible_figures(load_device(path))
    assert "15 KiB" in warning and "SramSzkB" in warning and "64 × 64" in warning


def test_the_library_warns_the_same_line(tmp_path):
    cluster = _cluster(tmp_path, "hbm_gbps = 1600", "hbm_gbps = 1.6")
    with pytest.warns(UserWarning, match=r"hbm_gbps = 1\.6 GB/s .* write hbm_gbps = 1600"):
        archsim.train(GPT2, cluster=cluster, dp=8, global_batch=8)


@pytest.mark.long  # a search: over a second
def test_search_prints_a_warning_once_as_its_own_line(tmp_path, capsys):
    """A NIC speed in Mb/s: archsim search printed its warning twice, the first as Python's UserWarning with the
    source line of commands/search.py."""
    (tmp_path / "chip.toml").write_text(CHIP)
    path = tmp_path / "cluster.toml"
    path.write_text('[cluster]\ninter_server_gbps = 400000\ninter_server_link = "per_gpu_pair"\n\n[[servers]]\n'
                    'count = 2\ngpus = 1\nintra_server_gbps = 3200\ndevice = "chip.toml"\n')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["search", GPT2, "--cluster", str(path), "--global-batch", "2", "--top", "1",
                     "--format", "csv"]) == 0
    assert [str(w.message) for w in caught if issubclass(w.category, UserWarning)] == []
    err = capsys.readouterr().err
    assert err.count("inter_server_gbps = 400000") == 1
    assert "archsim search: warning: inter_server_gbps = 400000" in err


def test_a_device_sweep_warns_an_axis_value_whose_unit_slipped(tmp_path, capsys):
    """hbm_gbps = [1.6, 1600]: the 1.6 point (TB/s written as GB/s) ran 600 times slower without a word."""
    _chip(tmp_path)
    spec = tmp_path / "sweep.toml"
    spec.write_text('[sweep]\nname = "own"\nmodel = "gpt2"\ndevice = "chip.toml"\nhbm_gbps = [1.6, 1600]\n'
                    "chips = [1]\nglobal_batch = 1\n")
    assert main(["sweep", str(spec), "--out", str(tmp_path / "results"), "--quiet"]) == 0
    err = capsys.readouterr().err
    (warning,) = [w for w in err.splitlines() if "MyChip" in w]
    assert warning.startswith("archsim sweep: warning: MyChip: [memory] hbm_gbps = 1.6 GB/s")
    assert warning.endswith("write hbm_gbps = 1600")


def test_an_energy_objective_without_watts_names_gpu_watts(tmp_path):
    """A tile-timed device file without board_watts and no gpu_watts: the energy objective's refusal named
    price_per_gpu_hour, the cost objective's key, and told to set both."""
    text = (ROOT / "configs" / "devices" / "a100_80gb_as_arrays.toml").read_text()
    (tmp_path / "chip.toml").write_text("\n".join(line for line in text.splitlines()
                                                  if not line.startswith("board_watts")))
    path = tmp_path / "cluster.toml"
    path.write_text('[cluster]\n\n[[servers]]\ncount = 1\ngpus = 8\nintra_server_gbps = 4800\ndevice = "chip.toml"\n')
    with pytest.raises(InputError) as caught:
        watts(load_gpu_cluster(str(path)), 8)
    assert caught.value.where.field == "gpu_watts"
    assert "price_per_gpu_hour" not in caught.value.message and "board_watts" in caught.value.message


def test_the_sram_warning_never_suggests_a_figure_it_would_warn_of_again(tmp_path):
    """Failed before the fix: beside a 128 × 100000 array (a cols slip), 8 MiB of SRAM per array was warned with
    "if it is in MiB, write 8.38861e+06 KiB" — 8 GiB per array, a figure the next rule warns of as bytes. A figure
    × 1024 that is itself implausible is no MiB slip: the warning names the array's shape and the SRAM a fold needs
    (3 × 128 × 100000 × 2 bytes = 75,000 KiB) instead."""
    chip = _chip(tmp_path, "cols = 256", "cols = 100000")
    chip.write_text(chip.read_text().replace("rows = 256", "rows = 128").replace("= 32768", "= 8192"))
    (warning,) = implausible_figures(load_device(chip))
    assert "8.38861e+06" not in warning and "in MiB" not in warning
    assert "[compute] rows and cols" in warning and "75000 KiB" in warning
    # a real MiB slip beside a real array still gets the MiB figure to write (the test above: 32 → 32768 KiB)
    (warning,) = implausible_figures(load_device(_chip(tmp_path, "= 32768", "= 32")))
    assert warning.endswith("if it is in MiB, write 32768 KiB")


@pytest.mark.parametrize(("intra_gbps", "intra_server", "unit", "fixed"), [
    (1600, 3200, "Gbit/s per direction", 200),  # 200 GB/s per direction typed as 1600 Gbit/s; the cluster's 3200 right
    (3200, 3200, "Gbit/s both directions", 200),  # typed as the cluster key's own figure
])
def test_the_in_server_unit_warning_offers_the_device_files_slip_too(tmp_path, intra_gbps, intra_server, unit, fixed):
    """Failed before the fix: a device file's [links] intra_gbps written in Gbit/s (1600 for 200 GB/s per direction)
    beside a right intra_server_gbps = 3200 was warned as the cluster file's slip, "its 1600 is right as it is",
    asking for intra_server_gbps = 25600: a link 8 times the chip's. The two figures' ratio cannot tell which file
    slipped, so the warning names both fixes: the cluster's figure to write, and the device file's."""
    cluster = _cluster(tmp_path, "intra_gbps = 200", f"intra_gbps = {intra_gbps}")
    cluster_path = Path(cluster)
    cluster_path.write_text(cluster_path.read_text().replace("intra_server_gbps = 3200",
                                                             f"intra_server_gbps = {intra_server}"))
    (warning,) = load_gpu_cluster(cluster).warnings
    assert "right as it is" not in warning, warning
    assert f"write intra_server_gbps = {intra_gbps * 16}" in warning, warning
    assert f"if chip.toml's intra_gbps = {intra_gbps} is in {unit}" in warning, warning
    assert warning.endswith(f"write intra_gbps = {fixed} there and keep intra_server_gbps = {intra_server}"), warning


CFG = """[general]
run_name = startup

[architecture_presets]
ArrayHeight:    128
ArrayWidth:     128
IfmapSramSzkB:    {ifmap}
FilterSramSzkB:   2731
OfmapSramSzkB:    2730
IfmapOffset:    0
FilterOffset:   10000000
OfmapOffset:    20000000
Dataflow : ws

[archsim]
ClockGHz = 1.2
"""


@pytest.mark.parametrize("ifmap", [2796203, 2731])
def test_cost_warns_a_cfgs_sram_in_bytes_naming_its_key(tmp_path, capsys, ifmap):
    """Failed before the fix: a .cfg whose IfmapSramSzkB is 2,796,203 (2.67 MiB written in bytes) was costed by
    `archsim cost --config` without a word, where the same figure as --sram-kb, or in a device file given to
    train, is warned (the three SRAMs together above 256 MiB). Now the .cfg is judged by that rule and the warning
    names the key that slipped and the KiB to write (2796203 / 1024 = 2731), not a sum of the three: a .cfg has
    no key that takes the sum. A .cfg of honest sizes is read without a word."""
    cfg = tmp_path / "chip.cfg"
    cfg.write_text(CFG.format(ifmap=ifmap))
    assert main(["cost", "layerpipe_sample", "--config", str(cfg), "--batch", "1", "--format", "csv"]) == 0
    warnings_ = [line for line in capsys.readouterr().err.splitlines() if ": warning: " in line]
    if ifmap == 2731:
        assert warnings_ == []
        return
    (warning,) = warnings_
    assert warning.startswith("archsim cost: warning: ") and "IfmapSramSzkB" in warning, warning
    assert warning.endswith("if it is in bytes, write IfmapSramSzkB: 2731"), warning
    with pytest.warns(UserWarning, match="write IfmapSramSzkB: 2731"):
        archsim.cost("layerpipe_sample", config=str(cfg), batch=1)


def test_a_dtype_the_chip_lacks_names_the_dtype_flag(tmp_path, capsys):
    """Failed before the fix: a tiles chip stating only a bf16 peak, trained at train's default fp16, was refused as
    "field 'precision': … has no fp16 peak", a field no flag or key of archsim's is called; it is --dtype (train's,
    search's) or a sweep's `dtype`, as plan's own refusal says."""
    chip = _chip(tmp_path)
    chip.write_text(chip.read_text().replace('name = "MyChip"', 'name = "MyChip"\ngemm = "tiles"')
                    .replace("clock_mhz = 1200", "clock_mhz = 1200\n[compute.peak_tflops]\nbf16 = 629"))
    cluster = tmp_path / "cluster.toml"
    cluster.write_text('[cluster]\n[[servers]]\ngpus = 8\nintra_server_gbps = 3200\ndevice = "chip.toml"\n')
    assert main(["train", GPT2, "--cluster", str(cluster), "--dp", "8", "--global-batch", "8"]) == 2
    err = capsys.readouterr().err
    assert err == "archsim train: error: argument --dtype: MyChip has no fp16 peak; it has bf16\n", err
