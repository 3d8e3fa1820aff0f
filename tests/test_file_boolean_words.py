"""A boolean where a file wants a number is quoted as the file spells it: a sweep spec's ``batches = [true]``
was told ``got 'True' among them``, Python's word for a value the user wrote as ``true``."""

from __future__ import annotations

import pytest

from archsim import cli


@pytest.mark.parametrize("written, said", [("true", "true"), ("false", "false")])
def test_a_toml_boolean_among_numbers_is_quoted_as_written(tmp_path, capsys, written, said):
    spec = tmp_path / "s.toml"
    spec.write_text(f'[sweep]\nname = "b"\nnetworks = ["layerpipe_sample"]\narrays = ["16x16"]\n'
                    f'batches = [8, {written}]\nprocessors = [2]\nmethods = ["layerpipe"]\n')
    assert cli.main(["sweep", str(spec), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"field 'batches': expected a non-empty list of integers in 1…2147483647, got the boolean {said} among them" \
        in err
    assert "True" not in err and "False" not in err
    assert not (tmp_path / "out").exists()  # refused before anything is written
