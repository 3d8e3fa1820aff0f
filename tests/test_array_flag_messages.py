"""What the array commands (cost, energy, gemm, pipeline, schedule) say about flag values users got wrong in
trials: SRAM sizes typed in bytes where --sram-kb takes KiB (read silently: 341 MiB per buffer), a negative
--array that argparse took for an option ("expected one argument"), and the --sram-kb split a device TOML's
refusal suggests (341,341,341 for 1024 KiB, which sums to 1023: now the rule is stated)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import archsim
from archsim.array.sram_sizes import MAX_PLAUSIBLE_SRAM_KIB, operand_sram_kib
from archsim.cli import main
from archsim.devices.device_file import implausible_figures, load_device

BYTES = "349525,349525,349525"  # 1 MiB split in three, written in bytes where KiB go
SLIP = "is above 256 MiB per array: if it is in bytes, write"  # the device file's wording, shared

CHIP = """[device]
name = "MyChip"
[compute]
arrays = 4
rows = 256
cols = 256
clock_mhz = 1200
[memory]
sram_kib_per_array = {sram}
hbm_gib = 48
hbm_gbps = 1600
[links]
intra_gbps = 200
"""


def _chip(tmp_path: Path, sram: int) -> Path:
    path = tmp_path / "chip.toml"
    path.write_text(CHIP.format(sram=sram))
    return path


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if ": warning: " in line]


@pytest.mark.parametrize("command", ["cost", "energy"])
def test_sram_sizes_typed_in_bytes_are_warned_and_the_run_proceeds(capsys, command):
    """--sram-kb 349525,349525,349525 priced 341 MiB buffers (their area, their joules) without a word."""
    assert main([command, "layerpipe_sample", "--sram-kb", BYTES, "--format", "json"]) == 0
    captured = capsys.readouterr()
    (warning,) = _warnings(captured.err)
    assert warning.startswith(f"archsim {command}: warning: --sram-kb {BYTES}: 1048575 KiB")
    assert warning.endswith(f"{SLIP} --sram-kb 341,341,341"), warning
    assert json.loads(captured.out)["rows"]  # warned, priced as given


def test_one_size_typed_in_bytes_is_answered_with_one_size(capsys):
    assert main(["energy", "layerpipe_sample", "--sram-kb", "349525", "--format", "json"]) == 0
    captured = capsys.readouterr()
    (warning,) = _warnings(captured.err)
    assert warning.endswith(f"{SLIP} --sram-kb 341"), warning
    assert json.loads(captured.out)["meta"]["sram_kb"] == BYTES


def test_the_sram_rule_is_the_device_files(tmp_path, capsys):
    """One rule, one wording: the three buffers together against the device file's limit per array."""
    most = MAX_PLAUSIBLE_SRAM_KIB // 3  # 87381: three of them are 1 KiB under 256 MiB
    for sizes, warned in ((f"{most},{most},{most}", False), (f"{most},{most},{most + 2}", True), ("64,64,32", False)):
        assert main(["cost", "layerpipe_sample", "--sram-kb", sizes]) == 0
        assert len(_warnings(capsys.readouterr().err)) == warned, sizes
    (device_line,) = implausible_figures(load_device(_chip(tmp_path, 3 * 349525)))
    assert device_line.endswith(f"{SLIP} 1024 KiB"), device_line
    assert implausible_figures(load_device(_chip(tmp_path, MAX_PLAUSIBLE_SRAM_KIB))) == ()


def test_the_library_warns_the_same_line():
    with pytest.warns(UserWarning, match=re.escape(f"{SLIP} sram_kb='341,341,341'")):  # as a keyword
        archsim.array_config(sram_kb=BYTES)


@pytest.mark.parametrize(("flag", "value", "field", "form"), [
    ("--array", "-64x64", "argument --array:", "expected ROWSxCOLS such as 32x32"),
    ("--array", "-64", "argument --array:", "expected ROWSxCOLS such as 32x32"),
    ("--sram-kb", "-1,64,64", "argument --sram-kb:", "expected one or three positive integers"),
])
def test_a_negative_array_value_gets_the_flags_own_check(capsys, flag, value, field, form):
    """--array -64x64 got argparse's "expected one argument", which named neither the form nor the value."""
    assert main(["cost", "layerpipe_sample", flag, value]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert field in captured.err and form in captured.err and repr(value) in captured.err, captured.err


def test_valid_arrays_read_as_before(capsys):
    rows = []
    for argv in (["--array", "64x64"], ["--array=64x64"], ["--array", "64"]):
        assert main(["cost", "layerpipe_sample", *argv, "--format", "json"]) == 0
        rows.append(json.loads(capsys.readouterr().out)["rows"])
    assert rows[0] == rows[1] == rows[2]


def test_the_sram_split_a_device_toml_suggests_states_its_rule(tmp_path, capsys):
    """1024 KiB was suggested as --sram-kb 341,341,341 (1023 KiB) with no word of the KiB left out; the split is
    train's energy model's (equal whole-KiB buffers), so the refusal now says so and what it leaves unused."""
    assert main(["bppsa", "rnn", "--config", str(_chip(tmp_path, 1024))]) == 2  # bppsa still refuses a device TOML
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    flags = err.split("its array as flags: ")[1].split()
    sizes = [int(kib) for kib in flags[flags.index("--sram-kb") + 1].split(",")]
    assert sizes == [operand_sram_kib(1024)] * 3  # what train's energy model charges
    unused = re.search(r"1024 KiB of SRAM per array is 341 KiB per operand buffer, as train's energy model splits "
                       r"it \(in three, whole KiB: (\d+) KiB unused\)", err)
    assert unused is not None, err
    assert sum(sizes) + int(unused.group(1)) == 1024


GPT3_175B = str(Path(__file__).resolve().parents[1] / "configs" / "transformers" / "gpt3_175b.toml")
ONE_GPU = str(Path(__file__).resolve().parents[1] / "configs" / "clusters" / "h100_1gpu.toml")
NOTHING_FITS = ["search", GPT3_175B, "--cluster", ONE_GPU, "--global-batch", "8", "--schedule", "1f1b",
                "--max-micro-batch", "1"]


def test_an_empty_search_table_says_why_where_its_rows_would_be(capsys):
    """175 B parameters on one 80 GB GPU: the table printed only its columns' names (exit 0), the reason on
    stderr alone, so a table saved to a file read as an empty answer with no word of why."""
    assert main([*NOTHING_FITS, "--format", "table"]) == 0
    captured = capsys.readouterr()
    (note,) = captured.err.splitlines()
    why = note.removeprefix("archsim search: note: ")
    assert why.startswith("no configuration on 1 GPU fits: ") and "out of memory" in why
    lines = captured.out.splitlines()
    assert why in lines and "tp pp dp micro_batch recompute schedule iteration_seconds" not in lines
    assert lines.index(why) == max(i for i, line in enumerate(lines) if line.startswith("# ")) + 1


def test_an_empty_search_keeps_its_csv_header_and_its_empty_json_rows(capsys):
    """The parsed formats stay as their readers parse them: a header without rows, an empty list."""
    assert main([*NOTHING_FITS, "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("tp,pp,dp,micro_batch,")
    assert main([*NOTHING_FITS, "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["rows"] == [] and document["meta"]["costed"] == 0


@pytest.mark.parametrize(("intra", "ratio"), [(400, 8), (200, 16)])
def test_the_in_server_unit_warning_names_the_file_to_edit_and_both_units(tmp_path, intra, ratio):
    """Beside a device file's [links] intra_gbps = 200 (GB/s per direction), a cluster's intra_server_gbps of 400
    was warned as "chip.toml's [links] intra_gbps in GB/s both directions", naming only the device file and not
    its key's own unit: the figure to change is the cluster file's, the device file's is right."""
    from archsim.training.cluster_file import load_gpu_cluster

    _chip(tmp_path, 32768)
    cluster = tmp_path / "c.toml"
    cluster.write_text(f'[cluster]\n[[servers]]\ngpus = 8\nintra_server_gbps = {intra}\ndevice = "chip.toml"\n')
    (warning,) = load_gpu_cluster(cluster).warnings
    assert "the cluster file's [[servers]] intra_server_gbps takes Gbit/s both directions" in warning, warning
    assert "the device file's intra_gbps GB/s per direction, so" in warning, warning
    assert f"runs 1/{ratio} of the link" in warning and "if that was the unit, write intra_server_gbps = 3200;" in warning


def test_one_number_array_is_square_as_documented(capsys) -> None:
    """`--array 32` is taken as 32x32 (kept): docs/cli.md says so (it did not), and the gemm row's array is 32 by 32."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    assert "(one number is a square array: `--array 32` is 32x32)" in " ".join(text.split())
    assert main(["gemm", "--m", "64", "--k", "64", "--n", "64", "--array", "32", "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert (row["rows"], row["cols"]) == (32, 32)


FORMS = ("ROWSxCOLS such as 32x32", "N for an N×N array (32 is 32x32)")  # the shape forms every refusal names


@pytest.mark.parametrize("command", ["cost", "energy", "gemm", "pipeline", "schedule"])
@pytest.mark.parametrize("value", ["32-32", "x", "32x", "configs/arrays/scalesim_32x32_ws.cfg"])
def test_a_bad_array_names_every_form_it_takes(capsys, command, value):
    """``--array 32-32`` said "expected ROWSxCOLS such as 32x32" alone: not that ``--array 32`` is a 32×32 array, nor
    where a device file goes (``--array chip.cfg`` got the same line). One line now names the square form and
    ``--config FILE`` (a SCALE-Sim .cfg or a device TOML), as ``--config``'s help says it takes them."""
    extra = {"gemm": ["--m", "8", "--k", "8", "--n", "8"], "pipeline": ["--processors", "2"],
             "schedule": ["--policy", "1f1b", "--processors", "2"]}.get(command, [])
    network = [] if command == "gemm" else ["ffnn8"]
    assert main([command, *network, *extra, "--array", value]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and repr(value) in err and "argument --array" in err, err
    assert all(form in err for form in FORMS), err
    assert "a device file (a SCALE-Sim .cfg or a device TOML) is --config FILE" in err, err


def test_the_square_form_the_refusal_names_is_taken(capsys):
    """``--array 32`` is the 32x32 array the refusal says it is (hand: the same rows as ``--array 32x32``)."""
    rows = []
    for array in ("32", "32x32"):
        assert main(["cost", "ffnn8", "--array", array, "--format", "json"]) == 0
        rows.append(json.loads(capsys.readouterr().out)["rows"])
    assert rows[0] == rows[1]


def test_the_library_names_the_config_keyword():
    with pytest.raises(archsim.InputError) as refused:
        archsim.cost("ffnn8", array="32-32")
    text = str(refused.value)
    assert all(form in text for form in FORMS) and "is config=FILE" in text and "--config" not in text, text


def test_a_sweeps_array_entry_and_a_tensor_core_shape_name_their_own_forms(tmp_path, capsys):
    """The one refusal, told where each field takes a file: a sweep spec's ``arrays`` entry names a .cfg file (which
    it reads; not a device TOML, nor ``--config``), ``validate-gpu --mma`` (one tensor core) no file."""
    spec = tmp_path / "s.toml"
    spec.write_text('[sweep]\nnetworks = ["ffnn8"]\narrays = ["32-32"]\nbatches = [1]\nprocessors = [2]\n'
                    'methods = ["gpipe"]\n')
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert all(form in err for form in FORMS) and err.rstrip().endswith("; a SCALE-Sim .cfg file is named with its "
                                                                        ".cfg suffix"), err
    assert main(["validate-gpu", "--csv", "tests/data/gpu_kernels_columns.csv", "--mma", "16-16"]) == 2
    err = capsys.readouterr().err
    assert all(form in err for form in FORMS) and err.rstrip().endswith("got '16-16'"), err
