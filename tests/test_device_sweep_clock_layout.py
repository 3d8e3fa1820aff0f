"""Device sweeps over the clock and the parallel layout (``clocks_ghz``, ``tp``, ``pp``): a clock point must be
`archsim train` on the device file edited to that clock, a TP/PP point `archsim train --tp --pp --dp` on the file;
a higher clock never slows an iteration; the layouts train refuses are skipped and counted, a spec of none left
refused, and a bad axis is one line naming its key."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_robustness import clean_error, write

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
DEVICE = ROOT / "configs" / "devices" / "tpu_v4_like.toml"
GPT2 = ROOT / "configs" / "transformers" / "gpt2.json"
BASE = 'model = "gpt2"\ndevice = "tpu_v4_like"\nglobal_batch = 16\ndtype = "bf16"\nattention = "standard"\n'


def rows_of(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def sweep(tmp_path: Path, capsys, table: str) -> tuple[list[dict[str, str]], str, str]:
    """The rows, stderr and report page of a spec of ``BASE`` and ``table``."""
    spec = write(tmp_path / "s.toml", "[sweep]\n" + BASE + table)
    out, html = tmp_path / "out", tmp_path / "s.html"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet", "--report", str(html)]) == 0
    err = capsys.readouterr().err
    return rows_of(out / "results.csv"), err, html.read_text(encoding="utf-8")


def train_meta(tmp_path: Path, capsys, device_text: str, chips: int, *flags: str) -> dict:
    """`archsim train` on ``device_text`` written as a device file, one server of ``chips`` of it (its in-server
    link the file's 300 GB/s per direction: 4800 Gbit/s both ways), the spec's settings and ``flags``."""
    write(tmp_path / "edited.toml", device_text)
    cluster = write(tmp_path / "c.toml", f'[cluster]\nname = "c"\n[[servers]]\ncount = 1\ngpus = {chips}\n'
                                         'intra_server_gbps = 4800\ndevice = "edited.toml"\n')
    assert main(["train", str(GPT2), "--cluster", str(cluster), "--global-batch", "16", "--dtype", "bf16",
                 "--attention", "standard", "--format", "json", *flags]) == 0
    return json.loads(capsys.readouterr().out)["meta"]


def assert_same(row: dict[str, str], meta: dict) -> None:
    for key in ("iteration_seconds", "energy_j", "peak_memory_gib"):
        assert float(row[key]) == pytest.approx(meta[key], rel=1e-12), key
    assert (row["fits_memory"] == "True") == meta["fits_memory"]


@pytest.mark.long
def test_a_clock_point_is_archsim_train_on_the_file_edited_to_that_clock(tmp_path, capsys):
    rows, _, page = sweep(tmp_path, capsys, "clocks_ghz = [0.7, 1.4]\nchips = [4]\n")
    assert [float(r["clock_ghz"]) for r in rows] == [0.7, 1.4]
    text = DEVICE.read_text(encoding="utf-8")
    assert text.count("clock_mhz = 1050\n") == 1
    for row, mhz in zip(rows, ("700", "1400"), strict=True):
        assert_same(row, train_meta(tmp_path, capsys, text.replace("clock_mhz = 1050\n", f"clock_mhz = {mhz}\n"), 4,
                                    "--dp", "4"))
    assert float(rows[1]["iteration_seconds"]) < float(rows[0]["iteration_seconds"])  # the clock really changes it
    assert "8x128x128 arrays, 0.7 GHz, HBM 1200 GB" in page  # a point's hover names its clock


@pytest.mark.long
def test_a_tp_pp_point_is_archsim_train_with_those_flags(tmp_path, capsys):
    rows, _, page = sweep(tmp_path, capsys, "chips = [8]\ntp = [1, 2]\npp = [1, 2]\n")
    assert [(int(r["tp"]), int(r["pp"]), int(r["dp"])) for r in rows] == [(1, 1, 8), (1, 2, 4), (2, 1, 4), (2, 2, 2)]
    text = DEVICE.read_text(encoding="utf-8")
    for row in rows:
        assert_same(row, train_meta(tmp_path, capsys, text, 8, "--tp", row["tp"], "--pp", row["pp"], "--dp", row["dp"]))
    assert "8 chips (TP 2 \\u00d7 PP 2 \\u00d7 DP 2)" in page  # a point's hover names its layout (Plotly's JSON)
    assert "TP × PP × DP over the chips" in page
    front = [r["pareto_optimal"] == "True" for r in rows]  # the front is over every layout
    values = [(float(r["iteration_seconds"]), float(r["energy_j"])) for r in rows]
    assert front == [not any(o != v and o[0] <= v[0] and o[1] <= v[1] for o in values) for v in values]


def test_layouts_train_refuses_are_skipped_and_counted(tmp_path, capsys):
    # gpt2: 12 layers, 12 heads. By hand, of chips {4, 8} × tp {1, 2, 8} × pp {1, 2, 5}: on 4 chips TP × PP must
    # divide 4, leaving (1,1), (1,2), (2,1), (2,2); on 8 chips also (8,1) divides, but TP 8 does not divide 12 heads
    # (and PP 5 never divides 12 layers): 8 layouts run, 10 of 18 skipped, twice that in points at two clocks
    rows, err, page = sweep(tmp_path, capsys, "clocks_ghz = [0.5, 1]\nchips = [4, 8]\ntp = [1, 2, 8]\npp = [1, 2, 5]\n")
    runs = [(n, t, p) for n in (4, 8) for t, p in ((1, 1), (1, 2), (2, 1), (2, 2))]
    assert [(int(r["gpus"]), int(r["tp"]), int(r["pp"])) for r in rows] == [*runs, *runs]
    assert [int(r["gpus"]) // (int(r["tp"]) * int(r["pp"])) for r in rows] == [int(r["dp"]) for r in rows]
    [line] = [line for line in err.splitlines() if "skipped" in line]
    assert "skipped 10 of 18 layouts (chips × tp × pp), 20 of 36 points" in line
    assert line.endswith("4 chips TP 1 PP 5 (TP × PP = 1 × 5 does not divide 4 chips); 4 chips TP 2 PP 5 (TP × PP = "
                         "2 × 5 does not divide 4 chips); 4 chips TP 8 PP 1 (TP × PP = 8 × 1 does not divide 4 chips); "
                         "and 7 more"), line  # the first three in the spec's order, the rest counted
    assert "Skipped 10 of 18 layouts (chips × tp × pp), 20 of 36 points" in page


def test_a_spec_whose_every_layout_is_refused_is_one_line(tmp_path, capsys):
    spec = write(tmp_path / "s.toml", "[sweep]\n" + BASE + "chips = [4]\ntp = [8]\npp = [5]\n")
    line = clean_error(capsys, "sweep", spec, "--out", tmp_path / "out")
    assert "field 'tp'" in line and "every layout" in line and "TP × PP = 8 × 5 does not divide 4 chips" in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("extra, field, words", [
    ("clocks_ghz = [20]\n", "clocks_ghz", "outside the clocks archsim takes (0.01 … 10 GHz)"),  # MHz typed: 20 GHz
    ("clocks_ghz = [1050]\n", "clocks_ghz", "did you mean 1050 MHz"),
    ("clocks_ghz = [0]\n", "clocks_ghz", "outside the clocks"),
    ("clocks_ghz = [nan]\n", "clocks_ghz", "finite"),
    ('clocks_ghz = ["1"]\n', "clocks_ghz", "expected clocks in GHz"),
    ("clocks_ghz = []\n", "clocks_ghz", "non-empty list"),
    ("clocks_ghz = 1.0\n", "clocks_ghz", "clocks_ghz = [1.0]"),
    ("clocks_ghz = [1, 1.0]\n", "clocks_ghz", "given twice"),
    ("tp = [0]\n", "tp", "integers in 1…"),
    ("pp = [1.5]\n", "pp", "integers in 1…"),
    ("tp = [2, 2]\n", "tp", "given twice"),
])
def test_a_bad_clock_or_layout_axis_is_one_line_naming_its_key(tmp_path, capsys, extra, field, words):
    spec = write(tmp_path / "s.toml", "[sweep]\n" + BASE + "chips = [4]\n" + extra)
    line = clean_error(capsys, "sweep", spec, "--out", tmp_path / "out")
    assert f"field '{field}'" in line and words in line, line
    assert not (tmp_path / "out").exists()


def test_a_clock_axis_on_a_tile_timed_device_is_refused(tmp_path, capsys):
    spec = write(tmp_path / "s.toml", '[sweep]\nmodel = "gpt2"\ndevice = "a100_80gb_as_arrays"\nchips = [4]\n'
                                      "global_batch = 16\nclocks_ghz = [1.0]\n")
    line = clean_error(capsys, "sweep", spec, "--out", tmp_path / "out")
    assert "field 'clocks_ghz'" in line and "gemm = 'tiles'" in line, line


def _point_rows(clock: float, hbm: float, chips: int, tp: int, pp: int, watts: float) -> dict:
    from archsim.sweep.device_files import file_sha256
    from archsim.sweep.device_points import point_rows
    from archsim.sweep.device_spec import DevicePoint, DeviceSetup

    setup = DeviceSetup(model="gpt2", model_path=str(GPT2), model_sha256=file_sha256(str(GPT2)), device="tpu_v4_like",
                        device_path=str(DEVICE), device_sha256=file_sha256(str(DEVICE)), global_batch=8, dtype="bf16",
                        attention="standard", static_watts=watts)
    [row] = point_rows(DevicePoint(setup, None, hbm, chips, None, clock, tp, pp))
    return row


@settings(max_examples=12)
@given(clocks=st.lists(st.floats(0.1, 4.0), min_size=2, max_size=2, unique=True), hbm=st.sampled_from([300.0, 2400.0]),
       layout=st.sampled_from([(1, 1, 1), (2, 1, 1), (2, 2, 1), (4, 1, 2), (4, 2, 2)]),
       watts=st.sampled_from([0.0, 100.0]))
def test_a_higher_clock_never_slows_an_iteration(clocks, hbm, layout, watts):
    """On the shipped TPU-like device, small sizes: the slower clock's iteration takes at least as long; the energy
    model prices accesses, not cycles, so the joules differ by the static power over the seconds alone."""
    slow, fast = sorted(clocks)
    chips, tp, pp = layout
    low, high = (_point_rows(c, hbm, chips, tp, pp, watts) for c in (slow, fast))
    assert high["iteration_seconds"] <= low["iteration_seconds"]
    static = watts * chips * (low["iteration_seconds"] - high["iteration_seconds"])
    assert low["energy_j"] - high["energy_j"] == pytest.approx(static, rel=1e-9, abs=1e-9)


def test_a_sweep_without_the_new_axes_keeps_its_columns_and_cache_names(tmp_path):
    """A spec with neither clocks_ghz nor tp/pp (nor seq) writes the columns it wrote before those axes, and its points keep
    their cache files' names (the fields a point had then)."""
    import hashlib
    from dataclasses import asdict

    from archsim.json_text import dumps
    from archsim.sweep import load_spec
    from archsim.sweep.cache import CACHE_FORMAT, cache_file

    spec = load_spec(write(tmp_path / "s.toml", "[sweep]\n" + BASE + "chips = [4]\n"))
    [point] = spec.units()
    fields = {k: v for k, v in asdict(point).items() if k not in ("clock_ghz", "tp", "pp")}
    del fields["setup"]["seq"]  # the spec's seq key came later still (None: the model's length, named as before)
    del fields["setup"]["fp8"]  # and its fp8 key later again (None: off, named as before)
    settings_text = dumps({"format": CACHE_FORMAT, "unit": fields, "network": None}, sort_keys=True)
    assert cache_file(tmp_path, point, {}).name == hashlib.sha256(settings_text.encode()).hexdigest()[:40] + ".json"
    row = _point_rows(1.05, 1200.0, 4, 1, 1, 0.0)
    assert {"clock_ghz", "tp", "pp", "dp"} <= set(row)
    from archsim.sweep.device_points import point_rows

    assert not {"clock_ghz", "tp", "pp", "dp"} & set(point_rows(point)[0])


def test_the_documented_clock_and_layout_example_has_the_points_it_says(tmp_path):
    """docs/formats.md's example: 3 clocks × (TP, PP) in {1, 2, 4}² on 8 chips, of which TP 4 × PP 4 (16 chips)
    does not fit: 8 layouts, 24 points."""
    from archsim.sweep import load_spec

    text = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    block = text.split('name = "tpu_v4_like_clock_layout"', 1)[1].split("```", 1)[0]
    spec = load_spec(write(tmp_path / "s.toml", '[sweep]\nname = "tpu_v4_like_clock_layout"' + block))
    assert spec.size == 24 and [entry[:3] for entry in spec.skipped] == [(8, 4, 4)]
    assert len({(p.clock_ghz, p.tp, p.pp) for p in spec.units()}) == 24


def test_a_clock_point_is_the_device_the_edited_file_reads_as(tmp_path):
    """Every field, the dtypes' peaks (MFU's denominators) included, is what the device reader gives on the file
    edited to that clock."""
    from archsim.devices.device_file import load_device
    from archsim.sweep.device_points import with_fields

    text = DEVICE.read_text(encoding="utf-8").replace("clock_mhz = 1050\n", "clock_mhz = 700\n")
    edited = load_device(write(tmp_path / "tpu_v4_like.toml", text))
    swept = with_fields(load_device(DEVICE), None, None, None, 0.7)
    assert dict(swept.peaks) == pytest.approx(dict(edited.peaks), rel=1e-12)
    assert {k for k, v in vars(swept).items() if v != vars(edited)[k]} <= {"peaks"}  # a scaled peak's last bit
