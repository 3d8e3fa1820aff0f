"""The cycle engine on a device file runs its DRAM at the file's ``[memory] hbm_gbps`` (docs/formats.md,
"Memory bandwidth, stated once"): words/cycle = round(hbm_gbps / (element bytes × the file's GHz)), every operand buffer at that
rate, as SCALE-Sim's ``Bandwidth`` is per buffer; ``--bandwidth`` wins; a SCALE-Sim ``.cfg`` without it keeps 10."""

import json

from archsim.array.cycle import simulate_gemm
from archsim.cli import main

# One 8 × 8 ws array at 2 GHz, 3 KiB of SRAM (1 KiB per operand buffer: 512 bf16 words), 12 GB/s of HBM:
# by hand 12 GB/s ÷ (2 B × 2 GHz) = 3 words/cycle per operand.
TINY_CHIP = """[device]
name = "tiny"
gemm = "arrays"

[compute]
arrays = 1
rows = 8
cols = 8
dataflow = "ws"
clock_mhz = 2000

[memory]
sram_kib_per_array = 3
hbm_gib = 1
hbm_gbps = 12

[links]
intra_gbps = 10
"""
GEMM = ["gemm", "--m", "64", "--k", "64", "--n", "64", "--engine", "cycle", "--format", "json"]


def _stalls(words: int) -> int:
    """SCALE-Sim's model called directly: the 64³ GEMM on the 8 × 8 ws array, 512-word SRAMs, ``words`` per operand."""
    return simulate_gemm(64, 64, 64, 8, 8, "ws", sram_words=(512, 512, 512), bandwidth=(words,) * 3).stall_cycles


def _row(capsys, *flags: str) -> tuple[dict, dict, str]:
    assert main([*GEMM, *flags]) == 0
    out, err = capsys.readouterr()
    document = json.loads(out)
    return document["rows"][0], document["meta"], err


def test_a_device_tomls_hbm_gbps_is_the_cycle_engines_dram_rate(tmp_path, capsys):
    """Failed before: the engine ran at SCALE-Sim's 10 words/cycle (40 GB/s here), its stalls those of 10."""
    chip = tmp_path / "tiny.toml"
    chip.write_text(TINY_CHIP)
    assert _stalls(3) != _stalls(10)  # the rate shows in the count
    row, meta, err = _row(capsys, "--config", str(chip))  # bf16: a device TOML's default, train's
    assert row["stall_cycles"] == _stalls(3)
    assert meta["bandwidth_words_per_cycle"] == 3
    assert "ran at 3 words/cycle per operand buffer, [memory] hbm_gbps = 12 GB/s in 2-byte words" in err
    row, meta, err = _row(capsys, "--config", str(chip), "--dtype", "fp32")  # 12 ÷ (4 × 2) = 1.5: 2 whole
    assert row["stall_cycles"] == simulate_gemm(64, 64, 64, 8, 8, "ws", sram_words=(256, 256, 256),
                                                bandwidth=(2, 2, 2)).stall_cycles
    chip.write_text(TINY_CHIP.replace("hbm_gbps = 12", "hbm_gbps = 20"))  # 20 ÷ (2 × 2) = 5 … fp32: 2.5, a half up: 3
    row, meta, err = _row(capsys, "--config", str(chip), "--dtype", "fp32")
    assert meta["bandwidth_words_per_cycle"] == 3
    chip.write_text(TINY_CHIP)
    row, meta, err = _row(capsys, "--config", str(chip), "--bandwidth", "5")  # the flag wins, nothing said
    assert row["stall_cycles"] == _stalls(5) and meta["bandwidth_words_per_cycle"] == 5
    assert "hbm_gbps" not in err


def test_cost_reads_the_rate_as_gemm_does(tmp_path, capsys):
    """cost's cycle columns on one fc (out[64×64] = X[64×64]·W) are the same GEMM's at 3 words/cycle."""
    chip = tmp_path / "tiny.toml"
    chip.write_text(TINY_CHIP)
    net = tmp_path / "fc.csv"
    net.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
                   "Strides,\nfc1, 1, 1, 1, 1, 64, 64, 1,\n")
    assert main(["cost", str(net), "--config", str(chip), "--engine", "cycle", "--batch", "64",
                 "--format", "json"]) == 0
    out, err = capsys.readouterr()
    document = json.loads(out)
    forward = simulate_gemm(64, 64, 64, 8, 8, "ws", sram_words=(512, 512, 512), bandwidth=(3, 3, 3))
    assert document["rows"][0]["F_cycles"] == forward.cycles  # 20,887 (at 10 words: 6,565)
    assert document["meta"]["bandwidth_words_per_cycle"] == 3
    assert "ran at 3 words/cycle" in err


def test_a_plain_scalesim_cfg_keeps_scalesims_default(capsys):
    """No [memory]: 10 words/cycle per operand, as SCALE-Sim runs the file, and no note."""
    row, meta, err = _row(capsys, "--config", "configs/arrays/scalesim_32x32_ws.cfg")
    assert meta["bandwidth_words_per_cycle"] == 10
    assert row["stall_cycles"] == simulate_gemm(64, 64, 64, 32, 32, "ws", sram_words=(64 * 1024,) * 3,
                                                bandwidth=(10, 10, 10)).stall_cycles
    assert "words/cycle" not in err
