"""One element width for cost, energy and train: ``--dtype`` with train's names (plus ``int8``, the
1-byte word SCALE-Sim counts in, cost's and energy's default), stated in every JSON meta; and
``archsim.cost(...).to_dict()`` is the document ``archsim cost --format json`` prints.

Expected bytes come from the layers' shapes (layers/layerpipe_sample.csv, docs/examples/tiny_resnet.csv)
and the energy figures from configs/energy/horowitz45.toml, never from a run of the code.
"""

from __future__ import annotations

import json
import math
import pickle
import tomllib

import pytest
from api_parity_helpers import as_printed
from test_docs import ROOT

import archsim
from archsim.cli import main
from archsim.errors import InputError
from tests.test_energy import ws_gemm_by_hand

SAMPLE = "layerpipe_sample"
TINY = str(ROOT / "docs" / "examples" / "tiny_resnet.csv")
WIDTH = {"int8": 1, "fp16": 2, "bf16": 2, "fp32": 4}  # bytes per element of each name, by definition


def cli_json(capsys, argv: list[str]) -> dict:
    capsys.readouterr()
    assert main([*argv, "--format", "json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def cli_refusal(capsys, argv: list[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing written on error
    return captured.err.strip()


def layer(document: dict, name: str) -> dict:
    return next(row for row in document["rows"] if row["layer"] == name)


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32"])
def test_cost_dtype_scales_the_tensor_bytes_by_its_width_and_leaves_analytic_cycles(capsys, dtype):
    """conv4 of the LayerPipe sample: 28×28×128 in, 128 filters 3×3, stride 1, pad 1 → 28×28×128 out."""
    default = cli_json(capsys, ["cost", SAMPLE, "--batch", "2"])
    wide = cli_json(capsys, ["cost", SAMPLE, "--batch", "2", "--dtype", dtype])
    width = WIDTH[dtype]
    for document, bytes_per in ((default, 1), (wide, width)):
        conv4 = layer(document, "conv4")
        assert conv4["activation_bytes"] == 2 * 28 * 28 * 128 * bytes_per  # batch × output elements
        assert conv4["delta_bytes"] == 2 * 28 * 28 * 128 * bytes_per  # batch × input elements
        assert conv4["weight_bytes"] == 3 * 3 * 128 * 128 * bytes_per
    assert (default["meta"]["dtype"], default["meta"]["element_bytes"]) == ("int8", 1)
    assert (wide["meta"]["dtype"], wide["meta"]["element_bytes"]) == (dtype, width)
    for row, other in zip(default["rows"], wide["rows"], strict=True):  # the analytic engine counts no bytes
        assert [row[f"{k}_cycles"] for k in "FGD"] == [other[f"{k}_cycles"] for k in "FGD"]


def test_element_bytes_alone_states_its_width_and_no_dtype_name(capsys):
    document = cli_json(capsys, ["cost", SAMPLE, "--batch", "1", "--element-bytes", "2"])
    assert (document["meta"]["dtype"], document["meta"]["element_bytes"]) == (None, 2)
    assert layer(document, "conv4")["weight_bytes"] == 3 * 3 * 128 * 128 * 2
    assert cli_json(capsys, ["cost", SAMPLE, "--batch", "1", "--element-bytes", "1"])["meta"]["dtype"] == "int8"


def test_dtype_and_element_bytes_that_disagree_are_refused_on_both_commands_and_the_api(capsys):
    with pytest.raises(InputError, match="dtype='fp16' is 2-byte") as refused:
        archsim.cost(SAMPLE, batch=1, dtype="fp16", element_bytes=1)
    for command in ("cost", "energy"):
        line = cli_refusal(capsys, [command, SAMPLE, "--dtype", "fp16", "--element-bytes", "1"])
        assert line.count("\n") == 0 and "element-bytes" in line and "--dtype fp16" in line
        assert line == f"archsim {command}: error: {refused.value}".replace("dtype='fp16'", "--dtype fp16").replace(
            "element_bytes says", "--element-bytes says").replace(  # the command its flags, the API its keywords
            "field 'element_bytes'", "argument --element-bytes")
    agreed = cli_json(capsys, ["cost", SAMPLE, "--batch", "1", "--dtype", "fp16", "--element-bytes", "2"])
    assert agreed == cli_json(capsys, ["cost", SAMPLE, "--batch", "1", "--dtype", "fp16"])
    with pytest.raises(InputError, match="dtype"):
        archsim.cost(SAMPLE, batch=1, dtype="fp4")  # fp8 is a dtype of cost since 2026-12-05 (test_fp8_array_commands)
    assert "argument --dtype: expected one of int8, fp32, fp16, bf16, fp8, got 'fp4'" in \
        cli_refusal(capsys, ["cost", SAMPLE, "--dtype", "fp4"])  # the keyword's line (argparse's "invalid choice" before)


def test_cost_and_energy_help_name_the_default_word():
    from archsim.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    for command in ("cost", "energy"):
        action = next(a for a in sub.choices[command]._actions if "--dtype" in a.option_strings)
        assert tuple(action.choices) == ("int8", "fp32", "fp16", "bf16", "fp8")  # fp8 since 2026-12-05
        assert "1-byte words as SCALE-Sim counts them; default" in action.help
    train = next(a for a in sub.choices["train"]._actions if "--dtype" in a.option_strings)
    assert set(train.choices) < set(action.choices)  # train's names, the same spelling


def _fc_cycle(capsys, dtype: str, sram_kb: int) -> dict:
    """tiny_resnet's fc alone (4096 → 10) at batch 4 on the cycle engine."""
    return layer(cli_json(capsys, ["cost", TINY, "--only", "fc", "--batch", "4", "--engine", "cycle",
                                   "--sram-kb", str(sram_kb), "--dtype", dtype]), "fc")


@pytest.mark.long
def test_cycle_engine_counts_words_so_the_width_changes_what_the_srams_hold(capsys):
    """The cycle engine steps words: its SRAMs hold KiB·1024 / width of them. fp16 with twice the KiB is
    int8's run word for word (same cycles and stalls, twice the bytes); with the same KiB the fc's weights
    (4096·10 = 40960 words) fit int8's 64 KiB (65536 words) but not fp16's (32768): fp16 stalls where int8
    does not, and reads more than twice the bytes (the SRAM refills). With SRAMs that hold every operand at
    both widths (1024 KiB) the bytes scale by exactly the width and the cycles stay."""
    int8, fp16_twice = _fc_cycle(capsys, "int8", 64), _fc_cycle(capsys, "fp16", 128)
    for column in ("F_cycles", "G_cycles", "stall_cycles"):
        assert fp16_twice[column] == int8[column], column
    for column in ("dram_read_bytes", "dram_write_bytes"):
        assert fp16_twice[column] == 2 * int8[column], column
    fp16 = _fc_cycle(capsys, "fp16", 64)
    assert int8["stall_cycles"] == 0 < fp16["stall_cycles"]
    assert fp16["total_cycles"] > int8["total_cycles"]
    assert fp16["dram_read_bytes"] > 2 * int8["dram_read_bytes"]
    large_int8, large_fp16 = _fc_cycle(capsys, "int8", 1024), _fc_cycle(capsys, "fp16", 1024)
    assert large_fp16["total_cycles"] == large_int8["total_cycles"]
    assert large_fp16["dram_read_bytes"] == 2 * large_int8["dram_read_bytes"]
    assert large_fp16["dram_write_bytes"] == 2 * large_int8["dram_write_bytes"]


def test_energy_memory_parts_scale_with_the_width_and_macs_take_the_tables_figure(capsys):
    """tiny_resnet's fc (4096 → 10) at batch 4, analytic (compulsory DRAM traffic): F reads A 4·4096 and
    B 4096·10 and writes 4·10; G reads A 4·4096 and δ 4·10 and writes 4096·10. horowitz45 prices a DRAM bit
    at dram.pj_per_bit, an SRAM/register word at its bits, a MAC at mac[width]."""
    table = tomllib.loads((ROOT / "configs" / "energy" / "horowitz45.toml").read_text(encoding="utf-8"))
    argv = ["energy", TINY, "--only", "fc", "--batch", "4"]
    int8, fp16 = cli_json(capsys, argv), cli_json(capsys, [*argv, "--dtype", "fp16"])
    assert (int8["meta"]["dtype"], fp16["meta"]["dtype"], fp16["meta"]["element_bytes"]) == ("int8", "fp16", 2)
    reads, writes, macs = 4 * 4096 + 4096 * 10 + 4 * 4096 + 4 * 10, 4 * 10 + 4096 * 10, 2 * 4 * 4096 * 10
    for document, width in ((int8, 1), (fp16, 2)):
        total = document["rows"][-1]
        assert total["op"] == "TOTAL"
        assert total["dram_read_pj"] == pytest.approx(reads * 8 * width * table["dram"]["pj_per_bit"])
        assert total["dram_write_pj"] == pytest.approx(writes * 8 * width * table["dram"]["pj_per_bit"])
        assert total["mac_pj"] == pytest.approx(macs * table["mac"][str(width)]["pj"])
    memory = [name for name in int8["rows"][-1] if "sram" in name and name.endswith("_pj")]
    assert len(memory) == 6
    for name in memory:  # the same word counts, each word twice the bits
        assert fp16["rows"][-1][name] == pytest.approx(2 * int8["rows"][-1][name]), name
        assert int8["rows"][-1][name] > 0
    for document, width in ((int8, 1), (fp16, 2)):  # operand words at their bits, partial sums at the 32-bit
        total = document["rows"][-1]  # accumulator's (int8 in int32, fp16 in fp32), whatever the width
        operands = total["register_words"] - total["psum_register_words"]
        assert total["psum_register_words"] == macs  # ws: one partial sum a MAC
        assert total["register_pj"] == pytest.approx((operands * 8 * width + macs * 32) * table["register"]["pj_per_bit"])


def test_api_cost_to_dict_is_the_cli_json(capsys):
    """Energy, a clock, the area and a dtype: most of the meta's keys, and the TOTAL row the table leaves out."""
    result = archsim.cost(SAMPLE, batch=2, dtype="fp16", energy=True, clock_ghz=1.5, mode="paper")
    printed = cli_json(capsys, ["cost", SAMPLE, "--batch", "2", "--dtype", "fp16", "--energy", "--clock-ghz", "1.5",
                                "--mode", "paper"])
    assert printed["meta"]["dtype"] == "fp16" and printed["rows"][-1]["layer"] == "TOTAL"
    assert "energy_pj" in printed["rows"][0] and "F_seconds" in printed["rows"][0]
    assert as_printed(result.to_dict()) == printed
    assert len(result) == len(printed["rows"]) - 1  # the table: every layer, no TOTAL
    assert result["weight_bytes"].tolist() == [row["weight_bytes"] for row in printed["rows"][:-1]]


@pytest.mark.long
def test_api_cost_to_dict_is_the_cli_json_on_the_cycle_engine(capsys):
    result = archsim.cost(TINY, batch=4, engine="cycle", bandwidth=4, sram_kb="16,32,8", dtype="bf16", only="fc")
    printed = cli_json(capsys, ["cost", TINY, "--batch", "4", "--engine", "cycle", "--bandwidth", "4",
                                "--sram-kb", "16,32,8", "--dtype", "bf16", "--only", "fc"])
    assert (printed["meta"]["sram_kb"], printed["meta"]["dtype"]) == ("16,32,8", "bf16")
    assert "stall_cycles" in printed["rows"][0]
    assert as_printed(result.to_dict()) == printed


def test_api_cost_result_keeps_the_dataframe_usage_and_survives_pickle():
    result = archsim.cost(SAMPLE, batch=2)
    assert result.equals(archsim.cost(SAMPLE, batch=2)) and result.equals(result.table)
    assert not result.equals(archsim.cost(SAMPLE, batch=2, dtype="fp32"))  # bytes ×4
    assert int(result.set_index("layer").weight_bytes["conv4"]) == 3 * 3 * 128 * 128
    assert list(result.columns) == list(result.table.columns) and list(result) == list(result.table)
    document = result.to_dict()
    document["meta"]["dtype"] = "changed"
    assert result.to_dict()["meta"]["dtype"] == "int8"  # a copy
    again = pickle.loads(pickle.dumps(result))
    assert again.equals(result) and again.to_dict() == result.to_dict()


def test_api_cost_prices_a_cfg_given_as_the_array_with_its_energy_section(tmp_path, capsys):
    """A .cfg passed as ``array`` is ``--config`` (docs/api.md): its ``[energy]`` overrides price the layers too."""
    text = (ROOT / "configs" / "arrays" / "scalesim_32x32_ws.cfg").read_text(encoding="utf-8")
    cfg = tmp_path / "priced.cfg"
    cfg.write_text(text + "\n[energy]\ntable = horowitz45\ndram_read_pj = 1000\ndram_write_pj = 1200\n", encoding="utf-8")
    result = archsim.cost(SAMPLE, array=str(cfg), batch=1, energy=True)
    printed = cli_json(capsys, ["cost", SAMPLE, "--config", str(cfg), "--batch", "1", "--energy"])
    assert result["energy_pj"].tolist() == [row["energy_pj"] for row in printed["rows"][:-1]]
    assert as_printed(result.to_dict()) == printed
    plain = cli_json(capsys, ["cost", SAMPLE, "--batch", "1", "--energy"])  # horowitz45's 162.5 pJ a DRAM byte
    assert all(a["energy_pj"] > b["energy_pj"] for a, b in zip(printed["rows"], plain["rows"], strict=True))
    # by hand (tests/test_energy.py's ws rule; the .cfg's 32 × 32 ws array, 64 KiB SRAMs, int8): conv1 F (112², 75,
    # 32) and G (75, 112², 32), no δ on the input's layer; conv4 F, G, δ (784, 1152, 128), (1152, 784, 128),
    # (784, 1152, 128); A and B read from DRAM at 1000 pJ a byte, out written at 1200 (162.5 both in plain)
    sram_64k = 20.0 * (64 / 32) ** (math.log(5) / math.log(32)) / 8
    gemms = {"conv1": [(12544, 75, 32), (75, 12544, 32)],
             "conv4": [(784, 1152, 128), (1152, 784, 128), (784, 1152, 128)]}
    for document, read_pj, write_pj in ((printed, 1000.0, 1200.0), (plain, 162.5, 162.5)):
        energy = {row["layer"]: row["energy_pj"] for row in document["rows"]}
        for layer, shapes in gemms.items():
            hand = sum(ws_gemm_by_hand(m, k, n, 32, 32, sram_64k, read_pj) + m * n * (write_pj - read_pj)
                       for m, k, n in shapes)
            assert energy[layer] == pytest.approx(hand, rel=1e-12), (layer, read_pj)
