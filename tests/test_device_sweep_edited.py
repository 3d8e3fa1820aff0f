"""A device sweep's model or device file edited while the sweep runs: every point reads both files again (on
whichever process runs it), and its row records the SHA-256 taken when the spec was read. An edit between two
points was costed unchecked, in-process, in a ``--workers`` pool and on ``--dask`` alike: the later points' rows
the edited file's figures under the first file's hash, and cached so. Now the run stops with one line naming the
file, as an array sweep's network does (``spec_files.check_unchanged``). Failed before: each sweep here exited 0."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_robustness import clean_error

from archsim.cli import main
from archsim.sweep import runner, units

ROOT = Path(__file__).resolve().parents[1]
SPEC = ('[sweep]\nname = "edited"\nmodel = "model.json"\ndevice = "chip.toml"\nhbm_gbps = [600, 2400]\nchips = [4]\n'
        'global_batch = 16\ndtype = "bf16"\nattention = "standard"\n')
# a field no point replaces: the clock, which every point's seconds depend on
EDITS = {"chip.toml": ("clock_mhz = 1050\n", "clock_mhz = 525\n"), "model.json": ('"n_layer": 12', '"n_layer": 24')}
KINDS = {"chip.toml": "device", "model.json": "model"}  # the spec's key naming each file


@pytest.fixture
def folder(tmp_path) -> Path:
    (tmp_path / "chip.toml").write_text((ROOT / "configs/devices/tpu_v4_like.toml").read_text(encoding="utf-8"))
    (tmp_path / "model.json").write_text((ROOT / "configs/transformers/gpt2.json").read_text(encoding="utf-8"))
    (tmp_path / "spec.toml").write_text(SPEC)
    return tmp_path


def edit(path: Path) -> None:
    old, new = EDITS[path.name]
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")


def sweep(folder: Path, *flags: str) -> int:
    return main(["sweep", str(folder / "spec.toml"), "--out", str(folder / "out"), "--quiet", *flags])


def assert_stopped_naming(folder: Path, name: str, capsys) -> None:
    line = clean_error(capsys, "sweep", str(folder / "spec.toml"), "--out", str(folder / "out"), "--quiet")
    assert str(folder / name) in line and f"the {KINDS[name]} file changed after the sweep started" in line, line
    assert not (folder / "out" / "results.csv").exists()


@pytest.mark.parametrize("name", ["chip.toml", "model.json"])
def test_an_edit_between_two_points_stops_the_sweep_naming_the_file(folder, name, monkeypatch, capsys):
    """In-process: the first point costed on the file the spec hashed (cached), the second refused."""
    computed = units.point_rows

    def then_edit(point):
        rows = computed(point)
        if not (folder / "edited").exists():
            (folder / "edited").touch()
            edit(folder / name)
        return rows

    monkeypatch.setattr(units, "point_rows", then_edit)
    assert_stopped_naming(folder, name, capsys)
    assert len(list((folder / "out" / "cache").glob("*.json"))) == 1  # the point before the edit: kept


def edit_once_the_spec_is_read(monkeypatch, path: Path) -> None:
    """Edit ``path`` after the sweep's process has read and hashed the spec's files, before any point runs."""
    checked = runner.check_processor_counts

    def then_edit(*args):
        skipped = checked(*args)
        edit(path)
        return skipped

    monkeypatch.setattr(runner, "check_processor_counts", then_edit)


def test_in_a_pool_an_edit_after_the_spec_is_read_stops_the_sweep(folder, monkeypatch, capsys):
    edit_once_the_spec_is_read(monkeypatch, folder / "chip.toml")
    code = sweep(folder, "--workers", "2")
    err = capsys.readouterr().err
    assert code == 2 and str(folder / "chip.toml") in err and "the device file changed after the sweep started" in err
    assert not list((folder / "out" / "cache").glob("*.json"))  # nothing cached under the first file's hash


@pytest.mark.long
def test_with_dask_an_edit_after_the_spec_is_read_stops_the_sweep(folder, monkeypatch, capsys):
    edit_once_the_spec_is_read(monkeypatch, folder / "model.json")
    code = sweep(folder, "--dask", "local", "--workers", "1")
    err = capsys.readouterr().err
    assert code == 2 and str(folder / "model.json") in err and "the model file changed after the sweep started" in err
    assert not list((folder / "out" / "cache").glob("*.json"))


def test_an_unedited_sweep_runs_as_before(folder, capsys):
    """The check passes the files the spec hashed (a shipped name's too, the spec's other tests)."""
    assert sweep(folder) == 0
    assert len(list((folder / "out" / "cache").glob("*.json"))) == 2


def test_a_hand_made_setup_of_relative_paths_is_checked_as_files(folder, monkeypatch):
    """A benchmark's or a notebook's setup (``sweep_rows``, no spec file) may name its files relative to the working
    folder: hashed as files, not taken for shipped names (which have no hash), so the unedited files run."""
    from archsim.errors import InputError
    from archsim.sweep.device_files import file_sha256
    from archsim.sweep.device_points import sweep_rows
    from archsim.sweep.device_spec import DeviceSetup, DeviceSweepSpec

    monkeypatch.chdir(folder)
    setup = DeviceSetup(model="model", model_path="model.json", model_sha256=file_sha256("model.json"),
                        device="chip", device_path="chip.toml", device_sha256=file_sha256("chip.toml"),
                        global_batch=16, dtype="bf16", attention="standard")
    spec = DeviceSweepSpec(name="hand", setup=setup, arrays=(None,), hbm_gbps=(None,), chips=(4,))
    assert len(sweep_rows(spec)) == 1
    edit(folder / "chip.toml")
    with pytest.raises(InputError, match="the device file changed after the sweep started"):
        sweep_rows(spec)
