"""``train --fp8`` on a device's arrays writes each fp8 GEMM's result C in the training dtype: A and B at 1 byte an
element, C at 2 (bf16), as Transformer Engine's fp8 GEMMs do and the tile path counts them (until 2026-12-05 the
array path counted C at 1 byte too). ``cost --dtype fp8`` asks another question, every operand fp8, C too: where
the HBM binds the two differ by C's bytes, m·n at 1 byte. References: hand counts of each GEMM's bytes over the
HBM rate, and SCALE-Sim's DRAM words (:func:`archsim.array.dram_traffic.gemm_dram_traffic`) by the documented rule."""

from __future__ import annotations

import pytest
from api_parity_helpers import cli_json
from device_files import device_toml, write_file
from test_docs import ROOT

from archsim.array.dram_traffic import gemm_dram_traffic
from archsim.devices.device_file import load_device
from archsim.devices.kernel_ops import array_gemm_hbm_bytes

HBM = 100e9  # bytes/s: so slow that every fc1 GEMM of GPT-2 below waits on its HBM bytes, not its folds
SLOW_TPU = (ROOT / "configs" / "devices" / "tpu_v4_like.toml").read_text(encoding="utf-8").replace(
    'dataflow = "ws"\n', 'dataflow = "ws"\nmacs_per_pe = { fp8 = 2 }\n').replace(
    "hbm_gbps = 1200\n", f"hbm_gbps = {HBM / 1e9:g}\n")
CLUSTER = '[cluster]\nname = "c"\n[[servers]]\ncount = 1\ngpus = 1\nintra_server_gbps = 4800\ndevice = "chip.toml"\n'
FC1 = ("Layer name,IFMAP Height,IFMAP Width,Filter Height,Filter Width,Channels,Num Filter,Strides,Type\n"
       "fc1,1,1,1,1,768,3072,1,fc\n")


def _fc1_rows(tmp_path, capsys) -> dict[str, dict]:
    """``train gpt2 --fp8 hybrid``'s fc1 rows (F, G, D) on one slow-HBM TPU-v4-like chip whose arrays run fp8 at 2."""
    write_file(tmp_path, "chip.toml", SLOW_TPU)
    cluster = write_file(tmp_path, "c.toml", CLUSTER)
    train = cli_json(["train", "gpt2", "--cluster", str(cluster), "--global-batch", "1", "--dtype", "bf16",
                      "--attention", "standard", "--fp8", "hybrid"], capsys)
    return {r["op"]: r for r in train["rows"] if r["name"] == "fc1"}


def test_train_fp8_writes_c_at_the_training_dtype_on_arrays(tmp_path, capsys):
    """fc1 (1024 tokens, 768 → 3072; the TPU-like file states no launch): forward out[1024×3072] = x[1024×768] ·
    W[768×3072], weight gradient dW[768×3072] = xᵀ[768×1024] · dy[1024×3072], input gradient dx[1024×768] =
    dy[1024×3072] · Wᵀ[3072×768]; each A + B at 1 byte and C at 2, over 100 GB/s (the folds take 12 µs or less)."""
    rows = _fc1_rows(tmp_path, capsys)
    for op, (m, k, n) in {"F": (1024, 768, 3072), "G": (768, 1024, 3072), "D": (1024, 3072, 768)}.items():
        assert (rows[op]["m"], rows[op]["k"], rows[op]["n"]) == (m, k, n)
        assert rows[op]["seconds"] == pytest.approx(((m * k + k * n) * 1 + m * n * 2) / HBM, rel=1e-12)


def test_cost_fp8_writes_c_in_fp8_so_differs_by_cs_bytes_where_the_hbm_binds(tmp_path, capsys):
    """``cost --dtype fp8``: every word 1 byte, C too, so its chip seconds of fc1's forward are (A + B + C) · 1 byte
    over the HBM rate, train's fp8 row m·n bytes more (compute-bound, as on the shipped file's 1200 GB/s, they are
    one figure: tests/test_fp8_array_commands.py)."""
    forward = _fc1_rows(tmp_path, capsys)["F"]
    cost = cli_json(["cost", str(write_file(tmp_path, "fc.csv", FC1)), "--batch", "1024", "--config",
                     str(tmp_path / "chip.toml"), "--dtype", "fp8"], capsys)
    m, k, n = 1024, 768, 3072
    assert cost["rows"][0]["F_chip_seconds"] == pytest.approx((m * k + k * n + m * n) / HBM, rel=1e-12)
    assert forward["seconds"] - cost["rows"][0]["F_chip_seconds"] == pytest.approx(m * n / HBM, rel=1e-9)


def test_scalesim_traffic_sizes_the_ofmap_writes_at_cs_bytes(tmp_path):
    """A ``dram_traffic = "scalesim"`` device: the fp8 GEMM's ifmap and filter reads at 1 byte, its ofmap writes (the
    ofmap demand, M·N·⌈K / R⌉ under ws: 3 row folds here) at C's 2, the reads SCALE-Sim's count at 1-byte words on one
    32 × 32 ws array (3072 KiB / 3 a buffer, 10 GB/s at 1 GHz: 10 words a cycle)."""
    text = device_toml(name="chip", arrays=1, rows=32, cols=32, dataflow="ws", clock_mhz=1000, sram_kib=3072,
                       hbm_gib=16, hbm_gbps=10, intra_gbps=100)
    text = text.replace('dataflow = "ws"\n', 'dataflow = "ws"\nmacs_per_pe = { fp8 = 2 }\n').replace(
        "hbm_gbps = 10\n", 'hbm_gbps = 10\ndram_traffic = "scalesim"\n')
    device = load_device(write_file(tmp_path, "chip.toml", text))
    m, k, n = 100, 70, 50
    words = 3072 // 3 * 1024
    traffic = gemm_dram_traffic(m, k, n, 32, 32, "ws", sram_words=(words,) * 3, bandwidth=(10, 10, 10))
    reads = traffic.ifmap_reads + traffic.filter_reads
    assert traffic.ofmap_writes == m * n * 3
    assert float(array_gemm_hbm_bytes(m, k, n, 3, device, 1, "fp8", out_bytes=2)) == 3 * (reads + m * n * 3 * 2)
    assert float(array_gemm_hbm_bytes(m, k, n, 3, device, 1, "fp8")) == 3 * (reads + m * n * 3)  # all fp8
