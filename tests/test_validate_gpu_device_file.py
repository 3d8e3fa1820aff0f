"""``validate-gpu --gpu PATH.toml`` times NeuSight's kernel rows on a device file, by the op timer train prices that
device with. Before, a device file as ``--gpu`` was refused (only catalog names were read).

References: the device file's own figures read here with tomllib, and the documented rules: the A100 file restates
the catalog A100 80GB with vTrain's fit, so its fp16 GEMMs are the catalog's to the float, but for one rule — a
device file keeps its own launch (``launch_s``) where a catalog GPU's kernel timed alone pays NeuSight's
(``kernel_ops.kernel_families``); an elementwise row is its tensors' bytes over the file's HBM bandwidth times its
``memory_efficiency``, plus that launch (docs/gpu-validation.md)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from archsim.cli import main
from archsim.devices.kernel_constants import FITTED

ROOT = Path(__file__).resolve().parents[1]
DEVICE_FILE = ROOT / "configs" / "devices" / "a100_80gb_as_arrays.toml"
FIGURES = tomllib.loads(DEVICE_FILE.read_text())


def _rows(capsys, *flags: str) -> list[dict]:
    assert main(["validate-gpu", *flags, "--show", "kernels", "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["rows"]


def _csv(tmp_path: Path, text: str) -> str:
    path = tmp_path / "kernels.csv"
    path.write_text(text)
    return str(path)


def test_the_a100_file_times_fp16_gemms_as_the_catalog_a100_but_for_its_launch(tmp_path, capsys):
    csv = _csv(tmp_path, "OPName,Latency,Device,B,M,N,K\nlinear,1.0,Tesla T4,1,1024,2560,2560\n"
                         "linear,1.0,Tesla T4,1,512,1536,6144\nbmm,1.0,Tesla T4,96,512,64,512\n"
                         "bmm,1.0,Tesla T4,24,2048,2048,64\n")
    catalog = _rows(capsys, "--csv", csv, "--gpu", "a100-80gb", "--dtype", "fp16")
    on_file = _rows(capsys, "--csv", csv, "--gpu", str(DEVICE_FILE), "--dtype", "fp16")
    launch_gap = FIGURES["compute"]["launch_s"] - FITTED.launch_s
    assert launch_gap > 0
    assert [r["predicted_seconds"] - c["predicted_seconds"] for r, c in zip(on_file, catalog, strict=True)] == \
        pytest.approx([launch_gap] * 4, rel=1e-9)
    assert {r["gpu"] for r in on_file} == {FIGURES["device"]["name"]}


@pytest.mark.parametrize("dtype, size", [("fp32", 4), ("fp16", 2)])
def test_an_elementwise_row_is_its_bytes_at_the_files_bandwidth(tmp_path, capsys, dtype, size):
    b, h = 32768, 1600
    csv = _csv(tmp_path, f"OPName,Latency,Device,B,H\nadd,0.5,Tesla V100-PCIE-32GB,{b},{h}\n")
    (row,) = _rows(capsys, "--csv", csv, "--gpu", str(DEVICE_FILE), "--dtype", dtype)
    memory = FIGURES["memory"]
    expected = 3 * b * h * size / (memory["hbm_gbps"] * 1e9 * memory["memory_efficiency"]) \
        + FIGURES["compute"]["launch_s"]  # two inputs and the output, each read or written once
    assert row["predicted_seconds"] == pytest.approx(expected, rel=1e-12)
    assert row["relative_error"] == pytest.approx(expected / 5e-4 - 1, rel=1e-9)
    assert row["measured_device"] == "Tesla V100-PCIE-32GB"


def test_every_row_is_predicted_whatever_its_device(tmp_path, capsys):
    csv = _csv(tmp_path, "OPName,Latency,Device,B,H\nadd,0.1,Tesla T4,4,4\nadd,0.2,Tesla P4,4,4\n")
    rows = _rows(capsys, "--csv", csv, "--gpu", str(DEVICE_FILE))
    assert [(r["line"], r["measured_device"]) for r in rows] == [(2, "Tesla T4"), (3, "Tesla P4")]


def test_stats_over_one_gpus_rows_and_refused_over_several(tmp_path, capsys):
    one = _csv(tmp_path, "OPName,Latency,Device,B,H\nadd,0.1,Tesla T4,4,4\nadd,0.2,T4,8,8\n")
    assert main(["validate-gpu", "--csv", one, "--gpu", str(DEVICE_FILE), "--show", "stats", "--format", "json"]) == 0
    (stats,) = json.loads(capsys.readouterr().out)["rows"]
    assert (stats["gpu"], stats["op_class"], stats["kernel_count"]) == (FIGURES["device"]["name"], "elementwise", 2)
    several = _csv(tmp_path, "OPName,Latency,Device,B,H\nadd,0.1,Tesla T4,4,4\nadd,0.2,Tesla P4,4,4\n")
    assert main(["validate-gpu", "--csv", several, "--gpu", str(DEVICE_FILE), "--show", "stats"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "2 GPUs" in err and "--show kernels" in err


@pytest.mark.parametrize("flag", [["--sm-count", "80"], ["--clock-mhz", "1000"], ["--memory-gbps", "900"],
                                  ["--like", "t4"]])
def test_a_gpu_figure_beside_a_device_file_is_refused(tmp_path, capsys, flag):
    csv = _csv(tmp_path, "OPName,Latency,Device,B,H\nadd,0.1,Tesla T4,4,4\n")
    assert main(["validate-gpu", "--csv", csv, "--gpu", str(DEVICE_FILE), *flag]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and flag[0] in err and "device file" in err


TWO_FC = """Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, Padding, Type,
fc1, 1, 1, 1, 1, 8, 4, 1, 0, fc,
"""


def _lanes_chip() -> str:
    from tests.chip_pair import chip_toml

    return chip_toml(static_watts=3).format(lanes="lanes = 16\nlane_rows = 8\nlane_cols = 8\n", energy="")


@pytest.mark.parametrize("name, text", [("tiles.toml", DEVICE_FILE.read_text()), ("lanes.toml", _lanes_chip())])
def test_cost_refuses_such_a_file_naming_the_commands_that_take_it(tmp_path, capsys, name, text):
    """cost counts one array's cycles: a tile-timed file has none, a file of two kinds two. Its one line names the
    commands that take the file, and validate-gpu, one of them, does (before: the line named none of them)."""
    (tmp_path / name).write_text(text)
    (tmp_path / "fc.csv").write_text(TWO_FC)
    assert main(["cost", str(tmp_path / "fc.csv"), "--config", str(tmp_path / name)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert "train and search" in err and "validate-gpu --gpu" in err, err
    csv = _csv(tmp_path, "OPName,Latency,Device,B,M,N,K\nlinear,1.0,Tesla T4,1,256,256,256\n")
    assert len(_rows(capsys, "--csv", csv, "--gpu", str(tmp_path / name))) == 1
