"""``--dtype fp8`` on the array commands (``cost``, ``energy``, ``gemm``, ``pipeline``, ``schedule``) and their API
functions: one fp8 GEMM or layer priced as ``train --fp8`` prices a linear layer's GEMMs on a device's arrays — at the
file's ``macs_per_pe`` fp8 rate (SCALE-Sim's (m, ⌈k / r⌉, n)), 1-byte words, each MAC at the energy table's fp8 figure.
Until it they had no fp8: ``--element-bytes 1`` priced an int8 MAC (0.3 pJ) at rate 1. References: SCALE-Sim's
per-fold count by hand (R + R + C + T − 2 cycles a ws fold, the last index counted: folds · per fold − 1), the
table's figures (configs/energy/horowitz45.toml: 1-byte MAC 0.3, 32-bit int add 0.1, 32-bit FP add 0.9 pJ), and
``archsim train --fp8 hybrid``'s op row of the same GEMM on the same device."""

from __future__ import annotations

import warnings

import pytest
from api_parity_helpers import cli_error, cli_json
from device_files import device_toml, scalesim_chip_cfg, write_file
from test_docs import ROOT

import archsim
from archsim.errors import InputError

FP8_MAC_PJ = 0.3 - 0.1 + 0.9  # horowitz45: the 1-byte MAC with its int32 add swapped for an fp32 add
INT8_MAC_PJ = 0.3
TPU = (ROOT / "configs" / "devices" / "tpu_v4_like.toml").read_text(encoding="utf-8")
FP8_TPU = TPU.replace('dataflow = "ws"\n', 'dataflow = "ws"\nmacs_per_pe = { fp8 = 2 }\n')
FC1 = "Layer name,IFMAP Height,IFMAP Width,Filter Height,Filter Width,Channels,Num Filter,Strides,Type\n{}"


def _one_array(tmp_path, rates: str = "macs_per_pe = { fp8 = 2 }\n"):
    """One 8 × 8 ws array at 1 GHz (cycles are ns), its fp8 rate ``rates``."""
    text = device_toml(name="one", arrays=1, rows=8, cols=8, dataflow="ws", clock_mhz=1000, sram_kib=64, hbm_gib=1,
                       hbm_gbps=1e6, intra_gbps=100)
    return write_file(tmp_path, "one.toml", text.replace('dataflow = "ws"\n', f'dataflow = "ws"\n{rates}'))


def _one_array_cfg(tmp_path, rates: str = "[macs_per_pe]\nfp8 = 2\n"):
    """:func:`_one_array` as a SCALE-Sim ``.cfg`` device file, its rate a ``[macs_per_pe]`` section."""
    return write_file(tmp_path, "one.cfg", scalesim_chip_cfg(size=8) + "\n" + rates)


def _fc(tmp_path, d_in: int, d_out: int):
    return write_file(tmp_path, "fc.csv", FC1.format(f"fc1,1,1,1,1,{d_in},{d_out},1,fc\n"))


@pytest.mark.parametrize("form", [_one_array, _one_array_cfg])
@pytest.mark.parametrize(("dtype", "cycles"), [
    # k = 32 at 2 MACs a PE: 16 steps, ⌈16 / 8⌉ = 2 row folds of 8 + 8 + 8 + (m = 20) − 2 = 42 cycles
    ("fp8", 2 * 42 - 1),
    ("bf16", 4 * 42 - 1),  # the 16-bit rate, 1: 4 row folds
])
def test_one_gemm_at_the_fp8_rate_is_scalesims_packed_gemm(tmp_path, capsys, form, dtype, cycles):
    chip = form(tmp_path)
    rows = cli_json(["gemm", "--m", "20", "--k", "32", "--n", "8", "--config", str(chip), "--dtype", dtype], capsys)
    assert rows["meta"]["dtype"] == dtype and rows["meta"]["element_bytes"] == (1 if dtype == "fp8" else 2)
    assert rows["rows"][0]["cycles"] == cycles
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api = archsim.gemm(m=20, k=32, n=8, config=chip, dtype=dtype)
    assert api.table["cycles"].tolist() == [cycles]


def test_fp8_macs_cost_the_tables_fp8_figure_and_nothing_else_changes(tmp_path, capsys):
    """On a plain array (rate 1) fp8 and int8 move the same 1-byte words in the same cycles: the energies differ by
    the MACs alone, each 1.1 pJ against 0.3."""
    network = _fc(tmp_path, 64, 48)
    flags = ["energy", str(network), "--array", "16x16", "--batch", "8"]
    fp8, int8 = (cli_json([*flags, "--dtype", d], capsys)["rows"] for d in ("fp8", "int8"))
    for low, word in zip(fp8, int8, strict=True):
        assert low["mac_pj"] == pytest.approx(low["macs"] * FP8_MAC_PJ, rel=1e-12)
        assert word["mac_pj"] == pytest.approx(word["macs"] * INT8_MAC_PJ, rel=1e-12)
        assert low["energy_pj"] - word["energy_pj"] == pytest.approx(low["macs"] * (FP8_MAC_PJ - INT8_MAC_PJ),
                                                                     rel=1e-9)
        assert {k: v for k, v in low.items() if not k.endswith("pj")} == {
            k: v for k, v in word.items() if not k.endswith("pj")}
    cost = cli_json(["cost", str(network), "--array", "16x16", "--batch", "8", "--dtype", "fp8", "--energy"], capsys)
    assert cost["rows"][-1]["energy_pj"] == pytest.approx(fp8[-1]["energy_pj"], rel=1e-12)


def test_cost_fp8_times_train_fp8s_fc1_forward_alike(tmp_path, capsys):
    """GPT-2's fc1 forward on one TPU-v4-like chip whose arrays run fp8 at 2: train --fp8 hybrid's op row (1024
    tokens × 768 → 3072) and cost --dtype fp8's chip seconds of that fc are one figure; its one-array cycles are
    SCALE-Sim's (1024, ⌈768 / 2⌉ = 384, 3072) on 128 × 128: 3 · 24 folds of 128 + 128 + 128 + 1024 − 2."""
    write_file(tmp_path, "chip.toml", FP8_TPU)
    cluster = write_file(tmp_path, "c.toml", '[cluster]\nname = "c"\n[[servers]]\ncount = 1\ngpus = 1\n'
                                             'intra_server_gbps = 4800\ndevice = "chip.toml"\n')
    train = cli_json(["train", "gpt2", "--cluster", str(cluster), "--global-batch", "1", "--dtype", "bf16",
                      "--attention", "standard", "--fp8", "hybrid"], capsys)
    (row,) = [r for r in train["rows"] if r["name"] == "fc1" and r["op"] == "F"]
    assert (row["m"], row["k"], row["n"]) == (1024, 768, 3072)
    cost = cli_json(["cost", str(_fc(tmp_path, 768, 3072)), "--batch", "1024", "--config",
                     str(tmp_path / "chip.toml"), "--dtype", "fp8"], capsys)
    assert cost["rows"][0]["F_chip_seconds"] == row["seconds"]
    assert cost["rows"][0]["F_cycles"] == 3 * 24 * (128 + 128 + 128 + 1024 - 2) - 1
    assert cost["rows"][0]["activation_bytes"] == 1024 * 3072  # 1-byte words


def test_the_api_functions_take_fp8_as_the_flags(tmp_path, capsys):
    chip, network = _one_array(tmp_path), _fc(tmp_path, 32, 8)
    flags = [str(network), "--batch", "20", "--config", str(chip), "--dtype", "fp8"]
    printed = cli_json(["cost", *flags], capsys)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cost = archsim.cost(network, batch=20, config=chip, dtype="fp8")
        profile = archsim.profile(network, batch=20, config=chip, dtype="fp8")
        energy = archsim.iteration_energy(network, batch=20, config=chip, dtype="fp8")
        schedule = archsim.schedule(network, policy="gpipe", processors=1, microbatches=1, batch=20, config=chip,
                                    dtype="fp8")
    assert printed["rows"][0]["F_cycles"] == cost.table["F_cycles"].iloc[0] == 2 * 42 - 1  # as the gemm above
    assert list(profile.forward) == [2 * 42 - 1]
    assert energy.to_dict()["meta"]["dtype"] == "fp8" == schedule.to_dict()["meta"]["dtype"]
    assert energy.table["mac_pj"].iloc[0] == pytest.approx(20 * 32 * 8 * FP8_MAC_PJ, rel=1e-12)


def test_fp8_is_refused_where_it_cannot_be_priced(tmp_path, capsys):
    # a device file stating no fp8 rate: train --fp8 refuses it too
    write_file(tmp_path, "plain.toml", TPU)
    network = _fc(tmp_path, 32, 8)
    said = cli_error(["cost", str(network), "--config", str(tmp_path / "plain.toml"), "--dtype", "fp8"], capsys)
    assert said.count("\n") == 0 and "--dtype fp8 needs the device's fp8 rate" in said and "macs_per_pe" in said
    said = cli_error(["gemm", "--m", "8", "--k", "8", "--n", "8", "--config", str(_one_array_cfg(tmp_path, "")),
                      "--dtype", "fp8"], capsys)  # a .cfg device file alike; a plain SCALE-Sim .cfg runs it at 1
    assert said.count("\n") == 0 and "needs the device's fp8 rate" in said and "[macs_per_pe] section" in said
    # an energy table with no fp8 MAC figure (no 4-byte vector add to accumulate in)
    table = (ROOT / "configs" / "energy" / "horowitz45.toml").read_text(encoding="utf-8")
    write_file(tmp_path, "t.toml", table.replace('"4" = 0.9\n', "", 1).replace('"horowitz45"', '"nofp8"', 1))
    flags = ["energy", str(network), "--array", "8x8", "--energy-table", str(tmp_path / "t.toml")]
    said = cli_error([*flags, "--dtype", "fp8"], capsys)
    assert said.count("\n") == 0 and "energy table 'nofp8' has no fp8 MAC figure" in said
    assert cli_json([*flags, "--dtype", "int8"], capsys)["rows"]  # its int8 figures still price
    # what does not price fp8 keeps its choices (plan and bppsa rnn price it since 2026-12-06)
    with pytest.raises(InputError, match="fp8"):
        archsim.array_config(dtype="fp8")
