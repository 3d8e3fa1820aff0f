"""A memory-bound op is timed the same by ``cost``'s and ``energy``'s chip seconds as by ``train``: its unfused
kernel's reads plus writes at the device's HBM bandwidth (:mod:`archsim.lowering.streamed`, the one count).

Failed before: cost's chip seconds streamed the array lowering's element operations (a softmax's or GELU's input
alone), half of train's bytes: on four 128 × 128 arrays beside 1,600 GB/s, GPT-3 1.3B's softmax forward (seq 2,048,
16 heads, batch 1) was 83.9 µs in cost and 167.8 µs in ``train --attention standard``, its GELU 21.0 against 41.9 µs.
References by hand, 2 bytes an element (fp16) at 1.6e12 B/s, no launch (the device file states none)."""

from __future__ import annotations

import json

import pytest
from device_files import device_toml

from archsim.cli import main

HBM = 1.6e12  # B/s
SEQ, HEADS, HIDDEN, FFN = 2048, 16, 2048, 8192  # configs/transformers/gpt3_1.3b.toml, FFN 4 × hidden


def _chip(tmp_path):
    path = tmp_path / "chip.toml"
    path.write_text(device_toml(name="Four", arrays=4, rows=128, cols=128, dataflow="ws", clock_mhz=1200,
                                sram_kib=1024, hbm_gib=32, hbm_gbps=1600, intra_gbps=100), encoding="utf-8")
    return path


def _rows(capsys, *argv: str) -> dict:
    assert main([*argv, "--format", "json"]) == 0, capsys.readouterr().err
    return {row["layer"]: row for row in json.loads(capsys.readouterr().out)["rows"]}


def test_cost_times_softmax_gelu_norm_and_add_by_their_reads_plus_writes(tmp_path, capsys):
    rows = _rows(capsys, "cost", "configs/transformers/gpt3_1.3b.toml", "--config", str(_chip(tmp_path)),
                 "--dtype", "fp16", "--batch", "1", "--only", "elementwise,layernorm")
    scores, hidden, ffn = HEADS * SEQ * SEQ, SEQ * HIDDEN, SEQ * FFN
    softmax = rows["l1_softmax"]  # read x, write y: 2 × 67,108,864 × 2 B; backward read y, dy, write dx: 3 ×
    assert softmax["F_chip_seconds"] == pytest.approx(2 * scores * 2 / HBM, rel=1e-12)  # 167.77 µs (83.89 before)
    assert softmax["D_chip_seconds"] == pytest.approx(3 * scores * 2 / HBM, rel=1e-12)  # 251.66 µs (83.89 before)
    gelu = rows["l1_gelu"]
    assert gelu["F_chip_seconds"] == pytest.approx(2 * ffn * 2 / HBM, rel=1e-12)  # 41.94 µs (20.97 before)
    assert gelu["D_chip_seconds"] == pytest.approx(3 * ffn * 2 / HBM, rel=1e-12)
    add = rows["l1_add2"]  # read the MLP's output and the residual, write their sum; backward the residual grad's sum
    assert (add["F_chip_seconds"], add["D_chip_seconds"]) == pytest.approx((3 * hidden * 2 / HBM,) * 2, rel=1e-12)
    norm = rows["l1_ln2"]  # read x, write y; backward one pass: read dy, x, write dx (dγ, dβ reduced beside it)
    assert norm["F_chip_seconds"] == pytest.approx(2 * hidden * 2 / HBM, rel=1e-12)
    assert (norm["G_chip_seconds"], norm["D_chip_seconds"]) == pytest.approx((0.0, 3 * hidden * 2 / HBM), rel=1e-12)
    first = rows["l1_ln1"]  # fed by the network input: no δ, so its backward pass reads dy and x for dγ, dβ alone
    assert (first["G_chip_seconds"], first["D_chip_seconds"]) == pytest.approx((2 * hidden * 2 / HBM, 0.0), rel=1e-12)


def test_train_times_the_same_ops_as_cost(tmp_path):
    """train's op list on the same chip: its softmax, GELU and norms take the seconds cost gives them above."""
    from archsim.devices.device_file import load_device
    from archsim.devices.kernel_ops import op_seconds
    from archsim.training.layer_ops import block_work
    from archsim.workload.model_files import load_transformer

    chip = load_device(_chip(tmp_path))
    work = block_work(load_transformer("configs/transformers/gpt3_1.3b.toml"), 1, attention="standard", dtype="fp16")
    assert chip.efficiency is not None
    ops = [*work.forward, *work.backward]
    seconds = op_seconds(ops, chip, chip.efficiency, "fp16").tolist()
    timed = {(op.layer, op.kind): s for op, s in zip(ops, seconds, strict=True)}
    scores, ffn, hidden = HEADS * SEQ * SEQ, SEQ * FFN, SEQ * HIDDEN
    assert timed["softmax", "F"] == pytest.approx(2 * scores * 2 / HBM, rel=1e-12)
    assert timed["softmax", "D"] == pytest.approx(3 * scores * 2 / HBM, rel=1e-12)
    assert timed["bias_gelu", "F"] == pytest.approx(2 * ffn * 2 / HBM, rel=1e-12)
    assert timed["bias_gelu", "D"] == pytest.approx(3 * ffn * 2 / HBM, rel=1e-12)
    assert timed["norm2", "F"] == pytest.approx(2 * hidden * 2 / HBM, rel=1e-12)
    assert timed["norm2", "D"] == pytest.approx(3 * hidden * 2 / HBM, rel=1e-12)


def test_the_vector_unit_s_element_operations_stay_the_lowering_s(tmp_path, capsys):
    """Only the chip seconds read the HBM count: one array's cycles of a vector layer stay its element operations
    over the array's 128 columns (softmax forward: 67,108,864 / 128 = 524,288 cycles)."""
    rows = _rows(capsys, "cost", "configs/transformers/gpt3_1.3b.toml", "--config", str(_chip(tmp_path)),
                 "--dtype", "fp16", "--batch", "1", "--only", "elementwise")
    assert rows["l1_softmax"]["F_cycles"] == HEADS * SEQ * SEQ // 128
