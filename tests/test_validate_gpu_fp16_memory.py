"""validate-gpu ``--dtype fp16|bf16`` on NeuSight-format CSVs prices each row once, at its dtype.

* A memory-bound row (elementwise, softmax, layer norm) moves 2-byte elements at fp16/bf16: its bytes
  (2 × elements × tensors) at the class's fitted achieved fraction of the datasheet bandwidth, plus
  the launch — hand-computed below from the T4's 320 GB/s and the fitted fractions, never from the
  code's output. (These pass on the code before the change too: it already counted 2 bytes there;
  they pin it.)
* A GEMM/BMM row is priced once, through train's kernel path (:func:`gemm_rows_seconds`); the code
  before priced it by the class mechanism first and threw that time away
  (:func:`test_a_gemm_row_is_priced_once` fails on it).
* fp32 rows take the same single call as before (the hand-computed fp32 rows above check their bytes).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archsim.cli import main
from archsim.devices.kernel_constants import FITTED
from archsim.validation import neusight

T4_BYTES_PER_S = 320e9  # the T4's datasheet HBM (GDDR6) bandwidth
# the rows: (op, B, H, tensors moved, the class's fitted fraction of bandwidth)
MEMORY_ROWS = [
    ("add", 32768, 1600, 3, FITTED.memory),  # tensor + tensor: two reads, one write
    ("relu", 4096, 1024, 2, FITTED.memory),  # one read, one write
    ("softmax", 4096, 1024, 2, FITTED.softmax),  # rows of ≤ 1,024 elements: the warp softmax, one read, one write
    ("ln", 4096, 1024, 3, FITTED.layernorm),  # a Welford pass, the normalizing pass, one write
]
CSV = "OPName,Latency,Device,B,M,N,K,H\n" + "".join(
    f"{op},1.0,Tesla T4,{b},,,,{h}\n" for op, b, h, _, _ in MEMORY_ROWS)


def _rows(tmp_path: Path, capsys, text: str, *flags: str) -> list[dict]:
    path = tmp_path / "kernels.csv"
    path.write_text(text)
    assert main(["validate-gpu", "--csv", str(path), "--gpu", "T4", "--format", "json", *flags]) == 0
    return json.loads(capsys.readouterr().out)["rows"]


@pytest.mark.parametrize(("dtype", "size"), [("fp16", 2), ("bf16", 2), ("fp32", 4)])
def test_a_memory_bound_row_moves_its_dtypes_bytes(tmp_path, capsys, dtype, size):
    rows = _rows(tmp_path, capsys, CSV, "--dtype", dtype)
    for row, (op, b, h, tensors, fraction) in zip(rows, MEMORY_ROWS, strict=True):
        nbytes = size * b * h * tensors  # add at fp16: 2 × 32,768 × 1,600 × 3 = 314,572,800 bytes
        expected = nbytes / (T4_BYTES_PER_S * fraction) + FITTED.launch_s
        assert row["op"] == op and row["predicted_seconds"] == pytest.approx(expected, rel=1e-12), op


def test_the_fp16_add_row_by_hand(tmp_path, capsys):
    """314,572,800 bytes / (320 GB/s × 0.769) = 1.27834 ms, + 16.0 µs launch = 1.29434 ms (at the
    shipped fit; the test above holds at any fit)."""
    if (FITTED.memory, FITTED.launch_s) != (0.769, 16.0e-6):
        pytest.skip("the fit moved: the figure above is the shipped fit's")
    rows = _rows(tmp_path, capsys, CSV, "--dtype", "fp16")
    assert rows[0]["predicted_seconds"] == pytest.approx(1.29434e-3, rel=1e-5)


def test_a_gemm_row_is_priced_once(tmp_path, capsys, monkeypatch):
    """Fails on the code before: kernel_seconds also priced the fp16 GEMM rows (thrown away after)."""
    priced: list[str] = []
    by_class = neusight.kernel_seconds

    def spy(rows, *args, **kwargs):
        priced.extend(str(op) for op in rows["op"])
        return by_class(rows, *args, **kwargs)

    gemm_calls: list[list[int]] = []
    by_train = neusight.gemm_rows_seconds

    def gemm_spy(rows, *args, **kwargs):
        gemm_calls.append([int(line) for line in rows["line"]])
        return by_train(rows, *args, **kwargs)

    monkeypatch.setattr(neusight, "kernel_seconds", spy)
    monkeypatch.setattr(neusight, "gemm_rows_seconds", gemm_spy)
    text = CSV + "linear,1.0,Tesla T4,1,512,1024,768,\nbmm,1.0,Tesla T4,16,128,64,128,\n"
    rows = _rows(tmp_path, capsys, text, "--dtype", "fp16")
    assert sorted(priced) == sorted(op for op, *_ in MEMORY_ROWS)  # the memory-bound rows, once each
    assert gemm_calls == [[6, 7]]  # the two GEMM rows (lines 6, 7), once, by train's path
    assert all(row["predicted_seconds"] > 0 for row in rows)
