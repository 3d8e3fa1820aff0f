"""``--dtype fp8`` on a ``.cfg`` that states no fp8 rate, one rule for every command and API function, the one
docs/cli.md and docs/formats.md promise (and an array sweep's ``dtypes`` axis keeps, tests/test_sweep_fp8_dtypes.py):
a plain SCALE-Sim ``.cfg`` (no ``[device]``) runs fp8 at one MAC per PE per cycle, with or without a
``[macs_per_pe]`` section naming other dtypes (an unstated dtype's rate is 1); a device ``.cfg`` stating no fp8 rate
is refused in one line pointing at the ``[macs_per_pe]`` section, as ``train --fp8`` refuses it.

Reference: SCALE-Sim's os cycles on the files' 8 × 8 array at 1 GHz by hand, one MAC per PE per cycle
(tests/test_schedule_mac_rate.py's ``_os``: ⌈m / 8⌉ · ⌈n / 8⌉ · (k + 14) − 1): at batch 16, F of fc1 (16, 40, 8)
107 and of fc2 (16, 8, 24) 131, G 149 + 89, D of fc2 (16, 24, 8) 75; 551 in all on one device."""

from __future__ import annotations

import warnings

import pytest
from api_parity_helpers import cli_error, cli_json
from test_cfg_mac_rates import CFG
from test_schedule_mac_rate import NETWORK, _os

import archsim
from archsim.errors import InputError

CLUSTER = '[cluster]\nname = "one"\n\n[[servers]]\ncount = 1\ngpus = 1\nintra_server_gbps = 100\n'
DEVICE = "[device]\nname = chip\narrays = 1\n"
F = _os(16, 40, 8, 1) + _os(16, 8, 24, 1)  # 107 + 131
G, D = _os(40, 16, 8, 1) + _os(8, 16, 24, 1), _os(16, 24, 8, 1)  # 149 + 89, 75
assert (F, G + D) == (238, 313)

# (command, its flags after the file's, what a row gives, its hand count)
COMMANDS = {
    "cost": (["cost", "{net}", "--batch", "16"], lambda r: r["rows"][0]["F_cycles"], _os(16, 40, 8, 1)),
    "energy": (["energy", "{net}", "--batch", "16"], lambda r: r["rows"][0]["cycles"], F),
    "gemm": (["gemm", "--m", "16", "--k", "40", "--n", "8"], lambda r: r["rows"][0]["cycles"], 107),
    "pipeline": (["pipeline", "{net}", "--processors", "1", "--batch", "16"], lambda r: r["rows"][0]["total_cycles"],
                 F + G + D),
    "schedule": (["schedule", "{net}", "--policy", "mp", "--processors", "1", "--batch", "16"],
                 lambda r: r["rows"][0]["makespan"], F + G + D),
    "plan": (["plan", "{net}", "--cluster", "{cluster}", "--microbatches", "2", "--micro-batch", "16"],
             lambda r: round(r["rows"][0]["microbatch_forward_seconds"] * 1e9), F),
    "bppsa rnn": (["bppsa", "rnn", "--seq-len", "10", "--processors", "64"], lambda r: r["rows"][0]["bp_cycles"], None),
}


@pytest.fixture
def files(tmp_path) -> dict[str, str]:
    (tmp_path / "net.csv").write_text(NETWORK)
    (tmp_path / "plain.cfg").write_text(CFG.format(rates="", device="").split("[device]")[0])
    (tmp_path / "fp16.cfg").write_text((tmp_path / "plain.cfg").read_text() + "\n[macs_per_pe]\nfp16 = 2\n")
    (tmp_path / "device.cfg").write_text((tmp_path / "plain.cfg").read_text() + "\n" + DEVICE)
    (tmp_path / "one.toml").write_text(CLUSTER)
    return {"net": str(tmp_path / "net.csv"), "cluster": str(tmp_path / "one.toml"),
            **{name: str(tmp_path / f"{name}.cfg") for name in ("plain", "fp16", "device")}}


def _flags(files, command: str, config: str, dtype: str) -> list[str]:
    words, _, _ = COMMANDS[command]
    return [w.format(**files) for w in words] + ["--config", files[config], "--dtype", dtype]


@pytest.mark.parametrize("config", ["plain", "fp16"])
@pytest.mark.parametrize("command", COMMANDS)
def test_a_cfg_stating_no_fp8_rate_runs_fp8_at_one_mac(files, capsys, command, config):
    """fp8's cycles are the one-MAC hand count, int8's (SCALE-Sim's word, one MAC) alike."""
    _, figure, hand = COMMANDS[command]
    fp8 = figure(cli_json(_flags(files, command, config, "fp8"), capsys))
    assert fp8 == figure(cli_json(_flags(files, command, config, "int8"), capsys))
    if hand is not None:
        assert fp8 == hand


@pytest.mark.parametrize("command", COMMANDS)
def test_a_device_cfg_stating_no_fp8_rate_is_refused_by_every_command(files, capsys, command):
    said = cli_error(_flags(files, command, "device", "fp8"), capsys)
    assert said.count("\n") == 0 and "--dtype fp8 needs the device's fp8 rate" in said
    assert "add a [macs_per_pe] section, fp8 = N" in said


def _api(files):
    net, cluster = files["net"], files["cluster"]
    return {
        "cost": lambda c: archsim.cost(net, batch=16, config=c, dtype="fp8").table["F_cycles"].iloc[0],
        "profile": lambda c: archsim.profile(net, batch=16, config=c, dtype="fp8").forward[0],
        "iteration_energy": lambda c: archsim.iteration_energy(net, batch=16, config=c, dtype="fp8").table["cycles"].iloc[0],
        "gemm": lambda c: archsim.gemm(m=16, k=40, n=8, config=c, dtype="fp8").table["cycles"].iloc[0],
        "schedule": lambda c: archsim.schedule(net, policy="mp", processors=1, batch=16, config=c,
                                               dtype="fp8").to_dict()["rows"][0]["makespan"],
        "plan": lambda c: round(archsim.plan(net, cluster=cluster, microbatches=2, micro_batch=16, config=c,
                                             dtype="fp8").table["microbatch_forward_seconds"].iloc[0] * 1e9),
        "bppsa_rnn": lambda c: archsim.bppsa_rnn(seq_len=10, processors=64, config=c, dtype="fp8").table["bp_cycles"].iloc[0],
    }


API_HAND = {"cost": 107, "profile": 107, "iteration_energy": F, "gemm": 107, "schedule": F + G + D, "plan": F}


@pytest.mark.parametrize("job", ["cost", "profile", "iteration_energy", "gemm", "schedule", "plan", "bppsa_rnn"])
def test_the_api_functions_keep_the_commands_rule(files, job):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = _api(files)[job]
        for config in ("plain", "fp16"):
            got = run(files[config])
            if job in API_HAND:
                assert got == API_HAND[job]
        with pytest.raises(InputError, match=r"needs the device's fp8 rate.*\[macs_per_pe\] section") as refused:
            run(files["device"])
    assert "\n" not in str(refused.value)
