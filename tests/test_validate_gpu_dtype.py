"""validate-gpu ``--dtype`` on NeuSight-format kernel CSVs (no dtype column): fp16/bf16 rows were priced as
fp32 with no word of it (these tests fail on the code before ``--dtype``: the flag did not exist, exit 2).

References: a fp16 GEMM row's time is the time ``train``'s kernel path gives that GEMM
(:func:`archsim.devices.kernel_ops.op_seconds` with the families :class:`archsim.training.machine.Machine`
takes, :func:`~archsim.devices.kernel_ops.kernel_families`), the launch aside (a kernel timed alone pays
NeuSight's, a training step vTrain's gap); fp32 stays the kernel model's own
:func:`archsim.devices.kernels.kernel_seconds`, and the default output is ``--dtype fp32``'s byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archsim.cli import main
from archsim.devices.device import catalog_device
from archsim.devices.gpu_lookup import BOARD_OF_CHIP
from archsim.devices.kernel_constants import FITTED
from archsim.devices.kernel_ops import kernel_families, op_seconds
from archsim.devices.kernels import kernel_seconds
from archsim.lowering import Gemm, TrainingOp
from archsim.training.fitted import kernels

# NeuSight's columns: out is M × K, N the reduction (archsim's M=4096, N=8192, K=2048 on line 2)
CSV = ("OPName,Latency,Device,B,M,N,K,H\n"
       "linear,1.0,NVIDIA A100-SXM4-80GB,1,4096,2048,8192,\n"
       "bmm,0.2,NVIDIA A100-SXM4-80GB,16,512,64,512,\n"
       "softmax,0.05,NVIDIA A100-SXM4-80GB,4096,,,,1024\n")
ROWS = [(1, 4096, 2048, 8192), (16, 512, 512, 64)]  # (B, archsim's M, K, N) of the GEMM rows


def _json(tmp_path: Path, capsys, *flags: str) -> tuple[str, dict]:
    path = tmp_path / "kernels.csv"
    path.write_text(CSV)
    assert main(["validate-gpu", "--csv", str(path), "--gpu", "A100", "--format", "json", *flags]) == 0
    out = capsys.readouterr().out
    return out, json.loads(out)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_a_gemm_row_at_fp16_is_trains_kernel_time(tmp_path, capsys, dtype):
    _, result = _json(tmp_path, capsys, "--dtype", dtype)
    assert result["meta"]["dtype"] == dtype
    device = catalog_device(BOARD_OF_CHIP["a100-80gb"])
    families = kernel_families(device, dtype, kernels(device.name))  # what Machine.kernels gives train
    for row, (b, m, k, n) in zip(result["rows"], ROWS, strict=False):
        step = op_seconds([TrainingOp("x", "F", (Gemm(m, k, n, b),))], device, families, dtype)[0]
        # a kernel timed alone pays NeuSight's launch, not the training step's gap between kernels
        assert row["predicted_seconds"] == pytest.approx(step - families.gemm.launch_s + FITTED.launch_s, rel=1e-12)


def test_fp16_differs_from_fp32_on_a_compute_bound_gemm(tmp_path, capsys):
    _, fp32 = _json(tmp_path, capsys)
    _, fp16 = _json(tmp_path, capsys, "--dtype", "fp16")
    # 4096 × 8192 × 2048: 137 GFLOP, the A100's 19.5 TFLOP/s FP32 lanes against its 312 TFLOP/s tensor cores
    assert fp32["rows"][0]["predicted_seconds"] > 5 * fp16["rows"][0]["predicted_seconds"]
    assert "dtype" not in fp32["meta"] and "fp32" in fp32["meta"]["kernel_model"]


def test_the_default_is_fp32_byte_for_byte(tmp_path, capsys):
    default, result = _json(tmp_path, capsys)
    explicit, _ = _json(tmp_path, capsys, "--dtype", "fp32")
    assert default == explicit
    from archsim.devices.catalog import KNOWN_GPUS

    b, m, k, n = ROWS[0]  # the kernel model's own fp32 time, as before the flag
    reference = kernel_seconds({"op": ["linear"], "B": [b], "M": [m], "N": [n], "K": [k]}, KNOWN_GPUS["a100-80gb"])
    assert result["rows"][0]["predicted_seconds"] == reference[0]


def test_dtype_is_refused_on_archsims_measured_csvs(capsys):
    measured = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "deepbench_t4_kernels.csv"
    assert main(["validate-gpu", "--csv", str(measured), "--dtype", "fp16"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--dtype" in err, err
