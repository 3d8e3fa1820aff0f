"""An accelerator designer (4 weight-stationary 64 × 64 bf16 arrays at 1 GHz, 24 MiB of SRAM, 600 GB/s of HBM, two
chips linked at 100 GB/s) costs ResNet-50, BERT-large and a GPT on the chip: ``cost``, ``energy`` and ``gemm`` on the
device file, ``train`` and ``search`` on a cluster of two such chips.

Each test here failed on the code before its fix (the docstring says how). The references are outside the code:
hand counts of the chip's figures and docs/formats.md's rules for device files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

CHIP = """[device]
name = "trialchip"

[compute]
arrays = 4
rows = 64
cols = 64
dataflow = "ws"
clock_mhz = 1000

[memory]
sram_kib_per_array = 6144
hbm_gib = 32
hbm_gbps = 600

[links]
intra_gbps = 100
"""


def _cluster(tmp_path: Path) -> Path:
    (tmp_path / "chip.toml").write_text(CHIP)
    cluster = tmp_path / "cluster.toml"
    cluster.write_text('[cluster]\nname = "two"\n\n[[servers]]\ncount = 1\ngpus = 2\ndevice = "chip.toml"\n')
    return cluster


@pytest.mark.parametrize("command", ["train", "search"])
def test_a_shipped_array_network_as_model_says_what_it_is(tmp_path, capsys, command):
    """Failed before: ``archsim train bert_large`` (``cost bert_large`` and ``energy bert_large`` take the name) was
    refused as 'no such file, and no shipped transformer of that name', listing the transformers, with no word that
    ``bert_large`` is a topology CSV of the array commands nor what train takes for BERT instead."""
    from archsim.cli import main

    layout = ["--tp", "1", "--pp", "1", "--dp", "2"] if command == "train" else []
    code = main([command, "bert_large", "--cluster", str(_cluster(tmp_path)), "--global-batch", "8", *layout])
    err = capsys.readouterr().err
    assert code == 2
    [line] = err.strip().splitlines()
    assert "bert_large is a shipped topology CSV" in line and "config.json" in line, line
    assert "cost, energy" in line


def test_a_name_that_is_no_network_is_refused_as_before(tmp_path, capsys):
    """The hint names a shipped network only: a name that is neither keeps the plain refusal."""
    from archsim.cli import main

    assert main(["train", "bertlarge", "--cluster", str(_cluster(tmp_path)), "--global-batch", "8"]) == 2
    line = capsys.readouterr().err.strip()
    assert "no shipped transformer of that name; shipped: " in line and "topology CSV" not in line


def _one_array_chip(tmp_path: Path) -> Path:
    """The chip as one 64 × 64 array with 32 KiB operand buffers (SCALE-Sim refetches through them) beside 100 GB/s
    of HBM, stating 2 W of static power: the case where the cycle engine's stalls outrun train's op timing."""
    chip = tmp_path / "one.toml"
    chip.write_text(CHIP.replace("arrays = 4", "arrays = 1").replace("sram_kib_per_array = 6144", "sram_kib_per_array = 96")
                    .replace("hbm_gbps = 600", "hbm_gbps = 100").replace('name = "trialchip"',
                                                                         'name = "trialchip"\nstatic_watts = 2'))
    return chip


@pytest.mark.parametrize("command", ["energy", "cost"])
def test_a_one_array_chip_under_the_cycle_engine_is_timed_by_its_stalled_cycles(tmp_path, capsys, command):
    """Failed before: ``energy tiny_resnet --config CHIP --engine cycle`` on a chip of one array printed the cycle
    engine's 331,230 cycles (0.331 ms at 1 GHz, stalls included) beside an ``iteration_seconds`` of 0.0902 ms, train's op
    timing, over which it priced the leakage and the average power. The chip's seconds are now the engine's own cycles
    at the clock (docs/formats.md, ``energy_leakage``), so nothing contradicts them and no note is said; since
    2026-12-05 each op's floored at its HBM bytes at 100 GB/s (tests/test_cycle_hbm_floor.py), which some ops here
    beat, the engine giving each operand buffer the whole 100 GB/s: by the documented count, each GEMM's
    (m·k + k·n + m·n) · count and each vector op's reads plus writes, 2 bytes each, over the engine's own cycles of each
    op."""
    import json

    from archsim.api_inputs import array_and_notes
    from archsim.array.costing import op_cycles
    from archsim.cli import main
    from archsim.lowering import lower_network
    from archsim.workload.shipped import load_network

    chip = str(_one_array_chip(tmp_path))
    argv = [command, "docs/examples/tiny_resnet.csv", "--config", chip, "--batch", "2", "--format", "json"]
    assert main([*argv, "--engine", "cycle", *(["--energy"] if command == "cost" else [])]) == 0
    out, err = capsys.readouterr()
    total = json.loads(out)["rows"][-1]
    cycles = total["cycles"] if command == "energy" else total["total_cycles"]
    array, _ = array_and_notes(None, chip, dataflow=None, dtype="fp16", element_bytes=None, bandwidth=None, sram_kb=None,
                               clock_ghz=None, engine="cycle")
    ops = [op for layer in lower_network(load_network("docs/examples/tiny_resnet.csv"), 2, "exact", 2)
           for op in layer.ops]
    each = op_cycles(ops, array, "cycle").tolist()
    assert sum(each) == cycles  # the engine's own count, op by op
    # A vector op's HBM elements are its reads plus writes (archsim/lowering/streamed.py), by hand at batch 2: the add
    # reads conv_b and stem (2 × 32·32·16 · 2 = 65,536) and writes 32,768 forward, and backward reads dy and the
    # branch's gradient, writes their sum (98,304 each way); the 2×2 pool reads 32,768 and writes 16·16·16 · 2 = 8,192
    # each way (40,960). Until then each vector op's element operations (65,536 and 4 · 8,192 = 32,768).
    streamed = {("add", "F"): 98_304, ("add", "D"): 98_304, ("pool", "F"): 40_960, ("pool", "D"): 40_960}
    floors = [(sum((g.m * g.k + g.k * g.n + g.m * g.n) * g.count for g in op.gemms)
               + streamed.get((op.layer, op.kind), 0)) * 2 / 100e9 for op in ops]
    assert {(op.layer, op.kind) for op in ops if not op.gemms} == set(streamed)
    assert sum(floor > count / 1e9 for floor, count in zip(floors, each, strict=True)) > 0  # the binding regime
    floored = sum(max(floor, count / 1e9) for floor, count in zip(floors, each, strict=True))
    assert total["chip_seconds"] == pytest.approx(floored, rel=1e-12)  # 1 GHz
    assert "stalls included" not in err
    assert main([*argv, "--engine", "analytic", *(["--energy"] if command == "cost" else [])]) == 0
    analytic = json.loads(capsys.readouterr().out)["rows"][-1]
    assert cycles / 1e9 > 2 * analytic["chip_seconds"]  # train's op timing never saw the stalls


def test_the_note_is_left_out_where_the_chip_is_no_faster_than_the_stalled_arrays(tmp_path, capsys):
    """On the 4-array chip at 600 GB/s the cycle engine's cycles of one array, dealt over four, are within the chip's
    seconds: nothing contradicts, nothing is said."""
    from archsim.cli import main

    (tmp_path / "chip.toml").write_text(CHIP)
    assert main(["energy", "docs/examples/tiny_resnet.csv", "--config", str(tmp_path / "chip.toml"), "--batch", "2",
                 "--engine", "cycle"]) == 0
    assert "stalls included" not in capsys.readouterr().err


def test_gemm_on_a_device_file_gives_the_chips_seconds_as_cost_and_train_do(tmp_path, capsys):
    """Failed before: ``archsim gemm --config CHIP`` on the chip of four 64 × 64 arrays gave one array's 699,263 cycles
    (0.699 ms) and no chip figure, where ``cost`` prints ``chip_seconds`` and ``train`` times GPT-2's fc1 forward, the
    same 1024 × 768 × 3072 GEMM, at 0.175 ms. Hand count (SCALE-Sim's ws): a fold of 64 × 64 weights streams M = 1024
    rows in 2·64 + 64 + 1024 − 2 = 1214 cycles; ⌈768/64⌉ · ⌈3072/64⌉ = 576 folds, 576 · 1214 − 1 = 699,263 cycles on one
    array (SCALE-Sim counts the last cycle's index), 144 waves over four arrays, 144 · 1214 − 1 = 174,815 cycles at
    1 GHz; its 12,582,912 bytes of operands and result take 21 µs at 600 GB/s, so the arrays bind."""
    import json

    from archsim.cli import main

    (tmp_path / "chip.toml").write_text(CHIP)
    assert main(["gemm", "--config", str(tmp_path / "chip.toml"), "--m", "1024", "--k", "768", "--n", "3072",
                 "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    [row] = document["rows"]
    assert row["cycles"] == 576 * 1214 - 1
    assert row["chip_seconds"] == pytest.approx((144 * 1214 - 1) / 1e9, rel=1e-12)
    assert document["meta"]["chip_arrays"] == 4 and "chip_seconds" in document["meta"]["per_array"]


def test_gemm_on_a_plain_array_has_no_chip_column(capsys):
    """A plain SCALE-Sim ``.cfg`` (no chip) prints gemm's columns as before."""
    import json

    from archsim.cli import main

    assert main(["gemm", "--config", "configs/arrays/scalesim_32x32_ws.cfg", "--m", "64", "--k", "64", "--n", "64",
                 "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert "chip_seconds" not in document["rows"][0] and "chip_name" not in document["meta"]


def test_gemm_times_the_chip_by_the_cycle_engine_as_cost_and_energy_do(tmp_path, capsys):
    """Failed before: under ``--engine cycle`` gemm's ``chip_seconds`` were train's op timing, 0.0691 ms, with a note
    that the engine's stalled cycles outran them, where ``cost`` and ``energy`` time the chip by the engine itself
    (docs/formats.md, ``chip_seconds_by``). The chip with 32 KiB operand buffers beside 60 GB/s, an 8 × 2048 × 1000
    GEMM (ResNet-50's fc at batch 8), by that rule by hand: ws folds ⌈2048/64⌉ = 32 rows × ⌈1000/64⌉ = 16 columns,
    512 ≥ 4 arrays, so no split and ⌈512/4⌉ = 128 folds on the busiest array: 128 ÷ 32 = 4 whole column folds,
    the GEMM 8 × 2048 × 256; its share of the HBM 60 GB/s ÷ 4 arrays ÷ (2 B × 1 GHz) = 7.5, 8 words/cycle per
    buffer. That share on one array by the flags (``--bandwidth 8``) is the chip's cycles at 1 GHz."""
    import json

    from archsim.cli import main

    chip = tmp_path / "small.toml"
    chip.write_text(CHIP.replace("hbm_gbps = 600", "hbm_gbps = 60").replace("sram_kib_per_array = 6144",
                                                                            "sram_kib_per_array = 96"))
    shape = ["--engine", "cycle", "--format", "json"]
    assert main(["gemm", "--config", str(chip), "--m", "8", "--k", "2048", "--n", "1000", *shape]) == 0
    read, err = capsys.readouterr()
    assert main(["gemm", "--m", "8", "--k", "2048", "--n", "256", "--array", "64x64", "--dataflow", "ws", "--dtype",
                 "fp16", "--sram-kb", "32", "--bandwidth", "8", *shape]) == 0
    [share] = json.loads(capsys.readouterr().out)["rows"]
    [row] = json.loads(read)["rows"]
    assert share["stall_cycles"] > 0  # the rule's cycles see the share's stalls
    assert row["chip_seconds"] == pytest.approx(share["total_cycles"] / 1e9, rel=1e-12)
    assert "stalls included" not in err  # nothing left to contradict


# horowitz45 (configs/energy/horowitz45.toml): a bf16 PE is its 2-byte MAC, 5824 µm², and three 16-bit registers, two
# operand words and the 32-bit partial sum, at 5.98 µm² a bit; an SRAM bit is a 0.346 µm² cell at 70% array efficiency
PE_UM2 = 5824 + (2 * 16 + 32) * 5.98
SRAM_UM2_PER_KIB = 1024 * 8 * 0.346 / 0.7


@pytest.mark.long
def test_a_device_sweep_gives_each_designs_chip_area(tmp_path, capsys):
    """Failed before: a device sweep's results.csv and report had seconds and joules but no area, where an array
    sweep's rows carry ``area_mm2`` and ``cost --config CHIP`` prints the chip's 201.2 mm²: a designer sweeping SRAM
    per array saw only that smaller SRAM spends fewer joules. Hand count at the same PE budget (16,384 PEs):
    4 × 64 × 64 with 6 MiB beside each array, 16,384 · 6206.72 µm² + 4 · 6144 KiB of SRAM = 101.69 + 99.51 mm²;
    1 × 128 × 128 with 96 KiB, 101.69 + 0.39 mm²."""
    import csv

    from archsim.cli import main

    (tmp_path / "chip.toml").write_text(CHIP)
    spec = tmp_path / "spec.toml"
    spec.write_text('[sweep]\nname = "area"\nmodel = "gpt2"\ndevice = "chip.toml"\n'
                    'array_shapes = ["4x64x64", "1x128x128"]\nsram_kib_per_array = [6144, 96]\nchips = [1]\n'
                    'global_batch = 1\ndtype = "bf16"\n')
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--quiet", "--report", str(tmp_path / "area.html")]) == 0
    capsys.readouterr()
    with (out / "results.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    header = list(rows[0])
    assert header.index("area_mm2") == header.index("energy_j") + 1
    area = {(row["arrays"], int(row["sram_kib_per_array"])): float(row["area_mm2"]) for row in rows}
    pes = 16384 * PE_UM2 / 1e6
    assert area["4x64x64", 6144] == pytest.approx(pes + 4 * 6144 * SRAM_UM2_PER_KIB / 1e6, rel=1e-9)
    assert area["1x128x128", 96] == pytest.approx(pes + 96 * SRAM_UM2_PER_KIB / 1e6, rel=1e-9)
    assert area["4x64x64", 6144] == pytest.approx(201.2, abs=0.05)  # cost --config's area_mm2 for the file
    assert "<th>area_mm2</th>" in (tmp_path / "area.html").read_text(encoding="utf-8")
