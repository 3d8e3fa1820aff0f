"""A sweep whose PipeDream runs ask a network for more processors than it has layer groups skips those points
and says so in one line naming the network, and one with no point left is refused before any unit is computed,
in one line naming the spec; it used to fail mid-run with neither named, leaving the other networks' units cached
(then, until a LayerPipe researcher's trial, it refused the whole spec)."""

from __future__ import annotations

from pathlib import Path

from test_robustness import clean_error

from archsim.cli import main

TWO_LAYERS = """Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, Padding, Type, Inputs,
c1, 8, 8, 3, 3, 3, 4, 1, 1, conv, input,
c2, 8, 8, 3, 3, 4, 4, 1, 1, conv, c1,
"""


def _spec(folder: Path, processors: str, methods: str = '"layerpipe", "pipedream"') -> Path:
    (folder / "two.csv").write_text(TWO_LAYERS, encoding="utf-8")
    spec = folder / "s.toml"
    spec.write_text(f'[sweep]\nname = "s"\nnetworks = ["layerpipe_sample", "two.csv"]\narrays = ["8x8"]\n'
                    f'batches = [2]\nprocessors = [{processors}]\nmethods = [{methods}]\n', encoding="utf-8")
    return spec


def test_too_many_processors_for_a_network_are_skipped_and_none_left_is_refused_before_any_unit(tmp_path, capsys):
    spec = _spec(tmp_path, "2, 3")  # two.csv's 2 layers are 2 layer groups: PipeDream's point at 3 is skipped
    assert main(["sweep", str(spec), "--out", str(tmp_path / "r"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "skipped 1 of 8 (network, processors, method) points" in err and "two has 2 layer groups" in err
    rows = (tmp_path / "r" / "results.csv").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 1 + 2 * 2 * 2 - 1  # header, 2 networks × 2 counts × 2 methods, less the skipped point
    spec = _spec(tmp_path, "5", methods='"pipedream"')  # above both networks' layer groups: nothing left
    line = clean_error(capsys, "sweep", spec, "--out", tmp_path / "none", "--quiet")
    assert str(spec) in line and "network 'layerpipe_sample'" in line and "takes 1–4 processors, not 5" in line
    assert not (tmp_path / "none").exists()  # nothing computed, nothing cached


def test_counts_the_network_has_run_and_layerpipe_alone_may_ask_more(tmp_path, capsys):
    assert main(["sweep", str(_spec(tmp_path, "2")), "--out", str(tmp_path / "a"), "--quiet"]) == 0
    spec = _spec(tmp_path, "2, 3", methods='"layerpipe"')  # δ splits fill a third processor
    assert main(["sweep", str(spec), "--out", str(tmp_path / "b"), "--quiet"]) == 0
    capsys.readouterr()
    rows = (tmp_path / "b" / "results.csv").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 1 + 2 * 2  # header, 2 networks × 2 processor counts


def test_the_check_costs_with_the_analytic_model_only(tmp_path, monkeypatch):
    """Layer groups are the graph's: a cycle-engine sweep's check must not run the cycle engine."""
    from archsim.sweep import load_spec, units

    spec = _spec(tmp_path, "2")
    spec.write_text(spec.read_text(encoding="utf-8") + 'engine = "cycle"\n', encoding="utf-8")
    engines = []
    real = units.build_profile
    monkeypatch.setattr(units, "build_profile", lambda *a, **k: engines.append(a[4]) or real(*a, **k))
    loaded = load_spec(spec)
    units.check_processor_counts(loaded.units(), loaded.source)
    assert engines == ["analytic", "analytic"]  # one profile per network
