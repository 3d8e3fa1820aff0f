"""A sweep spec whose ``only`` keeps no layer of a network is refused in one line naming the spec file and the
``only`` key's line, as the spec's other key errors are (it used to name neither), before anything is written."""

from __future__ import annotations

from test_robustness import clean_error

from archsim.api import run_sweep
from archsim.errors import InputError

SPEC = '[sweep]\nname = "s"\nnetworks = ["ffnn8"]\narrays = ["8x8"]\nbatches = [2]\nprocessors = [2]\n' \
       'methods = ["layerpipe"]\nonly = ["conv"]\n'  # only is line 8; ffnn8 has fc layers alone


def test_only_without_the_networks_kinds_names_the_spec_file_and_line(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC, encoding="utf-8")
    line = clean_error(capsys, "sweep", spec, "--out", tmp_path / "r", "--quiet")
    assert line.startswith(f"archsim sweep: error: {spec}, line 8, field 'only': ")
    assert "network 'ffnn8' has no layers of kind conv" in line
    assert not (tmp_path / "r").exists()  # refused before the folder is made


def test_the_api_error_carries_the_file_and_line(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC, encoding="utf-8")
    try:
        run_sweep(str(spec), out=tmp_path / "r")
    except InputError as exc:
        assert (exc.where.file, exc.where.line, exc.where.field) == (str(spec), 8, "only")
    else:
        raise AssertionError("no error")
