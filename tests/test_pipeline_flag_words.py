"""``pipeline``'s LayerPipe-only flags beside another ``--method`` are refused in one line that names the flags as
the user typed them, ``--method`` with its value; it used to lead with a field label, ``field 'method'``, a name
the command line never shows. The API keeps its keyword's name (``method=``): it has no such check to share."""

from __future__ import annotations

import pytest
from test_robustness import clean_error


@pytest.mark.parametrize(("flags", "first"), [
    (["--method", "pipedream", "--dfg", "plan.json"], "--dfg writes LayerPipe's pipelined training DFG"),
    (["--method", "gpipe", "--alpha", "1.1"], "--alpha tunes LayerPipe's Algorithm 1"),
    (["--method", "ooo", "--split-axes", "rows"], "--split-axes tunes LayerPipe's Algorithm 1"),
])
def test_a_layerpipe_flag_beside_another_method_names_the_flags_typed(flags, first, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # --dfg plan.json would be written here
    line = clean_error(capsys, "pipeline", "layerpipe_sample", "--processors", "2", *flags)
    assert line.startswith(f"archsim pipeline: error: {first}"), line
    assert f"--method {flags[1]} does not" in line and line.endswith("give it with --method layerpipe")
    assert "field" not in line
    assert not (tmp_path / "plan.json").exists()
