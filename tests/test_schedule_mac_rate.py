"""``archsim schedule`` (and :func:`archsim.schedule`) on a SCALE-Sim ``.cfg`` with a ``[macs_per_pe]`` section costs
each GEMM at ``--dtype``'s rate, by the rule cost and train read it (:func:`archsim.array.mac_rates.packed_k`): a
rate-2 array runs SCALE-Sim's (m, ⌈k / 2⌉, n). Until 2026-12-05 schedule priced one MAC per PE per cycle and said in
a note that it did not read the rate.

Reference: a hand count of SCALE-Sim's os cycles on the .cfg's 8 × 8 array (a fold streams the reduction:
⌈k / r⌉ + 8 + 8 − 2 cycles, − 1 a GEMM) for a two-layer fc network on one device (mp: its ops one after another)."""

from __future__ import annotations

import warnings

import pytest
from api_parity_helpers import cli_json
from test_cfg_mac_rates import CFG

import archsim

NETWORK = """Layer name,IFMAP Height,IFMAP Width,Filter Height,Filter Width,Channels,Num Filter,Strides,Type
fc1,1,1,1,1,40,8,1,fc
fc2,1,1,1,1,8,24,1,fc
"""


def _os(m: int, k: int, n: int, rate: int) -> int:
    """SCALE-Sim's os cycles of (m, ⌈k / rate⌉, n) on 8 × 8, by hand."""
    return -(-m // 8) * -(-n // 8) * (-(-k // rate) + 8 + 8 - 2) - 1


def _hand_makespan(rate: int, batch: int = 16) -> int:
    """fc1 (40 → 8) and fc2 (8 → 24) at batch 16, exact mode: fc1 takes the network input, so no δ.
    F = (N, in, out), G = (in, N, out), D = (N, out, in); on one device the makespan is their sum."""
    b = batch
    return (_os(b, 40, 8, rate) + _os(40, b, 8, rate)  # fc1: F, G
            + _os(b, 8, 24, rate) + _os(8, b, 24, rate) + _os(b, 24, 8, rate))  # fc2: F, G, D


def _files(tmp_path, rates: str) -> tuple[str, str]:
    (tmp_path / "net.csv").write_text(NETWORK)
    (tmp_path / "chip.cfg").write_text(CFG.format(rates=rates, device=""))
    return str(tmp_path / "net.csv"), str(tmp_path / "chip.cfg")


def _schedule(tmp_path, capsys, rates: str, *flags: str) -> tuple[dict, str]:
    network, config = _files(tmp_path, rates)
    capsys.readouterr()
    got = cli_json(["schedule", network, "--policy", "mp", "--processors", "1", "--batch", "16", "--config", config,
                    *flags], capsys)
    return got, config


def test_hand_counts_hold_at_both_rates():
    """The reference itself: 107 + 149 + 131 + 89 + 75 cycles at rate 1, 67 + 109 + 107 + 65 + 51 at rate 2."""
    assert (_hand_makespan(1), _hand_makespan(2)) == (551, 399)


@pytest.mark.parametrize(("dtype", "rate"), [("bf16", 2), ("fp16", 1)])
def test_schedule_costs_at_the_dtype_s_rate(tmp_path, capsys, dtype, rate):
    """bf16 = 2: the K walk halved; fp16, which the section leaves out, at 1. Seconds at the file's 1 GHz."""
    got, _ = _schedule(tmp_path, capsys, "[macs_per_pe]\nbf16 = 2\n", "--dtype", dtype)
    assert got["rows"][0]["makespan"] == _hand_makespan(rate)
    assert got["meta"]["makespan_seconds"] == pytest.approx(_hand_makespan(rate) * 1e-9, rel=1e-12)


def test_schedule_no_longer_says_the_rate_goes_unread(tmp_path, capsys):
    """The note that schedule priced one MAC per PE per cycle is gone: the command's stderr and the API's warnings."""
    from archsim import cli

    network, config = _files(tmp_path, "[macs_per_pe]\nbf16 = 2\n")
    capsys.readouterr()
    assert cli.main(["schedule", network, "--policy", "mp", "--processors", "1", "--config", config, "--dtype",
                     "bf16"]) == 0
    assert "not read here" not in capsys.readouterr().err
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = archsim.schedule(network, policy="mp", processors=1, batch=16, config=config, dtype="bf16")
    assert result.row["makespan"] == _hand_makespan(2)
    assert not [w for w in caught if "not read here" in str(w.message)]


def test_a_cfg_without_the_section_costs_as_before(tmp_path, capsys):
    """No section: every dtype at one MAC per PE per cycle (the rate-1 hand count), and the whole document equals
    that of the file stating bf16 = 1, the rate the section's absence means."""
    plain, _ = _schedule(tmp_path, capsys, "", "--dtype", "bf16")
    assert plain["rows"][0]["makespan"] == _hand_makespan(1)
    stated, _ = _schedule(tmp_path, capsys, "[macs_per_pe]\nbf16 = 1\n", "--dtype", "bf16")
    assert stated == plain


def test_the_makespan_s_unit_is_said_where_its_name_says_none(tmp_path, capsys):
    """The column keeps its documented name (tests/test_output_columns.py forbids makespan_cycles); --help says its
    unit, and the meta's unit says cycles on an array."""
    from archsim import cli

    with pytest.raises(SystemExit):
        cli.main(["schedule", "--help"])
    assert "makespan is in the array's clock cycles" in " ".join(capsys.readouterr().out.split())
    got, _ = _schedule(tmp_path, capsys, "", "--dtype", "bf16")
    assert "makespan" in got["rows"][0] and got["meta"]["unit"] == "cycles"
