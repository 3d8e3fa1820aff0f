"""``archsim gemm --sram-kb`` without ``--engine cycle``: the analytic engine's figures do not depend on the
SRAM sizes, so the flag is said to be unused (one stderr line) rather than dropped without a word."""

from __future__ import annotations

import json

import pytest

from archsim.cli import main

GEMM = ["gemm", "--m", "64", "--k", "96", "--n", "80", "--format", "json"]
UNUSED = ("archsim gemm: warning: --sram-kb is not used without --engine cycle: gemm's analytic cycles and SRAM "
          "reads do not depend on the SRAM sizes (--engine cycle adds the stalls and DRAM traffic they set)")


def _gemm(capsys, *extra: str) -> tuple[list[dict], str]:
    assert main([*GEMM, *extra]) == 0
    out, err = capsys.readouterr()
    return json.loads(out)["rows"], err


def test_analytic_gemm_says_sram_kb_is_unused(capsys):
    plain, err = _gemm(capsys)
    assert err == ""
    for sizes in ("8", "1,2,4"):
        rows, err = _gemm(capsys, "--sram-kb", sizes)
        assert err.splitlines() == [UNUSED]
        assert rows == plain  # what the warning says: not one figure moves


@pytest.mark.long  # the cycle engine's first call compiles it (numba)
def test_cycle_gemm_uses_sram_kb_without_the_warning(capsys):
    small, err = _gemm(capsys, "--engine", "cycle", "--sram-kb", "1")
    assert err == ""
    large, _ = _gemm(capsys, "--engine", "cycle", "--sram-kb", "64")
    assert small[0]["ifmap_dram_reads"] > large[0]["ifmap_dram_reads"]  # small SRAMs refetch from DRAM


def test_malformed_sram_kb_is_refused_without_cycle_engine(capsys):
    assert main([*GEMM, "--sram-kb", "abc"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == ["archsim gemm: error: argument --sram-kb: expected one or three positive integers, got 'abc'"]
