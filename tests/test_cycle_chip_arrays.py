"""Under ``--engine cycle`` a device file of several arrays is timed by the cycle engine (archsim.chip_cycles): each
GEMM's folds dealt to the arrays as train deals them, the busiest array's share stepped at the chip's hbm_gbps ÷
the arrays running at once on each operand buffer. Until 2026-12-05 such a chip kept train's op timing under the
cycle engine, blind to an array stalling on its share of the HBM.

References: each share's shape written by hand from the documented rule (whole column folds of a weight-stationary
GEMM, then row folds), stepped by the engine's own simulate_gemm at a rate worked out by hand, and the analytic
fold count (folds × (2·rows + cols + m − 2) − 1)."""

from __future__ import annotations

import json

import pytest
from device_files import device_toml, write_file

from archsim.array.cycle import simulate_gemm
from archsim.chip_cycles import busiest_share, share_words
from archsim.cli import main

# fc1: 64 inputs → 64 outputs at batch 32, its forward one GEMM out[32×64] = x[32×64]·W[64×64]: on 8 × 8 arrays
# (ws: K over the rows, N over the columns) 8 × 8 = 64 folds of 2·8 + 8 + 32 − 2 = 54 cycles each
FC = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, Padding, "
      "Type,\nfc1, 1, 1, 1, 1, 64, 64, 1, 0, fc,\n")
SRAM = (1024, 1024, 1024)  # sram_kib_per_array = 3: three 1 KiB buffers of 1-byte words


def _chip(tmp_path, arrays: int, hbm_gbps: int, static: bool = False) -> str:
    """``arrays`` weight-stationary 8 × 8 arrays at 1 GHz, 3 KiB of SRAM each, ``hbm_gbps`` of HBM."""
    text = device_toml(name="tiny", arrays=arrays, rows=8, cols=8, dataflow="ws", clock_mhz=1000, sram_kib=3,
                       hbm_gib=1, hbm_gbps=hbm_gbps, intra_gbps=100, links=1)
    if static:
        text = text.replace('name = "tiny"\n', 'name = "tiny"\nstatic_watts = 1\n')
    return str(write_file(tmp_path, f"chip{arrays}_{hbm_gbps}.toml", text))


def _cost(capsys, tmp_path, chip: str, *extra: str) -> dict:
    network = write_file(tmp_path, "fc.csv", FC)
    assert main(["cost", str(network), "--batch", "32", "--config", chip, "--engine", "cycle", "--dtype", "int8",
                 *extra, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _share_cycles(share: tuple[int, int, int], words: int) -> int:
    return simulate_gemm(*share, 8, 8, "ws", sram_words=SRAM, bandwidth=(words,) * 3).cycles


@pytest.mark.parametrize("arrays", [2, 4])
def test_ample_bandwidth_the_chip_runs_one_arrays_even_share(capsys, tmp_path, arrays):
    """64 folds over 2 (4) arrays: 32 (16) each, whole column folds, the share out[32×32] (out[32×16]) of the full
    K = 64. At 256 GB/s ÷ 2 (4) arrays = 128 (64) words/cycle per buffer the share never stalls: the chip's F
    cycles are the engine's of that share (folds × 54 − 1, SCALE-Sim's count), its meta naming the rule."""
    document = _cost(capsys, tmp_path, _chip(tmp_path, arrays, 256))
    row, words = document["rows"][0], 256 // arrays
    share = (32, 64, 64 // arrays)
    expected = _share_cycles(share, words)
    assert expected == 64 // arrays * 54 - 1  # no stall at that rate
    assert row["F_chip_seconds"] * 1e9 == pytest.approx(expected, rel=1e-12)
    assert row["F_cycles"] == 64 * 54 - 1  # the one array's columns unchanged
    assert "busiest array's share" in document["meta"]["chip_seconds_by"]


def test_a_low_bandwidth_chip_stalls_on_its_share_of_the_hbm(capsys, tmp_path):
    """At 8 GB/s two arrays get 4 words/cycle each: the chip's F (its share out[32×32] stepped at 4) stalls more
    than one array alone would on the same share at the whole 8, and more than train's op timing said (its
    waves, 32 × 54 − 1 cycles, over the GEMM's 8,192 bytes at 8 GB/s = 1,024 ns)."""
    row = _cost(capsys, tmp_path, _chip(tmp_path, 2, 8))["rows"][0]
    share = (32, 64, 32)
    chip_cycles = row["F_chip_seconds"] * 1e9
    assert chip_cycles == pytest.approx(_share_cycles(share, 4), rel=1e-12)
    assert chip_cycles > _share_cycles(share, 8) > 32 * 54 - 1


def test_one_array_keeps_its_own_cycles(capsys, tmp_path):
    """A chip of one array (stating static_watts, with --energy) is still timed by the engine's cycles of each op,
    cost's own F/G/D_cycles, at the clock."""
    document = _cost(capsys, tmp_path, _chip(tmp_path, 1, 8, static=True), "--energy")
    for kind in "FGD":
        assert document["rows"][0][f"{kind}_chip_seconds"] == pytest.approx(document["rows"][0][f"{kind}_cycles"]
                                                                             / 1e9, rel=1e-12)
    assert "cycles of each op" in document["meta"]["chip_seconds_by"]


def test_the_busiest_share_in_whole_gemms_column_folds_and_row_folds():
    """ws (K over the rows, N over the columns) on 8 × 8 arrays, a GEMM m = 5, k = 24, n = 20: 3 row folds × 3
    column folds. 5 folds: one whole column fold (5, 24, 8) and two row folds of the next (5, 16, 8); 14 folds of
    three such GEMMs (27 over 2 arrays): one whole GEMM and those 5 folds; 9 folds: the whole GEMM."""
    assert busiest_share((5, 24, 20), 9, 5, 8, 8, "ws") == [((5, 24, 8), 1), ((5, 16, 8), 1)]
    assert busiest_share((5, 24, 20), 9, 14, 8, 8, "ws") == [((5, 24, 20), 1), ((5, 24, 8), 1), ((5, 16, 8), 1)]
    assert busiest_share((5, 24, 20), 9, 9, 8, 8, "ws") == [((5, 24, 20), 1)]
    # os: M over the rows, N over the columns, K streamed
    assert busiest_share((20, 7, 20), 9, 4, 8, 8, "os") == [((20, 7, 8), 1), ((8, 7, 8), 1)]


def test_the_share_rate_rounds_as_the_device_rate_does():
    """hbm_gbps ÷ arrays in words at the clock, a half up (not to even), at least 1: 5 GB/s ÷ 2 at 1 GHz in
    1-byte words is 2.5 → 3; 3 ÷ 2 → 2; 1200 GB/s ÷ 8 in 2-byte words at 1.05 GHz is 71.43 → 71; 1 ÷ 4 → 1."""
    assert share_words(5, 2, 1, 1.0) == 3
    assert share_words(3, 2, 1, 1.0) == 2
    assert share_words(1200, 8, 2, 1.05) == 71
    assert share_words(1, 4, 1, 1.0) == 1


def test_a_gemm_of_fewer_folds_than_arrays_is_split_as_train_splits_it(capsys, tmp_path):
    """8 inputs → 8 outputs at batch 64 on four 8 × 8 arrays at 4 GB/s (1 word/cycle per buffer with all four
    running). The forward, out[64×8], is one fold: split along M into 4 sub-GEMMs of 16 rows (train's cheapest s),
    one per array: the share (16, 8, 8). The weight gradient, out[8×8] = δᵀ[8×64]·x[64×8], has 8 row folds of K:
    2 per array, the share (8, 16, 8). The engine's cycles are those shares'; the chip's seconds are floored at each
    GEMM's 1,088 bytes (64·8 + 8·8 + 64·8, and 8·64 + 64·8 + 8·8) ÷ 4 GB/s = 272 ns, which the shares beat
    (tests/test_cycle_hbm_floor.py; until 2026-12-05 the chip's seconds were the shares' cycles)."""
    from archsim.api_inputs import array_and_notes
    from archsim.chip_cycles import chip_op_cycles
    from archsim.chip_time import several_array_chip
    from archsim.lowering import Gemm, TrainingOp

    network = write_file(tmp_path, "fc8.csv", FC.replace("64, 64, 1, 0, fc", "8, 8, 1, 0, fc"))
    chip = _chip(tmp_path, 4, 4)
    assert main(["cost", str(network), "--batch", "64", "--config", chip, "--engine", "cycle",
                 "--dtype", "int8", "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    array, _ = array_and_notes(None, chip, dataflow=None, dtype="int8", element_bytes=None, bandwidth=None,
                               sram_kb=None, clock_ghz=None, engine="cycle")
    device = several_array_chip(chip, array)
    assert device is not None
    ops = [TrainingOp(layer="fc1", kind=kind, gemms=(gemm,)) for kind, gemm in (("F", Gemm(64, 8, 8)),
                                                                                ("G", Gemm(8, 64, 8)))]
    shares = [_share_cycles((16, 8, 8), 1), _share_cycles((8, 16, 8), 1)]
    assert chip_op_cycles(ops, array, device).tolist() == shares
    assert row["F_chip_seconds"] * 1e9 == pytest.approx(max(shares[0], 272), rel=1e-12)
    assert row["G_chip_seconds"] * 1e9 == pytest.approx(max(shares[1], 272), rel=1e-12)


def test_the_deal_names_the_split_sub_gemm_and_the_busiest_arrays_folds():
    """gemm_deal, the deal array_gemm_cycles times: out[64×8] = A[64×8]·B[8×8] (one fold) on four 8 × 8 ws arrays
    is cut into 4 sub-GEMMs of 16 rows, 4 folds dealt, one each; 3 parts of a 24 × 20 weight (9 folds each, 27)
    over 2 arrays: no split, 14 folds on the busiest."""
    from archsim.devices.array_waves import gemm_deal
    from archsim.devices.device import Arrays

    deal = gemm_deal([64, 5], [8, 24], [8, 20], [1, 3], Arrays(count=4, rows=8, cols=8, clock_hz=1e9, dataflow="ws"))
    assert [d[0] for d in deal.sub] == [16, 8, 8] and deal.folds[0] == 1 and deal.waves[0] == 1
    assert deal.dealt[0] == 4 and deal.adds[0] == 0
    two = gemm_deal(5, 24, 20, 3, Arrays(count=2, rows=8, cols=8, clock_hz=1e9, dataflow="ws"))
    assert [d[0] for d in two.sub] == [5, 24, 20] and (two.folds[0], two.waves[0], two.dealt[0]) == (9, 14, 27)


def test_a_vector_ops_elements_are_dealt_to_the_arrays(capsys, tmp_path):
    """A ReLU of 32 × 64 = 2,048 elements per batch of 32 (one input, elementwise) on 4 arrays of 8 columns: 512
    elements each, ⌈512 / 8⌉ = 64 cycles on the busiest array, where one array steps ⌈2,048 / 8⌉ = 256 (cost's own
    F_cycles). Until built so, the chip stepped every element on one array's lanes (256)."""
    network = write_file(tmp_path, "relu.csv", FC + "relu1, 1, 1, 1, 1, 64, 64, 1, 0, elementwise,\n")
    chip = _chip(tmp_path, 4, 256)
    assert main(["cost", str(network), "--batch", "32", "--config", chip, "--engine", "cycle", "--dtype", "int8",
                 "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][1]
    assert row["F_cycles"] == 32 * 64 // 8
    assert row["F_chip_seconds"] * 1e9 == pytest.approx(32 * 64 // 4 // 8, rel=1e-12)
