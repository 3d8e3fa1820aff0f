"""validate-gpu refuses what it would otherwise ignore: a device file given as ``--gpu`` (whose path was
matched as a GPU name, so ``my-t4.toml`` timed a catalog T4), the arrays view's ``--dataflow``,
``--no-split-k`` and ``--mode`` on NeuSight's CSVs (which the kernel time model never reads), and a
NeuSight CSV without its Latency column (refused as an archsim CSV missing network, layer, …).

References: the CLI's exit status and its one-line error; the CSVs are written here by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
DEVICE_FILE = ROOT / "configs" / "devices" / "a100_80gb_as_arrays.toml"
DEEPBENCH_T4 = ROOT / "benchmarks" / "results" / "deepbench_t4_kernels.csv"
NEUSIGHT = "OPName,Latency,Device,B,M,N,K\nlinear,0.5,Tesla T4,1,256,256,256\n"


def _neusight(tmp_path: Path) -> str:
    path = tmp_path / "kernels.csv"
    path.write_text(NEUSIGHT)
    return str(path)


def _refused(argv: list[str], capsys, *words: str) -> str:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1, err
    for word in words:
        assert word in err, err
    return err


@pytest.mark.parametrize("name", ["my-t4.toml", "a100_80gb_as_arrays.toml"])
def test_a_device_file_as_gpu_is_read_not_matched_by_its_name(tmp_path, capsys, name):
    """A NeuSight CSV is timed on the file's device (the A100 it states), never on the GPU its name suggests."""
    device = tmp_path / name
    device.write_text(DEVICE_FILE.read_text())
    assert main(["validate-gpu", "--csv", _neusight(tmp_path), "--gpu", str(device), "--show", "kernels",
                 "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["gpu"], r["measured_device"]) for r in rows] == [("NVIDIA A100 SXM4 80GB", "Tesla T4")]


def test_a_toml_written_as_a_cfg_is_refused_in_one_line(tmp_path, capsys):
    device = tmp_path / "lab.cfg"
    device.write_text(DEVICE_FILE.read_text())
    _refused(["validate-gpu", "--csv", _neusight(tmp_path), "--gpu", str(device), "--show", "kernels"],
             capsys, "lab.cfg")


def test_a_device_file_as_gpu_is_refused_on_a_measured_csv_too(tmp_path, capsys):
    device = tmp_path / "my-t4.toml"
    device.write_text(DEVICE_FILE.read_text())
    _refused(["validate-gpu", "--csv", str(DEEPBENCH_T4), "--gpu", str(device)], capsys, "--gpu", "device file")


def test_a_catalog_name_still_works_as_gpu(tmp_path, capsys):
    assert main(["validate-gpu", "--csv", _neusight(tmp_path), "--gpu", "Tesla T4", "--format", "csv"]) == 0
    assert "t4" in capsys.readouterr().out


def test_rows_and_stats_name_each_gpu_by_its_catalog_name(tmp_path, capsys):
    """validate-gpu printed the chip's slug (``t4``, ``v100-pcie``) where train and docs/formats.md's
    cluster ``gpu`` key name the same GPU ``t4-16gb``, ``v100-pcie-32gb``: one GPU, two names. The name
    printed is taken back as ``--gpu``, as the others still are."""
    import json

    path = tmp_path / "k.csv"
    path.write_text("OPName,Latency,Device,B,M,N,K\nlinear,0.5,Tesla T4,1,256,256,256\n"
                    "linear,0.5,Tesla V100-PCIE-32GB,1,256,256,256\n")
    assert main(["validate-gpu", "--csv", str(path), "--format", "json"]) == 0
    assert [r["gpu"] for r in json.loads(capsys.readouterr().out)["rows"]] == ["t4-16gb", "v100-pcie-32gb"]
    assert main(["validate-gpu", "--csv", str(path), "--format", "json", "--show", "stats"]) == 0
    assert [r["gpu"] for r in json.loads(capsys.readouterr().out)["rows"]] == ["t4-16gb", "v100-pcie-32gb"]
    for name in ("t4-16gb", "t4", "Tesla T4"):
        assert main(["validate-gpu", "--csv", str(path), "--gpu", name, "--format", "json"]) == 0
        assert [r["line"] for r in json.loads(capsys.readouterr().out)["rows"]] == [2]


def test_every_catalog_name_is_taken_as_gpu(tmp_path, capsys):
    """``gtx-1080-ti-11gb``, the name train takes and outputs print, was an unknown GPU to validate-gpu
    (its CUDA-name pattern wants ``1080 ti``)."""
    path = tmp_path / "k.csv"
    path.write_text("OPName,Latency,Device,B,M,N,K\nlinear,0.5,NVIDIA GeForce GTX 1080 Ti,1,256,256,256\n")
    assert main(["validate-gpu", "--csv", str(path), "--gpu", "gtx-1080-ti-11gb", "--format", "csv"]) == 0
    assert ",gtx-1080-ti-11gb,NVIDIA GeForce GTX 1080 Ti," in capsys.readouterr().out


@pytest.mark.parametrize("flags, named", [(["--dataflow", "ws"], "--dataflow"), (["--dataflow", "os"], "--dataflow"),
                                          (["--no-split-k"], "--no-split-k"), (["--mode", "paper"], "--mode"),
                                          (["--mode", "exact"], "--mode")])
def test_arrays_view_flags_are_refused_on_neusight_csvs(tmp_path, capsys, flags, named):
    _refused(["validate-gpu", "--csv", _neusight(tmp_path), *flags], capsys, named, "NeuSight")


def test_a_neusight_csv_without_latency_names_that_column(tmp_path, capsys):
    path = tmp_path / "no_latency.csv"
    path.write_text("OPName,Device,B,M,N,K\nlinear,Tesla T4,1,256,256,256\n")
    err = _refused(["validate-gpu", "--csv", str(path)], capsys, "missing column Latency")
    assert "network" not in err


@pytest.mark.parametrize("text, column", [
    ("OPName,Latency,Device,B,H,H\nadd,0.1,Tesla T4,4,4,8\n", "H"),
    ("network,layer,batch,op,measured_ms,measured_ms\nvgg16,conv1_1,1,F,0.1,0.2\n", "measured_ms"),
])
def test_a_column_named_twice_is_refused_not_one_cell_kept(tmp_path, capsys, text, column):
    """Both readers kept one of the two cells (NeuSight's: H = 8, the last) and ran on it."""
    path = tmp_path / "twice.csv"
    path.write_text(text)
    err = _refused(["validate-gpu", "--csv", str(path), "--gpu", "t4", "--show", "kernels"], capsys, "twice")
    assert f"line 1, field '{column}'" in err


@pytest.mark.parametrize("value", ["99999999999999999999", "1e400", "2147483648"])
def test_a_shape_beyond_the_input_limit_is_refused_not_a_traceback(tmp_path, capsys, value):
    """M = 10²⁰ was read, timed, and then broke the table's int64 column in a traceback (exit 1);
    1e400 was an infinite float that int() could not take."""
    path = tmp_path / "huge.csv"
    path.write_text(f"OPName,Latency,Device,B,M,N,K\nlinear,0.1,Tesla T4,1,{value},4,4\n")
    err = _refused(["validate-gpu", "--csv", str(path), "--format", "json"], capsys, "line 2, field 'M'")
    assert "2147483647" in err


def test_the_largest_accepted_shape_is_timed(tmp_path, capsys):
    path = tmp_path / "largest.csv"
    path.write_text("OPName,Latency,Device,B,M,N,K\nbmm,0.1,Tesla T4,2147483647,2147483647,2147483647,2147483647\n")
    assert main(["validate-gpu", "--csv", str(path), "--format", "csv"]) == 0
    assert "2147483647" in capsys.readouterr().out


@pytest.mark.parametrize("text", ["", "\n\n"])
def test_an_empty_csv_names_both_formats(tmp_path, capsys, text):
    """An empty file was told only archsim's columns (network, layer, …), not NeuSight's."""
    path = tmp_path / "empty.csv"
    path.write_text(text)
    _refused(["validate-gpu", "--csv", str(path)], capsys, "no header row", "network", "OPName, Latency")


def test_neusight_kernel_rows_give_their_line_in_the_csv(tmp_path, capsys):
    """With --gpu a NeuSight file's rows are a subset; each gives its CSV line (as measured CSVs'
    rows do) so it joins back to the file. Lines counted here: header 1, rows 2…5."""
    import json

    path = tmp_path / "k.csv"
    path.write_text("OPName,Latency,Device,B,H\nadd,0.1,Tesla T4,4,4\nadd,0.2,Tesla P4,4,4\n"
                    "relu,0.3,Tesla T4,8,8\nadd,0.4,Tesla P4,2,2\n")
    assert main(["validate-gpu", "--csv", str(path), "--gpu", "Tesla P4", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["line"], r["measured_seconds"]) for r in rows] == [(3, pytest.approx(2e-4)), (5, pytest.approx(4e-4))]


def test_a_gpu_name_is_read_as_a_name_beside_a_file_of_that_name(tmp_path, capsys, monkeypatch):
    (tmp_path / "t4").write_text("not a GPU")
    monkeypatch.chdir(tmp_path)
    assert main(["validate-gpu", "--csv", _neusight(tmp_path), "--gpu", "t4", "--format", "csv"]) == 0
    assert ",t4-16gb,Tesla T4," in capsys.readouterr().out
    device = tmp_path / "board"
    device.write_text(DEVICE_FILE.read_text())
    _refused(["validate-gpu", "--csv", _neusight(tmp_path), "--gpu", str(device)], capsys, "device file")


def test_csv_help_says_which_neusight_dimension_is_the_reduction(capsys):
    """Failed before: ``--csv``'s help named only archsim's measured CSVs, so a NeuSight-format CSV written by hand
    from NeuSight's README (linear as x[M×K]·W[K×N], K the reduction) had N and K silently swapped; the reader takes
    N as the reduction (docs/formats.md's ``N`` and ``K`` rows), and the help now says so."""
    with pytest.raises(SystemExit):
        main(["validate-gpu", "--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps the help: one line of words
    assert "A[MxN]·B[NxK] with N the reduction" in text and "x[MxK]·W[KxN]" in text, text
