"""archsim.console.library_say, the one way archsim.gemm, archsim.cluster_jobs and archsim.validate_gpu say their
run's notes: each a UserWarning at the line of the caller's own code that called the library function."""

from __future__ import annotations

import warnings
from pathlib import Path

from device_files import device_toml

import archsim

# 8 arrays of 64 × 64 in one TOML: gemm notes the device's arrays and the cycle engine's words per cycle
CHIP = device_toml(name="MyChip", arrays=8, arrays_per_core=2, rows=64, cols=64, dataflow="ws", clock_mhz=1200,
                   sram_kib=3072, hbm_gib=96, hbm_gbps=2000, intra_gbps=400, links=4)


def _said(call) -> list[str]:
    """The file each warning ``call`` raises points at (this one's: the caller's line, in the lambda)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [Path(w.filename).name for w in caught]


def test_gemms_notes_point_at_the_callers_line(tmp_path):
    chip = tmp_path / "chip.toml"
    chip.write_text(CHIP, encoding="utf-8")
    assert _said(lambda: archsim.gemm(m=64, k=64, n=64, config=chip, engine="cycle")) == [Path(__file__).name] * 2


def test_cluster_jobs_note_points_at_the_callers_line():
    said = _said(lambda: archsim.cluster_jobs(trace="synthetic", jobs=3, gpus=8, gpus_per_machine=16))
    assert said == [Path(__file__).name]  # gpus_per_machine above gpus: one note
