"""Each keyword ``archsim.cost`` gained run both ways on the same input (docs/api.md): the numbers
``archsim cost`` prints (``--format csv``, full precision) are the reference, and a refusal is the command's
line, the library naming keywords where the command names flags."""

from __future__ import annotations

import math

import onnx
import pytest
from api_parity_helpers import TOPOLOGY, as_flag, cli_csv, cli_error, same_numbers
from test_docs import ROOT

import archsim
from archsim.errors import InputError
from tests.onnx_models import with_unknown_op
from tests.test_energy import ws_gemm_by_hand

SMALL = "docs/examples/tiny_resnet.csv"  # for the cycle engine, which steps every cycle of every GEMM


def energy_table_copy(tmp_path) -> str:
    """horowitz45 with DRAM at twice its pJ per bit (an energy table of the user's, as configs/energy says)."""
    text = (ROOT / "configs" / "energy" / "horowitz45.toml").read_text(encoding="utf-8")
    lines = text.splitlines()
    section = lines.index("[dram]")
    row = next(i for i in range(section, len(lines)) if lines[i].startswith("pj_per_bit"))
    figure = float(lines[row].split("=")[1].split("#")[0])
    lines[row] = f"pj_per_bit = {2 * figure!r}"
    path = tmp_path / "doubled_dram.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


COST_CASES = {  # keyword → (network, flags, keywords), at batch 8
    "clock_ghz": (TOPOLOGY, ["--clock-ghz", "1.5"], {"clock_ghz": 1.5}),
    "bandwidth": (SMALL, ["--engine", "cycle", "--bandwidth", "4"], {"engine": "cycle", "bandwidth": 4}),
    "sram_kb": (SMALL, ["--engine", "cycle", "--sram-kb", "16,32,8"], {"engine": "cycle", "sram_kb": "16,32,8"}),
    "energy": (TOPOLOGY, ["--energy"], {"energy": True}),
    "config": (TOPOLOGY, ["--config", "configs/arrays/scalesim_32x32_ws.cfg", "--array", "16x8"],
               {"config": "configs/arrays/scalesim_32x32_ws.cfg", "array": "16x8"}),
    "only": ("vgg16", ["--only", "fc"], {"only": "fc"}),
    "shapes": ("docs/examples/tiny_resnet.csv", ["--shapes", "off"], {"shapes": "off"}),
    "dim": ("configs/transformers/gpt2.json", ["--dim", "seq=64", "--only", "fc"], {"dim": {"seq": 64}, "only": "fc"}),
}


@pytest.mark.parametrize("name", sorted(COST_CASES))
def test_cost_keywords_give_the_flags_numbers(name, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    network, flags, options = COST_CASES[name]
    api = archsim.cost(network, batch=8, **options)
    assert len(api) > 0
    same_numbers(api, cli_csv(["cost", network, *flags, "--batch", "8"], capsys))


def test_cost_geometry_gives_the_flags_numbers(tmp_path, capsys):
    """A raw SCALE-Sim topology (no padding): 10×10 input, 3×3 filter, stride 2."""
    path = tmp_path / "raw.csv"
    path.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
                    "Strides,\nc1, 10, 10, 3, 3, 8, 16, 2,\n", encoding="utf-8")
    ours = archsim.cost(str(path), batch=8, geometry="scalesim")
    same_numbers(ours, cli_csv(["cost", str(path), "--batch", "8", "--geometry", "scalesim"], capsys))
    assert not ours.equals(archsim.cost(str(path), batch=8))  # ceil((10 - 3) / 2) + 1 = 5 rows, not 4


def test_cost_clock_gives_seconds_as_cycles_over_the_clock(capsys):
    table = archsim.cost(TOPOLOGY, batch=8, clock_ghz=1.5)
    for kind in ("F", "G", "D", "total"):  # hand rule: seconds = cycles / (1.5 × 10⁹ Hz)
        assert table[f"{kind}_seconds"].tolist() == [c / 1.5e9 for c in table[f"{kind}_cycles"]]
    assert "F_seconds" not in archsim.cost(TOPOLOGY, batch=8).columns


def test_cost_memory_keywords_change_the_cycle_engine_as_the_flags_do(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    base = archsim.cost(SMALL, batch=8, engine="cycle")
    narrow = archsim.cost(SMALL, batch=8, engine="cycle", bandwidth=1)
    assert narrow.stall_cycles.sum() > base.stall_cycles.sum()  # one word a cycle stalls more than ten
    listed = archsim.cost(SMALL, batch=8, engine="cycle", sram_kb=[16, 32, 8])
    assert listed.equals(archsim.cost(SMALL, batch=8, engine="cycle", sram_kb="16,32,8"))
    assert archsim.cost(SMALL, batch=8, engine="cycle", sram_kb=16).equals(
        archsim.cost(SMALL, batch=8, engine="cycle", sram_kb="16,16,16"))


def test_cost_energy_table_gives_the_flags_numbers(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    table = energy_table_copy(tmp_path)
    api = archsim.cost(TOPOLOGY, batch=8, energy=True, energy_table=table)
    same_numbers(api, cli_csv(["cost", TOPOLOGY, "--batch", "8", "--energy", "--energy-table", table], capsys))
    default = archsim.cost(TOPOLOGY, batch=8, energy=True)
    assert (api.energy_pj > default.energy_pj).all()  # DRAM at twice the energy: every layer costs more
    # by hand (tests/test_energy.py's ws rule) on the default 32 × 32 ws int8 array with 64 KiB SRAMs, DRAM at
    # 1300 / 64 × 8 pJ a byte, twice that here: conv1 (224², 5 × 5, stride 2, pad 2 → 112², 3 → 32; the input's
    # layer has no δ) F (8·112², 75, 32), G (75, 8·112², 32); conv4 (28², 3 × 3, stride 1, 128 → 128) F, G and δ
    # = (8·28², 1152, 128), (1152, 8·28², 128), (8·28², 1152, 128)
    sram_64k = 20.0 * (64 / 32) ** (math.log(5) / math.log(32)) / 8
    gemms = {"conv1": [(100352, 75, 32), (75, 100352, 32)],
             "conv4": [(6272, 1152, 128), (1152, 6272, 128), (6272, 1152, 128)]}
    for dram, table_used in ((1300 / 64 * 8, default), (2 * 1300 / 64 * 8, api)):
        energy = table_used.set_index("layer").energy_pj
        for layer, shapes in gemms.items():
            hand = sum(ws_gemm_by_hand(m, k, n, 32, 32, sram_64k, dram) for m, k, n in shapes)
            assert energy[layer] == pytest.approx(hand, rel=1e-12), (layer, dram)
    assert api.energy_pj.tolist() == pytest.approx((api.F_energy_pj + api.G_energy_pj + api.D_energy_pj).tolist())


def test_cost_unsupported_gives_the_flags_numbers_and_refusal(tmp_path, capsys):
    path = str(tmp_path / "nms.onnx")
    onnx.save(with_unknown_op(), path)
    same_numbers(archsim.cost(path, batch=8, unsupported="skip"),
                 cli_csv(["cost", path, "--batch", "8", "--unsupported", "skip"], capsys))
    with pytest.raises(InputError, match="NonMaxSuppression"):
        archsim.cost(path, batch=8)


def test_cost_input_shape_gives_the_flags_numbers(capsys):
    pytest.importorskip("torch")
    tiny = f"{ROOT / 'tests' / 'data' / 'torch' / 'tiny_model.py'}:TinyNet"
    same_numbers(archsim.cost(tiny, batch=8, input_shape="1,3,16,16"),
                 cli_csv(["cost", tiny, "--batch", "8", "--input-shape", "1,3,16,16"], capsys))


@pytest.mark.parametrize(("flags", "options"), [
    (["--sram-kb", "1,2"], {"sram_kb": "1,2"}),
    (["--sram-kb", "0"], {"sram_kb": 0}),
    (["--input-shape", "1,3,8,8"], {"input_shape": "1,3,8,8"}),
    (["--dim", "seq=4", "--dim", "seq=8"], {"dim": [("seq", 4), ("seq", 8)]}),
])
def test_cost_keywords_are_refused_with_the_flags_message(flags, options, capsys):
    """The same refusal, the library naming its keywords (``input_shape``, ``dim``) where the command names flags."""
    with pytest.raises(InputError) as refused:
        archsim.cost(TOPOLOGY, **options)
    said = cli_error(["cost", TOPOLOGY, *flags], capsys)
    assert said.replace("--input-shape", "input_shape").replace("--dim", "dim") == \
        f"archsim cost: error: {as_flag(refused.value)}".replace("--input-shape", "input_shape").replace("--dim", "dim")


@pytest.mark.parametrize(("flag", "text", "options"), [
    ("--clock-ghz", "0", {"clock_ghz": 0}), ("--clock-ghz", "inf", {"clock_ghz": float("inf")}),
    ("--bandwidth", "0", {"bandwidth": 0}), ("--batch", "0", {"batch": 0}), ("--batch", "2147483648", {"batch": 2**31}),
])
def test_cost_numbers_out_of_range_are_refused_as_the_flag_refuses_them(flag, text, options, capsys):
    """argparse words its refusal ("argument --clock-ghz: …"); the reason after it is the keyword's."""
    with pytest.raises(InputError) as refused:
        archsim.cost(TOPOLOGY, **options)
    assert refused.value.where.field == flag[2:]
    assert cli_error(["cost", TOPOLOGY, flag, text], capsys).endswith(f"argument {flag}: {refused.value.message}")


def test_cost_bandwidth_without_the_cycle_engine_is_refused_as_the_cli_refuses_it(capsys):
    """The analytic engine has no memory stalls: a DRAM bandwidth given to it would be dropped, so both refuse it."""
    with pytest.raises(InputError, match="bandwidth is the cycle engine's DRAM words/cycle: add engine='cycle'") \
            as refused:
        archsim.cost(TOPOLOGY, bandwidth=4)  # the keywords a library user typed; the command its flags
    assert cli_error(["cost", TOPOLOGY, "--bandwidth", "4"], capsys) == \
        f"archsim cost: error: {as_flag(refused.value)}".replace("bandwidth is", "--bandwidth is").replace(
            "engine='cycle'", "--engine cycle")
