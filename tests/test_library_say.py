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


def test_a_cluster_files_warning_points_at_the_callers_line(tmp_path):
    """The cluster file's warnings were said one call deeper than the run's notes, so they pointed inside archsim."""
    file = tmp_path / "c.toml"
    file.write_text('[cluster]\nname = "w"\ninter_server_gbps = 100000\n\n'
                    '[[servers]]\ngpu = "v100-32gb"\ngpus = 4\ncount = 2\n')  # a NIC above any sold: warned
    said = _said(lambda: archsim.cluster_jobs(cluster=str(file), jobs=3))
    assert said and set(said) == {Path(__file__).name}, said
