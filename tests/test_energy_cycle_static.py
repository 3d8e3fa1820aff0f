"""Under ``--engine cycle`` a chip of one array stating ``[device] static_watts`` has its static energy priced over
the cycle engine's own time (archsim.chip_time.chip_seconds): each op's seconds are the engine's cycles of
it at the clock, floored at its HBM bytes ÷ hbm_gbps (tests/test_cycle_hbm_floor.py), and leakage_pj is
(static_watts + the array's leakage) × them, so a run that stalls on DRAM pays the leakage of the time it stalls. A
chip of several arrays is timed by its busiest array's share of each GEMM (tests/test_cycle_chip_arrays.py).

References: the documented formula with the file's figures, over the cycles the engine itself reports (energy's
``cycles``, cost's ``F/G/D_cycles``), and hand counts of the GEMMs' HBM bytes: train's HBM-bound seconds for the
analytic rule and the floor on the engine's. Here the weight gradients are in the floor's binding regime: the engine
gives each of its three operand buffers the whole 10 GB/s, and fc1's G (out[256×512] = xᵀ[256×8]·δ[8×512]) takes
17,018 cycles at 1 GHz where its 274,432 bytes need 27,443 ns."""

from __future__ import annotations

import json

import pytest
from device_files import trial_array_chip_toml, write_file

from archsim.cli import main

PES = 128 * 128
KIB = 3 * 64  # 192 KiB of SRAM beside the array: three 64 KiB operand buffers
LEAKY = "pe_leakage_mw = 0.01\nsram_leakage_mw_per_kib = 0.1\n"
WATTS = 20 + (0.01 * PES + 0.1 * KIB) / 1000  # W: static_watts + the array's leakage (mW / 1000)
CLOCK_HZ = 1e9

# fc1's weight (256 × 512 fp16, 256 KiB) and fc2's (512 × 128, 128 KiB) overflow a 64 KiB buffer: at 10 GB/s
# (5 words/cycle) the cycle engine refetches them and stalls
FC = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, Padding, "
      "Type,\nfc1, 1, 1, 1, 1, 256, 512, 1, 0, fc,\nfc2, 1, 1, 1, 1, 512, 128, 1, 0, fc,\n")
# train's op timing of the same GEMMs on that chip: HBM-bound, (m·k + k·n + m·n) elements × 2 bytes at 10 GB/s
FC1_S = (8 * 256 + 256 * 512 + 8 * 512) * 2 / 10e9
FC2_S = (8 * 512 + 512 * 128 + 8 * 128) * 2 / 10e9
TRAIN_S = {"F": FC1_S + FC2_S, "G": FC1_S + FC2_S, "D": FC2_S}
SIZES = {"fc1": (256, 512), "fc2": (512, 128)}  # each layer's inputs → outputs


def _layer_bytes(layer: str, batch: int) -> int:
    """Each of a layer's F, G and δ GEMMs' HBM bytes at ``batch``, by hand: (b·in + in·out + b·out) × 2 (fp16), the
    same three matrices each time."""
    inputs, outputs = SIZES[layer]
    return (batch * inputs + inputs * outputs + batch * outputs) * 2


def _floored(rows: list[dict], kind: str, batch: int) -> float:
    """Seconds of ``kind``'s ops over cost's per-layer ``rows`` (at ``batch``): each op the larger of its cycles at
    1 GHz and its bytes at 10 GB/s (an op of no cycles, fc1's δ, is none)."""
    return sum(max(row[f"{kind}_cycles"] / CLOCK_HZ, _layer_bytes(row["layer"], batch) / 10e9)
               for row in rows if row["layer"] in SIZES and row[f"{kind}_cycles"])


def _json(capsys, flags: list[str]) -> dict:
    assert main([*flags, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _chip(tmp_path, name: str, *, arrays: int = 1, static: int = 20, energy: str = LEAKY) -> str:
    """The trial chip with ``arrays`` arrays of 128², 192 KiB of SRAM each, 10 GB/s of HBM, ``static`` W."""
    text = trial_array_chip_toml(mac_pj=None).replace("arrays = 4\n", f"arrays = {arrays}\n")
    for old, new in (("fp8 = 131.072\n", f"fp8 = {arrays * 32.768}\n"), ("static_watts = 20\n", f"static_watts = {static}\n"),
                     ("hbm_gbps = 1000\n", "hbm_gbps = 10\n"), ("sram_kib_per_array = 2048\n", "sram_kib_per_array = 192\n")):
        assert old in text
        text = text.replace(old, new)
    return str(write_file(tmp_path, name, text + (f"\n[energy]\n{energy}" if energy else "")))


@pytest.fixture
def network(tmp_path) -> str:
    return str(write_file(tmp_path, "fc.csv", FC))


@pytest.mark.parametrize("microbatches", [1, 2])
def test_energy_prices_static_power_over_the_cycle_engines_cycles(capsys, tmp_path, network, microbatches):
    """Defect: under --engine cycle energy priced the chip's leakage over train's seconds while its dynamic energy
    and DRAM counts were the cycle engine's, which stalls here. Now each kind's chip_seconds is its ops' cycles at
    1 GHz, each floored at its bytes at 10 GB/s (the weight gradients bound: the engine beat the HBM), × the
    micro-batches, leakage_pj (20 W + 0.01 mW × 16,384 PEs + 0.1 mW × 192 KiB) × them, energy_pj the dynamic pJ (the
    file without static power or leakage) plus that, and the meta's seconds and watts the TOTAL's."""
    flags = ["energy", network, "--batch", "8", "--microbatches", str(microbatches), "--engine", "cycle", "--config"]
    leaky = _chip(tmp_path, "leaky.toml")
    priced = _json(capsys, [*flags, leaky])
    dynamic = _json(capsys, [*flags, _chip(tmp_path, "bare.toml", static=0, energy="")])["rows"]
    micro = _json(capsys, ["cost", network, "--batch", str(8 // microbatches), "--engine", "cycle", "--config",
                           leaky])["rows"]
    for row, own in zip(priced["rows"], dynamic, strict=True):
        kinds = "FGD" if row["op"] == "TOTAL" else row["op"]
        seconds = sum(_floored(micro, kind, 8 // microbatches) for kind in kinds) * microbatches
        assert seconds >= row["cycles"] / CLOCK_HZ * (1 - 1e-12)
        assert row["cycles"] == own["cycles"] and own["leakage_pj"] == 0
        assert row["chip_seconds"] == pytest.approx(seconds, rel=1e-12)
        assert row["leakage_pj"] == pytest.approx(WATTS * seconds * 1e12, rel=1e-12)
        assert row["energy_pj"] == pytest.approx(own["energy_pj"] + WATTS * seconds * 1e12, rel=1e-12)
    total, meta = priced["rows"][-1], priced["meta"]
    assert priced["rows"][1]["op"] == "G" and priced["rows"][1]["chip_seconds"] > priced["rows"][1]["cycles"] / CLOCK_HZ
    assert meta["iteration_seconds"] == pytest.approx(total["chip_seconds"], rel=1e-12)
    assert meta["average_power_w"] == pytest.approx(total["energy_pj"] * 1e-12 / meta["iteration_seconds"], rel=1e-12)
    assert "cycle engine's cycles" in meta["chip_seconds_by"]


def test_the_cycle_engines_leakage_differs_from_train_seconds(capsys, tmp_path, network):
    """The engine stalls (cost's stall_cycles) and takes more than 3× train's HBM-bound seconds (TRAIN_S, the hand
    count), which the analytic engine still prices the leakage over: the two leakages differ by that much."""
    path = _chip(tmp_path, "leaky.toml")
    flags = ["energy", network, "--batch", "8", "--config", path]
    cycle = _json(capsys, [*flags, "--engine", "cycle"])["rows"]
    analytic = _json(capsys, flags)["rows"]
    stalls = _json(capsys, ["cost", network, "--batch", "8", "--engine", "cycle", "--config", path])["rows"][-1]
    assert stalls["stall_cycles"] > 0
    for row in analytic[:-1]:
        assert row["chip_seconds"] == pytest.approx(TRAIN_S[row["op"]], rel=1e-12)
        assert row["leakage_pj"] == pytest.approx(WATTS * TRAIN_S[row["op"]] * 1e12, rel=1e-12)
    train_seconds = sum(TRAIN_S.values())
    assert cycle[-1]["cycles"] / CLOCK_HZ > 3 * train_seconds
    assert cycle[-1]["chip_seconds"] >= cycle[-1]["cycles"] / CLOCK_HZ  # the floor only lengthens it
    assert cycle[-1]["leakage_pj"] == pytest.approx(WATTS * cycle[-1]["chip_seconds"] * 1e12, rel=1e-12)
    assert cycle[-1]["leakage_pj"] > 3 * analytic[-1]["leakage_pj"]


def test_cost_energy_prices_each_layer_over_the_cycle_engines_cycles(capsys, tmp_path, network):
    """cost --energy --engine cycle on the same chip: each layer's F/G/D_chip_seconds are its F/G/D_cycles at 1 GHz
    floored at its bytes at 10 GB/s, its F/G/D_energy_pj the dynamic pJ + the chip's watts over them, and the TOTAL
    energy's (one rule)."""
    leaky = _chip(tmp_path, "leaky.toml")
    flags = ["cost", network, "--batch", "8", "--energy", "--engine", "cycle", "--config"]
    priced = _json(capsys, [*flags, leaky])
    dynamic = _json(capsys, [*flags, _chip(tmp_path, "bare.toml", static=0, energy="")])["rows"]
    assert priced["rows"][-1]["stall_cycles"] > 0
    layers = priced["rows"][:-1]
    for row, own in zip(priced["rows"], dynamic, strict=True):
        for kind in "FGD":
            seconds = _floored(layers if row["layer"] == "TOTAL" else [row], kind, 8)
            assert row[f"{kind}_chip_seconds"] == pytest.approx(seconds, rel=1e-12)
            assert row[f"{kind}_energy_pj"] == pytest.approx(own[f"{kind}_energy_pj"] + WATTS * seconds * 1e12,
                                                            rel=1e-12)
    energy = _json(capsys, ["energy", network, "--batch", "8", "--engine", "cycle", "--config", leaky])
    assert priced["rows"][-1]["energy_pj"] == pytest.approx(energy["rows"][-1]["energy_pj"], rel=1e-12)
    assert "cycle engine's cycles" in priced["meta"]["chip_seconds_by"]


def test_a_chip_of_several_arrays_is_timed_by_its_busiest_arrays_share_under_the_cycle_engine(capsys, tmp_path,
                                                                                                 network):
    """Four arrays (until 2026-12-05 train's op timing under --engine cycle too): the analytic engine keeps train's
    HBM-bound seconds (TRAIN_S, the hand count); the cycle engine steps the busiest array's share of each forward
    GEMM at 10 GB/s ÷ 4 arrays in 2-byte words at 1 GHz = 1.25 → 1 word/cycle per buffer, 64 KiB buffers: fc1's
    8 folds (2 row × 4 column folds of 128) leave it one column fold, (8, 256, 128); fc2's 4 (4 row folds) one row
    fold, (8, 128, 128). The TOTAL's F_chip_seconds are those two runs' cycles at 1 GHz, each floored at its GEMM's
    bytes at 10 GB/s (FC1_S, FC2_S: fc2's share, 14,131 ns of bytes, beats it); the meta names the rule."""
    from archsim.array.cycle import simulate_gemm

    path = _chip(tmp_path, "four.toml", arrays=4)
    flags = ["cost", network, "--batch", "8", "--energy", "--config", path]
    cycle = _json(capsys, [*flags, "--engine", "cycle"])
    analytic = _json(capsys, flags)
    for row in analytic["rows"][:-1]:
        for kind in "FGD":
            expected = {"fc1": FC1_S, "fc2": FC2_S}[row["layer"]] if kind in ("F", "G") or row["layer"] == "fc2" else 0
            assert row[f"{kind}_chip_seconds"] == pytest.approx(expected, rel=1e-12)
    shares = [simulate_gemm(8, k, 128, 128, 128, "ws", sram_words=(32768,) * 3, bandwidth=(1, 1, 1)).cycles
              for k in (256, 128)]
    floored = max(shares[0] / CLOCK_HZ, FC1_S) + max(shares[1] / CLOCK_HZ, FC2_S)
    assert shares[1] / CLOCK_HZ < FC2_S  # the binding regime for fc2
    assert cycle["rows"][-1]["F_chip_seconds"] == pytest.approx(floored, rel=1e-12)
    assert "busiest array's share" in cycle["meta"]["chip_seconds_by"]
    assert "cycle engine" not in analytic["meta"]["chip_seconds_by"]
