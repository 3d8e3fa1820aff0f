"""A sweep report takes seconds to draw (plotly's import, per-network figures, the page: 2–3 s for
configs/sweeps/layerpipe_paper.toml on two shared cores), and until 2026-12-06 ``archsim report`` and
``sweep --report`` drew it in silence after the sweep's bar had gone: on a terminal a bar names its phases."""

from __future__ import annotations

import pytest

from archsim import cli, progress

SPEC = ('[sweep]\nname = "bar"\nnetworks = ["layerpipe_sample"]\narrays = ["16x16"]\nbatches = [4]\n'
        'processors = [2]\nmethods = ["layerpipe", "pipedream"]\nmode = "paper"\n')
PHASES = ("load plotly", "per-layer and Gantt sections", "figures and page")


@pytest.fixture
def spec(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SPEC)
    return path


def test_report_names_its_phases_on_a_terminal(spec, tmp_path, capsys, monkeypatch):
    assert cli.main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    capsys.readouterr()
    monkeypatch.setattr(progress, "on_terminal", lambda stream=None: True)
    assert cli.main(["report", str(tmp_path / "out"), "--out", str(tmp_path / "r.html")]) == 0
    err = capsys.readouterr().err
    assert "report out:" in err and "phase" in err
    assert all(name in err for name in PHASES), err
    assert err.rstrip().endswith(f"wrote {tmp_path / 'r.html'}")  # the bar gone before the run's last line


def test_sweep_report_draws_its_bar_after_the_sweeps_and_quiet_draws_neither(spec, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(progress, "on_terminal", lambda stream=None: True)
    assert cli.main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--report", str(tmp_path / "r.html")]) == 0
    err = capsys.readouterr().err
    assert err.index("sweep bar:") < err.index("report out:") and PHASES[-1] in err
    assert cli.main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--report", str(tmp_path / "r.html"),
                     "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "bar:" not in err and "phase" not in err


def test_off_a_terminal_the_report_draws_no_bar(spec, tmp_path, capsys):
    assert cli.main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--report", str(tmp_path / "r.html")]) == 0
    err = capsys.readouterr().err
    assert "phase" not in err and "report out" not in err


def test_a_sweep_stopped_while_its_report_is_drawn_says_what_is_kept(spec, tmp_path, capsys, monkeypatch):
    """Ctrl-C (or SIGTERM) after the sweep, while the report was drawn, said only ``interrupted``: every
    configuration is cached then, and results.csv and the report are not written (one set of files, or none)."""
    from archsim.sweep import report

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    kept = tmp_path / "r.html"
    kept.write_text("a report of mine")
    monkeypatch.setattr(report, "write_report", stopped)
    out = tmp_path / "out"
    assert cli.main(["sweep", str(spec), "--out", str(out), "--report", str(kept)]) == 130
    err = capsys.readouterr().err
    assert err == (f"archsim sweep: error: interrupted: all 2 configurations are cached in {out}; the same command "
                   f"writes results.csv and the report from them\n")
    assert kept.read_text() == "a report of mine" and not (out / "results.csv").exists()
