"""Small CLI findings from user trials: flags that changed nothing without a word, and file and flag names
in errors said in the form the rest of the CLI uses."""

from __future__ import annotations

import json

import pytest

from archsim.cli import main
from archsim.errors import InputError
from archsim.toml_errors import parse_toml

PIPELINE = ["pipeline", "layerpipe_sample", "--processors", "2", "--format", "json"]
PIPELINE_UNUSED = ("archsim pipeline: warning: --sram-kb is not used without --engine cycle: pipeline's analytic "
                   "layer cycles and stage costs do not depend on the SRAM sizes (--engine cycle adds the stalls "
                   "and DRAM traffic they set)")


def _pipeline(capsys, *extra: str) -> tuple[dict, str]:
    assert main([*PIPELINE, *extra]) == 0
    out, err = capsys.readouterr()
    return json.loads(out), err


def test_analytic_pipeline_says_sram_kb_is_unused(capsys):
    plain, err = _pipeline(capsys)
    assert err == ""
    for sizes in ("8", "4096"):
        result, err = _pipeline(capsys, "--sram-kb", sizes)
        assert err.splitlines() == [PIPELINE_UNUSED]
        assert result == plain  # what the warning says: not one figure moves


def test_pipeline_refuses_a_malformed_sram_kb_without_the_warning(capsys):
    assert main([*PIPELINE, "--sram-kb", "abc"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "archsim pipeline: error: argument --sram-kb: expected one or three positive integers, got 'abc'\n"


def test_cost_reads_sram_kb_without_cycle_engine_so_says_nothing(capsys):
    areas = []
    for sizes in ("8", "4096"):
        assert main(["cost", "layerpipe_sample", "--sram-kb", sizes, "--format", "json"]) == 0
        out, err = capsys.readouterr()
        assert err == ""
        areas.append(json.loads(out)["meta"]["sram_mm2"])
    assert areas[0] < areas[1]  # the SRAMs' area follows --sram-kb under the analytic engine too


def test_a_toml_syntax_error_is_located_like_every_file_error(tmp_path, capsys, monkeypatch):
    """The line was inside the message ('not valid TOML (Invalid value (at line 2, column 8))'), not in the
    ``FILE, line N:`` form the other file errors use."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.toml").write_text('name = "x"\nrows = \n')
    assert main(["plan", "layerpipe_sample", "--microbatches", "4", "--cluster", "bad.toml"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "archsim plan: error: bad.toml, line 2: not valid TOML (Invalid value, column 8)\n"


@pytest.mark.parametrize(("text", "line", "message"), [
    ("a = 1\n\n[table\n", 3, "not valid TOML (Expected ']' at the end of a table declaration, column 7)"),
    ("a = 1\na = 2\n", 2, "not valid TOML (Cannot overwrite a value, column 6)"),
])
def test_parse_toml_carries_the_line_as_a_location(text, line, message):
    with pytest.raises(InputError) as caught:
        parse_toml(text, "f.toml")
    assert (caught.value.where.file, caught.value.where.line, caught.value.message) == ("f.toml", line, message)
    assert "at line" not in str(caught.value)


def test_a_toml_error_at_the_end_of_the_file_names_no_line():
    with pytest.raises(InputError) as caught:
        parse_toml('a = "open', "f.toml")
    assert caught.value.where.line is None
    assert str(caught.value) == "f.toml: not valid TOML (Unterminated string (at end of document))"


@pytest.mark.parametrize("typed", ["-o", "--out"])
def test_a_suffix_mismatch_names_the_flags_long_form(tmp_path, capsys, typed):
    """``import -o``'s long form is ``--out`` (the one the docs use); the warning named ``-o`` even after ``--out``."""
    target = tmp_path / "x.onnx.json"
    assert main(["import", "layerpipe_sample", typed, str(target)]) == 0
    err = capsys.readouterr().err  # after the "wrote FILE (…)" line
    expected = (f"archsim import: warning: --out writes CSV into {target}, whose suffix .json says JSON; "
                "CSV files are normally named *.csv")
    assert [line for line in err.splitlines() if "warning" in line] == [expected]


def test_an_output_over_the_input_names_the_flags_long_form(tmp_path, capsys):
    """The other errors that name an output flag say it the same way (``import``'s model kept, not replaced)."""
    model = tmp_path / "net.csv"
    assert main(["import", "layerpipe_sample", "-o", str(model)]) == 0
    before = model.read_bytes()
    capsys.readouterr()
    assert main(["import", str(model), "-o", str(model)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and model.read_bytes() == before
    assert err.startswith("archsim import: error: ") and "--out names this run's input (MODEL)" in err
    assert " -o " not in err
