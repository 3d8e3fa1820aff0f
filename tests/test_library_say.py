"""archsim.console.library_say, the one way archsim.gemm, archsim.cluster_jobs and archsim.validate_gpu say their
run's notes: each a UserWarning at the line of the caller's own code that called the library function."""

from __future__ import annotations

import warnings
from pathlib import Path

import archsim


def _said(call) -> list[str]:
    """The file each warning ``call`` raises points at (this one's: the caller's line, in the lambda)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [Path(w.filename).name for w in caught]


def test_gemms_warning_points_at_the_callers_line():
    said = _said(lambda: archsim.gemm(m=4, k=4, n=4, sram_kb=64))
    assert said == [Path(__file__).name]  # sram_kb unread by the analytic engine: one warning


def test_cluster_jobs_note_points_at_the_callers_line():
    said = _said(lambda: archsim.cluster_jobs(trace="synthetic", jobs=3, gpus=8, gpus_per_machine=16))
    assert said == [Path(__file__).name]  # gpus_per_machine above gpus: one note
