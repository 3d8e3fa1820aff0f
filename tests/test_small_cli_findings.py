"""Small CLI findings from user trials: flags that changed nothing without a word, and file and flag names
in errors said in the form the rest of the CLI uses."""

from __future__ import annotations

import json

from archsim.cli import main

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
    assert err == "archsim pipeline: error: field 'sram-kb': expected one or three positive integers, got 'abc'\n"


def test_cost_reads_sram_kb_without_cycle_engine_so_says_nothing(capsys):
    areas = []
    for sizes in ("8", "4096"):
        assert main(["cost", "layerpipe_sample", "--sram-kb", sizes, "--format", "json"]) == 0
        out, err = capsys.readouterr()
        assert err == ""
        areas.append(json.loads(out)["meta"]["sram_mm2"])
    assert areas[0] < areas[1]  # the SRAMs' area follows --sram-kb under the analytic engine too
