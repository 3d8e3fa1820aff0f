"""User trial 47: an accelerator architect's design-space sweep. Their chip (4 arrays of 128 × 128 at 940 MHz,
64 MiB of SRAM, 32 GiB of HBM at 1.2 TB/s, 4 links of 100 GB/s) as a device TOML, trained on GPT-3 1.3B, then a
device sweep (array size × HBM bandwidth × chips) with its report. Each test failed on the code before its fix
(its docstring says how)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from device_files import device_toml

import archsim
from archsim.cli import main
from archsim.devices.device_file import implausible_figures, load_device
from archsim.errors import InputError
from archsim.sweep.folder import holding

CHIP_TOML = device_toml(name="mychip", gemm="arrays", arrays=4, rows=128, cols=128, dataflow="ws", clock_mhz=940,
                        sram_kib=16384, hbm_gib=32, hbm_gbps=1200, intra_gbps=100, links=4)

SPEC = """[sweep]
name = "mychip_dse"
model = "gpt3_1.3b"
device = "chip.toml"
chips = [4]
global_batch = 64
"""


def _files(folder: Path, spec_extra: str = "") -> Path:
    (folder / "chip.toml").write_text(CHIP_TOML)
    spec = folder / "sweep.toml"
    spec.write_text(SPEC + spec_extra)
    return spec


def _sweep(capsys, spec: Path, out: Path) -> tuple[int, str]:
    capsys.readouterr()
    status = main(["sweep", str(spec), "--quiet", "--out", str(out)])
    return status, capsys.readouterr().err


def test_a_quoted_number_in_a_device_sweep_axis_says_to_drop_the_quotes(tmp_path, capsys):
    """Failed before: ``chips = ["4"]`` was refused as "expected integers in 1…65536, got '4'" and
    ``hbm_gbps = ["1200"]`` as "expected GB/s in (0, 10⁷), got '1200'": a value that reads as inside the range
    it is refused for. The device file says of the same slip that the number takes no quotes; now the spec does."""
    for extra, key in (('hbm_gbps = ["1200"]\n', "hbm_gbps"), ('array_sides = ["128"]\n', "array_sides"),
                       ('sram_kib_per_array = ["4096"]\n', "sram_kib_per_array")):
        status, err = _sweep(capsys, _files(tmp_path, extra), tmp_path / "out")
        assert status == 2
        assert f"field '{key}'" in err and "(write the number without quotes)" in err, err
        assert len(err.strip().splitlines()) == 1, err
    (tmp_path / "sweep.toml").write_text(SPEC.replace("chips = [4]", 'chips = ["4"]'))
    status, err = _sweep(capsys, tmp_path / "sweep.toml", tmp_path / "out")
    assert status == 2 and "field 'chips'" in err and "got the string '4' (write the number without quotes)" in err
    assert not (tmp_path / "out").exists()  # refused before anything is written


def test_a_quoted_static_watts_in_a_device_sweep_is_refused_as_the_device_file_refuses_it(tmp_path, capsys):
    """Failed before: ``static_watts = "50"`` in a device sweep's spec ran (exit 0, its rows at 50 W) where the same
    quoted figure in the device file's ``[device] static_watts`` is refused: a TOML number takes no quotes. Now it
    is refused in one line. The figure written as a number is priced by the rule docs/formats.md states,
    static_watts × chips × iteration seconds added to the dynamic joules: here 50 W × 4 chips × t."""
    status, err = _sweep(capsys, _files(tmp_path, 'static_watts = "50"\n'), tmp_path / "quoted")
    assert status == 2, err
    assert "field 'static_watts'" in err and "got the string '50' (write the number without quotes)" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "quoted").exists()
    rows = {}
    for watts in (0, 50):
        (tmp_path / "sweep.toml").write_text(SPEC + f"static_watts = {watts}\n")
        status, err = _sweep(capsys, tmp_path / "sweep.toml", tmp_path / f"w{watts}")
        assert status == 0, err
        with open(tmp_path / f"w{watts}" / "results.csv", newline="") as handle:
            rows[watts] = next(csv.DictReader(handle))
    seconds = float(rows[0]["iteration_seconds"])
    assert float(rows[50]["iteration_seconds"]) == seconds  # static power costs joules, not time
    extra = float(rows[50]["energy_j"]) - float(rows[0]["energy_j"])
    assert abs(extra - 50 * 4 * seconds) < 1e-9 * extra


def test_hbm_gib_written_in_bytes_is_named_as_bytes(tmp_path):
    """Failed before: ``hbm_gib = 34359738368`` (32 GiB written in bytes: 32 × 2³⁰) was warned of with "if it is in
    MiB, write hbm_gib = 3.35544e+07", a figure itself 8,192 times the 4,096 GiB the warning calls the most a chip
    has. Now the fix names the unit that gives a chip's memory: bytes, 34359738368 / 2³⁰ = 32; 33554432 in KiB
    (/ 2²⁰) = 32; 32768 in MiB (/ 2¹⁰) = 32; a figure no unit brings to 4,096 GiB or less gets no fix."""
    for figure, unit in (("34359738368", "bytes"), ("33554432", "KiB"), ("32768", "MiB"), ("1e15", None)):
        path = tmp_path / f"chip_{unit}.toml"
        path.write_text(CHIP_TOML.replace("hbm_gib = 32", f"hbm_gib = {figure}"))
        [line] = [line for line in implausible_figures(load_device(path)) if "hbm_gib" in line]
        if unit is None:
            assert line.endswith("(≤ 4096 GiB)"), line
        else:
            assert line.endswith(f"if it is in {unit}, write hbm_gib = 32"), line


def test_report_given_the_spec_file_names_the_results_folder(tmp_path, capsys, monkeypatch):
    """Failed before: ``archsim report sweep.toml`` (the spec, where the results folder belongs) said "sweep.toml:
    no results.csv here: run `archsim sweep SPEC --out DIR` first", as though the spec were an empty folder; the
    sweep had run. Now the line says it is a spec and names its folder (results/ + the spec's name) and the
    command that draws its report; any other file is said to be a file."""
    monkeypatch.chdir(tmp_path)
    spec = _files(tmp_path)
    assert _sweep(capsys, spec, tmp_path / "results" / "mychip_dse")[0] == 0
    status = main(["report", "sweep.toml", "--out", "r.html"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.strip() == ("archsim report: error: sweep.toml: a sweep spec, not its results folder: give the folder "
                           "its sweep wrote (--out; default results/mychip_dse), or run `archsim sweep sweep.toml "
                           "--report`")
    assert main(["report", "chip.toml", "--out", "r.html"]) == 2
    assert capsys.readouterr().err.strip() == "archsim report: error: chip.toml: a file, not a sweep's results folder"
    assert main(["report", "results/mychip_dse", "--out", "r.html"]) == 0  # the folder it names draws


def test_report_of_a_folder_that_does_not_exist_says_so(tmp_path, capsys, monkeypatch):
    """Failed before: ``archsim report DIR`` on a folder that does not exist (a typo, a sweep never run) said "no
    results.csv here", as though the folder were there and empty. Now one line says there is no such folder (exit
    2, no report written); an empty folder that exists is still told to run the sweep first."""
    monkeypatch.chdir(tmp_path)
    assert main(["report", "results/typo", "--out", "r.html"]) == 2
    assert capsys.readouterr().err.strip() == ("archsim report: error: results/typo: no such folder: give a sweep's "
                                               "results folder (`archsim sweep SPEC --out DIR` writes one)")
    assert not Path("r.html").exists()
    Path("empty").mkdir()
    assert main(["report", "empty", "--out", "r.html"]) == 2
    assert "no results.csv here" in capsys.readouterr().err


def test_report_of_a_sweep_still_running_or_stopped_says_which(tmp_path, capsys, monkeypatch):
    """Failed before: ``archsim report DIR`` on the folder of a sweep still running (its lock held), or of one
    stopped by Ctrl-C before it wrote results.csv, said "no results.csv here: run `archsim sweep SPEC --out DIR`
    first" both times: no word that a sweep is at work there, and a placeholder where the folder's spec.json names
    the command that resumes it. Now each case says what it is and what to do."""
    monkeypatch.chdir(tmp_path)
    _files(tmp_path)
    spec, out = Path("sweep.toml"), Path("results") / "mychip_dse"
    assert _sweep(capsys, spec, out)[0] == 0
    (out / "results.csv").unlink()  # the state a sweep stopped before its end leaves: spec.json and its cache
    assert main(["report", str(out), "--out", "r.html"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"archsim report: error: {out}: no results.csv: the sweep stopped before its end; `archsim sweep sweep.toml "
        f"--out {out}` computes the rest from its cache and writes it")
    with holding(out, str(spec), "mychip_dse"):  # a running sweep holds the folder's lock
        assert main(["report", str(out), "--out", "r.html"]) == 2
        err = capsys.readouterr().err.strip()
    assert err.startswith(f"archsim report: error: {out}: no results.csv yet: a sweep is still writing this folder "
                          "(pid "), err
    assert err.endswith("draw the report once it ends, or give the sweep --report") and "\n" not in err
    assert not Path("r.html").exists()


def test_a_device_model_or_cluster_file_given_as_the_sweep_spec_is_named_as_such(tmp_path, capsys):
    """Failed before: ``archsim sweep chip.toml`` (the device file, where its spec belongs) said "line 17, field
    'links': expected exactly one table, [sweep]", one of the file's own tables as the fault; the chip as a ``.cfg``
    was refused as bad TOML with "a .cfg, name it .cfg", of a file so named; a model or a cluster file likewise.
    Now one line says what the file is and the spec key that names it."""
    _files(tmp_path)
    (tmp_path / "chip.cfg").write_text("[general]\nrun_name = mychip\n\n[architecture_presets]\nArrayHeight:    128\n")
    (tmp_path / "model.toml").write_text('[transformer]\nfamily = "gpt"\nlayers = 2\n')
    (tmp_path / "cluster.toml").write_text('[cluster]\nname = "c"\n\n[[servers]]\ncount = 1\ngpus = 8\n'
                                           'device = "chip.toml"\n')
    said = {"chip.toml": 'a device file, not a sweep spec: name it in a spec\'s [sweep] table, device = "FILE"',
            "chip.cfg": 'a SCALE-Sim .cfg, not a sweep spec: name it in a spec\'s [sweep] table, device = "FILE"',
            "model.toml": 'a transformer config, not a sweep spec: name it in a spec\'s [sweep] table, model = "FILE"',
            "cluster.toml": "a cluster file, not a sweep spec: a device sweep trains on one server of its device's "
                            "chips, chips = [N, …]"}
    for name, start in said.items():
        status, err = _sweep(capsys, tmp_path / name, tmp_path / "out")
        assert status == 2
        assert err.startswith(f"archsim sweep: error: {tmp_path / name}: {start}"), err
        assert "name it .cfg" not in err and "expected exactly one table" not in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()
    assert _sweep(capsys, tmp_path / "sweep.toml", tmp_path / "out")[0] == 0  # the spec that names it runs


def test_run_sweep_into_a_file_says_what_archsim_sweep_says(tmp_path, monkeypatch, capsys):
    """Failed before: ``archsim.run_sweep(spec, out="afile")``, a file where the results folder goes, raised
    "afile, field 'out': cannot write results here (Not a directory)", the OS's words, where ``archsim sweep --out
    afile`` says "cannot write results here (not a folder): give a folder name" (the API raises the CLI's texts,
    docs/cli.md). Now it is the same line."""
    monkeypatch.chdir(tmp_path)
    _files(tmp_path)
    Path("afile").write_text("mine\n")
    assert main(["sweep", "sweep.toml", "--quiet", "--out", "afile"]) == 2
    cli = capsys.readouterr().err.strip().removeprefix("archsim sweep: error: argument --out: ")
    assert cli == "afile: cannot write results here (not a folder): give a folder name"
    with pytest.raises(InputError) as caught:
        archsim.run_sweep("sweep.toml", out="afile")
    assert str(caught.value) == cli
    assert Path("afile").read_text() == "mine\n"


def test_a_spec_naming_its_own_device_file_without_suffix_says_the_name_to_write(tmp_path, capsys):
    """Failed before: ``device = "chip"`` beside chip.toml (written as a shipped name is, ``tpu_v4_like``) was
    refused as "'chip': no file in the spec's folder, and no shipped configs/devices/chip{.toml,.cfg}", where
    chip.toml is in that folder; and a misspelt shipped model listed none of the names shipped. Now the first says
    the file's name to write, the second lists configs/transformers/' names (gpt3_1.3b among them)."""
    _files(tmp_path)
    (tmp_path / "sweep.toml").write_text(SPEC.replace('"chip.toml"', '"chip"'))
    status, err = _sweep(capsys, tmp_path / "sweep.toml", tmp_path / "out")
    assert status == 2
    assert err.strip().endswith("field 'device': 'chip': no shipped configs/devices/chip{.toml,.cfg}, and the spec's "
                                'folder has chip.toml, not chip: write device = "chip.toml" (a file beside the spec '
                                "is named with its suffix)"), err
    (tmp_path / "sweep.toml").write_text(SPEC.replace('"gpt3_1.3b"', '"gpt3_13b"'))
    status, err = _sweep(capsys, tmp_path / "sweep.toml", tmp_path / "out")
    assert status == 2 and "field 'model'" in err and "; shipped: " in err
    assert "gpt3_1.3b" in err.partition("; shipped: ")[2].split(", ") and err.count("\n") == 1


def test_an_fp32_device_sweep_notes_what_train_notes_of_fp32_on_the_arrays(tmp_path, capsys):
    """Failed before: ``archsim train --dtype fp32`` on the chip (no ``[compute] lanes``) notes that its fp32 GEMMs
    run on its arrays at their fp16 rate; a device sweep with ``dtype = "fp32"``, whose points are those runs, said
    nothing. Now it notes the same line (``archsim.run_sweep`` warns it). The point's seconds are train's own: the
    note changes no figure. In fp16 there is no such note."""
    spec = _files(tmp_path, 'dtype = "fp32"\n')
    status, err = _sweep(capsys, spec, tmp_path / "out")
    line = "mychip states no fp32 lanes ([compute] lanes): its fp32 GEMMs run on its arrays at their fp16 rate"
    assert status == 0 and f"archsim sweep: note: {line}\n" in err, err
    (tmp_path / "cluster.toml").write_text('[cluster]\nname = "c"\n\n[[servers]]\ncount = 1\ngpus = 4\n'
                                           'device = "chip.toml"\n')
    assert main(["train", "gpt3_1.3b", "--cluster", str(tmp_path / "cluster.toml"), "--dp", "4", "--global-batch",
                 "64", "--dtype", "fp32", "--format", "json"]) == 0
    assert f"archsim train: note: {line}\n" in capsys.readouterr().err
    with pytest.warns(UserWarning, match=r"mychip states no fp32 lanes"):
        archsim.run_sweep(str(spec), out=str(tmp_path / "out"))
    status, err = _sweep(capsys, _files(tmp_path), tmp_path / "fp16")
    assert status == 0 and "no fp32 lanes" not in err


def test_a_micro_batch_no_chip_count_divides_is_named_not_the_chips(tmp_path, capsys):
    """Failed before: ``micro_batch = 128`` beside ``global_batch = 64`` was refused as "line 4, field 'chips': 1
    chips: global batch 64 is not a multiple of micro-batch × DP (128 × 1)": the chips key named, where no chip count
    helps (64 / 128 is no whole number of micro-batches on one chip), and "1 chips". Now the micro_batch key is named;
    a chip count that does not divide (64 / (2 × 3) = 10.7) still names chips, and one chip is "1 chip"."""
    status, err = _sweep(capsys, _files(tmp_path, "micro_batch = 128\n"), tmp_path / "out")
    assert status == 2
    assert err.strip().endswith("line 7, field 'micro_batch': global_batch 64 is not a multiple of micro_batch 128")
    (tmp_path / "sweep.toml").write_text(SPEC.replace("chips = [4]", "chips = [1, 3]") + "micro_batch = 2\n")
    status, err = _sweep(capsys, tmp_path / "sweep.toml", tmp_path / "out")
    assert status == 2 and err.strip().endswith(
        "line 5, field 'chips': 3 chips: global batch 64 is not a multiple of micro-batch × DP (2 × 3)"), err
    (tmp_path / "sweep.toml").write_text(SPEC.replace("chips = [4]", "chips = [1]").replace("= 64", "= 2000000"))
    status, err = _sweep(capsys, tmp_path / "sweep.toml", tmp_path / "out")  # 2·10⁶ micro-batches on one chip
    assert status == 2 and "field 'global_batch': 1 chip: an iteration of about" in err, err
