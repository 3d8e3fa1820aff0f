"""Under ``--engine cycle`` a chip's seconds (``cost``'s chip columns, ``energy``'s, ``gemm``'s ``chip_seconds``) are
floored at each op's HBM bytes ÷ the device file's ``hbm_gbps`` (``archsim.chip_time.chip_seconds``). The engine
follows SCALE-Sim's memory model, each of its three operand buffers drawing the whole DRAM rate, so its cycles
alone could move a GEMM's bytes faster than the chip's HBM can; until 2026-12-05 they did (a 4-array chip at 60 GB/s
timed an 8 × 2048 × 1000 GEMM at 0.0253 ms, 0.0691 ms of bytes).

References: the bytes by hand, the documented compulsory count (each operand and the result once, (m·k + k·n + m·n)
· count elements of 1 byte here), the engine's own cycles before the floor (``chip_cycles.chip_op_cycles``,
``costing.op_cycles``) and the engine's simulate_gemm on shapes written by hand."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest
from device_files import device_toml, write_file

from archsim.cli import main
from archsim.lowering import Gemm, TrainingOp

FC8 = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, Padding, "
       "Type,\nfc1, 1, 1, 1, 1, 8, 8, 1, 0, fc,\n")


@dataclass(frozen=True)
class _Layer:
    """A lowered layer of ``ops`` alone: all chip_seconds reads of one."""

    ops: tuple[TrainingOp, ...]


def _chip_file(tmp_path, arrays: int, hbm_gbps: float) -> str:
    """``arrays`` weight-stationary 8 × 8 arrays at 1 GHz, 3 KiB of SRAM each, ``hbm_gbps`` of HBM (one array
    states static_watts: the chip energy and cost --energy time)."""
    text = device_toml(name="tiny", arrays=arrays, rows=8, cols=8, dataflow="ws", clock_mhz=1000, sram_kib=3,
                       hbm_gib=1, hbm_gbps=hbm_gbps, intra_gbps=100, links=1)
    if arrays == 1:
        text = text.replace('name = "tiny"\n', 'name = "tiny"\nstatic_watts = 1\n')
    return str(write_file(tmp_path, f"chip{arrays}_{hbm_gbps:g}.toml", text))


def _timed(tmp_path, arrays: int, hbm_gbps: float, layers):
    """(chip seconds, the engine's own cycles of each op before the floor) of ``layers`` on that chip, int8, the
    array and chip as ``cost --engine cycle --config`` reads them."""
    from archsim.api_inputs import array_and_notes
    from archsim.chip_cycles import chip_op_cycles
    from archsim.chip_time import chip_seconds, engine_cycles, timed_chip

    path = _chip_file(tmp_path, arrays, hbm_gbps)
    array, _ = array_and_notes(None, path, dataflow=None, dtype="int8", element_bytes=None, bandwidth=None,
                               sram_kb=None, clock_ghz=None, engine="cycle")
    chip = timed_chip(path, array, static_power=True)
    assert chip is not None and chip.arrays.count == arrays
    ops = [op for layer in layers for op in layer.ops]
    engine = engine_cycles(ops, array) if arrays == 1 else chip_op_cycles(ops, array, chip)
    return chip_seconds(layers, chip, array, "cycle", "int8", 1), engine


def _gemm_layers(shapes) -> list[_Layer]:
    return [_Layer((TrainingOp(layer=f"g{i}", kind="F", gemms=(Gemm(*shape),)),)) for i, shape in enumerate(shapes)]


@pytest.mark.parametrize(("arrays", "hbm_gbps"), [(1, 4), (1, 256), (4, 4), (4, 256)])
def test_no_gemm_beats_its_bytes_over_the_hbm(tmp_path, arrays, hbm_gbps):
    """Random small GEMMs (m, k, n, count): each one's chip seconds are at least its compulsory bytes,
    (m·k + k·n + m·n) · count, ÷ hbm_gbps, and at least the engine's own cycles at 1 GHz; the ops counted as floored
    are those whose bytes outlast the engine."""
    rng = np.random.default_rng(7 + arrays + hbm_gbps)
    shapes = [tuple(int(x) for x in rng.integers(1, 40, size=3)) + (int(rng.integers(1, 4)),) for _ in range(6)]
    timed, engine = _timed(tmp_path, arrays, hbm_gbps, _gemm_layers(shapes))
    floors = [(m * k + k * n + m * n) * count / (hbm_gbps * 1e9) for m, k, n, count in shapes]
    for row, floor, cycles in zip(timed.rows, floors, engine.tolist(), strict=True):
        assert row["chip_seconds"] >= floor * (1 - 1e-12)
        assert row["chip_seconds"] >= cycles / 1e9 * (1 - 1e-12)
        assert row["chip_seconds"] == pytest.approx(max(floor, cycles / 1e9), rel=1e-12)
    assert timed.floored == sum(floor > cycles / 1e9 for floor, cycles in zip(floors, engine.tolist(), strict=True))
    assert timed.ops == len(shapes)


def test_a_vector_op_is_floored_at_its_elements_streamed(tmp_path):
    """A vector op of 4,096 one-byte elements (train streams each once) on 4 arrays of 8 lanes: the engine steps
    ⌈⌈4,096 / 4⌉ / 8⌉ = 128 cycles, 128 ns at 1 GHz; its bytes at 4 GB/s take 1,024 ns, which bind."""
    op = TrainingOp(layer="relu", kind="F", gemms=(), vector_elements=4096)
    timed, engine = _timed(tmp_path, 4, 4, [_Layer((op,))])
    assert engine.tolist() == [128]
    assert timed.rows[0]["F_chip_seconds"] == pytest.approx(4096 / 4e9, rel=1e-12)
    assert timed.floored == 1


def test_where_the_floor_binds_the_chip_takes_the_bytes_and_says_so(tmp_path, capsys):
    """8 inputs → 8 outputs at batch 64 on four 8 × 8 arrays at 4 GB/s, int8. The forward out[64×8] = x[64×8]·W[8×8]
    moves 64·8 + 8·8 + 64·8 = 1,088 bytes, 272 ns at 4 GB/s; the weight gradient out[8×8] = δᵀ[8×64]·x[64×8] as
    many, 8·64 + 64·8 + 8·8 = 1,088 bytes, 272 ns; the engine's shares took far fewer cycles (the first layer has
    no δ). Cost's F_cycles stay the engine's on one array (simulate_gemm of the whole forward at 4 words/cycle)."""
    from archsim.array.cycle import simulate_gemm

    network = write_file(tmp_path, "fc8.csv", FC8)
    chip = _chip_file(tmp_path, 4, 4)
    assert main(["cost", str(network), "--batch", "64", "--config", chip, "--engine", "cycle", "--dtype", "int8",
                 "--format", "json"]) == 0
    out, err = capsys.readouterr()
    document = json.loads(out)
    row = document["rows"][0]
    assert row["F_chip_seconds"] == pytest.approx(1088 / 4e9, rel=1e-12)
    assert row["G_chip_seconds"] == pytest.approx(1088 / 4e9, rel=1e-12)
    assert row["D_chip_seconds"] == 0
    assert row["F_cycles"] == simulate_gemm(64, 8, 8, 8, 8, "ws", sram_words=(1024,) * 3, bandwidth=(4,) * 3).cycles
    assert document["meta"]["chip_hbm_floor_ops"] == 2
    assert "chip_hbm_floor_ops" in document["meta"]["chip_seconds_by"]
    assert "the HBM floor bound 2 of 2 ops" in err and "hbm_gbps = 4 GB/s" in err
    _, engine = _timed(tmp_path, 4, 4, [_Layer(tuple(
        TrainingOp(layer="fc1", kind=kind, gemms=(gemm,)) for kind, gemm in (("F", Gemm(64, 8, 8)),
                                                                              ("G", Gemm(8, 64, 8)))))])
    assert max(engine.tolist()) < 272  # the binding regime: the engine alone beat the HBM

    assert main(["energy", str(network), "--batch", "64", "--config", chip, "--engine", "cycle", "--dtype", "int8",
                 "--format", "json"]) == 0
    out, err = capsys.readouterr()
    energy = json.loads(out)
    assert energy["meta"]["chip_hbm_floor_ops"] == 2 and "the HBM floor bound 2 of 2 ops" in err
    assert energy["rows"][-1]["chip_seconds"] == pytest.approx(2 * 1088 / 4e9, rel=1e-12)


def test_gemm_names_the_gemms_the_floor_bound(tmp_path, capsys):
    """``gemm``'s chip_seconds take the same rule: 64 × 8 × 8 on the 4 GB/s chip, 1,088 bytes ÷ 4 GB/s = 272 ns."""
    chip = _chip_file(tmp_path, 4, 4)
    assert main(["gemm", "--config", chip, "--m", "64", "--k", "8", "--n", "8", "--engine", "cycle", "--dtype",
                 "int8", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["rows"][0]["chip_seconds"] == pytest.approx(1088 / 4e9, rel=1e-12)
    assert document["meta"]["chip_hbm_floor_ops"] == 1


def test_where_the_floor_does_not_bind_the_engines_seconds_stand(tmp_path, capsys):
    """64 → 64 at batch 32 on two 8 × 8 arrays at 256 GB/s: the forward's 32·64 + 64·64 + 32·64 = 8,192 bytes take
    32 ns, far below the engine's 32 folds × 54 − 1 = 1,727 cycles of its share (no stall at 128 words/cycle): the
    chip's seconds are the engine's exactly, no op floored, no note."""
    network = write_file(tmp_path, "fc.csv", FC8.replace("8, 8, 1, 0, fc", "64, 64, 1, 0, fc"))
    assert main(["cost", str(network), "--batch", "32", "--config", _chip_file(tmp_path, 2, 256), "--engine",
                 "cycle", "--dtype", "int8", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    document = json.loads(out)
    assert document["rows"][0]["F_chip_seconds"] == (32 * 54 - 1) / 1e9
    assert document["meta"]["chip_hbm_floor_ops"] == 0
    assert "HBM floor" not in err


def test_the_analytic_engine_names_no_floor(tmp_path, capsys):
    """Train's op timing is its own roofline: no chip_hbm_floor_ops under the analytic engine."""
    network = write_file(tmp_path, "fc8.csv", FC8)
    assert main(["cost", str(network), "--batch", "64", "--config", _chip_file(tmp_path, 4, 4), "--dtype", "int8",
                 "--format", "json"]) == 0
    assert "chip_hbm_floor_ops" not in json.loads(capsys.readouterr().out)["meta"]


def test_fewer_arrays_or_less_hbm_never_makes_the_chip_faster(tmp_path):
    """A small network (a forward, weight gradient and δ of two sizes, a vector op) on 1, 2 and 4 arrays at 4, 16,
    64 and 256 GB/s: the network's chip seconds never fall as the arrays or the bandwidth shrink."""
    layers = [_Layer((TrainingOp(layer="a", kind="F", gemms=(Gemm(32, 24, 16),)),
                      TrainingOp(layer="a", kind="G", gemms=(Gemm(24, 32, 16),)),
                      TrainingOp(layer="a", kind="D", gemms=(Gemm(32, 16, 24),)))),
              _Layer((TrainingOp(layer="b", kind="F", gemms=(Gemm(8, 40, 12, 2),)),
                      TrainingOp(layer="b", kind="F", gemms=(), vector_elements=1000)))]
    total = {(arrays, rate): sum(row["chip_seconds"] for row in _timed(tmp_path, arrays, rate, layers)[0].rows)
             for arrays in (1, 2, 4) for rate in (4, 16, 64, 256)}
    for (arrays, rate), seconds in total.items():
        for (more, faster), other in total.items():
            if more >= arrays and faster >= rate:
                assert seconds >= other * (1 - 1e-12), ((arrays, rate), (more, faster))
