"""``archsim.run_sweep`` on a device sweep warns (UserWarning) the lines ``archsim sweep`` prints on stderr: a
side whose square does not divide the device's PEs (300 on the TPU-v4-like file's 8 × 128² = 131,072: one 300²
array, 68.7%) used to be silent through the API."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest
from test_robustness import write

import archsim
import archsim.sweep
from archsim.sweep import load_spec

SPEC = '[sweep]\nmodel = "gpt2"\ndevice = "tpu_v4_like"\narray_sides = [128, 300]\nchips = [4]\nglobal_batch = 16\n'


def _warned(spec, out) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        archsim.run_sweep(spec, out=out)
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def test_the_api_warns_each_side_that_wastes_pes(tmp_path, monkeypatch):
    """The run itself stubbed (its rows are not the point): the warnings come from the spec alone."""
    monkeypatch.setattr(archsim.sweep, "run_sweep", lambda *args, **kwargs: pd.DataFrame())
    lines = _warned(load_spec(write(tmp_path / "s.toml", SPEC)), tmp_path / "out")
    wasting = [line for line in lines if line.startswith("array_sides ")]
    assert len(wasting) == 1 and wasting[0].startswith("array_sides 300: 90,000 of the device's 131,072 PEs used")
    assert "68.7%" in wasting[0]


def test_a_side_that_divides_the_budget_is_not_warned(tmp_path, monkeypatch):
    monkeypatch.setattr(archsim.sweep, "run_sweep", lambda *args, **kwargs: pd.DataFrame())
    spec = load_spec(write(tmp_path / "s.toml", SPEC.replace("[128, 300]", "[128, 64]")))
    assert not [line for line in _warned(spec, tmp_path / "out") if line.startswith("array_sides ")]


@pytest.mark.long
def test_a_real_run_warns_the_cli_line(tmp_path):
    lines = _warned(str(write(tmp_path / "s.toml", SPEC)), tmp_path / "out")
    assert sum(line.startswith("array_sides 300: ") for line in lines) == 1


# Three points of which two do not fit their chip's 32 GiB: the worst needs 50.25 GiB.
UNFIT = pd.DataFrame({"fits_memory": [True, False, False], "peak_memory_gib": [10.0, 40.5, 50.25],
                      "gpu": ["chip-a", "chip-b", "chip-c"], "memory_capacity_gib": [32.0, 32.0, 32.0]})
UNFIT_LINE = ("2 of 3 points do not fit memory (up to 50.25 GiB per chip, its chip-c has 32 GiB): their rows say "
              "fits_memory False; the report draws them hollow, never on the front")


def test_the_api_warns_how_many_points_do_not_fit_memory(tmp_path, monkeypatch):
    """``archsim sweep`` says how many points do not fit memory; ``archsim.run_sweep`` used to say nothing."""
    monkeypatch.setattr(archsim.sweep, "run_sweep", lambda *args, **kwargs: UNFIT)
    spec = load_spec(write(tmp_path / "s.toml", SPEC.replace("[128, 300]", "[128, 64]")))
    assert UNFIT_LINE in _warned(spec, tmp_path / "out")


def test_the_api_and_the_command_say_the_same_line(tmp_path, monkeypatch, capsys):
    from archsim.cli import main

    monkeypatch.setattr(archsim.sweep, "run_sweep", lambda *args, **kwargs: UNFIT)
    path = write(tmp_path / "s.toml", SPEC.replace("[128, 300]", "[128, 64]"))
    assert main(["sweep", str(path), "--out", str(tmp_path / "cli"), "--quiet"]) == 0
    assert f"archsim sweep: warning: {UNFIT_LINE}\n" in capsys.readouterr().err
    assert UNFIT_LINE in _warned(load_spec(path), tmp_path / "api")


def test_points_that_all_fit_are_not_warned(tmp_path, monkeypatch):
    monkeypatch.setattr(archsim.sweep, "run_sweep", lambda *args, **kwargs: UNFIT[UNFIT["fits_memory"]])
    spec = load_spec(write(tmp_path / "s.toml", SPEC.replace("[128, 300]", "[128, 64]")))
    assert not [line for line in _warned(spec, tmp_path / "out") if "do not fit memory" in line]
