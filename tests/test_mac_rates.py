"""A device file's arrays at each dtype's own MAC rate (``[compute] macs_per_pe``, archsim/array/mac_rates.py).

Before it an array device ran fp8 at its 16-bit rate: a stated fp8 peak of twice that was refused with no way to
state it, and ``train --fp8 hybrid`` was slower than bf16 (quantize kernels, no faster GEMMs). References: SCALE-Sim's
per-fold count by hand (fill R (ws, is) + R + C + T − 2 cycles a fold, the last cycle's index counted: folds ·
per fold − 1), the packed reduction ⌈k / r⌉ the module states, the rate's peak 2 · PEs · clock · r."""

from __future__ import annotations

from dataclasses import replace

import pytest
from api_parity_helpers import cli_error, cli_json
from test_docs import ROOT

from archsim.array.mac_rates import packed_k
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
    ("macs_per_pe = { int4 = 2 }\n", "compute.macs_per_pe", "unknown dtype 'int4'; expected int8, fp32, fp16, bf16, fp8"),
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


ONE = """[device]
name = "one"
gemm = "arrays"

[compute]
arrays = 1
rows = 8
cols = 8
dataflow = "ws"
clock_mhz = 1000
{rates}
[memory]
sram_kib_per_array = 64
hbm_gib = 1
hbm_gbps = 1000

[links]
intra_gbps = 100
"""


def _one_array_file(tmp_path, rates: str = "") -> str:
    """A device file of one 8 × 8 ws array at 1 GHz (seconds × 1e9 are its cycles), ``rates`` its macs_per_pe line."""
    path = tmp_path / "one.toml"
    path.write_text(ONE.format(rates=rates))
    return str(path)


def _ws_hand_cycles(m: int, k: int, n: int, rate: int) -> int:
    """SCALE-Sim's ws count on 8 × 8 of (m, ⌈k / rate⌉, n), by hand: ⌈k' / 8⌉ · ⌈n / 8⌉ folds of 8 + 8 + 8 + m − 2."""
    packed = -(-k // rate)
    return -(-packed // 8) * -(-n // 8) * (8 + 8 + 8 + m - 2) - 1


@pytest.mark.parametrize("engine", ["analytic", "cycle"])
@pytest.mark.parametrize(("rates", "rate"), [("macs_per_pe = { fp16 = 2 }\n", 2), ("", 1), ("macs_per_pe = { fp8 = 2 }\n", 1)])
def test_gemm_on_a_file_runs_the_dtype_s_rate_as_train_times_it(tmp_path, capsys, engine, rates, rate):
    """Since 2026-12-05 the array commands read the rate: (20, 32, 8) at fp16 = 2 is 2 row folds of 42 (− 1), as
    train's op timing gives the same GEMM on the same file; another dtype's rate is not fp16's."""
    config = _one_array_file(tmp_path, rates)
    got = cli_json(["gemm", "--m", "20", "--k", "32", "--n", "8", "--config", config, "--dtype", "fp16",
                    "--engine", engine, "--format", "json"], capsys)["rows"][0]
    hand = _ws_hand_cycles(20, 32, 8, rate)
    assert got["cycles"] == hand
    if engine == "cycle":
        assert got["total_cycles"] == hand and got["stall_cycles"] == 0  # 500 words a cycle: no stall
    train = array_gemm_seconds(20, 32, 8, 1, load_device(config), IDEAL, 2, "fp16") * 1e9
    assert train == pytest.approx(hand, rel=1e-12)
    assert got["ifmap_sram_reads"] == 20 * 32  # the real GEMM's words: (m · k) read once (one column fold)
    assert "macs_per_pe" not in capsys.readouterr().err  # no note that the rate goes unread


@pytest.mark.parametrize(("dtype", "rate"), [("int8", 4), ("fp16", 1)])
@pytest.mark.parametrize("suffix", [".toml", ".cfg"])
def test_an_int8_rate_runs_where_int8_runs(tmp_path, capsys, dtype, rate, suffix):
    """int8 is a --dtype of the array commands, so macs_per_pe takes it (until 2026-12-06 refused as an unknown
    dtype): (20, 32, 8) at int8 = 4 packs k to 8, one fold of 8 + 8 + 8 + 20 − 2 = 42 cycles (− 1); fp16 on the same
    file keeps one MAC, 4 row folds. A .cfg states it as its [macs_per_pe] section, the same count."""
    if suffix == ".toml":
        config = _one_array_file(tmp_path, "macs_per_pe = { int8 = 4 }\n")
    else:
        config = str(tmp_path / "one.cfg")
        (tmp_path / "one.cfg").write_text(
            "[general]\nrun_name = one\n[architecture_presets]\nArrayHeight: 8\nArrayWidth: 8\nIfmapSramSzkB: 64\n"
            "FilterSramSzkB: 64\nOfmapSramSzkB: 64\nIfmapOffset: 0\nFilterOffset: 10000000\nOfmapOffset: 20000000\n"
            "Dataflow : ws\n[archsim]\nClockGHz = 1.0\n[device]\nname = one\narrays = 1\n[memory]\nhbm_gib = 1\n"
            "hbm_gbps = 1000\n[links]\nintra_gbps = 100\n[macs_per_pe]\nint8 = 4\n")
    assert dict(load_device(config).macs_per_pe) == {"int8": 4.0}
    got = cli_json(["gemm", "--m", "20", "--k", "32", "--n", "8", "--config", config, "--dtype", dtype,
                    "--format", "json"], capsys)["rows"][0]
    assert got["cycles"] == _ws_hand_cycles(20, 32, 8, rate) == (41 if rate == 4 else 4 * 42 - 1)
    assert got["ifmap_sram_reads"] == 20 * 32  # the real GEMM's words, at any rate


def test_readers_that_still_price_one_mac_say_so(tmp_path):
    """config_unread_keys_note (an array sweep's, bppsa rnn's reading) still says the rate goes unread there."""
    assert config_unread_keys_note(_one_array_file(tmp_path, "macs_per_pe = { fp16 = 1 }\n")) is None
    note = config_unread_keys_note(_one_array_file(tmp_path, "macs_per_pe = { fp16 = 2 }\n"))
    assert note is not None and "[compute] macs_per_pe is not read here" in note


def test_cost_and_energy_time_the_packed_gemms_and_count_the_same_macs(tmp_path, capsys):
    """cost's F cycles on a rate-2 file: each lowered GEMM's hand count at ⌈k / 2⌉ plus the vector unit's
    ⌈elements / cols⌉; energy's MACs are the real GEMMs' (the same at every rate), its cycles cost's."""
    hand = _sample_hand_cycles(2)
    rated, plain = _one_array_file(tmp_path, "macs_per_pe = { fp16 = 2 }\n"), str(tmp_path / "plain.toml")
    (tmp_path / "plain.toml").write_text(ONE.format(rates=""))
    cost = cli_json(["cost", "layerpipe_sample", "--config", rated, "--dtype", "fp16", "--format", "json"], capsys)
    total = next(row for row in cost["rows"] if row["layer"] == "TOTAL")
    assert {kind: total[f"{kind}_cycles"] for kind in ("F", "G", "D")} == hand
    energy = {}
    for name, config in (("rated", rated), ("plain", plain)):
        rows = cli_json(["energy", "layerpipe_sample", "--config", config, "--dtype", "fp16", "--format", "json"],
                        capsys)["rows"]
        energy[name] = {row["op"]: row for row in rows}
    for kind in ("F", "G", "D"):
        assert energy["rated"][kind]["macs"] == energy["plain"][kind]["macs"]
        assert energy["rated"][kind]["cycles"] == hand[kind] < energy["plain"][kind]["cycles"]


def _sample_hand_cycles(rate: int) -> dict[str, int]:
    """layerpipe_sample's F, G and δ cycles on the 8 × 8 ws array at fp16 (batch 32) by hand at ``rate``: each lowered
    GEMM's count at ⌈k / rate⌉ plus the vector unit's ⌈elements / 8⌉."""
    from archsim.lowering import lower_network
    from archsim.workload.shipped import load_network

    ops = [op for layer in lower_network(load_network("layerpipe_sample"), 32, "exact", 2) for op in layer.ops]
    return {kind: sum(g.count * _ws_hand_cycles(g.m, g.k, g.n, rate) for op in ops if op.kind == kind for g in op.gemms)
            + sum(-(-op.vector_elements // 8) for op in ops if op.kind == kind) for kind in ("F", "G", "D")}


def test_schedule_and_pipeline_run_the_packed_costs(tmp_path, capsys):
    """schedule's gpipe on one microbatch runs every op once in turn: its makespan is the hand count at rate 2; pipeline
    splits δ at the rate (its split search bisects the packed cycles) and one processor's cycles are the same sum."""
    from archsim.array.config import ArrayConfig
    from archsim.lowering import lower_network
    from archsim.partition.coster import DeltaCoster
    from archsim.workload.shipped import load_network

    config = _one_array_file(tmp_path, "macs_per_pe = { fp16 = 2 }\n")
    total = sum(_sample_hand_cycles(2).values())
    run = ["layerpipe_sample", "--config", config, "--dtype", "fp16", "--format", "json"]
    done = cli_json(["schedule", *run, "--policy", "gpipe", "--processors", "2"], capsys)
    assert done["rows"][0]["makespan"] == total
    one = cli_json(["pipeline", *run, "--processors", "1"], capsys)
    assert one["meta"]["single_processor_seconds"] == pytest.approx(total / 1e9, rel=1e-12)
    lowered = lower_network(load_network("layerpipe_sample"), 32, "exact", 2)
    coster = DeltaCoster(lowered, ArrayConfig(rows=8, cols=8, element_bytes=2, mac_rate=2))
    for axis in ("channels", "reduction", "rows"):
        units = coster.split_units(1, axis)
        for part in (1, units // 2, units - 1):
            assert coster.split_cycles(1, axis, part) == coster.split_cost(1, axis, part)[1:]


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
