"""One element width on every array command: ``--dtype`` beside ``--element-bytes`` on cost, energy,
pipeline, schedule, plan and bppsa rnn, the API's ``dtype`` keyword (``archsim.array_config``,
``archsim.profile``) and the sweep spec's ``dtypes`` axis.

Each check runs the same configuration twice, once through ``--dtype fp16`` and once through the
older ``--element-bytes 2`` (an independent path to the same width), and wants identical results but
for the meta's ``dtype`` name; and against the default 1-byte word, where bytes matter, a result twice
the size (a width scales every tensor's bytes, and the analytic cycles do not depend on it, so the plan
is the same) or, where the bytes go through a link model, one that differs.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from test_docs import ROOT

import archsim
from archsim.cli import main
from archsim.errors import InputError
from archsim.sweep.spec import load_spec

SAMPLE = "layerpipe_sample"
TINY = str(ROOT / "docs" / "examples" / "tiny_resnet.csv")
PLAIN_CLUSTER = '[cluster]\nname = "plain"\ninter_server_gbps = 100\n\n[[servers]]\ngpus = 4\nintra_server_gbps = 800\n'


def commands(tmp_path) -> dict[str, list[str]]:
    """A short run of each array command (a cluster file for plan)."""
    cluster = tmp_path / "plain.toml"
    cluster.write_text(PLAIN_CLUSTER, encoding="utf-8")
    return {
        "cost": ["cost", TINY, "--only", "fc", "--batch", "4"],
        "energy": ["energy", SAMPLE, "--batch", "2"],
        "pipeline": ["pipeline", SAMPLE, "--processors", "2", "--method", "gpipe", "--batch", "4"],
        "schedule": ["schedule", SAMPLE, "--processors", "2", "--policy", "gpipe", "--batch", "4"],
        "schedule-dp": ["schedule", SAMPLE, "--processors", "2", "--policy", "dp-wfbp", "--link-bandwidth", "1",
                        "--batch", "4"],
        "multistream": ["schedule", SAMPLE, "--policy", "multistream", "--batch", "4"],
        "plan": ["plan", SAMPLE, "--cluster", str(cluster), "--microbatches", "4"],
        "bppsa": ["bppsa", "rnn", "--seq-len", "10", "--processors", "4"],
    }


COMMANDS = ["cost", "energy", "pipeline", "schedule", "schedule-dp", "multistream", "plan", "bppsa"]


def cli_json(capsys, argv: list[str]) -> dict:
    capsys.readouterr()
    assert main([*argv, "--format", "json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def without_name(document: dict) -> dict:
    """The document less the meta's dtype name (--element-bytes 2 names none)."""
    return {**document, "meta": {k: v for k, v in document["meta"].items() if k != "dtype"}}


@pytest.mark.parametrize("command", COMMANDS)
def test_dtype_fp16_is_element_bytes_2_and_states_its_name(tmp_path, capsys, command):
    argv = commands(tmp_path)[command]
    named = cli_json(capsys, [*argv, "--dtype", "fp16"])
    by_width = cli_json(capsys, [*argv, "--element-bytes", "2"])
    assert (named["meta"]["dtype"], named["meta"]["element_bytes"]) == ("fp16", 2)
    assert (by_width["meta"]["dtype"], by_width["meta"]["element_bytes"]) == (None, 2)
    assert without_name(named) == without_name(by_width)
    default = cli_json(capsys, argv)
    assert (default["meta"]["dtype"], default["meta"]["element_bytes"]) == ("int8", 1)
    width_keys = ("dtype", "element_bytes")  # what differs beyond the meta's statement of the width
    assert ({**default, "meta": {k: v for k, v in default["meta"].items() if k not in width_keys}}
            != {**named, "meta": {k: v for k, v in named["meta"].items() if k not in width_keys}})


def test_the_width_doubles_the_bytes_each_command_reports(tmp_path, capsys):
    """fp16 against the default int8: the same plan and cycles, every reported tensor byte count twice."""
    argv = commands(tmp_path)
    one, two = (cli_json(capsys, [*argv["pipeline"], "--dtype", d]) for d in ("int8", "fp16"))
    assert one["rows"] == two["rows"] and one["meta"]["iteration_cycles"] == two["meta"]["iteration_cycles"]
    assert one["meta"]["mandatory_comm_bytes"] > 0
    assert two["meta"]["mandatory_comm_bytes"] == 2 * one["meta"]["mandatory_comm_bytes"]
    (one,), (two,) = (cli_json(capsys, [*argv["schedule"], "--dtype", d])["rows"] for d in ("int8", "fp16"))
    assert one["makespan"] == two["makespan"] and one["peak_activation_bytes"] > 0
    assert two["peak_activation_bytes"] == 2 * one["peak_activation_bytes"]
    one_rows, two_rows = (cli_json(capsys, [*argv["bppsa"], "--dtype", d])["rows"] for d in ("int8", "fp16"))
    for one, two in zip(one_rows, two_rows, strict=True):
        assert one["scan_cycles"] == two["scan_cycles"]
        assert two["bppsa_bytes_per_worker"] == 2 * one["bppsa_bytes_per_worker"]
        assert two["pipeline_bytes_per_worker"] == 2 * one["pipeline_bytes_per_worker"]
    fc_one, fc_two = (cli_json(capsys, [*argv["cost"], "--dtype", d])["rows"][0] for d in ("int8", "fp16"))
    assert fc_two["weight_bytes"] == 2 * fc_one["weight_bytes"] == 2 * 16 * 16 * 16 * 10  # fc: 4096 × 10 weights


@pytest.mark.parametrize("command", COMMANDS)
def test_a_disagreement_is_refused_with_one_line_and_nothing_written(tmp_path, capsys, command):
    out = tmp_path / "out.json"
    capsys.readouterr()
    assert main([*commands(tmp_path)[command], "--dtype", "fp16", "--element-bytes", "4", "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and not out.exists()
    assert captured.err.count("\n") == 1 and "--dtype fp16 is 2-byte elements, --element-bytes says 4" in captured.err


def test_plan_on_the_servers_device_refuses_a_width_by_either_flag(tmp_path, capsys, chip_cfg):
    """On the servers' device --dtype picks the training precision (train's names); a width that only sizes
    the array model's words (int8, --element-bytes) is refused, naming the flag."""
    (tmp_path / "chip.cfg").write_text(chip_cfg(), encoding="utf-8")
    cluster = tmp_path / "dev.toml"
    cluster.write_text(PLAIN_CLUSTER + 'device = "chip.cfg"\n', encoding="utf-8")
    for flag, value in (("--dtype", "int8"), ("--element-bytes", "2")):
        capsys.readouterr()
        assert main(["plan", SAMPLE, "--cluster", str(cluster), "--microbatches", "4", flag, value]) == 2
        assert f"argument {flag}" in capsys.readouterr().err


def test_the_api_takes_dtype_as_the_flags_do():
    assert archsim.array_config("16x16", dtype="fp16").element_bytes == 2
    assert archsim.array_config(archsim.array_config("16x16"), dtype="fp32").element_bytes == 4
    named = archsim.profile(SAMPLE, batch=4, dtype="fp16")
    by_width = archsim.profile(SAMPLE, batch=4, element_bytes=2)
    default = archsim.profile(SAMPLE, batch=4)
    columns = ("forward", "weight_grad", "delta", "activation_bytes", "delta_bytes", "weight_bytes", "stash_bytes")
    assert named.array == by_width.array and named.array.element_bytes == 2
    assert all(list(getattr(named, c)) == list(getattr(by_width, c)) for c in columns)
    for column in ("activation_bytes", "delta_bytes", "weight_bytes", "stash_bytes"):
        assert sum(getattr(default, column)) > 0
        assert list(getattr(named, column)) == [2 * x for x in getattr(default, column)]
    assert list(named.forward) == list(default.forward)  # analytic cycles count words, not bytes
    with pytest.raises(InputError, match="dtype='fp16' is 2-byte elements, element_bytes says 1"):
        archsim.profile(SAMPLE, batch=4, dtype="fp16", element_bytes=1)
    with pytest.raises(InputError, match="fp8"):
        archsim.array_config(dtype="fp8")


SWEEP = """[sweep]
name = "w"
networks = ["layerpipe_sample"]
arrays = ["16x16"]
batches = [4]
processors = [2]
methods = ["gpipe"]
clocks_ghz = [1.0]
"""


def test_sweep_dtypes_axis_is_the_element_bytes_axis_named(tmp_path):
    results = {}
    for name, axis in (("named", 'dtypes = ["int8", "fp16"]\n'), ("widths", "element_bytes = [1, 2]\n")):
        spec = tmp_path / f"{name}.toml"
        spec.write_text(SWEEP + axis, encoding="utf-8")
        assert main(["sweep", str(spec), "--out", str(tmp_path / name), "--quiet"]) == 0
        results[name] = pd.read_csv(tmp_path / name / "results.csv")
    named, widths = results["named"], results["widths"]
    assert named["dtype"].tolist() == ["int8", "fp16"] and "dtype" not in widths
    pd.testing.assert_frame_equal(named.drop(columns="dtype"), widths)
    assert named.energy_pj[1] != named.energy_pj[0]  # the width prices the SRAM and DRAM words


@pytest.mark.parametrize("axis, field", [('dtypes = ["fp16"]\nelement_bytes = [2]\n', "element_bytes"),
                                         ('dtypes = ["fp16", "bf16"]\n', "dtypes"),
                                         ('dtypes = ["fp4"]\n', "dtypes"),  # fp8 runs since 2026-12-06
                                         ("dtypes = []\n", "dtypes")])
def test_sweep_dtypes_refusals_name_the_key(tmp_path, axis, field):
    spec = tmp_path / "bad.toml"
    spec.write_text(SWEEP + axis, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_spec(spec)
    assert caught.value.where.field == field


@pytest.mark.parametrize("flags, shown", [(["--dtype", "fp16"], "--dtype fp16"),
                                          (["--element-bytes", "4"], "--element-bytes 4"), ([], "--dataflow ws --report")])
def test_bppsa_reports_command_line_reproduces_the_width(tmp_path, capsys, flags, shown):
    report = tmp_path / "rnn.html"
    assert main(["bppsa", "rnn", "--seq-len", "10", "--processors", "4", *flags, "--report", str(report)]) == 0
    assert shown in report.read_text(encoding="utf-8")
