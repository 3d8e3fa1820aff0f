"""``archsim train``'s meta and table state the peak per GPU its ``mfu`` divides by, ``peak_tflops_per_gpu`` (at the
run's dtype), for catalog GPUs and device files alike.

Failed before the fix: no such figure; a user computed it back from ``mfu`` and ``tflops_per_gpu``."""

from __future__ import annotations

import json

import pytest
from device_files import device_toml

from archsim.cli import main

MODEL = "gpt3_1.3b"


def _train(capsys, cluster, *flags: str) -> dict:
    assert main(["train", MODEL, "--cluster", str(cluster), "--global-batch", "8", "--format", "json", *flags]) == 0, \
        capsys.readouterr().err
    return json.loads(capsys.readouterr().out)["meta"]


def _chip_cluster(tmp_path):
    """Two chips of 4 arrays of 128 × 128 at 1000 MHz: 4 × 128 × 128 × 2 × 10⁹ = 131.072 TFLOP/s each."""
    (tmp_path / "chip.toml").write_text(device_toml(name="Chip", arrays=4, rows=128, cols=128, clock_mhz=1000,
                                                    sram_kib=3072, hbm_gib=96, hbm_gbps=2000, intra_gbps=400),
                                        encoding="utf-8")
    cluster = tmp_path / "c.toml"
    cluster.write_text('[cluster]\nname = "two"\n\n[[servers]]\ncount = 1\ngpus = 2\ndevice = "chip.toml"\n',
                       encoding="utf-8")
    return cluster


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32"])
def test_a_device_files_peak_is_its_pes_times_two_at_its_clock(tmp_path, capsys, dtype):
    meta = _train(capsys, _chip_cluster(tmp_path), "--dp", "2", "--dtype", dtype)
    assert meta["peak_tflops_per_gpu"] == pytest.approx(4 * 128 * 128 * 2 * 1e9 / 1e12, rel=1e-12)
    model = meta["tflops_per_gpu"]  # mfu is the model's TFLOP/s per GPU over that peak
    assert meta["mfu"] == pytest.approx(model / meta["peak_tflops_per_gpu"], rel=1e-9)


@pytest.mark.parametrize(("dtype", "datasheet"), [("fp16", 312.0), ("bf16", 312.0), ("fp32", 19.5)])
def test_a_catalog_gpus_peak_is_its_datasheets(tmp_path, capsys, dtype, datasheet):
    """NVIDIA A100 datasheet: 312 TFLOP/s dense FP16/BF16 on the tensor cores, 19.5 TFLOP/s FP32."""
    cluster = tmp_path / "a100.toml"
    cluster.write_text('[cluster]\nname = "a100"\n\n[[servers]]\ncount = 1\ngpus = 2\ngpu = "a100-80gb"\n',
                       encoding="utf-8")
    attention = ["--attention", "standard"] if dtype == "fp32" else []  # FlashAttention runs fp16/bf16 only
    meta = _train(capsys, cluster, "--dp", "2", "--dtype", dtype, *attention)
    assert meta["peak_tflops_per_gpu"] == pytest.approx(datasheet, rel=1e-12)


def test_the_table_states_it_too(tmp_path, capsys):
    assert main(["train", MODEL, "--cluster", str(_chip_cluster(tmp_path)), "--global-batch", "8", "--dp", "2"]) == 0
    assert "# peak_tflops_per_gpu: 131.1\n" in capsys.readouterr().out
