"""An array sweep's ``dtypes`` rows and ``archsim bppsa rnn`` on a SCALE-Sim ``.cfg`` with a ``[macs_per_pe]`` section
run at the dtype's rate, by the rule cost and train read it (a rate-2 array runs SCALE-Sim's (m, ⌈k / 2⌉, n)); rows
that name no dtype (an ``element_bytes`` or plain sweep, ``bppsa rnn`` without ``--dtype``) stay at one MAC per PE
per cycle, the sweep saying so in one line. Until 2026-12-05 both priced one MAC per PE per cycle at every dtype,
with no note in bppsa.

References: hand counts of SCALE-Sim's os cycles on the .cfg's 8 × 8 array (test_schedule_mac_rate's)."""

from __future__ import annotations

import csv
import json

import pandas as pd
from test_cfg_mac_rates import CFG
from test_schedule_mac_rate import NETWORK, _hand_makespan, _os

from archsim.cli import main

SPEC = """[sweep]
name = "rated"
networks = ["net.csv"]
arrays = ["chip.cfg"]
batches = [16]
processors = [1]
methods = ["layerpipe"]
{extra}
"""


def _folder(tmp_path, rates: str, extra: str) -> str:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "net.csv").write_text(NETWORK)
    (tmp_path / "chip.cfg").write_text(CFG.format(rates=rates, device=""))
    (tmp_path / "spec.toml").write_text(SPEC.format(extra=extra))
    return str(tmp_path / "spec.toml")


def _sweep(tmp_path, capsys, rates: str, extra: str) -> tuple[list[dict[str, str]], str]:
    spec = _folder(tmp_path, rates, extra)
    capsys.readouterr()
    assert main(["sweep", spec, "--out", str(tmp_path / "out"), "--quiet"]) == 0
    err = capsys.readouterr().err
    return list(csv.DictReader((tmp_path / "out" / "results.csv").open())), err


def test_a_dtypes_sweep_runs_each_row_at_its_dtype_s_rate(tmp_path, capsys):
    """One processor: iteration_cycles is the network's F, G, D summed. int8 (no rate names it) at 1, bf16 at the
    file's 2; seconds at its 1 GHz; no note that the rate goes unread."""
    rows, err = _sweep(tmp_path, capsys, "[macs_per_pe]\nbf16 = 2\n", 'dtypes = ["int8", "bf16"]')
    cycles = {row["dtype"]: float(row["iteration_cycles"]) for row in rows}
    assert cycles == {"int8": _hand_makespan(1), "bf16": _hand_makespan(2)}
    seconds = {row["dtype"]: float(row["iteration_seconds"]) for row in rows}
    assert seconds["bf16"] == _hand_makespan(2) * 1e-9
    assert "not read here" not in err


def test_a_rate_changes_cycles_not_dynamic_energy(tmp_path, capsys):
    """The bf16 row of the rate-2 file against the same file without the section: its MAC, register, SRAM and DRAM
    energy the real GEMMs' (equal), its cycles the packed ones."""
    rated, _ = _sweep(tmp_path / "rated", capsys, "[macs_per_pe]\nbf16 = 2\n", 'dtypes = ["bf16"]')
    plain, _ = _sweep(tmp_path / "plain", capsys, "", 'dtypes = ["bf16"]')
    for column in ("mac_pj", "register_pj", "sram_pj", "dram_pj"):
        assert rated[0][column] == plain[0][column]
    assert float(rated[0]["iteration_cycles"]) < float(plain[0]["iteration_cycles"])


def test_the_report_recosts_a_dtypes_row_at_its_rate(tmp_path, capsys):
    """The report's per-layer figure re-costs a row on the array spec.json recorded: the bf16 row at rate 2 (its
    command, ``cost --config chip.cfg --dtype bf16``, reads the same rate), the int8 row at 1."""
    from archsim.array.costing import cost_network
    from archsim.sweep.report import sweep_array
    from archsim.workload import load_network

    rows, _ = _sweep(tmp_path, capsys, "[macs_per_pe]\nbf16 = 2\n", 'dtypes = ["int8", "bf16"]')
    record = json.loads((tmp_path / "out" / "spec.json").read_text())
    network = load_network(str(tmp_path / "net.csv"))
    for row in rows:
        array, _, flags = sweep_array(record, pd.Series(row))
        costs = cost_network(network, array, 16)
        total = float(costs[["F_cycles", "G_cycles", "D_cycles"]].fillna(0).to_numpy().sum())
        assert total == _hand_makespan(2 if row["dtype"] == "bf16" else 1), flags


def test_a_sweep_naming_no_dtype_stays_at_one_mac_and_says_so(tmp_path, capsys):
    """element_bytes names no dtype: one MAC per PE per cycle, and one line naming the section and who reads it."""
    rows, err = _sweep(tmp_path, capsys, "[macs_per_pe]\nbf16 = 2\n", "element_bytes = [2]")
    assert [float(row["iteration_cycles"]) for row in rows] == [_hand_makespan(1)]
    (line,) = [line for line in err.splitlines() if "not read here" in line]
    assert "chip.cfg: [macs_per_pe] is not read here" in line and "an array sweep's dtypes rows" in line


def test_spec_json_without_the_section_records_no_rates(tmp_path, capsys):
    """A .cfg without [macs_per_pe]: spec.json's entry as before the field (no ``rates``), rows at rate 1."""
    rows, _ = _sweep(tmp_path, capsys, "", 'dtypes = ["int8", "bf16"]')
    assert {float(row["iteration_cycles"]) for row in rows} == {_hand_makespan(1)}
    (entry,) = json.loads((tmp_path / "out" / "spec.json").read_text())["arrays"]
    assert "rates" not in entry


def _bp_cycles(seq_len: int, rate: int) -> int:
    """BP's T − 1 steps, each a (⌈16 / 4⌉, 20, 20) product (batch 16 over 4 processors, hidden 20), by hand."""
    return (seq_len - 1) * _os(16 // 4, 20, 20, rate)


def _rnn(tmp_path, capsys, rates: str, *flags: str) -> tuple[dict, str]:
    config = tmp_path / "chip.cfg"
    config.write_text(CFG.format(rates=rates, device=""))
    capsys.readouterr()
    assert main(["bppsa", "rnn", "--seq-len", "10", "--processors", "4", "--config", str(config), *flags,
                 "--format", "json"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out)["rows"][0], captured.err


def test_bppsa_rnn_runs_at_the_dtype_s_rate(tmp_path, capsys):
    """bf16 = 2: BP's 9 steps of 3 · (10 + 14) − 1 = 71 cycles (101 at 1); without --dtype (int8) at 1."""
    rated, err = _rnn(tmp_path, capsys, "[macs_per_pe]\nbf16 = 2\n", "--dtype", "bf16")
    assert rated["bp_cycles"] == _bp_cycles(10, 2) == 639
    assert "not read here" not in err
    plain, _ = _rnn(tmp_path, capsys, "[macs_per_pe]\nbf16 = 2\n")
    assert plain["bp_cycles"] == _bp_cycles(10, 1) == 909
    unstated, _ = _rnn(tmp_path, capsys, "", "--dtype", "bf16")
    assert unstated == {**plain, "bppsa_bytes_per_worker": unstated["bppsa_bytes_per_worker"],
                        "pipeline_bytes_per_worker": unstated["pipeline_bytes_per_worker"]}  # 2-byte words


def test_bppsa_rnn_page_names_the_cfg_that_sets_the_rate(tmp_path, monkeypatch):
    """The page's command line regenerates a rated run: ``--config`` the .cfg beside ``--array`` (which alone would
    run one MAC per PE per cycle); a rate-1 run's command as before, without it."""
    import archsim.bppsa.report as page
    from archsim.array.config import ArrayConfig
    from archsim.bppsa_run import rnn_page, rnn_study

    commands = []
    monkeypatch.setattr(page, "write_rnn_page", lambda report, frame, command, array, bounds: commands.append(command))
    for rate in (2.0, 1.0):
        array = ArrayConfig(8, 8, "os", mac_rate=rate)
        done = rnn_study([10], [4], hidden=20, batch=16, array=array, dtype="bf16")
        rnn_page("p.html", done, seq_lens=[10], processors=[4], hidden=20, batch=16, array=array, dtype="bf16",
                 config="chip.cfg")
    assert "--processors 4 --config chip.cfg --array 8x8 --dataflow os --dtype bf16" in commands[0]
    assert "--config" not in commands[1] and "--processors 4 --array 8x8 --dataflow os --dtype bf16" in commands[1]


def test_bppsa_rnn_dtype_fp8_runs_at_the_fp8_rate_in_one_byte_words(tmp_path, capsys):
    """--dtype fp8 (since 2026-12-06), as cost's: the file's fp8 = 2 gives BP's rate-2 hand count, in 1-byte words
    (int8's bytes per worker); a device .cfg stating no fp8 rate is refused in cost's one line; the API alike."""
    import warnings

    import archsim

    rated, _ = _rnn(tmp_path, capsys, "[macs_per_pe]\nfp8 = 2\n", "--dtype", "fp8")
    assert rated["bp_cycles"] == _bp_cycles(10, 2) == 639
    int8, _ = _rnn(tmp_path, capsys, "[macs_per_pe]\nfp8 = 2\n", "--dtype", "int8")
    assert int8["bp_cycles"] == _bp_cycles(10, 1)
    assert (rated["bppsa_bytes_per_worker"], rated["pipeline_bytes_per_worker"]) == (
        int8["bppsa_bytes_per_worker"], int8["pipeline_bytes_per_worker"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api = archsim.bppsa_rnn(seq_len=10, processors=4, config=tmp_path / "chip.cfg", dtype="fp8")
    assert api.to_dict()["rows"][0] == rated and api.to_dict()["meta"]["dtype"] == "fp8"
    (tmp_path / "chip.cfg").write_text(CFG.format(rates="", device=""))
    capsys.readouterr()
    assert main(["bppsa", "rnn", "--config", str(tmp_path / "chip.cfg"), "--dtype", "fp8"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--dtype fp8 needs the device's fp8 rate" in err
