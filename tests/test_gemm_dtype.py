"""``archsim gemm --dtype``: the element width ``cost`` and ``energy`` take, with the same choices and meaning (one
definition, :func:`archsim.commands.common.add_width_arguments`): bytes per element of the SRAM and DRAM traffic.

Failed before the fix: gemm had no ``--dtype`` (nor ``--element-bytes``): its traffic was 1-byte words only, and its
cycle engine's SRAMs always held KiB × 1024 words."""

from __future__ import annotations

import json

import pytest

from archsim.cli import main

SHAPE = ["gemm", "--m", "300", "--k", "200", "--n", "100", "--format", "json"]


def _json(capsys, argv: list[str]) -> dict:
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _dtype_action(command: str):
    from archsim.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    return next(a for a in sub.choices[command]._actions if "--dtype" in a.option_strings)


def test_gemm_cost_and_energy_share_one_dtype_flag():
    gemm = _dtype_action("gemm")
    assert tuple(gemm.choices) == ("int8", "fp32", "fp16", "bf16", "fp8")  # fp8 since 2026-12-05
    for command in ("cost", "energy", "pipeline", "schedule"):
        other = _dtype_action(command)
        assert (tuple(other.choices), other.help, other.default) == (tuple(gemm.choices), gemm.help, gemm.default)


@pytest.mark.parametrize(("dtype", "width"), [("int8", 1), ("fp16", 2), ("bf16", 2), ("fp32", 4)])
def test_gemms_traffic_in_bytes_is_its_words_times_the_width(capsys, dtype, width):
    """Peer reference: the word counts without --dtype (SCALE-Sim's), × the width's bytes by hand."""
    words = _json(capsys, [*SHAPE, "--engine", "cycle"])
    document = _json(capsys, [*SHAPE, "--engine", "cycle", "--dtype", dtype, "--sram-kb", str(64 * width)])
    row, plain = document["rows"][0], words["rows"][0]
    assert (document["meta"]["dtype"], document["meta"]["element_bytes"]) == (dtype, width)
    assert row["sram_read_bytes"] == (plain["ifmap_sram_reads"] + plain["filter_sram_reads"]) * width
    assert row["sram_write_bytes"] == plain["ofmap_sram_writes"] * width
    # 64·width KiB of width-byte words is the default 64 KiB of 1-byte words: the same stalls and DRAM words
    assert row["total_cycles"] == plain["total_cycles"]
    assert row["dram_read_bytes"] == (plain["ifmap_dram_reads"] + plain["filter_dram_reads"]) * width
    assert row["dram_write_bytes"] == plain["ofmap_dram_writes"] * width


def test_a_wider_word_fills_the_cycle_engines_srams_sooner(capsys):
    """64 KiB holds half as many fp16 words as int8 ones: 32 KiB of int8 words by hand."""
    fp16 = _json(capsys, [*SHAPE, "--engine", "cycle", "--dtype", "fp16"])["rows"][0]
    half = _json(capsys, [*SHAPE, "--engine", "cycle", "--sram-kb", "32"])["rows"][0]
    assert fp16["stall_cycles"] == half["stall_cycles"] and fp16["ifmap_dram_reads"] == half["ifmap_dram_reads"]


def test_no_dtype_prints_what_it_printed(capsys):
    document = _json(capsys, SHAPE)
    assert "dtype" not in document["meta"] and "sram_read_bytes" not in document["rows"][0]


def test_a_dtype_the_width_contradicts_is_refused_in_one_line(capsys):
    assert main([*SHAPE, "--dtype", "fp16", "--element-bytes", "4"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "--dtype fp16 is 2-byte elements" in err
    assert main([*SHAPE, "--dtype", "fp4"]) == 2  # fp8 is a choice since 2026-12-05 (test_fp8_array_commands)
    assert "expected one of int8, fp32, fp16, bf16, fp8, got 'fp4'" in capsys.readouterr().err


def test_the_library_takes_the_dtype_as_the_command(capsys):
    import archsim

    document = _json(capsys, [*SHAPE, "--dtype", "fp16", "--clock-ghz", "1"])
    assert archsim.gemm(m=300, k=200, n=100, dtype="fp16", clock_ghz=1).to_dict() == document
    assert archsim.gemm(m=300, k=200, n=100, element_bytes="2", clock_ghz=1).to_dict()["rows"] == document["rows"]
