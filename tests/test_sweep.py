"""Sweeps: spec validation, caching, executors, and a SIGKILL'd run resuming to the same file."""

import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from archsim.errors import InputError
from archsim.sweep import load_spec, run_sweep, summarize

SPEC = """[sweep]
name = "t"
networks = ["layerpipe_sample"]
arrays = ["16x16", "32x32"]
dataflows = ["ws", "os"]
batches = [4, 8]
processors = [2, 3]
methods = ["layerpipe", "pipedream", "gpipe"]
mode = "paper"
"""


def write(tmp_path, text, name="spec.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_spec_units_and_size(tmp_path):
    spec = load_spec(write(tmp_path, SPEC))
    assert len(spec.units()) == 2 * 2 * 2 and spec.size == 8 * 2 * 3


@pytest.mark.parametrize("edit, field", [
    (lambda s: s.replace('mode = "paper"', 'mode = "paper"\ncolour = 1'), "colour"),
    (lambda s: s.replace('batches = [4, 8]', 'batches = [4, 0]'), "batches"),
    (lambda s: s.replace('"16x16"', '"16y16"'), "arrays"),
    (lambda s: s.replace('"gpipe"]', '"zigzag"]'), "methods"),
    (lambda s: s.replace('mode = "paper"', 'mode = "fast"'), "mode"),
    (lambda s: s.replace('processors = [2, 3]\n', ''), "processors"),
])
def test_bad_spec_names_the_field(tmp_path, edit, field):
    with pytest.raises(InputError) as error:
        load_spec(write(tmp_path, edit(SPEC)))
    assert error.value.where.field == field and error.value.where.file.endswith("spec.toml")


def test_a_bad_network_row_keeps_its_line_and_column(tmp_path):
    # the spec's error said "network 'net.csv': must be positive, got 0", dropping the row and column
    net = write(tmp_path, "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
                          "Num Filter, Strides,\nc1, 8, 8, 3, 3, 3, 4, 1,\nc2, 6, 6, 3, 3, 4, 0, 1,\n", "net.csv")
    spec = load_spec(write(tmp_path, SPEC.replace('"layerpipe_sample"', f'"{net.name}"')))
    with pytest.raises(InputError) as error:
        run_sweep(spec, tmp_path / "out", progress=False)
    assert error.value.where.field == "networks" and error.value.where.file.endswith("spec.toml")
    assert "net.csv, line 3, field 'Num Filter'" in error.value.message


def test_rerun_uses_the_cache_and_gives_identical_files(tmp_path):
    spec = load_spec(write(tmp_path, SPEC))
    first = run_sweep(spec, tmp_path / "out", progress=False)
    text = (tmp_path / "out" / "results.csv").read_text()
    stamps = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "out" / "cache").iterdir()}
    second = run_sweep(spec, tmp_path / "out", progress=False)
    assert first.equals(second) and (tmp_path / "out" / "results.csv").read_text() == text
    assert stamps == {p.name: p.stat().st_mtime_ns for p in (tmp_path / "out" / "cache").iterdir()}
    assert len(first) == spec.size and not first.duplicated(
        ["rows", "cols", "dataflow", "batch", "processors", "method"]).any()


@pytest.mark.long
def test_process_pool_and_dask_give_the_same_results(tmp_path):
    spec = load_spec(write(tmp_path, SPEC))
    inline = run_sweep(spec, tmp_path / "a", progress=False)
    pooled = run_sweep(spec, tmp_path / "b", workers=2, progress=False)
    pytest.importorskip("distributed")
    dask = run_sweep(spec, tmp_path / "c", workers=1, dask="local", progress=False)
    assert inline.equals(pooled) and inline.equals(dask)


def test_summary_averages_over_arrays_and_batches_like_table_iv():
    rows = []
    for array, batch, lp, pd_ in ((16, 4, 2.0, 1.0), (32, 4, 3.0, 2.0), (16, 8, 4.0, 1.0), (32, 8, 3.0, 2.0)):
        for method, speedup in (("layerpipe", lp), ("pipedream", pd_)):
            rows.append({"network": "n", "only": "all", "rows": array, "cols": array, "dataflow": "ws",
                         "batch": batch, "mode": "paper", "processors": 2, "method": method, "stages": 2,
                         "single_processor_cycles": 1.0, "iteration_cycles": 1.0, "speedup": speedup,
                         "mandatory_comm_bytes": 0, "additional_comm_bytes": 100 if method == "layerpipe" else 0})
    summary = summarize(pd.DataFrame(rows)).set_index("method")
    assert summary.speedup["layerpipe"] == 3.0 and summary.speedup["pipedream"] == 1.5
    assert summary.improvement_vs_pipedream_pct["layerpipe"] == pytest.approx(100.0)
    assert summary.additional_comm_bytes["layerpipe"] == 100


def test_improvement_upto_compares_best_speedups_with_at_most_p_processors():
    """Algorithm 1 is greedy: a configuration's speedup can fall when a processor is added. The raw improvement
    compares the speedups at P (Table IV's column); the ≤P one the best over P′ ≤ P of both methods, PipeDream's
    own dip (array 64 at P 4) included. Expected values by hand from the speedups below."""
    speedups = {  # (array, method) → speedup at 2, 3, 4 processors
        (32, "layerpipe"): (2.0, 3.0, 2.0), (32, "pipedream"): (1.6, 2.0, 2.0),
        (64, "layerpipe"): (1.8, 2.4, 2.8), (64, "pipedream"): (1.6, 2.2, 1.8),
    }
    rows = [{"network": "n", "only": "conv", "rows": array, "cols": array, "dataflow": "ws", "batch": 16,
             "mode": "paper", "processors": p, "method": method, "speedup": s, "mandatory_comm_bytes": 0,
             "additional_comm_bytes": 0}
            for (array, method), values in speedups.items() for p, s in zip((2, 3, 4), values)]
    summary = summarize(pd.DataFrame(rows)).set_index(["method", "processors"])
    lp, pd4 = summary.loc["layerpipe"], summary.loc[("pipedream", 4)]
    # P 4, raw: LayerPipe (2.0 + 2.8) / 2 = 2.4 over PipeDream (2.0 + 1.8) / 2 = 1.9
    assert lp.speedup[4] == pytest.approx(2.4) and pd4.speedup == pytest.approx(1.9)
    assert lp.improvement_vs_pipedream_pct[4] == pytest.approx((2.4 / 1.9 - 1) * 100)  # 26.3%
    # P 4, ≤P: LayerPipe (3.0 + 2.8) / 2 = 2.9 over PipeDream (2.0 + 2.2) / 2 = 2.1
    assert lp.speedup_upto[4] == pytest.approx(2.9) and pd4.speedup_upto == pytest.approx(2.1)
    assert lp.improvement_upto_vs_pipedream_pct[4] == pytest.approx((2.9 / 2.1 - 1) * 100)  # 38.1%
    # P 3: nothing has dipped yet, so both columns are (2.7 / 2.1 − 1) = 28.6%
    assert lp.improvement_vs_pipedream_pct[3] == pytest.approx(lp.improvement_upto_vs_pipedream_pct[3])
    assert lp.improvement_upto_vs_pipedream_pct[3] == pytest.approx((2.7 / 2.1 - 1) * 100)
    assert summary.improvement_upto_vs_pipedream_pct["pipedream"].tolist() == [0.0, 0.0, 0.0]

    from archsim.report.sweep_report import table_iv

    table = table_iv(summary.reset_index(), "n").set_index("processors")
    assert table["improvement %"][4] == pytest.approx((2.4 / 1.9 - 1) * 100)
    assert table["improvement (≤P) %"][4] == pytest.approx((2.9 / 2.1 - 1) * 100)
    assert table["PipeDream (≤P)"][4] == pytest.approx(2.1)


def test_table_iv_labels_its_sizes_kib():
    """The report's Table IV: sizes in KiB (1,024 bytes, the LayerPipe paper's "KB"), labelled so; the paper's
    column as typed from the paper (5 processors: 0.26)."""
    from archsim.report.sweep_report import table_iv

    rows = [{"network": "vgg16", "method": method, "processors": 5, "speedup": 2.0, "speedup_upto": 2.0,
             "additional_comm_bytes": 3 * 1024, "only": "conv", "mode": "paper"} for method in ("layerpipe", "pipedream")]
    table = table_iv(pd.DataFrame(rows), "vgg16")
    assert not [c for c in table.columns if "KB" in c]
    assert table["comm overhead KiB per iteration"].tolist() == [3.0] and table["paper comm KiB"].tolist() == [0.26]


@pytest.mark.long
def test_sigkill_then_rerun_equals_an_uninterrupted_run(tmp_path):
    """Kill a sweep with SIGKILL mid-way; re-running must give byte-identical results.csv."""
    net = tmp_path / "wide.csv"
    lines = ["Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, Padding,"]
    channels = 3
    for i in range(12):
        lines.append(f"c{i},32,32,3,3,{channels},32,1,1,")
        channels = 32
    net.write_text("\n".join(lines) + "\n")
    spec_text = SPEC.replace('["layerpipe_sample"]', '["wide.csv"]').replace(
        'batches = [4, 8]', 'batches = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]').replace(
        'processors = [2, 3]', 'processors = [2, 3, 4, 5, 6, 7, 8]')
    spec_path = write(tmp_path, spec_text)
    killed_out = tmp_path / "killed"
    command = [sys.executable, "-m", "archsim", "sweep", str(spec_path), "--out", str(killed_out), "--quiet"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline and process.poll() is None:
        cache = killed_out / "cache"
        if cache.is_dir() and len(list(cache.glob("*.json"))) >= 3:
            os.kill(process.pid, signal.SIGKILL)
            break
        time.sleep(0.01)
    process.wait()
    interrupted = process.returncode == -signal.SIGKILL
    partial = len(list((killed_out / "cache").glob("*.json")))
    resumed = subprocess.run(command, capture_output=True, text=True, check=False)
    assert resumed.returncode == 0, resumed.stderr
    clean_out = tmp_path / "clean"
    subprocess.run([*command[:6], str(clean_out), "--quiet"], check=True, capture_output=True)
    assert (killed_out / "results.csv").read_bytes() == (clean_out / "results.csv").read_bytes()
    assert interrupted and 3 <= partial < 48, (interrupted, partial)
    assert not list(killed_out.rglob("*.tmp"))  # an interrupted write leaves no half file behind
