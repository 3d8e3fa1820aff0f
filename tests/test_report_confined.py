"""`archsim report DIR` reads nothing outside DIR (docs/security.md: names stay inside their folder):
a network file that a results.csv names elsewhere is not read, not even hashed, and a Python file
is never run; one line says so and the report is built from the results alone."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from archsim.cli import main
from tests.test_user_networks import CSV

SPEC = ('[sweep]\nname = "own"\nnetworks = ["nets/mynet.csv"]\narrays = ["8x8"]\nbatches = [2]\nprocessors = [2]\n'
        'methods = ["layerpipe"]\nmode = "exact"\n')
BREAKDOWN = "per-layer F/G/D cycles"


def sweep(folder: Path, out: Path) -> Path:
    (folder / "nets").mkdir(exist_ok=True)
    (folder / "nets" / "mynet.csv").write_text(CSV)
    (folder / "spec.toml").write_text(SPEC)
    assert main(["sweep", str(folder / "spec.toml"), "--out", str(out), "--quiet", "--report",
                 str(folder / "own.html")]) == 0
    assert BREAKDOWN in (folder / "own.html").read_text()  # the sweep's own report reads its spec's network
    return out


def renamed(results: Path, path: str, sha256: str = "") -> None:
    frame = pd.read_csv(results / "results.csv", keep_default_na=False)
    frame["network_path"], frame["network_sha256"] = path, sha256
    frame.to_csv(results / "results.csv", index=False)


@pytest.mark.long
def test_a_network_outside_the_folder_is_not_read(tmp_path, capsys):
    results = sweep(tmp_path, tmp_path / "results")
    target = tmp_path / "again.html"
    assert main(["report", str(results), "--out", str(target)]) == 0
    err = capsys.readouterr().err
    assert "not read" in err and "mynet.csv" in err and err.count("note:") == 1
    assert BREAKDOWN not in target.read_text() and "layerpipe" in target.read_text()


@pytest.mark.parametrize("hostile", ["{outside}/secret.csv", "../secret.csv", "{outside}/evil.py:Net", "evil.py:Net"])
def test_a_hostile_network_path_reads_and_runs_nothing(tmp_path, capsys, hostile):
    results = sweep(tmp_path, tmp_path / "results")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.csv").write_text(CSV)
    (tmp_path / "secret.csv").write_text(CSV)
    marker = tmp_path / "ran"
    for folder in (outside, results):
        (folder / "evil.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    renamed(results, hostile.format(outside=outside), sha256="0" * 64)  # a wrong hash: reading it would fail
    assert main(["report", str(results), "--out", str(tmp_path / "r.html")]) == 0
    assert "not read" in capsys.readouterr().err and not marker.exists()
    assert BREAKDOWN not in (tmp_path / "r.html").read_text()


@pytest.mark.long
def test_a_network_inside_the_folder_is_read_and_checked(tmp_path, capsys):
    results = sweep(tmp_path, tmp_path)  # the spec's folder is the results folder: its network is inside
    assert main(["report", str(results), "--out", str(tmp_path / "a.html")]) == 0
    assert BREAKDOWN in (tmp_path / "a.html").read_text() and "note:" not in capsys.readouterr().err
    path = tmp_path / "nets" / "mynet.csv"
    path.write_text(CSV.replace("c3, 16, 16, 3, 3, 32, 32", "c3, 16, 16, 3, 3, 32, 64"))
    assert main(["report", str(results), "--out", str(tmp_path / "b.html")]) == 2
    assert "changed since the sweep ran" in capsys.readouterr().err and not (tmp_path / "b.html").exists()


@pytest.mark.long
def test_a_shipped_name_reads_layers(tmp_path, capsys):
    results = sweep(tmp_path, tmp_path / "results")
    renamed(results, "layerpipe_sample")
    assert main(["report", str(results), "--out", str(tmp_path / "s.html")]) == 0
    assert "note:" not in capsys.readouterr().err and BREAKDOWN in (tmp_path / "s.html").read_text()


@pytest.mark.long
def test_the_api_reads_the_spec_it_is_given(tmp_path, capsys):
    import archsim

    results = sweep(tmp_path, tmp_path / "results")
    archsim.write_report(results, out=tmp_path / "alone.html")
    assert "not read" in capsys.readouterr().err and BREAKDOWN not in (tmp_path / "alone.html").read_text()
    archsim.write_report(results, out=tmp_path / "with.html", spec=tmp_path / "spec.toml")
    assert "note:" not in capsys.readouterr().err and BREAKDOWN in (tmp_path / "with.html").read_text()
