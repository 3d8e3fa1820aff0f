"""`archsim energy --config` on a device file of several arrays prices the chip: its static energy is the chip's
static power (`[device] static_watts` plus every array's leakage with its SRAMs) × the chip's seconds, train's formula
(`static_joules`), and its area is all arrays'; `cycles` stay one array's and the meta says so. References: hand
counts from the file's figures and the default table (configs/energy/horowitz45.toml), and cost's `chip_seconds`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from device_files import trial_array_chip_toml, write_file

from archsim.cli import main

PES, ARRAYS, KIB = 128 * 128, 4, 3 * 682  # the trial chip: 4 arrays of 128², 2048 KiB each as three 682 KiB buffers


def _json(capsys, flags: list[str]) -> dict:
    assert main([*flags, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _chip(tmp_path, leakage: str = "") -> str:
    text = trial_array_chip_toml(mac_pj=None) + (f"\n[energy]\n{leakage}" if leakage else "")
    return str(write_file(tmp_path, "mychip.toml", text))


@pytest.mark.parametrize("leakage", ["", "pe_leakage_mw = 0.01\nsram_leakage_mw_per_kib = 0.1\n"])
def test_static_energy_is_the_chips_power_over_the_chips_seconds(capsys, tmp_path, leakage):
    """Defect: energy gave the chip's seconds but priced one array's leakage over one array's cycles and left the
    file's static_watts unread. Now 20 W (+ 4 arrays × (0.01 mW × 16,384 PEs + 0.1 mW × 2046 KiB)) × chip seconds."""
    path = _chip(tmp_path, leakage)
    energy = _json(capsys, ["energy", "layerpipe_sample", "--config", path, "--batch", "8"])
    cost = _json(capsys, ["cost", "layerpipe_sample", "--config", path, "--batch", "8"])
    watts = 20 + (ARRAYS * (0.01 * PES + 0.1 * KIB) / 1000 if leakage else 0)
    meta, rows = energy["meta"], energy["rows"]
    chip = cost["rows"][-1]
    for row in rows[:-1]:
        seconds = sum(r[f"{row['op']}_chip_seconds"] for r in cost["rows"][:-1])
        assert row["chip_seconds"] == pytest.approx(seconds, rel=1e-12)
        assert row["leakage_pj"] == pytest.approx(watts * seconds * 1e12, rel=1e-12)
    total = rows[-1]
    assert total["leakage_pj"] == pytest.approx(watts * chip["chip_seconds"] * 1e12, rel=1e-12)
    assert meta["iteration_seconds"] == pytest.approx(chip["chip_seconds"], rel=1e-12)
    assert total["energy_pj"] == pytest.approx(sum(r["energy_pj"] for r in rows[:-1]), rel=1e-12)
    assert total["cycles"] == chip["total_cycles"]  # one array's, as cost's
    assert "cycles: one array's" in meta["per_array"]


def test_area_is_all_arrays(capsys, tmp_path):
    """A PE: the bf16 MAC 5824 µm² + 2 operand registers × 16 bits + the 32-bit accumulator's, × 5.98 µm² a bit; an
    SRAM bit 0.346 µm² / 0.7; × 4 arrays."""
    meta = _json(capsys, ["energy", "layerpipe_sample", "--config", _chip(tmp_path), "--batch", "8"])["meta"]
    pe_mm2 = PES * (5824 + (2 * 16 + 32) * 5.98) / 1e6
    sram_mm2 = KIB * 1024 * 8 * 0.346 / 0.7 / 1e6
    assert meta["array_area_mm2"] == pytest.approx(pe_mm2 + sram_mm2, rel=1e-12)
    assert meta["pe_array_mm2"] == pytest.approx(ARRAYS * pe_mm2, rel=1e-12)
    assert meta["area_mm2"] == pytest.approx(ARRAYS * (pe_mm2 + sram_mm2), rel=1e-12)


def test_the_static_note_is_said_only_where_static_watts_is_unread(capsys, tmp_path):
    """The note that energy leaves static_watts unread is gone where the chip is priced with it."""
    assert main(["energy", "layerpipe_sample", "--config", _chip(tmp_path), "--batch", "8"]) == 0
    assert "static_watts" not in capsys.readouterr().err


def test_energy_and_train_charge_the_chip_the_same_static_watts(capsys, tmp_path):
    """One formula (`static_joules`): the watts energy's leakage_pj spends over its chip seconds are the watts train's
    energy_static_j spends per chip over its iteration, the file's 20 W."""
    path = _chip(tmp_path)
    cluster = write_file(tmp_path, "c.toml", '[cluster]\n\n[[servers]]\ngpus = 1\ndevice = "mychip.toml"\n')
    energy = _json(capsys, ["energy", "layerpipe_sample", "--config", path, "--batch", "8"])
    train = _json(capsys, ["train", "gpt2", "--cluster", str(cluster), "--global-batch", "1", "--seq", "64"])["meta"]
    energy_watts = energy["rows"][-1]["leakage_pj"] * 1e-12 / energy["meta"]["iteration_seconds"]
    assert energy_watts == pytest.approx(train["energy_static_j"] / train["iteration_seconds"], rel=1e-12)
    assert energy_watts == pytest.approx(20, rel=1e-12)


def _chip_of(tmp_path, name: str, arrays: int, static: int, energy: str) -> str:
    """The trial chip with ``arrays`` arrays, ``static`` W of static_watts and ``energy`` as its [energy] keys."""
    text = trial_array_chip_toml(mac_pj=None).replace("arrays = 4\n", f"arrays = {arrays}\n")
    text = text.replace("fp8 = 131.072\n", f"fp8 = {arrays * 32.768}\n")  # 2 · arrays · 128² · 1 GHz
    text = text.replace("static_watts = 20\n", f"static_watts = {static}\n")
    return str(write_file(tmp_path, name, text + (f"\n[energy]\n{energy}" if energy else "")))


@pytest.mark.parametrize(("arrays", "static"), [(2, 0), (4, 20)])
def test_cost_energy_prices_the_chips_static_power_over_its_seconds(capsys, tmp_path, arrays, static):
    """Defect: cost --energy on a device of several arrays priced one array's leakage over one array's cycles and
    left static_watts unread. Now each layer's F/G/D pJ is its dynamic pJ (the same file without leakage or static
    power) + (static_watts + arrays × (0.01 mW × 16,384 PEs + 0.1 mW × 2046 KiB)) × that kind's chip seconds, and
    the TOTAL is energy's."""
    leaky = _chip_of(tmp_path, "leaky.toml", arrays, static, "pe_leakage_mw = 0.01\nsram_leakage_mw_per_kib = 0.1\n")
    bare = _chip_of(tmp_path, "bare.toml", arrays, 0, "")
    flags = ["layerpipe_sample", "--batch", "8"]
    priced = _json(capsys, ["cost", *flags, "--config", leaky, "--energy"])
    dynamic = _json(capsys, ["cost", *flags, "--config", bare, "--energy"])["rows"]
    watts = static + arrays * (0.01 * PES + 0.1 * KIB) / 1000  # W: mW / 1000
    for row, own in zip(priced["rows"], dynamic, strict=True):
        for kind in "FGD":
            joules = watts * row[f"{kind}_chip_seconds"]
            assert row[f"{kind}_energy_pj"] == pytest.approx(own[f"{kind}_energy_pj"] + joules * 1e12, rel=1e-12)
    energy = _json(capsys, ["energy", *flags, "--config", leaky])
    assert priced["rows"][-1]["energy_pj"] == pytest.approx(energy["rows"][-1]["energy_pj"], rel=1e-12)
    assert "static_watts plus every array's leakage" in priced["meta"]["energy_leakage"]


def test_cost_names_the_chips_area_as_energy_does(capsys, tmp_path):
    """Defect: cost on a device of several arrays gave one array's pe_array_mm2, sram_mm2 and area_mm2 where energy
    gave the chip's and array_area_mm2, one name two figures. Now cost's are the hand count's (test_area_is_all_arrays)
    × 4 arrays too, with array_area_mm2 one array's, energy's keys and values, with or without --energy."""
    path = _chip(tmp_path)
    pe_mm2 = PES * (5824 + (2 * 16 + 32) * 5.98) / 1e6
    sram_mm2 = KIB * 1024 * 8 * 0.346 / 0.7 / 1e6
    hand = {"pe_array_mm2": ARRAYS * pe_mm2, "sram_mm2": ARRAYS * sram_mm2, "area_mm2": ARRAYS * (pe_mm2 + sram_mm2),
            "array_area_mm2": pe_mm2 + sram_mm2}
    energy = _json(capsys, ["energy", "layerpipe_sample", "--config", path, "--batch", "8"])["meta"]
    for extra in ([], ["--energy"]):
        meta = _json(capsys, ["cost", "layerpipe_sample", "--config", path, "--batch", "8", *extra])["meta"]
        assert {name: meta[name] for name in hand} == pytest.approx(hand, rel=1e-12)
        assert {name: meta[name] for name in hand} == {name: energy[name] for name in hand}
        assert "the areas (pe_array_mm2, sram_mm2, area_mm2)" in meta["per_array"]
        assert "array_area_mm2: one array's" in meta["per_array"]


def test_cost_on_one_array_names_no_chip_area(capsys, tmp_path):
    """A device of one array: its areas are the array's, with no array_area_mm2 or per_array (energy's too)."""
    path = _chip_of(tmp_path, "one.toml", 1, 20, "")
    for command in (["cost"], ["energy"]):
        meta = _json(capsys, [*command, "layerpipe_sample", "--config", path, "--batch", "8"])["meta"]
        assert "array_area_mm2" not in meta and "per_array" not in meta
        assert meta["pe_array_mm2"] == pytest.approx(PES * (5824 + (2 * 16 + 32) * 5.98) / 1e6, rel=1e-12)


LEAKY = "pe_leakage_mw = 0.01\nsram_leakage_mw_per_kib = 0.1\n"
ONE_WATTS = 20 + (0.01 * PES + 0.1 * KIB) / 1000  # W: static_watts + one array's leakage (mW / 1000)


def test_energy_on_one_array_prices_static_watts_over_its_seconds(capsys, tmp_path):
    """Defect: energy on a device of one array stating static_watts = 20 left it unread (a note said so) where train
    adds it, and a device of several arrays is priced with it. Now that array is the chip: each row's leakage_pj is
    (20 W + 0.01 mW × 16,384 PEs + 0.1 mW × 2046 KiB) × its cycles at 1 GHz (1 W over 1 ns is 1,000 pJ), its
    energy_pj the same file's dynamic pJ (without leakage or static power) plus that, and no note."""
    flags = ["energy", "layerpipe_sample", "--batch", "8"]
    leaky = _chip_of(tmp_path, "leaky.toml", 1, 20, LEAKY)
    assert main([*flags, "--config", leaky, "--format", "json"]) == 0
    out, err = capsys.readouterr()
    priced = json.loads(out)
    dynamic = _json(capsys, [*flags, "--config", _chip_of(tmp_path, "bare.toml", 1, 0, "")])["rows"]
    for row, own in zip(priced["rows"], dynamic, strict=True):
        assert own["leakage_pj"] == 0
        assert row["leakage_pj"] == pytest.approx(ONE_WATTS * row["cycles"] * 1000, rel=1e-12)
        assert row["energy_pj"] == pytest.approx(own["energy_pj"] + ONE_WATTS * row["cycles"] * 1000, rel=1e-12)
    total = priced["rows"][-1]
    assert priced["meta"]["iteration_seconds"] == pytest.approx(total["cycles"] / 1e9, rel=1e-12)
    assert priced["meta"]["average_power_w"] == pytest.approx(total["energy_pj"] / total["cycles"] / 1000, rel=1e-12)
    for row in priced["rows"]:  # compute-bound: train's op timing on one array is its SCALE-Sim cycles at 1 GHz
        assert row["chip_seconds"] == pytest.approx(row["cycles"] / 1e9, rel=1e-12)
    assert priced["meta"]["chip_arrays"] == 1 and "per_array" not in priced["meta"]  # the areas: the array's
    assert "static_watts" not in err


def test_cost_energy_on_one_array_prices_static_watts_as_energy_does(capsys, tmp_path):
    """Defect: cost --energy on a device of one array stating static_watts = 20 priced one array's leakage alone
    (a note said static_watts was unread). Now each kind's pJ is the dynamic pJ (the file without leakage or static
    power) + (20 W + 0.01 mW × 16,384 PEs + 0.1 mW × 2046 KiB) × that kind's cycles at 1 GHz, the TOTAL energy's,
    energy_leakage says so, and neither the command nor archsim.cost says a word of static_watts."""
    import warnings

    import archsim

    leaky = _chip_of(tmp_path, "leaky.toml", 1, 20, LEAKY)
    bare = _chip_of(tmp_path, "bare.toml", 1, 0, "")
    flags = ["layerpipe_sample", "--batch", "8"]
    assert main(["cost", *flags, "--config", leaky, "--energy", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    priced = json.loads(out)
    dynamic = _json(capsys, ["cost", *flags, "--config", bare, "--energy"])
    for row, own in zip(priced["rows"], dynamic["rows"], strict=True):
        for kind in "FGD":
            joules_pj = ONE_WATTS * row[f"{kind}_cycles"] * 1000
            assert row[f"{kind}_energy_pj"] == pytest.approx(own[f"{kind}_energy_pj"] + joules_pj, rel=1e-12)
    assert "static_watts" not in err
    assert "static_watts plus its one array's leakage" in priced["meta"]["energy_leakage"]
    assert "energy_leakage" not in dynamic["meta"]  # no static power: the model's leakage alone, as it was
    energy = _json(capsys, ["energy", *flags, "--config", leaky])
    assert priced["rows"][-1]["energy_pj"] == pytest.approx(energy["rows"][-1]["energy_pj"], rel=1e-12)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = archsim.cost("layerpipe_sample", batch=8, config=leaky, energy=True)
    assert not [w for w in caught if "static_watts" in str(w.message)]
    assert result.to_dict()["rows"][-1]["energy_pj"] == priced["rows"][-1]["energy_pj"]


def test_energy_and_train_charge_a_one_array_chip_the_same_static_watts(capsys, tmp_path):
    """One formula on a chip of one array too: energy's leakage_pj over its seconds (the array's cycles at 1 GHz)
    spends the watts train's energy_static_j spends per chip over its iteration, the file's 20 W (train refuses
    leakage figures on a device file, so none here), and energy_static_j is 20 W × train's seconds."""
    path = _chip_of(tmp_path, "mychip.toml", 1, 20, "")
    cluster = write_file(tmp_path, "c.toml", '[cluster]\n\n[[servers]]\ngpus = 1\ndevice = "mychip.toml"\n')
    energy = _json(capsys, ["energy", "layerpipe_sample", "--config", path, "--batch", "8"])
    train = _json(capsys, ["train", "gpt2", "--cluster", str(cluster), "--global-batch", "1", "--seq", "64"])["meta"]
    seconds = energy["rows"][-1]["cycles"] / 1e9
    assert energy["rows"][-1]["leakage_pj"] == pytest.approx(20 * seconds * 1e12, rel=1e-12)
    assert train["energy_static_j"] == pytest.approx(20 * train["iteration_seconds"], rel=1e-12)


FC = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, Padding, "
      "Type,\nfc1, 1, 1, 1, 1, 256, 512, 1, 0, fc,\nfc2, 1, 1, 1, 1, 512, 128, 1, 0, fc,\n")
# HBM seconds of each fc's GEMMs at 10 GB/s, fp16: (m·k + k·n + m·n) elements × 2 bytes for any order of its
# three sizes, batch 8: fc1 (8, 256, 512), fc2 (8, 512, 128); F and G each GEMM of both, δ fc2's alone (fc1 has none)
FC1_S = (8 * 256 + 256 * 512 + 8 * 512) * 2 / 10e9  # 2.74432e-5 s
FC2_S = (8 * 512 + 512 * 128 + 8 * 128) * 2 / 10e9  # 1.41312e-5 s
FC_HAND = {"F": FC1_S + FC2_S, "G": FC1_S + FC2_S, "D": FC2_S}



def _slow_chip(tmp_path, static: int) -> str:
    """The trial chip of one array at 10 GB/s of HBM, ``static`` W of static_watts, with leakage figures where it
    states static power (none: the dynamic pJ alone)."""
    path = Path(_chip_of(tmp_path, f"slow{static}.toml", 1, static, LEAKY if static else ""))
    assert "hbm_gbps = 1000\n" in path.read_text()
    path.write_text(path.read_text().replace("hbm_gbps = 1000\n", "hbm_gbps = 10\n"))
    return str(path)


def test_energy_on_one_array_prices_static_watts_over_trains_seconds_where_hbm_bound(capsys, tmp_path):
    """Defect: on a device of one array energy priced static_watts over the array's cycles at its clock, where train
    (and energy on a chip of several arrays) takes the op timing's seconds: each GEMM no faster than its operands'
    and result's HBM bytes at the file's bandwidth. Two fc layers at 10 GB/s are HBM-bound (9,681 cycles, 9.7 µs of
    compute, against 97.3 µs of HBM): each kind's chip_seconds and leakage_pj are the hand count's (FC_HAND), the
    iteration's seconds their sum, and the dynamic pJ as the same file without static power prices it."""
    network = str(write_file(tmp_path, "fc.csv", FC))
    flags = ["energy", network, "--batch", "8"]
    priced = _json(capsys, [*flags, "--config", _slow_chip(tmp_path, 20)])
    dynamic = _json(capsys, [*flags, "--config", _slow_chip(tmp_path, 0)])["rows"]
    for row, own in zip(priced["rows"][:-1], dynamic[:-1], strict=True):
        seconds = FC_HAND[row["op"]]
        assert row["cycles"] / 1e9 < seconds / 4  # HBM-bound: the array's cycles alone would price a fifth of it
        assert row["leakage_pj"] == pytest.approx(ONE_WATTS * seconds * 1e12, rel=1e-12)
        assert row["chip_seconds"] == pytest.approx(seconds, rel=1e-12)
        assert own["leakage_pj"] == 0
        assert row["energy_pj"] == pytest.approx(own["energy_pj"] + row["leakage_pj"], rel=1e-12)
    assert priced["meta"]["iteration_seconds"] == pytest.approx(sum(FC_HAND.values()), rel=1e-12)
    assert priced["rows"][-1]["leakage_pj"] == pytest.approx(ONE_WATTS * sum(FC_HAND.values()) * 1e12, rel=1e-12)


def test_cost_energy_on_one_array_prices_each_layer_over_trains_seconds_where_hbm_bound(capsys, tmp_path):
    """cost --energy on the same file: each layer's F/G/D_chip_seconds the hand count's HBM seconds (fc1 F and G
    FC1_S, no δ; fc2 FC2_S each), its F/G/D_energy_pj the dynamic pJ + the chip's watts over them, the TOTAL
    energy's; without --energy, cost's columns are as on the file without static power (no chip columns)."""
    network = str(write_file(tmp_path, "fc.csv", FC))
    flags = ["cost", network, "--batch", "8", "--config"]
    priced = _json(capsys, [*flags, _slow_chip(tmp_path, 20), "--energy"])
    dynamic = _json(capsys, [*flags, _slow_chip(tmp_path, 0), "--energy"])["rows"]
    hand = [{"F": FC1_S, "G": FC1_S, "D": 0.0}, {"F": FC2_S, "G": FC2_S, "D": FC2_S}]
    for row, own, seconds in zip(priced["rows"][:-1], dynamic[:-1], hand, strict=True):
        for kind in "FGD":
            assert row[f"{kind}_chip_seconds"] == pytest.approx(seconds[kind], rel=1e-12)
            joules_pj = ONE_WATTS * seconds[kind] * 1e12
            assert row[f"{kind}_energy_pj"] == pytest.approx(own[f"{kind}_energy_pj"] + joules_pj, rel=1e-12)
    energy = _json(capsys, ["energy", network, "--batch", "8", "--config", _slow_chip(tmp_path, 20)])
    assert priced["rows"][-1]["energy_pj"] == pytest.approx(energy["rows"][-1]["energy_pj"], rel=1e-12)
    plain = _json(capsys, [*flags, _slow_chip(tmp_path, 20)])
    assert plain["rows"] == _json(capsys, [*flags, _slow_chip(tmp_path, 0)])["rows"]  # cycles and bytes alone
    assert "F_chip_seconds" not in plain["rows"][0] and "chip_name" not in plain["meta"]


# one fc GEMM of 8 × 1024 × 1024 (fp16): its 1 M-word weight overflows a 682 KiB operand buffer, so the cycle engine
# refetches it from DRAM and stalls; its compulsory bytes, (8·1024 + 1024·1024 + 8·1024) × 2 B = 2,129,920 B, take
# 2.1 µs at the file's 1000 GB/s, under its compute (train's op timing: compute-bound)
BIG_FC = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, Padding, "
          "Type,\nfc1, 1, 1, 1, 1, 1024, 1024, 1, 0, fc,\n")
BIG_FC_HBM_S = (8 * 1024 + 1024 * 1024 + 8 * 1024) * 2 / 1000e9


@pytest.mark.long
def test_cost_energy_under_the_cycle_engine_prices_static_watts_over_its_own_cycles(capsys, tmp_path):
    """The rule under --engine cycle on a chip of one array (docs/formats.md's energy_leakage): the chip's static
    power is priced over the cycle engine's own stall-inclusive cycles at the clock, not train's op timing. The
    engine runs at the file's hbm_gbps per operand buffer (1000 GB/s of 2-byte words at 1 GHz: 500 words/cycle, the
    note says so) with SCALE-Sim's refetches, and stalls on F. Each kind's F/G/D_chip_seconds are its F/G/D_cycles
    at 1 GHz and its pJ the cycle engine's dynamic pJ (the file without static power) + (20 W + the array's leakage)
    × them: F's longer than train's seconds (the analytic engine's cycles at 1 GHz, compute-bound), which priced it
    until 2026-12-05."""
    network = str(write_file(tmp_path, "fc.csv", BIG_FC))
    flags = ["cost", network, "--batch", "8", "--energy", "--config"]
    leaky = _chip_of(tmp_path, "leaky.toml", 1, 20, LEAKY)
    assert main([*flags, leaky, "--engine", "cycle", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    (row, _total) = json.loads(out)["rows"]
    assert "the cycle engine ran at 500 words/cycle per operand buffer" in err
    (own, _) = _json(capsys, [*flags, _chip_of(tmp_path, "bare.toml", 1, 0, ""), "--engine", "cycle"])["rows"]
    (analytic, _) = _json(capsys, [*flags, leaky])["rows"]
    assert row["stall_cycles"] > 0 and row["F_cycles"] > analytic["F_cycles"]
    assert analytic["F_chip_seconds"] == pytest.approx(analytic["F_cycles"] / 1e9, rel=1e-12)  # train's: compute
    assert analytic["F_cycles"] / 1e9 > BIG_FC_HBM_S
    for kind in "FG":
        seconds = row[f"{kind}_cycles"] / 1e9
        assert row[f"{kind}_chip_seconds"] == pytest.approx(seconds, rel=1e-12)
        joules_pj = ONE_WATTS * seconds * 1e12
        assert row[f"{kind}_energy_pj"] == pytest.approx(own[f"{kind}_energy_pj"] + joules_pj, rel=1e-12)
    assert row["F_chip_seconds"] > analytic["F_chip_seconds"]
