"""Device sweeps (issue 37): `archsim sweep SPEC` with a [sweep] that names a model and a device file
sweeps the device file's fields (array shape × HBM GB/s × chips). Each row must be what `archsim
train` gives on a device file written with those fields; the front must be the non-dominated fitting
points; a bad spec is one line naming its key, with nothing written."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from test_robustness import clean_error, write

from archsim.cli import main
from archsim.sweep.device_points import with_front

ROOT = Path(__file__).resolve().parents[1]
DEVICE_TEXT = (ROOT / "configs" / "devices" / "tpu_v4_like.toml").read_text(encoding="utf-8")
GPT2 = ROOT / "configs" / "transformers" / "gpt2.json"
SPEC = """[sweep]
name = "tiny"
model = "gpt2"
device = "tpu_v4_like"
array_shapes = ["4x128x128", "2x256x256"]
hbm_gbps = [600, 2400]
chips = [4]
global_batch = 16
dtype = "bf16"
attention = "standard"
"""


def rows_of(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def edited_device(count: int, side: int, hbm_gbps: int, sram_kib: int = 4096) -> str:
    """The TPU-v4-like file with its arrays, HBM bandwidth and SRAM per array rewritten, as a designer
    would edit it."""
    text = DEVICE_TEXT
    for old, new in (("arrays = 8\n", f"arrays = {count}\n"), ("arrays_per_core = 4\n", "arrays_per_core = 1\n"),
                     ("rows = 128\n", f"rows = {side}\n"), ("cols = 128\n", f"cols = {side}\n"),
                     ("hbm_gbps = 1200\n", f"hbm_gbps = {hbm_gbps}\n"),
                     ("sram_kib_per_array = 4096\n", f"sram_kib_per_array = {sram_kib}\n")):
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


def assert_trains_as(row: dict[str, str], device_text: str, tmp_path: Path, capsys) -> None:
    """``row`` (a point of SPEC's settings on 4 chips) is what `archsim train` prints on ``device_text``
    written as a device file, in a cluster file of one server of 4 of it."""
    write(tmp_path / "edited.toml", device_text)
    cluster = write(tmp_path / "c.toml", '[cluster]\nname = "c"\n[[servers]]\ncount = 1\ngpus = 4\n'
                                         'intra_server_gbps = 4800\ndevice = "edited.toml"\n')
    assert main(["train", str(GPT2), "--cluster", str(cluster), "--dp", "4", "--global-batch", "16", "--dtype",
                 "bf16", "--attention", "standard", "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert float(row["iteration_seconds"]) == pytest.approx(meta["iteration_seconds"], rel=1e-12)
    assert float(row["energy_j"]) == pytest.approx(meta["energy_j"], rel=1e-12)
    assert float(row["peak_memory_gib"]) == pytest.approx(meta["peak_memory_gib"], rel=1e-12)
    assert (row["fits_memory"] == "True") == meta["fits_memory"]
    assert (row["model"], row["gpu"]) == (meta["model"], meta["gpu"])


@pytest.mark.long
def test_a_device_sweep_gives_archsim_trains_figures(tmp_path, capsys):
    spec = write(tmp_path / "tiny.toml", SPEC)
    out, html = tmp_path / "out", tmp_path / "tiny.html"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet", "--report", str(html)]) == 0
    capsys.readouterr()
    rows = rows_of(out / "results.csv")
    assert [(r["arrays"], float(r["hbm_gbps"]), int(r["gpus"])) for r in rows] == [
        ("4x128x128", 600.0, 4), ("4x128x128", 2400.0, 4), ("2x256x256", 600.0, 4), ("2x256x256", 2400.0, 4)]

    assert_trains_as(rows[0], edited_device(4, 128, 600), tmp_path, capsys)
    # bandwidth is a field the point really changes: 4x the HBM makes the memory-bound ops faster
    assert float(rows[1]["iteration_seconds"]) < float(rows[0]["iteration_seconds"])

    front = [r["pareto_optimal"] == "True" for r in rows]
    values = [(float(r["iteration_seconds"]), float(r["energy_j"]), r["fits_memory"] == "True") for r in rows]
    beaten = [any(f and s2 <= s and j2 <= j and (s2, j2) != (s, j) for s2, j2, f in values) for s, j, _ in values]
    assert front == [fits and not b for (_, _, fits), b in zip(values, beaten)]
    assert any(front)
    page = html.read_text(encoding="utf-8")
    assert "iteration time (s)" in page and "energy per iteration (J)" in page  # axes in the table's units
    assert "2x256x256 arrays, HBM 2400 GB" in page  # a point's hover names its design


@pytest.mark.long
def test_an_sram_axis_point_is_archsim_train_on_the_edited_file(tmp_path, capsys):
    """SRAM per array against array size at the chip's PE budget: each point is `archsim train` on the
    device file with both edited, and the SRAM really changes the joules (not the seconds)."""
    spec = write(tmp_path / "s.toml", SPEC.replace('array_shapes = ["4x128x128", "2x256x256"]',
                                                   'array_shapes = ["4x128x128", "1x256x256"]\n'
                                                   "sram_kib_per_array = [96, 4096]")
                 .replace("hbm_gbps = [600, 2400]", "hbm_gbps = [600]"))
    out, html = tmp_path / "out", tmp_path / "s.html"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet", "--report", str(html)]) == 0
    capsys.readouterr()
    header = (out / "results.csv").read_text(encoding="utf-8").partition("\n")[0].split(",")
    assert header[header.index("cols") + 1] == "sram_kib_per_array"
    rows = rows_of(out / "results.csv")
    assert [(r["arrays"], float(r["sram_kib_per_array"])) for r in rows] == [
        ("4x128x128", 96.0), ("4x128x128", 4096.0), ("1x256x256", 96.0), ("1x256x256", 4096.0)]

    assert_trains_as(rows[2], edited_device(1, 256, 600, sram_kib=96), tmp_path, capsys)
    for small, large in ((rows[0], rows[1]), (rows[2], rows[3])):  # SRAM prices accesses; it times nothing
        assert float(small["energy_j"]) < float(large["energy_j"])
        assert small["iteration_seconds"] == large["iteration_seconds"]
    # by hand: the SRAM size changes only the pJ of each SRAM access, the accesses are the same, so a third size's
    # joules lie on the line through the two points. Each operand buffer is a third of the array's SRAM (whole
    # KiB): 96 → 32 KiB, 4096 → 1365, 12288 → 4096; a 64-bit access costs 20 pJ at 32 KiB and 20 × (KiB / 32)^a
    # above, a = log 5 / log 32 (Horowitz's 32 KiB → 1 MiB segment, 20 → 100 pJ, extended)
    a = math.log(5) / math.log(32)
    pj = {96: 20.0, 4096: 20.0 * (1365 / 32) ** a, 12288: 20.0 * (4096 / 32) ** a}
    write(tmp_path / "edited.toml", edited_device(1, 256, 600, sram_kib=12288))
    cluster = write(tmp_path / "c.toml", '[cluster]\nname = "c"\n[[servers]]\ncount = 1\ngpus = 4\n'
                                         'intra_server_gbps = 4800\ndevice = "edited.toml"\n')
    assert main(["train", str(GPT2), "--cluster", str(cluster), "--dp", "4", "--global-batch", "16", "--dtype",
                 "bf16", "--attention", "standard", "--format", "json"]) == 0
    third = json.loads(capsys.readouterr().out)["meta"]
    small, large = float(rows[2]["energy_j"]), float(rows[3]["energy_j"])
    assert (third["energy_j"] - small) / (large - small) == pytest.approx((pj[12288] - pj[96]) / (pj[4096] - pj[96]),
                                                                         rel=1e-9)
    assert third["iteration_seconds"] == pytest.approx(float(rows[2]["iteration_seconds"]), rel=1e-12)
    assert "1x256x256 arrays, SRAM 96 KiB per array, HBM 600 GB" in html.read_text(encoding="utf-8")


def test_a_sweep_without_an_sram_axis_writes_no_sram_column():
    from archsim.sweep.device_points import COLUMNS, SRAM_COLUMN, frame

    row = {"iteration_seconds": 1.0, "energy_j": 1.0, "fits_memory": True}
    assert list(frame([row]).columns) == COLUMNS and SRAM_COLUMN not in COLUMNS
    assert SRAM_COLUMN in frame([{**row, SRAM_COLUMN: 96.0}]).columns


@pytest.mark.long
def test_a_rerun_computes_only_the_missing_points(tmp_path, capsys):
    spec = write(tmp_path / "tiny.toml", SPEC.replace('hbm_gbps = [600, 2400]', 'hbm_gbps = [600]'))
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    first = (out / "results.csv").read_text(encoding="utf-8")
    cached = sorted((out / "cache").glob("*.json"))
    assert len(cached) == 2
    cached[0].unlink()
    kept = cached[1].stat().st_mtime_ns
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    assert (out / "results.csv").read_text(encoding="utf-8") == first
    assert cached[0].is_file() and cached[1].stat().st_mtime_ns == kept


@pytest.mark.long
def test_a_point_stays_cached_when_the_spec_gains_an_axis_value_or_a_new_name(tmp_path, capsys):
    """docs/training.md: a run "with an axis value added computes only the points it lacks": a point's
    cache key is its own settings, never the spec's name or its other axis values."""
    spec = write(tmp_path / "tiny.toml", SPEC.replace('hbm_gbps = [600, 2400]', 'hbm_gbps = [600]')
                 .replace('array_shapes = ["4x128x128", "2x256x256"]', 'array_shapes = ["4x128x128"]'))
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    [cached] = (out / "cache").glob("*.json")
    kept, first = cached.stat().st_mtime_ns, rows_of(out / "results.csv")[0]
    write(spec, spec.read_text(encoding="utf-8").replace('name = "tiny"', 'name = "tiny2"')
          .replace("hbm_gbps = [600]", "hbm_gbps = [600, 2400]"))
    assert main(["sweep", str(spec), "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    assert len(list((out / "cache").glob("*.json"))) == 2 and cached.stat().st_mtime_ns == kept
    rows = rows_of(out / "results.csv")
    assert [float(r["hbm_gbps"]) for r in rows] == [600.0, 2400.0]
    assert {**rows[0], "pareto_optimal": ""} == {**first, "pareto_optimal": ""}  # the front changes with the new point


@pytest.mark.long
def test_points_that_do_not_fit_are_kept_and_never_on_the_front(tmp_path, capsys):
    """A device file beside the spec with 1 GiB of HBM: GPT-2's weights and optimizer state do not fit."""
    write(tmp_path / "small.toml", DEVICE_TEXT.replace("hbm_gib = 32\n", "hbm_gib = 1\n"))
    spec = write(tmp_path / "s.toml", '[sweep]\nmodel = "gpt2"\ndevice = "small.toml"\narray_sides = [64, 128]\n'
                                      'chips = [4]\nglobal_batch = 16\n')
    out, html = tmp_path / "out", tmp_path / "s.html"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet", "--report", str(html)]) == 0
    capsys.readouterr()
    rows = rows_of(out / "results.csv")
    assert len(rows) == 2 and all(float(r["peak_memory_gib"]) > float(r["memory_capacity_gib"]) == 1.0 for r in rows)
    assert [(r["fits_memory"], r["pareto_optimal"]) for r in rows] == [("False", "False")] * 2
    assert "does not fit memory" in html.read_text(encoding="utf-8")


@pytest.mark.parametrize("extra, field, words", [
    ("array_sides = [64]\n", "array_sides", 'gemm = "arrays"'),     # its arrays are not what times its GEMMs
    ("static_watts = 10\n", "static_watts", "board power"),         # its board power already counts it
    ("sram_kib_per_array = [1024]\n", "sram_kib_per_array", 'gemm = "arrays"'),  # no SRAM prices its energy
])
def test_a_tile_timed_device_takes_no_array_axis_and_no_static_watts(tmp_path, capsys, extra, field, words):
    write(tmp_path / "tiles.toml", DEVICE_TEXT.replace('gemm = "arrays"', 'gemm = "tiles"'))
    spec = write(tmp_path / "s.toml", '[sweep]\nmodel = "gpt2"\ndevice = "tiles.toml"\nchips = [4]\n'
                                      'global_batch = 16\n' + extra)
    line = clean_error(capsys, "sweep", spec, "--out", tmp_path / "out")
    assert f"field '{field}'" in line and words in line, line
    assert not (tmp_path / "out").exists()


def test_the_front_leaves_out_what_does_not_fit_and_what_is_beaten():
    rows = [{"iteration_seconds": 1.0, "energy_j": 10.0, "fits_memory": True},   # fastest that fits: front
            {"iteration_seconds": 2.0, "energy_j": 5.0, "fits_memory": True},    # least energy that fits: front
            {"iteration_seconds": 0.5, "energy_j": 1.0, "fits_memory": False},   # beats all, but does not fit
            {"iteration_seconds": 3.0, "energy_j": 6.0, "fits_memory": True},    # beaten by the second
            {"iteration_seconds": 2.0, "energy_j": 5.0, "fits_memory": True}]    # equal to the second: not beaten
    assert [r["pareto_optimal"] for r in with_front(rows)] == [True, True, False, False, True]


BASE = 'model = "gpt2"\ndevice = "tpu_v4_like"\nchips = [4]\nglobal_batch = 16\n'


@pytest.mark.parametrize("extra, field, words", [
    ('arrays = ["32x32"]\n', "arrays", "not a key of a device sweep"),  # the array sweep's key beside a device
    ('networks = ["vgg16"]\n', "networks", "not a key of a device sweep"),
    ("hbm_gbps = []\n", "hbm_gbps", "non-empty"),                         # an empty axis
    ("hbm_gbps = [-600]\n", "hbm_gbps", "GB/s"),
    ('hbm_gbps = ["fast"]\n', "hbm_gbps", "GB/s"),
    ('array_sides = [64]\narray_shapes = ["8x128x128"]\n', "array_shapes", "not both"),  # two forms of one axis
    ("array_sides = [1024]\n", "array_sides", "more PEs"),               # one array bigger than the chip
    ('array_shapes = ["8x128"]\n', "array_shapes", "COUNTxROWSxCOLS"),
    ('recompute = "some"\n', "recompute", "choose from none, selective, full"),  # train's choices
    ('dtype = "fp8"\n', "dtype", "choose from"),
    ('attention = "sparse"\n', "attention", "choose from standard, flash"),
    ("micro_batch = 0\n", "micro_batch", "integers in 1…"),
    ("sram_kib_per_array = [0]\n", "sram_kib_per_array", "below the 3 KiB"),
    ("sram_kib_per_array = [96, 96]\n", "sram_kib_per_array", "given twice"),
    ('sram_kib_per_array = 96\n', "sram_kib_per_array", "expected a list, sram_kib_per_array = [96]"),
    ("static_watts = -1\n", "static_watts", "watts per chip"),
])
def test_a_bad_device_spec_is_one_line_naming_its_key(tmp_path, capsys, extra, field, words):
    spec = write(tmp_path / "s.toml", "[sweep]\n" + BASE + extra)
    line = clean_error(capsys, "sweep", spec, "--out", tmp_path / "out")
    assert f"field '{field}'" in line and words in line, line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("table, field, words", [
    ('model = "gpt2"\ndevice = "tpu_v4_like"\nchips = [3]\nglobal_batch = 16\n', "chips", "3 chips"),  # 3 ∤ 16
    ('model = "gpt2"\ndevice = "tpu_v4_like"\nglobal_batch = 16\n', "chips", "missing key"),
    ('model = "gpt2"\ndevice = "tpu_v4_like"\nchips = [4]\nglobal_batch = 400000000\n', "global_batch",
     "schedule actions"),                                     # an iteration train would refuse (--max-ops)
    ('model = "../gpt2.json"\ndevice = "tpu_v4_like"\nchips = [4]\nglobal_batch = 16\n', "model", "inside"),
    ('model = "no_such_model"\ndevice = "tpu_v4_like"\nchips = [4]\nglobal_batch = 16\n', "model", "no shipped"),
    ('model = "gpt2"\ndevice = "/etc/passwd"\nchips = [4]\nglobal_batch = 16\n', "device", "inside"),
    ('networks = ["vgg16"]\narrays = ["16x16"]\nbatches = [4]\nprocessors = [2]\nmethods = ["gpipe"]\nhbm_gbps = [600]\n',
     "hbm_gbps", "device sweep"),                            # a device axis in an array sweep
])
def test_a_device_spec_without_what_it_needs_is_refused(tmp_path, capsys, table, field, words):
    spec = write(tmp_path / "s.toml", "[sweep]\n" + table)
    line = clean_error(capsys, "sweep", spec, "--out", tmp_path / "out")
    assert f"field '{field}'" in line and words in line, line
    assert not (tmp_path / "out").exists()


def test_the_shipped_device_spec_is_the_benchmarks_axes():
    from benchmark_scripts import load_benchmark

    from archsim.sweep import load_spec

    bench = load_benchmark("bench_device_sweep")
    spec = load_spec(ROOT / "configs" / "sweeps" / "device_tpu_v4_like_gpt.toml")
    assert [side for _, side, _ in spec.arrays] == list(bench.SIDES)
    assert spec.hbm_gbps == bench.HBM_GBPS and spec.chips == bench.CHIPS
    setup = spec.setup
    assert (setup.global_batch, setup.dtype, setup.attention, setup.recompute) == (64, "bf16", "standard", "full")
