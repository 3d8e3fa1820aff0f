"""A device file given to the array commands is priced at their default 1-byte word (int8, SCALE-Sim's count,
on which LayerPipe's figures rest), while train charges its chip at fp16: the flags and notes the array
commands print for a device file name --dtype fp16, so that pasting them prices what train charges."""

from __future__ import annotations

import json
from pathlib import Path

from archsim.cli import main

DEVICES = Path(__file__).parents[1] / "configs" / "devices"
DEVICE_TOML = DEVICES / "tpu_v4_like.toml"
DEVICE_CFG = DEVICES / "scalesim_32x32_device.cfg"
PLAIN_CFG = Path(__file__).parents[1] / "configs" / "arrays" / "scalesim_32x32_ws.cfg"
NOTE = "add --dtype fp16 to price what train charges"


def _flags(capsys, argv: list[str]) -> list[str]:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err.split("its array as flags: ")[1].split()


def test_a_device_tomls_flags_for_bppsa_name_trains_dtype(capsys):
    """The refusal named --array/--dataflow/--clock-ghz/--sram-kb but no --dtype, so the pasted flags priced
    int8 words where train charges fp16; now its flags carry --dtype fp16 and cost at them is fp16's (cost, energy
    and gemm read the TOML itself: tests/test_energy_device_toml.py; pipeline and schedule too, so bppsa's refusal
    is the one left)."""
    flags = _flags(capsys, ["bppsa", "rnn", "--config", str(DEVICE_TOML)])
    assert flags[-2:] == ["--dtype", "fp16"]
    assert main(["cost", "layerpipe_sample", *flags, "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert (meta["dtype"], meta["element_bytes"]) == ("fp16", 2)


def test_gemm_reads_a_device_toml_as_its_flags_by_hand(capsys):
    """gemm refused the TOML; it now reads it as cost and energy do: the shipped TPU-like file's array by hand,
    128 × 128 ws at 1.05 GHz, at train's fp16 (the TOML's default), gives the cycles those flags give."""
    shape = ["gemm", "--m", "64", "--k", "40", "--n", "48", "--format", "json"]
    assert main([*shape, "--array", "128x128", "--dataflow", "ws", "--clock-ghz", "1.05", "--dtype", "fp16"]) == 0
    by_hand = json.loads(capsys.readouterr().out)
    assert main([*shape, "--config", str(DEVICE_TOML)]) == 0
    read = json.loads(capsys.readouterr().out)
    one_array = [{name: value for name, value in row.items() if name != "chip_seconds"} for row in read["rows"]]
    assert one_array == by_hand["rows"] and read["meta"]["clock_ghz"] == by_hand["meta"]["clock_ghz"]
    assert all("chip_seconds" in row for row in read["rows"])  # the file's chip of 8 arrays, beside one array's


def test_a_device_cfg_priced_at_the_default_int8_says_so(capsys):
    """cost --config on a .cfg device file priced int8 and said nothing of train's fp16."""
    assert main(["cost", "layerpipe_sample", "--config", str(DEVICE_CFG), "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["meta"]["dtype"] == "int8"
    assert captured.err.count(NOTE) == 1 and "int8" in captured.err


def test_no_dtype_note_with_a_dtype_or_on_a_plain_scalesim_cfg(capsys):
    for argv in (["--config", str(DEVICE_CFG), "--dtype", "fp16"], ["--config", str(DEVICE_CFG), "--dtype", "int8"],
                 ["--config", str(DEVICE_CFG), "--element-bytes", "2"], ["--config", str(PLAIN_CFG)]):
        assert main(["energy", "layerpipe_sample", *argv]) == 0
        assert NOTE not in capsys.readouterr().err, argv


def test_the_library_warns_of_the_dtype_as_the_command_notes(recwarn):
    """archsim.cost(config=device) warns with the command's note, and not once a dtype is given."""
    import archsim

    archsim.cost("layerpipe_sample", config=str(DEVICE_CFG))
    keyword = NOTE.replace("--dtype fp16", "dtype='fp16'")  # the keyword a library user types
    assert sum(keyword in str(w.message) for w in recwarn.list) == 1
    recwarn.clear()
    archsim.cost("layerpipe_sample", config=str(DEVICE_CFG), dtype="fp16")
    assert not any(keyword in str(w.message) for w in recwarn.list)
