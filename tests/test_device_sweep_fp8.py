"""A device sweep's ``fp8`` key: every point trained as ``archsim train --fp8 RECIPE`` on the edited device, so a chip
whose arrays run fp8 at twice their 16-bit rate (``[compute] macs_per_pe = { fp8 = 2 }``) is put on the time/energy
front at fp8. Until it a device sweep had no fp8 (``fp8`` was refused as no key of a device sweep). The reference is
``archsim train`` on the device file with the spec's settings (docs/formats.md, "Device sweep spec")."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from test_robustness import clean_error, write

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
TPU = (ROOT / "configs" / "devices" / "tpu_v4_like.toml").read_text(encoding="utf-8")
FP8_TPU = TPU.replace('dataflow = "ws"\n', 'dataflow = "ws"\nmacs_per_pe = { fp8 = 2 }\n')
BASE = 'model = "gpt2"\ndevice = "chip.toml"\nglobal_batch = 8\nattention = "standard"\nchips = [4]\n'
BF16 = 'dtype = "bf16"\n'  # the 16-bit dtype fp8 runs beside (every spec but the fp32 refusal's)


def _sweep(tmp_path: Path, capsys, table: str) -> list[dict[str, str]]:
    spec = write(tmp_path / "s.toml", "[sweep]\n" + BASE + table)
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    with (out / "results.csv").open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _train(tmp_path: Path, capsys, *flags: str) -> dict:
    cluster = write(tmp_path / "c.toml", '[cluster]\nname = "c"\n[[servers]]\ncount = 1\ngpus = 4\n'
                                         'intra_server_gbps = 4800\ndevice = "chip.toml"\n')
    assert main(["train", "gpt2", "--cluster", str(cluster), "--global-batch", "8", "--dp", "4", "--dtype", "bf16",
                 "--attention", "standard", "--format", "json", *flags]) == 0
    return json.loads(capsys.readouterr().out)["meta"]


def test_an_fp8_point_is_archsim_train_with_fp8(tmp_path, capsys):
    """The point with fp8 = "hybrid" is train --fp8 hybrid's seconds and joules, faster than the bf16 point (the
    arrays' fp8 rate is 2), and its results.csv names the recipe after dtype; a spec without the key has no column."""
    write(tmp_path / "chip.toml", FP8_TPU)
    fp8 = _sweep(tmp_path, capsys, BF16 + 'fp8 = "hybrid"\n')[0]
    plain = _sweep(tmp_path, capsys, BF16)[0]
    meta = _train(tmp_path, capsys, "--fp8", "hybrid")
    for key in ("iteration_seconds", "energy_j"):
        assert float(fp8[key]) == pytest.approx(meta[key], rel=1e-12), key
    assert float(fp8["iteration_seconds"]) < float(plain["iteration_seconds"])
    assert fp8["fp8"] == "hybrid" and "fp8" not in plain
    assert list(fp8).index("fp8") == list(fp8).index("dtype") + 1


@pytest.mark.parametrize(("device", "table", "message"), [
    (FP8_TPU, BF16 + 'fp8 = "e5m2"\n', "field 'fp8': unknown value 'e5m2'"),
    # no fp8 rate, so no fp8 peak: train's refusal, at the key
    (TPU, BF16 + 'fp8 = "hybrid"\n', "field 'fp8': --fp8 hybrid needs a device with an fp8 peak"),
    (FP8_TPU, 'fp8 = "hybrid"\ndtype = "fp32"\n', "field 'fp8': --fp8 hybrid runs beside a 16-bit"),
])
def test_a_bad_fp8_is_refused_at_its_key(tmp_path, capsys, device, table, message):
    """One line naming the spec's key, before any point is written."""
    write(tmp_path / "chip.toml", device)
    spec = write(tmp_path / "s.toml", "[sweep]\n" + BASE + table)
    err = clean_error(capsys, "sweep", spec, "--out", tmp_path / "out")
    assert message in err
    assert not (tmp_path / "out" / "results.csv").exists()
