"""``archsim plan`` (and :func:`archsim.plan`) on a SCALE-Sim ``.cfg`` with a ``[macs_per_pe]`` section prices each
layer's GEMMs at ``--dtype``'s rate, by the rule ``cost`` reads it (:func:`archsim.array.mac_rates.packed_k`): a
rate-2 array runs SCALE-Sim's (m, ⌈k / 2⌉, n). Until 2026-12-06 plan priced one MAC per PE per cycle at every dtype
and said in a note that it did not read the rate.

References: a hand count of SCALE-Sim's os cycles on the .cfg's 8 × 8 array (tests/test_schedule_mac_rate.py's), and
``archsim cost``'s per-layer F, G and D cycles of the same layers on the same file, computed by the cost path. One
GPU, one stage: the stage's micro-batch forward is the layers' F, its backward their G + D, at the file's 1 GHz."""

from __future__ import annotations

import warnings

import pytest
from api_parity_helpers import cli_json
from test_cfg_mac_rates import CFG
from test_schedule_mac_rate import NETWORK, _os

import archsim
from archsim import cli

CLUSTER = """[cluster]
name = "one"

[[servers]]
count = 1
gpus = 1
intra_server_gbps = 100
"""


def _hand(rate: int, batch: int = 16) -> tuple[int, int]:
    """(forward, backward) cycles of fc1 (40 → 8, the network input: no δ) and fc2 (8 → 24) at ``batch``:
    F = (N, in, out), G = (in, N, out), D = (N, out, in)."""
    b = batch
    forward = _os(b, 40, 8, rate) + _os(b, 8, 24, rate)
    backward = _os(40, b, 8, rate) + _os(8, b, 24, rate) + _os(b, 24, 8, rate)
    return forward, backward


def _files(tmp_path, rates: str) -> tuple[str, str, str]:
    (tmp_path / "net.csv").write_text(NETWORK)
    (tmp_path / "chip.cfg").write_text(CFG.format(rates=rates, device=""))
    (tmp_path / "one.toml").write_text(CLUSTER)
    return str(tmp_path / "net.csv"), str(tmp_path / "chip.cfg"), str(tmp_path / "one.toml")


def _plan(tmp_path, capsys, rates: str, *flags: str) -> tuple[float, float]:
    """The one stage's (forward, backward) seconds of a micro-batch of 16."""
    network, config, cluster = _files(tmp_path, rates)
    got = cli_json(["plan", network, "--cluster", cluster, "--microbatches", "2", "--micro-batch", "16",
                    "--config", config, *flags], capsys)
    (row,) = got["rows"]
    return row["microbatch_forward_seconds"], row["microbatch_backward_seconds"]


def test_hand_counts_hold_at_both_rates():
    """The reference itself: F 107 + 131, G + D 149 + 89 + 75 at rate 1; 67 + 107 and 109 + 65 + 51 at rate 2."""
    assert (_hand(1), _hand(2)) == ((238, 313), (174, 225))


@pytest.mark.parametrize(("dtype", "rate"), [("fp16", 2), ("bf16", 1)])
def test_plan_prices_at_the_dtype_s_rate(tmp_path, capsys, dtype, rate):
    """fp16 = 2: the K walk halved; bf16, which the section leaves out, at 1. Seconds at the file's 1 GHz."""
    forward, backward = _plan(tmp_path, capsys, "[macs_per_pe]\nfp16 = 2\n", "--dtype", dtype)
    hand_f, hand_b = _hand(rate)
    assert forward == pytest.approx(hand_f * 1e-9, rel=1e-12)
    assert backward == pytest.approx(hand_b * 1e-9, rel=1e-12)


def test_plan_s_stage_is_what_cost_reports_at_the_rate(tmp_path, capsys):
    """The stage's forward and backward are cost's F and G + D cycles of the same layers, file and dtype, summed."""
    forward, backward = _plan(tmp_path, capsys, "[macs_per_pe]\nfp16 = 2\n", "--dtype", "fp16")
    network, config, _ = _files(tmp_path, "[macs_per_pe]\nfp16 = 2\n")
    rows = [row for row in cli_json(["cost", network, "--config", config, "--dtype", "fp16", "--batch", "16"],
                                    capsys)["rows"] if row["layer"] in ("fc1", "fc2")]  # not the total row
    assert len(rows) == 2
    assert forward == pytest.approx(sum(r["F_cycles"] for r in rows) * 1e-9, rel=1e-12)
    assert backward == pytest.approx(sum(r["G_cycles"] + r["D_cycles"] for r in rows) * 1e-9, rel=1e-12)


def test_the_api_prices_at_the_rate_and_says_no_unread_note(tmp_path, capsys):
    """archsim.plan at the rate too; neither it nor the command says the rate goes unread."""
    network, config, cluster = _files(tmp_path, "[macs_per_pe]\nfp16 = 2\n")
    capsys.readouterr()
    assert cli.main(["plan", network, "--cluster", cluster, "--microbatches", "2", "--micro-batch", "16",
                     "--config", config, "--dtype", "fp16"]) == 0
    assert "not read here" not in capsys.readouterr().err
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = archsim.plan(network, cluster=cluster, microbatches=2, config=config, dtype="fp16", micro_batch=16)
    (row,) = result.to_dict()["rows"]
    assert row["microbatch_forward_seconds"] == pytest.approx(_hand(2)[0] * 1e-9, rel=1e-12)
    assert not [w for w in caught if "not read here" in str(w.message)]


def test_a_cfg_without_the_section_and_no_dtype_price_as_before(tmp_path, capsys):
    """No section: the rate-1 hand count, the same as a file stating fp16 = 1; no --dtype (SCALE-Sim's int8 word,
    which no rate names) prices one MAC per PE per cycle whatever the section says."""
    plain = _plan(tmp_path, capsys, "", "--dtype", "fp16")
    assert plain == pytest.approx(tuple(c * 1e-9 for c in _hand(1)), rel=1e-12)
    assert _plan(tmp_path, capsys, "[macs_per_pe]\nfp16 = 1\n", "--dtype", "fp16") == plain
    assert _plan(tmp_path, capsys, "[macs_per_pe]\nfp16 = 2\n") == pytest.approx(plain, rel=1e-12)


@pytest.mark.parametrize("rate", [1, 2])
def test_on_the_servers_device_file_plan_prices_as_cost_s_chip_columns(tmp_path, capsys, rate):
    """A cluster whose servers name the .cfg (no array flag): the layers at train's op timing on its 4 arrays, at the
    file's fp16 rate (plan's default dtype there), as cost's F/G/D_chip_seconds of the same layers, file and dtype."""
    network, config, _ = _files(tmp_path, f"[macs_per_pe]\nfp16 = {rate}\n")
    cluster = tmp_path / "dev.toml"
    cluster.write_text('[cluster]\nname = "c"\n\n[[servers]]\ncount = 1\ngpus = 1\ndevice = "chip.cfg"\n')
    got = cli_json(["plan", network, "--cluster", str(cluster), "--microbatches", "2", "--micro-batch", "16"], capsys)
    (row,) = got["rows"]
    rows = [row for row in cli_json(["cost", network, "--config", config, "--dtype", "fp16", "--batch", "16"],
                                    capsys)["rows"] if row["layer"] in ("fc1", "fc2")]
    assert row["microbatch_forward_seconds"] == pytest.approx(sum(r["F_chip_seconds"] for r in rows), rel=1e-12)
    assert row["microbatch_backward_seconds"] == pytest.approx(
        sum(r["G_chip_seconds"] + r["D_chip_seconds"] for r in rows), rel=1e-12)


def test_plan_dtype_fp8_prices_at_the_fp8_rate_in_one_byte_words(tmp_path, capsys):
    """--dtype fp8 (since 2026-12-06), as cost's: the file's fp8 = 2 halves the K walk (the rate-2 hand count, cost's
    F and G + D cycles), the tensors in 1-byte words; the API alike."""
    network, config, cluster = _files(tmp_path, "[macs_per_pe]\nfp8 = 2\n")
    flags = ["plan", network, "--cluster", cluster, "--microbatches", "2", "--micro-batch", "16", "--config", config,
             "--dtype", "fp8"]
    got = cli_json(flags, capsys)
    (row,) = got["rows"]
    assert (got["meta"]["dtype"], got["meta"]["element_bytes"]) == ("fp8", 1)
    assert row["microbatch_forward_seconds"] == pytest.approx(_hand(2)[0] * 1e-9, rel=1e-12)
    assert row["microbatch_backward_seconds"] == pytest.approx(_hand(2)[1] * 1e-9, rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = archsim.plan(network, cluster=cluster, microbatches=2, config=config, dtype="fp8", micro_batch=16)
    assert result.to_dict() == got


def test_plan_dtype_fp8_is_refused_where_it_cannot_be_priced(tmp_path, capsys):
    """A device .cfg stating no fp8 rate: cost's one line; on the servers' device (train's dtypes, fp8 being train's
    --fp8 recipe): one line pointing at an array."""
    from api_parity_helpers import cli_error

    network, config, cluster = _files(tmp_path, "")
    said = cli_error(["plan", network, "--cluster", cluster, "--microbatches", "2", "--config", config, "--dtype",
                      "fp8"], capsys)
    assert said.count("\n") == 0 and "--dtype fp8 needs the device's fp8 rate" in said
    devices = tmp_path / "dev.toml"
    devices.write_text('[cluster]\nname = "c"\n\n[[servers]]\ncount = 1\ngpus = 1\ndevice = "chip.cfg"\n')
    said = cli_error(["plan", network, "--cluster", str(devices), "--microbatches", "2", "--dtype", "fp8"], capsys)
    assert said.count("\n") == 0 and "fp8 is train's --fp8" in said and "--array/--config" in said


def test_array_config_carries_the_cfg_s_rate_of_its_dtype(tmp_path, capsys):
    """archsim.array_config(config=f, dtype=d) (since 2026-12-06) times GEMMs at f's rate of d, so cost(array=…) is
    cost(config=f, dtype=d); bf16, unstated, and no dtype (int8) at 1; re-made at another width: refused in one line
    (the rate is fp16's), and no note that the rate goes unread."""
    from archsim.errors import InputError

    network, config, _ = _files(tmp_path, "[macs_per_pe]\nfp16 = 2\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        array = archsim.array_config(config=config, dtype="fp16")
    assert not [w for w in caught if "not read here" in str(w.message)]
    assert array.mac_rate == 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert archsim.array_config(config=config, dtype="bf16").mac_rate == 1
        assert archsim.array_config(config=config).mac_rate == 1
        given = archsim.cost(network, array=array, batch=16).table
        named = archsim.cost(network, config=config, dtype="fp16", batch=16).table
        assert given["F_cycles"].tolist()[:2] == [_os(16, 40, 8, 2), _os(16, 8, 24, 2)]  # 67, 107: the hand count
        assert given["F_cycles"].tolist() == named["F_cycles"].tolist()
        with pytest.raises(InputError, match="rate of fp16 .*, not of fp32") as refused:
            archsim.cost(network, array=array, dtype="fp32", batch=16)
    assert "\n" not in str(refused.value)


def test_gemm_cost_refuses_a_rated_array_config(tmp_path):
    """gemm_cost is SCALE-Sim's one-MAC GEMM: an ArrayConfig carrying a file's rate (array_config's, since
    2026-12-06) is refused in one line pointing at archsim.gemm, not priced at one MAC silently; rate 1 as before."""
    from archsim.array.analytic import gemm_cost
    from archsim.errors import InputError

    _, config, _ = _files(tmp_path, "[macs_per_pe]\nfp16 = 2\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rated = archsim.array_config(config=config, dtype="fp16")
        plain = archsim.array_config(config=config, dtype="bf16")
    with pytest.raises(InputError, match="archsim.gemm") as refused:
        gemm_cost(16, 40, 8, rated)
    assert "\n" not in str(refused.value)
    assert int(gemm_cost(16, 40, 8, plain).cycles) == _os(16, 40, 8, 1)  # 107
