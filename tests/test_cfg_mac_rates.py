"""A SCALE-Sim ``.cfg`` device file's MACs per PE per cycle, its ``[macs_per_pe]`` section (a device TOML's
``[compute] macs_per_pe``, docs/formats.md "Device files"), read by the TOML's rule and refusals.

Before it a ``.cfg`` could not state the rate at all (``macs_per_pe`` was refused in every section), so a ``.cfg``
chip could neither run fp8 at twice its 16-bit rate nor take ``train --fp8`` (no fp8 peak). References: SCALE-Sim's
os count by hand (a fold streams the reduction: ⌈k / r⌉ + R + C − 2 cycles, the last cycle's index counted: − 1),
and the same chip written as a device TOML, which the formats page says a ``.cfg`` stating the same keys equals."""

from __future__ import annotations

import json

import pytest
from api_parity_helpers import cli_error, cli_json

import archsim
from archsim import cli
from archsim.devices.device_file import load_device
from archsim.devices.unread_keys import config_unread_keys_note

CFG = """[general]
run_name = chip

[architecture_presets]
ArrayHeight:    8
ArrayWidth:     8
IfmapSramSzkB:    64
FilterSramSzkB:   64
OfmapSramSzkB:    64
IfmapOffset:    0
FilterOffset:   10000000
OfmapOffset:    20000000
Dataflow : os

[archsim]
ClockGHz = 1.0

[device]
name = chip
arrays = 4
{device}
[memory]
hbm_gib = 16
hbm_gbps = 800

[links]
intra_gbps = 200
{rates}"""

TOML = """[device]
name = "chip"

[compute]
arrays = 4
rows = 8
cols = 8
dataflow = "os"
clock_mhz = 1000
{rates}
[memory]
sram_kib_per_array = [64, 64, 64]
hbm_gib = 16
hbm_gbps = 800

[links]
intra_gbps = 200
"""


def _cfg(tmp_path, rates: str = "", device: str = "", name: str = "chip.cfg") -> str:
    path = tmp_path / name
    path.write_text(CFG.format(rates=rates, device=device))
    return str(path)


def _os_hand_cycles(m: int, k: int, n: int, rate: int) -> int:
    """SCALE-Sim's os count on 8 × 8 of (m, ⌈k / rate⌉, n), by hand: ⌈m / 8⌉ · ⌈n / 8⌉ folds of k' + 8 + 8 − 2."""
    packed = -(-k // rate)
    return -(-m // 8) * -(-n // 8) * (packed + 8 + 8 - 2) - 1


@pytest.mark.parametrize(("dtype", "rate"), [("bf16", 2), ("fp16", 1)])
def test_gemm_on_a_cfg_runs_its_stated_rate(tmp_path, capsys, dtype, rate):
    """(16, 40, 8) at bf16 = 2: 2 folds of 20 + 14 cycles (− 1); fp16, which the section leaves out, at 1. The
    chip's seconds (train's op timing) deal those 2 folds over 4 arrays: one wave, 34 cycles (− 1) at 1 GHz."""
    config = _cfg(tmp_path, "[macs_per_pe]\nbf16 = 2\n")
    capsys.readouterr()
    assert cli.main(["gemm", "--m", "16", "--k", "40", "--n", "8", "--config", config, "--dtype", dtype,
                     "--format", "json"]) == 0
    printed = capsys.readouterr()
    row = json.loads(printed.out)["rows"][0]
    assert row["cycles"] == _os_hand_cycles(16, 40, 8, rate)
    assert row["chip_seconds"] == pytest.approx((-(-40 // rate) + 14 - 1) * 1e-9, rel=1e-9)
    assert "not read here" not in printed.err  # the command's own stderr: no note that the rate is ignored


def test_cost_on_a_cfg_reads_the_rate_as_on_its_toml(tmp_path, capsys):
    """The chip as a .cfg and as a device TOML, bf16 = 2 in each: cost gives every layer the same cycles and chip
    seconds (layerpipe_sample's convolutions, packed), and below the rate-1 file's."""
    cfg = _cfg(tmp_path, "[macs_per_pe]\nbf16 = 2\n")
    toml = tmp_path / "chip.toml"
    toml.write_text(TOML.format(rates="macs_per_pe = { bf16 = 2 }\n"))
    plain = _cfg(tmp_path, name="plain.cfg")
    rows = {}
    for name, config in (("cfg", cfg), ("toml", str(toml)), ("plain", plain)):
        found = cli_json(["cost", "layerpipe_sample", "--config", config, "--dtype", "bf16", "--batch", "2"], capsys)
        rows[name] = next(row for row in found["rows"] if row["layer"] == "TOTAL")
    for column in ("F_cycles", "G_cycles", "D_cycles", "chip_seconds"):
        assert rows["cfg"][column] == rows["toml"][column] < rows["plain"][column]


def test_train_reads_a_cfg_s_fp8_rate_as_its_toml(tmp_path):
    """train --fp8 hybrid: refused on the .cfg without the section (no fp8 peak, as before), and with fp8 = 2 the
    same seconds, peak and joules as the chip's device TOML stating { fp8 = 2 }."""
    from archsim.errors import InputError

    cfg = load_device(_cfg(tmp_path, "[macs_per_pe]\nfp8 = 2\n"))
    toml = tmp_path / "chip.toml"
    toml.write_text(TOML.format(rates="macs_per_pe = { fp8 = 2 }\n"))
    assert cfg.macs_per_pe == (("fp8", 2.0),) == load_device(str(toml)).macs_per_pe
    assert cfg.peak("fp8") == 2 * 4 * 8 * 8 * 1e9 * 2  # FLOP/s: the arrays' one-MAC rate × 2
    with pytest.raises(InputError, match="fp8"):
        load_device(_cfg(tmp_path, name="plain.cfg")).peak("fp8")


def test_train_fp8_on_a_cfg_equals_its_toml(tmp_path):
    """The whole run: train gpt2 --fp8 hybrid on 4 chips of the .cfg and of the TOML, one result."""
    results = []
    for name, text in (("chip.cfg", CFG.format(rates="[macs_per_pe]\nfp8 = 2\n", device="")),
                       ("chip.toml", TOML.format(rates="macs_per_pe = { fp8 = 2 }\n"))):
        (tmp_path / name).write_text(text)
        cluster = tmp_path / f"{name}.cluster.toml"
        cluster.write_text(f'[cluster]\nname = "c"\n\n[[servers]]\ncount = 1\ngpus = 4\ndevice = "{name}"\n')
        result, _ = archsim.train("gpt2", cluster=str(cluster), global_batch=4, dp=4, fp8="hybrid")
        results.append((result.iteration_seconds, result.energy_j))
    assert results[0] == results[1]


@pytest.mark.parametrize(("rates", "device", "message"), [
    ("[macs_per_pe]\nfp8 = 1.5\n", "", "line 29, field 'macs_per_pe.fp8': expected a whole number 1 … 64"),
    ("[macs_per_pe]\nfp9 = 2\n", "", "line 29, field 'macs_per_pe.fp9': unknown dtype 'fp9'"),
    ("[macs_per_pe]\nfp8 = \"2\"\n", "", "field 'macs_per_pe.fp8': a .cfg's values take no quotes"),
    ("[macs_per_pe]\nfp8 = 2\n", "gemm = tiles", "line 28, field 'macs_per_pe': macs_per_pe is a rate of gemm = "),
    ("", "macs_per_pe = 2", ("field 'device.macs_per_pe': unknown key; [device] takes name, gemm, split_k, "
                             "board_watts, static_watts, arrays, arrays_per_core; a .cfg states macs_per_pe as its own "
                             "section, [macs_per_pe]")),
])
def test_bad_rates_are_refused_at_their_line(tmp_path, capsys, rates, device, message):
    """The TOML's refusals, each one line naming the .cfg's key (a tile-timed device: the section's header)."""
    config = _cfg(tmp_path, rates, device)
    err = cli_error(["cost", "layerpipe_sample", "--config", config, "--dtype", "bf16"], capsys)
    assert message in err and err.count("\n") == 0


def test_readers_that_price_one_mac_name_the_cfg_s_section(tmp_path):
    """A reader that prices one MAC per PE per cycle (config_unread_keys_note: an array sweep's naming no
    dtype) says the rate goes unread, naming the .cfg's own section; the readers that run it (rates_read) say
    nothing."""
    config = _cfg(tmp_path, "[macs_per_pe]\nfp8 = 2\n")
    note = config_unread_keys_note(config)
    assert note is not None and "[macs_per_pe] is not read here" in note
    assert config_unread_keys_note(config, rates_read=True) is None


def test_train_fp8_on_a_cfg_without_a_rate_names_the_cfg_s_section(tmp_path, capsys):
    """train --fp8 hybrid on a .cfg that states no fp8 rate: one line naming the way a .cfg states it (until
    2026-12-05 only the TOML's keys, neither of which a .cfg can write, in a sentence ending "and so it")."""
    _cfg(tmp_path)
    cluster = tmp_path / "c.toml"
    cluster.write_text('[cluster]\nname = "c"\n\n[[servers]]\ncount = 1\ngpus = 4\ndevice = "chip.cfg"\n')
    err = cli_error(["train", "gpt2", "--cluster", str(cluster), "--global-batch", "4", "--dp", "4", "--fp8",
                     "hybrid"], capsys)
    assert "(a .cfg: its [macs_per_pe] section, fp8 = N)" in err and err.endswith("and so that peak")
