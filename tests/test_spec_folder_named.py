"""A spec given by a bare relative path (``archsim sweep s.toml``) still names its folder when a network
entry tries to leave it: the folder is ``Path("s.toml").parent`` = ``.``, whose ``name`` is empty, and the
error read "must stay inside /", the root, which is not where the file must stay."""

from pathlib import Path

from archsim.cli import main

SPEC = '[sweep]\nnetworks = ["../x"]\narrays = ["32x32"]\nbatches = [16]\nmethods = ["layerpipe"]\nprocessors = [2]\n'


def test_a_relative_specs_escape_error_names_its_folder(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "myspecs"
    folder.mkdir()
    (folder / "s.toml").write_text(SPEC)
    monkeypatch.chdir(folder)
    assert main(["sweep", "s.toml"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["archsim sweep: error: s.toml, line 2, field 'networks': network file name must stay inside myspecs/: '../x'"]
    assert sorted(p.name for p in Path(folder).iterdir()) == ["s.toml"]  # nothing written
