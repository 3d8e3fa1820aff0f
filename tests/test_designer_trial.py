"""Designer's trial (an accelerator architect who writes a device file of their own chip from the docs and drives it
through cost, energy, train, search and a device sweep): the defects it found, each checked against an independent
reference — the docs' statement of what a file holds or an output says, a hand count."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import archsim
from archsim import cli

# A SCALE-Sim .cfg device file written from docs/formats.md ("Device files", "SCALE-Sim .cfg"): SCALE-Sim's own
# sections, which require the three SramSzkB keys, plus [archsim] ClockGHz and the device sections.
CFG = """[general]
run_name = mychip

[architecture_presets]
ArrayHeight:    128
ArrayWidth:     128
IfmapSramSzkB:    1024
FilterSramSzkB:   1024
OfmapSramSzkB:    512
IfmapOffset:    0
FilterOffset:   10000000
OfmapOffset:    20000000
Dataflow : os

[archsim]
ClockGHz = 1.0

[device]
name = mychip
arrays = 4
{device}
[memory]
hbm_gib = 16
hbm_gbps = 800

[links]
intra_gbps = 200
"""


def _cluster(tmp_path: Path, device: str) -> Path:
    cluster = tmp_path / "cluster.toml"
    cluster.write_text(f'[cluster]\nname = "mine"\n\n[[servers]]\ncount = 1\ngpus = 8\ndevice = "{device}"\n',
                       encoding="utf-8")
    return cluster


# --- a .cfg tiles device's unread-keys note names the keys the file states ---------------------------------------------
# Failed before: a gemm = "tiles" .cfg device got "this key is not read: [memory] sram_kib_per_array", a key a .cfg
# cannot state (formats.md: its SRAM is its three SramSzkB, and sram_kib_per_array beside them is refused), while the
# SramSzkB keys it must state to be read at all were never named.

def test_a_cfg_tiles_device_note_names_the_sram_keys_the_file_states(tmp_path, capsys):
    cfg = tmp_path / "chip.cfg"
    cfg.write_text(CFG.format(device="gemm = tiles\nboard_watts = 300\n"), encoding="utf-8")
    assert cli.main(["train", "gpt2", "--cluster", str(_cluster(tmp_path, "chip.cfg")), "--dp", "8",
                     "--global-batch", "8"]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "is a gemm = \"tiles\" device" in line]
    assert len(notes) == 1, notes
    named = re.findall(r"\b(\w+SramSzkB)\b", notes[0])
    assert named == ["IfmapSramSzkB", "FilterSramSzkB", "OfmapSramSzkB"]
    assert all(f"{key}:" in cfg.read_text(encoding="utf-8") for key in named)  # keys the file states
    assert "sram_kib_per_array" not in notes[0]  # a key a .cfg is refused for stating


# --- search says what its energy_j holds, as train does -------------------------------------------------------------
# Failed before: archsim search printed an energy_j column (and ranked by it under --objective energy) with no
# energy_source anywhere in its output, though docs/formats.md's search energy_j row says "energy_source says which":
# on a chip stating static_watts the column held static_watts × chips × seconds too, and nothing said so.

TOML = """[device]
name = "{name}"
static_watts = 20

[compute]
arrays = 4
rows = 128
cols = 128
dataflow = "os"
clock_mhz = 1000

[memory]
sram_kib_per_array = 2048
hbm_gib = 16
hbm_gbps = 800

[links]
intra_gbps = 200
"""


def test_search_names_the_energy_source_train_names_for_its_rows(tmp_path):
    (tmp_path / "chip.toml").write_text(TOML.format(name="mychip"), encoding="utf-8")
    cluster = str(_cluster(tmp_path, "chip.toml"))
    found = archsim.search("gpt2", cluster=cluster, global_batch=16, top=1, schedule=["1f1b"], progress=False)
    best = found.rows[0]
    result, _ = archsim.train("gpt2", cluster=cluster, tp=best["tp"], pp=best["pp"], dp=best["dp"], global_batch=16,
                              micro_batch=best["micro_batch"], recompute=best["recompute"],
                              sequence_parallel=best["sequence_parallel"], schedule=best["schedule"])
    assert found.to_dict()["meta"]["energy_source"] == result.energy_source
    assert "static_watts" in result.energy_source
    # what it says holds: the row's joules are the dynamic ones plus 20 W × 8 chips × the row's seconds
    assert best["energy_j"] == pytest.approx(result.energy_dynamic_j + 20 * 8 * best["iteration_seconds"])


def test_search_over_counts_priced_two_ways_names_each_count_s_source(tmp_path):
    (tmp_path / "chip.toml").write_text(TOML.format(name="mychip"), encoding="utf-8")
    cluster = tmp_path / "mix.toml"
    cluster.write_text('[cluster]\nname = "mix"\ninter_server_gbps = 200\n\n[[servers]]\ncount = 1\ngpus = 8\n'
                       'device = "chip.toml"\n\n[[servers]]\ncount = 1\ngpus = 8\ngpu = "a100-80gb"\n', encoding="utf-8")
    found = archsim.search("gpt2", cluster=str(cluster), global_batch=16, gpus=[8, 16], top=1, schedule=["1f1b"],
                           progress=False)
    said = found.to_dict()["meta"]["energy_source"]
    # train's words for a layout on each count: the chip alone on 8 GPUs, the chip and the A100s on 16
    with pytest.warns(UserWarning, match="uses 8 of the cluster's 16 GPUs"):
        on8, _ = archsim.train("gpt2", cluster=str(cluster), dp=8, global_batch=16)
    on16, _ = archsim.train("gpt2", cluster=str(cluster), pp=2, dp=8, global_batch=16)
    assert said == f"8 GPUs: {on8.energy_source} | 16 GPUs: {on16.energy_source}"
    assert "board power" in on16.energy_source and "board power" not in on8.energy_source


# --- a figure refused for being below 10⁻¹² is told so, not told a range it lies in -----------------------------------
# Failed before: `gemm_efficiency = 1e-300` was refused as "expected a fraction in (0, 1]" — 1e-300 is in (0, 1];
# the rule it broke (docs/security.md: a real number is 0 or at least 10⁻¹² in magnitude) went unsaid. A positive
# figure (hbm_gbps = 1e-13) was told "a positive number of 0 or a magnitude of at least 1e-12", offering 0, which
# it refuses; `--clock-ghz 1e-300` likewise, where every other clock out of 0.01 … 10 GHz is told that range.

def _refusal(tmp_path, capsys, added: str, replaced: tuple[str, str] = ("", "")) -> str:
    chip = tmp_path / "chip.toml"
    chip.write_text(TOML.format(name="mychip").replace(*replaced).replace("[links]\n", f"[links]\n{added}"),
                    encoding="utf-8")
    assert cli.main(["cost", "resnet50", "--config", str(chip)]) == 2
    return capsys.readouterr().err


def test_a_fraction_below_the_floor_is_told_the_floor(tmp_path, capsys):
    said = _refusal(tmp_path, capsys, "", ("[compute]\n", "[compute]\ngemm_efficiency = 1e-300\n"))
    assert "'compute.gemm_efficiency'" in said and "1e-12" in said
    said = _refusal(tmp_path, capsys, "efficiency = 1e-13\n")
    assert "'links.efficiency'" in said and "1e-12" in said


def test_a_positive_figure_below_the_floor_is_not_offered_zero(tmp_path, capsys):
    said = _refusal(tmp_path, capsys, "", ("hbm_gbps = 800", "hbm_gbps = 1e-13"))
    assert "'memory.hbm_gbps'" in said and "at least 1e-12" in said
    assert "of 0 or" not in said  # 0 GB/s is refused too: no alternative to offer


def test_a_clock_below_the_floor_is_told_the_clock_range(capsys):
    from archsim.clock import clock_range

    assert cli.main(["cost", "resnet50", "--clock-ghz", "1e-300"]) == 2
    said = capsys.readouterr().err
    assert clock_range("GHz") in said and "of 0 or" not in said
    assert cli.main(["cost", "resnet50", "--clock-ghz", "0.001"]) == 2  # the line every clock out of range gets
    assert clock_range("GHz") in capsys.readouterr().err


# --- cost's chip columns say they leave out the host floor a device file states --------------------------------------
# Failed before: a device file's [compute] host_s (train: each pass takes at least its ops × host_s) moved train's
# seconds and not cost's chip_seconds, which docs/cli.md calls "train's time for the same ops on the file's chip",
# and nothing said the figure was left out: a designer's host_s was read by one command and silently not the other.

def test_cost_chip_columns_name_a_host_time_they_leave_out(tmp_path):
    plain, hosted = tmp_path / "plain.toml", tmp_path / "hosted.toml"
    plain.write_text(TOML.format(name="mychip"), encoding="utf-8")
    hosted.write_text(TOML.format(name="mychip").replace("[compute]\n", "[compute]\nhost_s = 1e-3\n"), encoding="utf-8")
    with pytest.warns(UserWarning, match="device of 4 arrays"):
        bare, floored = (archsim.cost("resnet50", config=str(path)).to_dict() for path in (plain, hosted))
    assert [row["chip_seconds"] for row in bare["rows"]] == [row["chip_seconds"] for row in floored["rows"]]
    trained = []
    for path in (plain, hosted):
        with pytest.warns(UserWarning, match="uses 1 of the cluster's 8 GPUs"):
            trained.append(archsim.train("gpt2", cluster=str(_cluster(tmp_path, path.name)), global_batch=1)[0])
    assert trained[1].iteration_seconds > trained[0].iteration_seconds  # train reads it
    assert "host_s" not in bare["meta"]["chip_seconds_by"]
    assert "without [compute] host_s = 0.001 s" in floored["meta"]["chip_seconds_by"]


# --- the API takes what `archsim sweep` and `archsim report` take ---------------------------------------------------
# Failed before: `archsim sweep SPEC --cache-info` and `--prune-cache` had no library function (a notebook sweeping
# designs could neither see nor prune its cache), and archsim.write_report required `out`, which `archsim report`
# defaults to reports/<results folder's name>.html.

SWEEP_ELSEWHERE = {"report": "archsim.write_report draws it", "quiet": "run_sweep's progress=False"}


def test_every_sweep_and_report_option_is_a_keyword():
    import inspect

    from test_api_parity import keywords

    taken = set(inspect.signature(archsim.run_sweep).parameters) | set(inspect.signature(archsim.sweep_cache).parameters)
    as_keyword = {"cache_info": "prune", "prune_cache": "prune"}  # sweep_cache(prune=False) and (prune=True)
    missing = [k for k in keywords("sweep") if as_keyword.get(k, k) not in taken and k not in SWEEP_ELSEWHERE]
    assert not missing
    report = inspect.signature(archsim.write_report).parameters
    assert all(k in report for k in keywords("report") if k != "results") and report["out"].default is None


SPEC = """[sweep]
name = "trial"
networks = ["layerpipe_sample"]
arrays = [{arrays}]
batches = [16]
processors = [2]
methods = ["layerpipe"]
"""


def test_sweep_cache_counts_the_files_in_the_cache_and_prunes_what_the_spec_does_not_use(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("wide.toml").write_text(SPEC.format(arrays='"32x32", "64x64", "128x128"'), encoding="utf-8")
    Path("narrow.toml").write_text(SPEC.format(arrays='"32x32"'), encoding="utf-8")
    archsim.run_sweep("wide.toml", out="results/trial")
    files = {path: path.stat().st_size for path in Path("results/trial/cache").iterdir()}  # by hand: the folder
    use = archsim.sweep_cache("narrow.toml", out="results/trial")
    assert (use.entries, use.bytes, use.units, use.used) == (len(files), sum(files.values()), 1, 1)
    assert len(use.unused) == len(files) - 1 and use.unused_bytes == sum(files[p] for p in use.unused)
    assert cli.main(["sweep", "narrow.toml", "--out", "results/trial", "--cache-info"]) == 0
    printed = capsys.readouterr().out
    assert f"{use.entries:,} entries, {use.bytes:,} bytes" in printed and f"{len(use.unused):,} entries" in printed
    with pytest.raises(archsim.InputError, match="another spec"):  # as --prune-cache without --force
        archsim.sweep_cache("narrow.toml", out="results/trial", prune=True)
    pruned = archsim.sweep_cache("narrow.toml", out="results/trial", prune=True, force=True)
    assert pruned.unused == use.unused and not any(path.exists() for path in use.unused)
    assert [p.name for p in Path("results/trial/cache").iterdir()] == [p.name for p in files if p not in use.unused]
    assert archsim.write_report("results/trial") == Path("reports/trial.html") and Path("reports/trial.html").is_file()


# --- the energy command's cycle engine shows its progress, as cost's does --------------------------------------------
# Failed before: `archsim energy NETWORK --engine cycle` stepped every distinct GEMM through the cycle engine (25 s for
# layerpipe_sample at batch 32 on a 32 × 32 array) with no bar on a terminal, where `archsim cost --engine cycle`
# draws one: the energy model had a loop of its own.

class _Bar:
    def __init__(self, total, open_bars):
        self.total, self.done, self.open = total, 0, open_bars

    def __enter__(self):
        self.open.append(self)
        return self

    def __exit__(self, *exc):
        self.open.remove(self)

    def update(self, n=1):
        self.done += n

    def set_postfix_str(self, text="", refresh=True):  # the GEMM under way, as the cycle engine's bar names it
        return None


def test_every_cycle_engine_step_of_energy_runs_under_a_bar(monkeypatch, capsys):
    import numpy as np

    from archsim.array import cycle
    from archsim.array.analytic import gemm_cost

    open_bars: list[_Bar] = []
    bars: list[_Bar] = []

    def progress(total, desc, unit, **_options):
        bars.append(_Bar(total, open_bars))
        return bars[-1]

    stepped: list[tuple[int, int, int, bool]] = []
    simulate = cycle.simulate_on

    def watched(m, k, n, array):
        stepped.append((m, k, n, bool(open_bars)))
        return simulate(m, k, n, array)

    monkeypatch.setattr("archsim.progress.progress", progress)
    monkeypatch.setattr(cycle, "simulate_on", watched)
    cycle.simulate_cached.cache_clear()  # every shape stepped here, none from an earlier test
    assert cli.main(["energy", "layerpipe_sample", "--array", "16x16", "--batch", "1", "--engine", "cycle"]) == 0
    capsys.readouterr()
    assert stepped and all(under for *_, under in stepped)
    # the bar counts the work by hand: each distinct shape's stall-free cycles, as cost's bar does
    shapes = np.array(sorted({(m, k, n) for m, k, n, _ in stepped}))
    work = int(gemm_cost(shapes[:, 0], shapes[:, 1], shapes[:, 2], 16, 16, "ws").cycles.sum())
    assert bars[0].total == work and bars[0].done == work
    cycle.simulate_cached.cache_clear()


# Failed before: `archsim gemm --shapes FILE --engine cycle` stepped each row's GEMM (seconds each: 4.7 s for one
# 100352 × 800 × 64 GEMM on 32 × 32) with no bar at all.

def test_every_cycle_engine_step_of_a_shapes_file_runs_under_a_bar(tmp_path, monkeypatch, capsys):
    from archsim.array import cycle

    open_bars: list[_Bar] = []
    bars: list[_Bar] = []
    monkeypatch.setattr("archsim.progress.progress",
                        lambda total, desc, unit, **_: bars.append(_Bar(total, open_bars)) or bars[-1])
    stepped: list[bool] = []
    simulate = cycle.simulate_on
    monkeypatch.setattr(cycle, "simulate_on", lambda *args: stepped.append(bool(open_bars)) or simulate(*args))
    cycle.simulate_cached.cache_clear()
    shapes = tmp_path / "shapes.csv"
    shapes.write_text("m,k,n,rows,cols,dataflow\n64,128,96,16,16,os\n100,27,300,32,8,ws\n7,9,5,4,4,is\n", encoding="utf-8")
    assert cli.main(["gemm", "--shapes", str(shapes), "--engine", "cycle"]) == 0
    capsys.readouterr()
    assert stepped == [True, True, True]  # the file's three rows, by hand
    assert [(bar.total, bar.done) for bar in bars] == [(3, 3)]
    cycle.simulate_cached.cache_clear()


# --- the search's Pareto page says each point's second figure with its unit ------------------------------------------
# Failed before: a point's hover read "1.91 s, 2448" — seconds with their unit, the objective's figure (GiB per GPU,
# USD or J, which the page's own y axis names) without one.

@pytest.mark.parametrize("objective", ["time", "cost", "energy"])
def test_the_front_pages_hover_gives_the_y_axis_unit(objective):
    from archsim.report.search_front import front_figure

    row = {"gpus": 8, "tp": 1, "pp": 1, "dp": 8, "micro_batch": 1, "recompute": "none", "schedule": "1f1b",
           "interleave": 1, "sequence_parallel": False, "stage_layers": "", "iteration_seconds": 1.91,
           "peak_memory_gib": 14.9, "cost_usd": 0.5, "energy_j": 2448.0, "tflops_per_gpu": 77.9,
           "hardware_tflops_per_gpu": 79.6, "tokens_per_second": 68629.0}
    figure = front_figure([row], [row], objective, "energy model on the ops")
    unit = re.search(r"\((GiB|USD|J)\b", figure.layout.yaxis.title.text).group(1)  # the axis's own unit
    for trace in figure.data:
        assert re.search(r"%\{y:[^}]*\} " + unit + r"\b", trace.hovertemplate), trace.hovertemplate


# --- a key written twice in a .cfg is named as written ---------------------------------------------------------------
# Failed before: `ArrayHeight` given twice was refused as "field 'arrayheight': arrayheight is given twice", the name
# configparser lowercases to, a spelling the file holds nowhere; and `Hbm_Gib` after `hbm_gib` was "hbm_gib is given
# twice" at the line that says Hbm_Gib, with nothing to say the two spellings were taken as one key.

def test_a_key_given_twice_is_named_as_the_file_spells_it(tmp_path, capsys):
    cfg = tmp_path / "chip.cfg"
    for extra, written, first in (("ArrayHeight: 64", "ArrayHeight", None), ("arrayHEIGHT: 64", "arrayHEIGHT",
                                                                            "ArrayHeight")):
        text = CFG.format(device="").replace("ArrayWidth:     128\n", f"ArrayWidth:     128\n{extra}\n")
        cfg.write_text(text, encoding="utf-8")
        assert cli.main(["cost", "resnet50", "--config", str(cfg)]) == 2
        said = capsys.readouterr().err
        line = text.splitlines().index(extra) + 1  # by hand: the line of the second
        assert f"line {line}, field '{written}': {written} is given twice" in said
        assert (f"{first} and {written}" in said) == (first is not None)
