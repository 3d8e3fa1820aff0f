"""The TOML readers outside the hooked ones read through the shared :func:`archsim.toml_errors.parse_toml`, so a bad
value's error says its line (``FILE, line N, field K``).

``--config chip.toml`` (the array commands but cost, energy and gemm, which read it as train does): a device TOML
is refused with the flags that cost one of its arrays,
read by a reader of its own (``tomllib`` in :mod:`archsim.array.config`). Before the fix a bad value there was
either passed into the flags (``rows = -5`` suggested ``--array -5x128``) or dropped them without a word on which
value (``rows = "128"``): no line, no field; both cases failed. Its values are now read as the device reader reads
them (:func:`archsim.array.device_sections.toml_sections`). The output-target check
(:func:`archsim.output_inputs.outputs_apart_from_inputs`) reads an input TOML through ``parse_toml`` already and
leaves a fault to the command's reader, which names the line: that case passes before and after."""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
TPU = (ROOT / "configs" / "devices" / "tpu_v4_like.toml").read_text(encoding="utf-8")


def _line(text: str, start: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), start=1) if line.startswith(start))


@pytest.mark.parametrize(("old", "new", "field", "says"), [
    ("rows = 128", "rows = -5", "compute.rows", "expected a positive integer"),
    ("rows = 128", 'rows = "128"', "compute.rows", "the string '128' (write the number without quotes)"),
    ("clock_mhz = 1050", "clock_mhz = 0", "compute.clock_mhz", "expected a positive number"),
    ("sram_kib_per_array = 4096", "sram_kib_per_array = -1", "memory.sram_kib_per_array", "non-negative"),
])
def test_a_device_tomls_bad_value_given_as_config_names_its_line(tmp_path, capsys, old, new, field, says):
    """bppsa refuses a device TOML and names its array as flags; cost, energy, gemm, pipeline and schedule read it with
    train's reader (:func:`archsim.device_toml.device_toml_array`): a bad value is that reader's error, at its line."""
    text = TPU.replace(old, new)
    chip = tmp_path / "chip.toml"
    chip.write_text(text, encoding="utf-8")
    assert main(["bppsa", "rnn", "--config", str(chip)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"archsim bppsa rnn: error: {chip}, line {_line(text, new)}, field '{field}': a TOML file: "
                          "--config reads a SCALE-Sim .cfg (a device TOML is for train, search, cost, energy, "
                          "gemm, pipeline and schedule); its array as flags cannot be read: "), err
    assert says in err and "--array" not in err and len(err.splitlines()) == 1
    for command in (["cost", "resnet50"], ["energy", "resnet50"], ["gemm", "--m", "8", "--k", "8", "--n", "8"],
                    ["pipeline", "resnet50", "--processors", "2"],
                    ["schedule", "resnet50", "--policy", "gpipe", "--processors", "2"]):
        assert main([*command, "--config", str(chip)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"archsim {command[0]}: error: {chip}, line {_line(text, new)}, field '{field}': "), err
        assert says in err and len(err.splitlines()) == 1


def test_a_good_device_toml_still_gets_its_flags(tmp_path, capsys):
    """The shipped TPU-like file: its [compute] and [memory] by hand — 128 × 128 ws arrays at 1050 MHz = 1.05 GHz,
    4096 KiB of SRAM per array in three whole-KiB operand buffers of ⌊4096 / 3⌋ = 1365, at train's fp16 (pipeline
    has --dtype, as bppsa, which still refuses the file, has). Passes before and after: the reading changed, not the flags."""
    assert main(["bppsa", "rnn", "--config", str(ROOT / "configs" / "devices" / "tpu_v4_like.toml")]) == 2
    assert capsys.readouterr().err.rstrip().endswith(
        "its array as flags: --array 128x128 --dataflow ws --clock-ghz 1.05 --sram-kb 1365,1365,1365 --dtype fp16")


def test_a_cluster_tomls_bad_value_is_named_with_its_line_beside_an_out(tmp_path, capsys):
    """An output flag's check reads the cluster TOML's device paths (parse_toml) and leaves a bad one to train."""
    cluster = tmp_path / "c.toml"
    text = "[cluster]\nname = \"c\"\n\n[[servers]]\ncount = 1\ngpus = 8\ndevice = 5\n"
    cluster.write_text(text, encoding="utf-8")
    out = tmp_path / "out.json"
    assert main(["train", str(ROOT / "configs" / "transformers" / "gpt2.json"), "--cluster", str(cluster),
                 "--tp", "8", "--global-batch", "8", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"archsim train: error: {cluster}, line 7, field 'servers[1].device': "), err
    assert not out.exists()
