"""A device file's arrays at each dtype's own MAC rate (``[compute] macs_per_pe``, archsim/array/mac_rates.py).

Before it an array device ran fp8 at its 16-bit rate: a stated fp8 peak of twice that was refused with no way to
state it, and ``train --fp8 hybrid`` was slower than bf16 (quantize kernels, no faster GEMMs). References: SCALE-Sim's
per-fold count by hand (fill R (ws, is) + R + C + T − 2 cycles a fold, the last cycle's index counted: folds ·
per fold − 1), the packed reduction ⌈k / r⌉ the module states, the rate's peak 2 · PEs · clock · r."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from api_parity_helpers import cli_error, cli_json
from test_docs import ROOT

from archsim.array.mac_rates import packed_k
from archsim.cli import main
from archsim.devices.device import Arrays, catalog_device
from archsim.devices.device_file import load_device
from archsim.devices.kernel_constants import one_fraction
from archsim.devices.kernel_ops import array_gemm_seconds
from archsim.devices.unread_keys import config_unread_keys_note
from archsim.errors import InputError
from archsim.training.cluster_file import fp32_on_arrays_note

IDEAL = one_fraction(gemm=1.0, memory=1e30, launch_s=0.0)  # no loss, traffic or launch: the arrays' cycles alone
TPU = (ROOT / "configs" / "devices" / "tpu_v4_like.toml").read_text()
TPU_PEAK = 2 * 8 * 128 * 128 * 1.05e9  # FLOP/s: the file's arrays at one MAC per PE per cycle
SMALL = "configs/transformers/gpt_1024h_24l.json"


def _one_array(dataflow: str, **rates: float):
    """One 8 × 8 array of ``dataflow`` at 1 GHz (seconds × 1e9 are its cycles), GEMMs on it at ``rates``."""
    device = catalog_device("v100-32gb")
    return replace(device, gemm="arrays", arrays=Arrays(1, 8, 8, dataflow, 1e9), lanes=None, split_k=False,
                   macs_per_pe=tuple(rates.items()))


@pytest.mark.parametrize(("dataflow", "mnk", "dtype", "rates", "cycles"), [
    # ws: K along the rows. k = 32 at 2 MACs a PE: 16 steps, ⌈16 / 8⌉ = 2 row folds of 8 + 8 + 8 + (m = 20) − 2 = 42
    ("ws", (20, 32, 8), "fp8", {"fp8": 2}, 2 * 42 - 1),
    ("ws", (20, 32, 8), "fp8", {}, 4 * 42 - 1),  # the key unstated: 4 row folds, as before
    ("ws", (20, 32, 8), "bf16", {"fp8": 2}, 4 * 42 - 1),  # another dtype's rate is not bf16's
    ("ws", (20, 17, 8), "fp8", {"fp8": 2}, 2 * 42 - 1),  # ⌈17 / 2⌉ = 9 steps over 8 rows: 2 row folds
    # os: K streamed. k = 40 at 2: 20 steps, one fold of 0 + 8 + 8 + 20 − 2 = 34; at 1/4 (fp32): 40 · 4 = 160 steps
    ("os", (8, 40, 8), "fp8", {"fp8": 2}, 34 - 1),
    ("os", (8, 40, 8), "fp32", {"fp32": 0.25}, 8 + 8 + 160 - 2 - 1),
    ("os", (8, 40, 8), "fp8", {"fp8": 4}, 8 + 8 + 10 - 2 - 1),
])
def test_a_gemm_at_a_rate_takes_the_hand_counted_cycles(dataflow, mnk, dtype, rates, cycles):
    m, k, n = mnk
    size = 1 if dtype == "fp8" else 2
    got = array_gemm_seconds(m, k, n, 1, _one_array(dataflow, **rates), IDEAL, size, dtype) * 1e9
    assert got == pytest.approx(cycles, rel=1e-12)


@pytest.mark.parametrize(("rates", "cycles"), [({"fp8": 2}, 1 * 42 - 1), ({}, 2 * 42 - 1)])
def test_two_arrays_deal_the_packed_folds(rates, cycles):
    """Two 8 × 8 ws arrays, (20, 32, 8) at fp8: at 2 MACs a PE its 2 row folds (above) are one wave of 42 cycles, one
    run on each array (SCALE-Sim's count: − 1); at 1 its 4 folds are two waves."""
    device = replace(_one_array("ws", **rates), arrays=Arrays(2, 8, 8, "ws", 1e9))
    assert array_gemm_seconds(20, 32, 8, 1, device, IDEAL, 1, "fp8") * 1e9 == pytest.approx(cycles, rel=1e-12)


def test_the_packed_reduction_rounds_up_and_a_fraction_multiplies():
    assert packed_k([1, 2, 3, 17], 2).tolist() == [1, 1, 2, 9]
    assert packed_k([5], 0.5).tolist() == [10]
    assert packed_k([7], 1).tolist() == [7]


def _chip(tmp_path, compute: str = "", peaks: str = "", text: str = TPU):
    path = tmp_path / "chip.toml"
    body = text.replace("clock_mhz = 1050\n", f"clock_mhz = 1050\n{compute}", 1)
    path.write_text(body.replace("[memory]", f"{peaks}[memory]", 1) if peaks else body)
    return path


def test_the_rate_sets_the_dtype_s_peak_and_a_stated_peak_must_agree(tmp_path):
    device = load_device(_chip(tmp_path, "macs_per_pe = { fp8 = 2, bf16 = 1, fp16 = 1 }\n"))
    assert device.peak("fp8") == pytest.approx(2 * TPU_PEAK, rel=1e-12)
    assert device.peak("bf16") == pytest.approx(TPU_PEAK, rel=1e-12)
    assert dict(device.macs_per_pe) == {"fp8": 2.0, "bf16": 1.0, "fp16": 1.0}
    agreed = load_device(_chip(tmp_path, "macs_per_pe = { fp8 = 2 }\n", "[compute.peak_tflops]\nfp8 = 550.5\n\n"))
    assert agreed.peak("fp8") == pytest.approx(550.5e12)
    with pytest.raises(InputError) as error:  # 493 is neither 275.25 nor 2 × it
        load_device(_chip(tmp_path, "macs_per_pe = { fp8 = 2 }\n", "[compute.peak_tflops]\nfp8 = 493\n\n"))
    said = str(error.value)
    assert "field 'compute.peak_tflops.fp8'" in said and "× 2 MACs per PE per cycle (macs_per_pe.fp8) = 550.5" in said
    assert "\n" not in said


def test_a_peak_at_twice_the_rate_without_the_key_is_told_the_key(tmp_path):
    with pytest.raises(InputError, match=r"or state \[compute\] macs_per_pe = \{ fp8 = 2 \}"):
        load_device(_chip(tmp_path, peaks="[compute.peak_tflops]\nfp8 = 550.5\n\n"))
    with pytest.raises(InputError) as error:  # 493 is no whole multiple: no key to suggest
        load_device(_chip(tmp_path, peaks="[compute.peak_tflops]\nfp8 = 493\n\n"))
    assert "macs_per_pe" not in str(error.value)


@pytest.mark.parametrize(("compute", "field", "says"), [
    ("macs_per_pe = { fp8 = 1.5 }\n", "compute.macs_per_pe.fp8", "a whole number 1 … 64 or a unit fraction"),
    ("macs_per_pe = { fp8 = 0 }\n", "compute.macs_per_pe.fp8", "a whole number 1 … 64"),
    ("macs_per_pe = { fp8 = 128 }\n", "compute.macs_per_pe.fp8", "a whole number 1 … 64"),
    ("macs_per_pe = { fp8 = 0.3 }\n", "compute.macs_per_pe.fp8", "a unit fraction"),
    ('macs_per_pe = { fp8 = "2" }\n', "compute.macs_per_pe.fp8", "a whole number"),
    ("macs_per_pe = { int4 = 2 }\n", "compute.macs_per_pe", "unknown dtype 'int4'; expected fp32, fp16, bf16, fp8"),
    ("macs_per_pe = 2\n", "compute.macs_per_pe", "expected a table of dtype = MACs per PE per cycle"),
    ("lanes = 64\nmacs_per_pe = { fp32 = 0.25 }\n", "compute.macs_per_pe.fp32", "fp32 GEMMs run on the lanes"),
])
def test_a_bad_rate_is_refused_in_one_line_naming_its_key(tmp_path, compute, field, says):
    with pytest.raises(InputError) as error:
        load_device(_chip(tmp_path, compute))
    said = str(error.value)
    assert f"field '{field}'" in said and says in said and "\n" not in said


def test_a_tile_timed_device_refuses_the_rate(tmp_path):
    text = TPU.replace('gemm = "arrays"', 'gemm = "tiles"')
    with pytest.raises(InputError, match=r"macs_per_pe is a rate of gemm = \"arrays\""):
        load_device(_chip(tmp_path, "macs_per_pe = { fp8 = 2 }\n", "[compute.peak_tflops]\nbf16 = 275\n\n", text))


def test_the_array_commands_say_they_price_one_mac_per_pe(tmp_path, capsys):
    assert config_unread_keys_note(_chip(tmp_path, "macs_per_pe = { fp8 = 1, bf16 = 1 }\n")) is None
    note = config_unread_keys_note(_chip(tmp_path, "macs_per_pe = { fp8 = 2 }\n"))
    assert note is not None and "[compute] macs_per_pe is not read here" in note
    argv = ["cost", "layerpipe_sample", "--config", str(tmp_path / "chip.toml"), "--dtype", "bf16", "--format", "json"]
    _chip(tmp_path, "macs_per_pe = { bf16 = 2 }\n")
    capsys.readouterr()
    assert main(argv) == 0
    rated, said = capsys.readouterr()
    _chip(tmp_path)
    assert main(argv) == 0
    plain, _ = capsys.readouterr()
    assert "[compute] macs_per_pe is not read here" in said
    assert json.loads(rated)["rows"] == json.loads(plain)["rows"]  # cycles and chip seconds alike: one MAC a PE


def _cluster(tmp_path):
    (tmp_path / "cluster.toml").write_text('[cluster]\nname = "one"\n\n[[servers]]\ncount = 1\ngpus = 1\n'
                                           'intra_server_gbps = 2400\ndevice = "chip.toml"\n')
    return ["train", SMALL, "--cluster", str(tmp_path / "cluster.toml"), "--global-batch", "2", "--dtype", "bf16"]


def test_fp8_at_twice_the_rate_trains_faster_than_bf16_and_rates_of_one_change_nothing(tmp_path, capsys,
                                                                                      monkeypatch):
    monkeypatch.chdir(ROOT)
    argv = _cluster(tmp_path)
    _chip(tmp_path)
    plain = cli_json(argv, capsys)["meta"]
    _chip(tmp_path, "macs_per_pe = { bf16 = 1, fp16 = 1, fp32 = 1 }\n")
    assert cli_json(argv, capsys)["meta"] == plain  # a rate of 1 is the key unstated: every figure the same
    _chip(tmp_path, "macs_per_pe = { fp8 = 2 }\n")
    fp8 = cli_json([*argv, "--fp8", "hybrid"], capsys)["meta"]
    # GEMMs dominate this 24-layer model: half their cycles outweigh the casts (at rate 1 fp8 is slower:
    # test_fp8_train.py)
    assert fp8["iteration_seconds"] < plain["iteration_seconds"]
    assert fp8["mfu_at_fp8_peak"] == pytest.approx(fp8["mfu"] * TPU_PEAK / (2 * TPU_PEAK), rel=1e-9)


def test_fp8_without_its_rate_or_peak_is_still_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    argv = _cluster(tmp_path)
    _chip(tmp_path, "macs_per_pe = { bf16 = 1 }\n")
    said = cli_error([*argv, "--fp8", "hybrid"], capsys)
    assert "needs a device with an fp8 peak" in said and "on arrays [compute] macs_per_pe = { fp8 = N }" in said


def test_a_stated_fp32_rate_silences_the_fp16_rate_note(tmp_path):
    plain = load_device(_chip(tmp_path))
    assert "at their fp16 rate" in (fp32_on_arrays_note(plain) or "")
    assert fp32_on_arrays_note(load_device(_chip(tmp_path, "macs_per_pe = { fp32 = 0.25 }\n"))) is None
