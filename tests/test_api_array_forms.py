"""Every job's array keywords take what ``--array`` and ``--config`` take (docs/api.md, "The array keywords"): a shape
``"ROWSxCOLS"`` or ``N`` (text or a whole number: ``--array 16`` is 16×16), a SCALE-Sim ``.cfg`` or a device TOML
(str or Path, as ``config`` or given as ``array``), or an :class:`ArrayConfig` (the canonical form:
``archsim.array_config`` of the same keywords). The reference is the command's JSON with the matching flags, run in
process; a form a job cannot use is refused in one line naming what to use. Failed before: ``archsim.gemm`` refused
``array=16`` and a file given as ``array``; ``archsim.cost(array=16, config=TOML)`` refused the 16 that
``array="16"`` took; ``archsim.array_config`` refused a device TOML; ``archsim.plan(array=TOML)`` gave another line
than ``config=TOML`` (the command's)."""

from __future__ import annotations

import contextlib
import io
import json
import warnings
from functools import cache
from pathlib import Path

import pytest
from api_parity_helpers import as_printed

import archsim
from archsim import cli
from archsim.errors import InputError

CFG = "configs/arrays/scalesim_32x32_ws.cfg"
TOML = "configs/devices/tpu_v4_like.toml"  # 128×128 ws arrays at 1.05 GHz; priced at fp16 as train prices it
CLUSTER = "configs/clusters/testbed_1080ti.toml"  # its servers name no device file: plan prices on the array
CYCLES = ("F_cycles", "G_cycles", "D_cycles")

# (forms, flags): each keywords form of one array, and the flags the command takes for it
SHAPE = ([{"array": 16}, {"array": "16"}, {"array": "16x16"}, {"array": " 16 X 16 "}], ["--array", "16"])
FILES = {file: ([{"array": file}, {"array": Path(file)}, {"config": file}, {"config": Path(file)}],
                ["--config", file]) for file in (CFG, TOML)}
ALL = {"shape": SHAPE, "cfg": FILES[CFG], "toml": FILES[TOML]}


@cache
def _cli(argv: tuple[str, ...]) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert cli.main([*argv, "--format", "json"]) == 0, err.getvalue()
    return out.getvalue()


def cli_json(*argv: str) -> dict:
    """The command's JSON document (the reference), read afresh each call."""
    return json.loads(_cli(argv))


def quiet(function, *args, **keywords):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **keywords)


def canonical(forms: list[dict]) -> archsim.ArrayConfig:
    """The ArrayConfig the first form's keywords build (``archsim.array_config``'s reading)."""
    return quiet(archsim.array_config, **forms[0])


def cycles(document: dict) -> list[list[float]]:
    """Each layer's F, G and D cycles (the TOTAL row left out)."""
    return [[row[column] for column in CYCLES] for row in document["rows"] if row["layer"] != "TOTAL"]


@pytest.mark.parametrize("kind", ALL)
def test_cost_and_energy_take_every_form_as_the_flags(kind):
    forms, flags = ALL[kind]
    for job, command in ((archsim.cost, "cost"), (archsim.iteration_energy, "energy")):
        printed = cli_json(command, "ffnn8", *flags)
        for keywords in forms:
            assert as_printed(quiet(job, "ffnn8", **keywords).to_dict()) == printed, (command, keywords)
    by_object = quiet(archsim.cost, "ffnn8", array=canonical(forms)).to_dict()
    assert cycles(by_object) == cycles(cli_json("cost", "ffnn8", *flags))


@pytest.mark.parametrize("kind", ALL)
def test_gemm_takes_every_form_but_an_array_config(kind):
    forms, flags = ALL[kind]
    printed = cli_json("gemm", "--m", "64", "--k", "48", "--n", "40", *flags)
    for keywords in forms:
        assert as_printed(quiet(archsim.gemm, m=64, k=48, n=40, **keywords).to_dict()) == printed, keywords


def test_gemm_refuses_an_array_config_naming_the_keywords_it_stands_for():
    with pytest.raises(InputError) as refused:
        archsim.gemm(m=8, k=8, n=8, array=archsim.array_config("16x8"))
    line = str(refused.value)
    assert "\n" not in line and refused.value.where.field == "array", line
    assert "array='16x8'" in line and "config=" in line, line


@pytest.mark.parametrize("kind", ALL)
def test_profile_costs_each_form_as_cost_does(kind):
    """A profile's per-layer F, G and D cycles are ``archsim cost``'s rows with the same flags, for every form and
    for the ArrayConfig they build."""
    forms, flags = ALL[kind]
    printed = [list(column) for column in zip(*cycles(cli_json("cost", "ffnn8", *flags)))]
    for keywords in (*forms, {"array": canonical(forms)}):
        got = quiet(archsim.profile, "ffnn8", **keywords)
        assert [list(got.forward), list(got.weight_grad), list(got.delta)] == printed, keywords


@pytest.mark.parametrize("kind", ALL)
def test_schedule_takes_every_form_as_the_flags(kind):
    forms, flags = ALL[kind]
    printed = cli_json("schedule", "ffnn8", "--policy", "1f1b", "--processors", "2", *flags)
    for keywords in forms:
        got = quiet(archsim.schedule, "ffnn8", policy="1f1b", processors=2, **keywords)
        assert as_printed(got.to_dict()) == printed, keywords
    by_object = quiet(archsim.schedule, "ffnn8", policy="1f1b", processors=2, array=canonical(forms))
    assert by_object.to_dict()["rows"] == printed["rows"]


@pytest.mark.parametrize("kind", ["shape", "cfg"])
def test_plan_takes_a_shape_and_a_cfg_in_every_form(kind):
    forms, flags = ALL[kind]
    printed = cli_json("plan", "ffnn8", "--cluster", CLUSTER, "--microbatches", "2", *flags)
    for keywords in (*forms, {"array": canonical(forms)}):
        got = quiet(archsim.plan, "ffnn8", cluster=CLUSTER, microbatches=2, **keywords)
        assert as_printed(got.to_dict())["rows"] == printed["rows"], keywords


@pytest.mark.parametrize("kind", ["shape", "cfg"])
def test_bppsa_rnn_takes_a_shape_and_a_cfg_in_every_form(kind):
    forms, flags = ALL[kind]
    printed = cli_json("bppsa", "rnn", "--seq-len", "8", "--processors", "4", *flags)
    for keywords in (*forms, {"array": canonical(forms)}):
        got = quiet(archsim.bppsa_rnn, seq_len="8", processors="4", **keywords)
        assert as_printed(got.to_dict())["rows"] == printed["rows"], keywords


def _refusal(argv: list[str], capsys) -> str:
    capsys.readouterr()
    assert cli.main(argv) == 2
    return capsys.readouterr().err.strip().split(": error: ", 1)[1]


@pytest.mark.parametrize(("job", "argv"), [
    (lambda **kw: archsim.plan("ffnn8", cluster=CLUSTER, microbatches=2, **kw),
     ["plan", "ffnn8", "--cluster", CLUSTER, "--microbatches", "2"]),
    (lambda **kw: archsim.bppsa_rnn(seq_len="8", processors="4", **kw), ["bppsa", "rnn", "--seq-len", "8",
                                                                         "--processors", "4"]),
])
def test_a_device_toml_where_a_job_prices_one_array_is_the_commands_one_line(job, argv, capsys):
    """plan prices one array per GPU and bppsa rnn one array kind: a whole chip's TOML is refused there in every form,
    in one line, the command's (``config`` for ``--config``; the array it holds as keywords, not flags), naming what
    to give instead."""
    line = _refusal([*argv, "--config", TOML], capsys).replace("argument --config", "field 'config'").replace(
        "--config", "config").split("; its array as flags")[0]
    for keywords in FILES[TOML][0]:
        with pytest.raises(InputError) as refused:
            job(**keywords)
        text = str(refused.value)
        assert "\n" not in text and text.split("; its array as keywords")[0] == line, keywords
        assert "device =" in text or "array='128x128'" in text, text


@pytest.mark.parametrize("kind", ALL)
def test_array_config_reads_every_form_as_cost_costs_it(kind):
    """``array_config`` of each form is one ArrayConfig, and ``cost`` on it gives the cycles of the command's flags
    (a device TOML: its one array kind at fp16, as ``archsim cost --config`` reads it)."""
    forms, flags = ALL[kind]
    built = {repr(quiet(archsim.array_config, **keywords)) for keywords in forms}
    assert len(built) == 1, built
    array = canonical(forms)
    assert cycles(quiet(archsim.cost, "ffnn8", array=array).to_dict()) == cycles(cli_json("cost", "ffnn8", *flags))


def test_array_config_of_a_device_toml_is_its_array_by_hand():
    """tpu_v4_like.toml by hand: 128×128 ws arrays at 1050 MHz, 4096 KiB of SRAM each split in three whole KiB
    (1365), fp16 (2-byte words) as train prices it, 1200 GB/s over 2 B × 1.05 GHz = 571 words/cycle."""
    array = quiet(archsim.array_config, config=TOML)
    assert (array.rows, array.cols, array.dataflow, array.clock_hz) == (128, 128, "ws", 1.05e9)
    assert (array.ifmap_sram_kb, array.filter_sram_kb, array.ofmap_sram_kb, array.element_bytes) == (1365, 1365, 1365, 2)
    assert array.bandwidth == (round(1200 / (2 * 1.05)),)
    assert quiet(archsim.array_config, TOML, dtype="fp32").bandwidth == (round(1200 / (4 * 1.05)),)


@pytest.mark.parametrize("file", [CFG, TOML])
def test_a_shape_beside_a_file_is_the_flags_together(file):
    """``--array 16 --config FILE`` re-shapes the file's array; ``array=16`` beside ``config`` is that run (a device
    TOML refused the number that ``"16"`` took until 2026-12-06)."""
    printed = cli_json("cost", "ffnn8", "--array", "16", "--config", file)
    for shape in (16, "16", "16x16"):
        assert as_printed(quiet(archsim.cost, "ffnn8", array=shape, config=Path(file)).to_dict()) == printed, shape
    assert printed["meta"]["array"] == "16x16"


@pytest.mark.long
def test_a_file_given_as_array_is_the_installed_commands_config():
    """The installed command, run apart (its own interpreter): ``archsim cost --config TOML`` and ``archsim gemm
    --array 16`` print what ``cost(array=Path(TOML))`` and ``gemm(array=16)`` return."""
    import subprocess
    import sys

    for argv, job in ((["cost", "ffnn8", "--config", TOML], lambda: archsim.cost("ffnn8", array=Path(TOML))),
                      (["gemm", "--m", "64", "--k", "48", "--n", "40", "--array", "16"],
                       lambda: archsim.gemm(m=64, k=48, n=40, array=16))):
        done = subprocess.run([sys.executable, "-m", "archsim", *argv, "--format", "json"], capture_output=True,
                              text=True, check=True, timeout=120)
        assert as_printed(quiet(job).to_dict()) == json.loads(done.stdout), argv
