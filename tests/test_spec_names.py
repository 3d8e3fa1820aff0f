"""A sweep spec reads nothing outside its folder (issue 39, P1): every name it uses is a file inside
the spec's folder or a shipped name, resolved inside the shipped folder. Before the fix an energy
table without `.toml` (`/etc/passwd`, or a file of the working folder) was opened and parsed, and a
network name that was no file beside the spec read a file of that name in the working folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_robustness import clean_error, write

from archsim.cli import main
from archsim.validate import shipped_configs

ROOT = Path(__file__).resolve().parents[1]
SPEC = ('[sweep]\nnetworks = [{network}]\narrays = ["16x16"]\nbatches = [4]\nprocessors = [2]\nmethods = ["gpipe"]\n'
        'clocks_ghz = [1.0]\n{tables}')
TABLE = Path(str(shipped_configs("energy") / "horowitz45.toml")).read_text(encoding="utf-8")  # a valid table
NETWORK = (ROOT / "layers" / "layerpipe_sample.csv").read_text(encoding="utf-8")  # a valid network


@pytest.fixture
def place(tmp_path, monkeypatch):
    """A spec folder and, apart from it, a working folder holding readable files a spec might name."""
    specs, work = tmp_path / "specs", tmp_path / "work"
    specs.mkdir()
    work.mkdir()
    write(work / "mytable", TABLE)
    write(work / "mytable.toml", TABLE)
    write(work / "mynet", NETWORK)
    monkeypatch.chdir(work)
    return specs, work


def sweep(specs: Path, network: str = '"layerpipe_sample"', tables: str = "") -> list[str]:
    spec = write(specs / "s.toml", SPEC.format(network=network, tables=tables))
    return ["sweep", str(spec), "--out", str(specs.parent / "out"), "--quiet"]


@pytest.mark.parametrize("table", ["/etc/passwd", "/etc/hostname", "{work}/mytable", "{work}/mytable.toml",
                                   "mytable", "../work/mytable", "../work/mytable.toml", "horowitz45/../../x"])
def test_an_energy_table_outside_the_folder_is_refused(place, capsys, table):
    specs, work = place
    argv = sweep(specs, tables=f'energy_tables = ["{table.format(work=work)}"]\n')
    line = clean_error(capsys, *argv)
    assert "energy_tables" in line and ("inside" in line or "unknown energy table" in line), line
    assert not (specs.parent / "out").exists()


@pytest.mark.parametrize("network", ['"mynet"', '"../work/mynet"', '"/etc/passwd"'])
def test_a_network_outside_the_folder_is_refused(place, capsys, network):
    specs, _ = place
    line = clean_error(capsys, *sweep(specs, network=network))
    assert "networks" in line, line
    assert not (specs.parent / "out").exists()


def test_a_symlink_out_of_the_folder_is_refused(place, capsys):
    specs, work = place
    (specs / "t.toml").symlink_to(work / "mytable.toml")
    line = clean_error(capsys, *sweep(specs, tables='energy_tables = ["t.toml"]\n'))
    assert "resolves outside" in line


def test_names_inside_the_folder_and_shipped_names_work(place, capsys):
    specs, _ = place
    write(specs / "mytable.toml", TABLE)
    write(specs / "net.csv", NETWORK)
    assert main(sweep(specs, network='"net.csv", "layerpipe_sample"',
                      tables='energy_tables = ["mytable.toml", "horowitz45"]\n')) == 0
    capsys.readouterr()
