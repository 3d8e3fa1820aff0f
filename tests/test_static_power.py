"""An array chip's static power (a device file's ``[device] static_watts``, W per chip) in ``archsim train`` and
``archsim search`` energy: the energy model's dynamic joules plus static_watts × chips × iteration seconds, the
formula the device sweep prices its points by. Every test here failed before the key existed (a device file
refused ``static_watts`` as an unknown key, and train and search priced the dynamic joules alone)."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
from test_docs import ROOT
from test_robustness import clean_error, write

import archsim
from archsim.cli import main
from archsim.sweep.device_points import point_rows, spec_warnings
from archsim.sweep.spec import load_spec

MODEL = str(ROOT / "configs" / "transformers" / "gpt2.json")
DEVICE_TEXT = (ROOT / "configs" / "devices" / "tpu_v4_like.toml").read_text(encoding="utf-8")
CFG_TEXT = (ROOT / "configs" / "devices" / "scalesim_32x32_device.cfg").read_text(encoding="utf-8")
KEYWORDS = {"tp": 1, "pp": 2, "dp": 2, "global_batch": 16, "micro_batch": 2, "dtype": "bf16", "attention": "standard"}
CHIPS = 4


def chip(tmp_path: Path, watts: float | None, name: str = "chip") -> Path:
    """tpu_v4_like.toml stating ``watts`` of static power (none: as shipped), and a one-server cluster of
    :data:`CHIPS` of it; the cluster file's path."""
    text = DEVICE_TEXT if watts is None else DEVICE_TEXT.replace("[device]\n", f"[device]\nstatic_watts = {watts}\n", 1)
    write(tmp_path / f"{name}.toml", text)
    return write(tmp_path / f"{name}_cluster.toml", f'[cluster]\nname = "c"\n\n[[servers]]\ncount = 1\ngpus = {CHIPS}\n'
                                                     f'intra_server_gbps = 4800\ndevice = "{name}.toml"\n')


def cli_meta(capsys, cluster: Path, *extra: str) -> dict:
    argv = ["train", MODEL, "--cluster", str(cluster), "--format", "json", *extra]
    for key, value in KEYWORDS.items():
        argv += [f"--{key.replace('_', '-')}", str(value)]
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)["meta"]


def test_train_adds_watts_times_chips_times_seconds_by_hand(tmp_path, capsys):
    """Hand computation: the same run without static power gives the dynamic joules and the seconds; 25 W on
    each of 4 chips for those seconds is 100 W × seconds more, and the meta states both parts."""
    bare = cli_meta(capsys, chip(tmp_path, None, "bare"))
    leaky = cli_meta(capsys, chip(tmp_path, 25, "leaky"))
    seconds = bare["iteration_seconds"]
    assert leaky["iteration_seconds"] == seconds  # no modelled time changes
    assert leaky["energy_static_j"] == pytest.approx(25 * 4 * seconds, rel=1e-12)
    assert leaky["energy_dynamic_j"] == bare["energy_j"]  # the same ops, the same joules
    assert leaky["energy_j"] == pytest.approx(bare["energy_j"] + 100 * seconds, rel=1e-12)
    assert "static_watts" in leaky["energy_source"]
    assert "energy_static_j" not in bare and "energy_dynamic_j" not in bare  # unstated: the meta as before
    result, _ = archsim.train(MODEL, cluster=str(tmp_path / "leaky_cluster.toml"), **KEYWORDS)
    assert result.energy_j == leaky["energy_j"] and result.energy_static_j == leaky["energy_static_j"]


def test_energy_strictly_grows_with_time_at_equal_dynamic_joules(tmp_path):
    """Property: with static power > 0 and the same layout (so the same dynamic joules), a longer iteration
    costs strictly more — by hand, 40 W × 4 chips = 160 J for each second more; with none, the time is free."""
    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.training.energy import cluster_iteration_energy
    from archsim.training.parallel import Parallelism
    from archsim.workload.model_files import load_transformer

    config = load_transformer(MODEL)
    par = Parallelism(1, 2, 2, 16, 2, "full", attention="standard")
    for watts, grows in ((40.0, True), (None, False)):
        cluster = load_gpu_cluster(str(chip(tmp_path, watts, f"c{watts}")), "bf16")
        energies = [cluster_iteration_energy(config, par, cluster, s)["energy_j"] for s in (0.01, 0.02, 0.5, 3.0)]
        if grows:
            assert all(a < b for a, b in itertools.pairwise(energies)), energies
            steps = [b - a for a, b in itertools.pairwise(energies)]
            assert steps == pytest.approx([160 * 0.01, 160 * 0.48, 160 * 2.5], rel=1e-9), energies
        else:
            assert len(set(energies)) == 1, energies


def _key(row: dict) -> str:
    """A row's layout: its train command less the cluster file's path (each search here reads its own)."""
    return re.sub(r"--cluster \S+", "", row["command"])


def test_search_picks_the_faster_layout_once_static_power_is_large_enough(tmp_path, capsys):
    """Without static power the energy objective picks a slower layout (fewer dynamic joules). From those rows'
    own seconds and joules, the static power W* above which the fastest layout costs least is
    max over slower rows r of (E_fast − E_r) / (chips × (T_r − T_fast)); at 2 W* the search must pick the fastest."""
    # 1F1B's 70 layouts, not every schedule's 274 (3 s a search): the pricing and the pick are what is checked
    search = {"global_batch": 16, "objective": "energy", "top": 100000, "schedule": ["1f1b"]}
    bare = archsim.search(MODEL, cluster=str(chip(tmp_path, None, "bare")), **search).rows
    fastest = min(bare, key=lambda r: r["iteration_seconds"])
    assert bare[0]["iteration_seconds"] > fastest["iteration_seconds"]  # the case: dynamic joules pick a slower one
    n = CHIPS
    slower = [r for r in bare if r["iteration_seconds"] > fastest["iteration_seconds"]
              and r["energy_j"] < fastest["energy_j"]]
    threshold = max((fastest["energy_j"] - r["energy_j"]) / (n * (r["iteration_seconds"] - fastest["iteration_seconds"]))
                    for r in slower)
    watts = 2 * threshold
    leaky = archsim.search(MODEL, cluster=str(chip(tmp_path, watts, "leaky")), **search).rows
    assert {_key(r): r["iteration_seconds"] for r in leaky} == {_key(r): r["iteration_seconds"] for r in bare}
    expected = {_key(r): r["energy_j"] + watts * n * r["iteration_seconds"] for r in bare}
    for row in leaky:
        assert row["energy_j"] == pytest.approx(expected[_key(row)], rel=1e-9)
    assert leaky[0]["iteration_seconds"] == fastest["iteration_seconds"]
    # and below the threshold the slower pick stands
    low = archsim.search(MODEL, cluster=str(chip(tmp_path, threshold / 4, "low")), **search).rows
    assert low[0]["iteration_seconds"] > fastest["iteration_seconds"]


def test_search_energy_notes_unstated_static_power_once(tmp_path, capsys):
    argv = ["search", MODEL, "--global-batch", "16", "--objective", "energy", "--top", "1", "--format", "json",
            "--schedule", "1f1b"]  # 1F1B's layouts alone: a quarter of the search; the note is what is checked
    capsys.readouterr()
    assert main([*argv, "--cluster", str(chip(tmp_path, None, "bare"))]) == 0
    err = capsys.readouterr().err
    assert err.count("static power") == 1 and err.startswith("archsim search: note:") and "static_watts" in err
    assert main([*argv, "--cluster", str(chip(tmp_path, 30, "leaky"))]) == 0
    assert "static power" not in capsys.readouterr().err
    assert main([*argv[:4], *argv[6:], "--cluster", str(chip(tmp_path, None, "t"))]) == 0
    assert "static power" not in capsys.readouterr().err  # the time objective: energy is no criterion


def _spec(tmp_path: Path, device: str, extra: str = "") -> Path:
    return write(tmp_path / "s.toml", f'[sweep]\nmodel = "gpt2"\ndevice = "{device}"\nchips = [{CHIPS}]\n'
                                      f'global_batch = 16\nmicro_batch = 2\ndtype = "bf16"\nattention = "standard"\n'
                                      + extra)


def test_the_sweep_and_train_agree_on_a_device_stating_static_power(tmp_path):
    """A device sweep point is train's run on the same device and settings (TP 1, PP 1, DP chips): same
    seconds, same joules, static part included; the device file's static_watts is the sweep's default."""
    cluster = chip(tmp_path, 33, "leaky")
    spec = load_spec(_spec(tmp_path, "leaky.toml"))
    assert spec.setup.static_watts == 33
    assert spec_warnings(spec) == ()
    [row] = point_rows(next(iter(spec.units())))
    keywords = {**KEYWORDS, "pp": 1, "dp": CHIPS}
    result, _ = archsim.train(MODEL, cluster=str(cluster), **keywords)
    assert row["iteration_seconds"] == result.iteration_seconds
    assert row["energy_j"] == result.energy_j
    assert result.energy_static_j == pytest.approx(33 * CHIPS * result.iteration_seconds, rel=1e-12)


def test_a_spec_static_watts_overrides_the_device_files_with_a_line(tmp_path):
    chip(tmp_path, 33, "leaky")
    spec = load_spec(_spec(tmp_path, "leaky.toml", "static_watts = 5\n"))
    assert spec.setup.static_watts == 5
    [line] = spec_warnings(spec)
    assert "overrides" in line and "33" in line and "5" in line
    bare = load_spec(_spec(tmp_path, "leaky.toml", "static_watts = 0\n"))  # a what-if of none
    assert bare.setup.static_watts == 0 and len(spec_warnings(bare)) == 1


@pytest.mark.parametrize("value, words", [
    ("-1", "watts per chip in [0, 10⁶)"),
    ("1e7", "watts per chip in [0, 10⁶)"),      # a unit slipped: mW written as W
    ("nan", "watts per chip in [0, 10⁶)"),
    ('"12"', "expected a number"),              # a TOML number takes no quotes
    ("true", "watts per chip"),
])
def test_a_bad_static_watts_is_one_line(tmp_path, capsys, value, words):
    cluster = chip(tmp_path, None)
    write(tmp_path / "chip.toml", DEVICE_TEXT.replace("[device]\n", f"[device]\nstatic_watts = {value}\n", 1))
    line = clean_error(capsys, "train", MODEL, "--cluster", cluster, "--global-batch", "16")
    assert "field 'device.static_watts'" in line and words in line, line


@pytest.mark.parametrize("value, ok", [("12.5", True), ("-3", False), ("lots", False)])
def test_a_cfg_device_file_states_it_in_its_device_section(tmp_path, capsys, value, ok):
    write(tmp_path / "d.cfg", CFG_TEXT.replace("[device]\n", f"[device]\nstatic_watts = {value}\n", 1))
    cluster = write(tmp_path / "c.toml", '[cluster]\nname = "c"\n\n[[servers]]\ncount = 1\ngpus = 2\n'
                                          'intra_server_gbps = 1600\ndevice = "d.cfg"\n')
    argv = ["train", MODEL, "--cluster", str(cluster), "--global-batch", "4", "--dp", "2", "--format", "json"]
    if not ok:
        line = clean_error(capsys, *argv)
        assert "field 'device.static_watts'" in line and "watts per chip" in line, line
        return
    capsys.readouterr()
    assert main(argv) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert meta["energy_static_j"] == pytest.approx(12.5 * 2 * meta["iteration_seconds"], rel=1e-12)


def test_a_tile_timed_device_refuses_static_watts_as_the_sweep_does(tmp_path, capsys):
    cluster = chip(tmp_path, None)
    write(tmp_path / "chip.toml", DEVICE_TEXT.replace('gemm = "arrays"', 'gemm = "tiles"')
          .replace("[device]\n", "[device]\nstatic_watts = 10\n", 1))
    line = clean_error(capsys, "train", MODEL, "--cluster", cluster, "--global-batch", "16")
    assert "field 'device.static_watts'" in line and "board power" in line, line


def test_the_energy_axis_title_names_static_power_where_the_chip_states_it(tmp_path):
    """The search front's energy-axis title says how energy_j was found: on a chip stating static power it
    names that part beside the energy model (it read "energy model on the ops" alone before)."""
    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.training.energy_sources import energy_basis

    bare = load_gpu_cluster(chip(tmp_path, None, "bare"))
    leaky = load_gpu_cluster(chip(tmp_path, 25, "leaky"))
    assert energy_basis(bare, (CHIPS,)) == "energy model on the ops"
    assert energy_basis(leaky, (CHIPS,)) == "energy model on the ops + static power"
