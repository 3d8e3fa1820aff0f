"""SRAM banks, ports and custom layouts exactly as SCALE-Sim 3.0.0 runs them (issue #31).

Custom layouts off: bank counts and ports change no cycle, stall or DRAM count (its bank-conflict
model runs only with a custom layout), and a bank count that does not divide the bank bandwidth is
refused in USER mode, where SCALE-Sim's read buffer asserts. Every expected value comes from running
the scalesim package (``scalesim_reference``) at each bank setting; archsim's cycle engine (which has
no bank parameter) must equal each of them. The GEMM overflows 1 KiB SRAMs, so the array really
stalls (ws and is; os does not at these rates).

Custom layouts on: the scalesim package runs the same three files — a USER-mode ``.cfg`` with
``[layout]`` custom layouts on, a GEMM topology and a layout file — through its own readers
(``scalesim_layout_reference.scalesim_files``); archsim reads them (``read_scalesim_cfg``,
``layout_from_cfg``) and its cycle engine must give the same cycles, stall cycles, "Total Cycles
(incl. prefetch)" and DRAM reads and writes, on 12 layout/bank settings × 3 dataflows (1 KiB SRAMs,
several banks and ports so bank conflicts count) and on SCALE-Sim's own layout example.
A few settings run by default, the rest in the slow tier.
"""


from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from archsim.array.config import read_scalesim_cfg
from archsim.array.cycle import simulate_gemm, sram_words
from archsim.array.layout import Banks, GemmLayout, layout_from_cfg, layout_order, parse_row, read_layout_file
from archsim.cli import main
from archsim.errors import InputError

pytest.importorskip("scalesim")
from scalesim_layout_reference import gemm_csv, layout_cfg, layout_csv, scalesim_files
from scalesim_reference import config_text, scalesim_gemm

READ_BANDWIDTH = 12
# (banks, ports per bank): every divisor of 12 and ports 1–4
SETTINGS = [(1, 1), (1, 2), (2, 1), (2, 2), (3, 2), (4, 1), (4, 4), (6, 2), (6, 3), (12, 1), (12, 2), (3, 4)]
SMALL = [(1, 2), (4, 1), (12, 2)]


def check(banks, dataflow):
    reference = scalesim_gemm(64, 40, 48, 8, 8, dataflow, ifmap_kb=1, filter_kb=1, ofmap_kb=1, bandwidth=2,
                              read_bandwidth=READ_BANDWIDTH, banks=banks)
    assert reference.stall_cycles > 0 or dataflow == "os"  # os reads each operand once per fold here: no stall
    ours = simulate_gemm(64, 40, 48, 8, 8, dataflow, sram_words=(1024,) * 3, bandwidth=(READ_BANDWIDTH,) * 2 + (2,))
    assert (ours.cycles, ours.stall_cycles, ours.ifmap_dram_reads, ours.filter_dram_reads, ours.ofmap_dram_writes,
            ours.cycles_incl_prefetch) == (reference.compute_cycles, reference.stall_cycles,
                                           reference.ifmap_dram_reads, reference.filter_dram_reads,
                                           reference.ofmap_dram_writes, reference.cycles_incl_prefetch)


@pytest.mark.parametrize("banks", SMALL)
def test_bank_settings_change_nothing_as_in_scalesim(banks):
    check(banks, "ws")


@pytest.mark.slow
@pytest.mark.parametrize("dataflow", ["ws", "os", "is"])
@pytest.mark.parametrize("banks", SETTINGS)
def test_every_bank_setting_every_dataflow(banks, dataflow):
    check(banks, dataflow)


def test_banks_that_do_not_divide_the_bandwidth_are_refused(tmp_path):
    with pytest.raises(AssertionError, match="divisible"):
        scalesim_gemm(8, 8, 8, 4, 4, "ws", bandwidth=2, read_bandwidth=READ_BANDWIDTH, banks=(5, 2))
    path = tmp_path / "banks.cfg"
    path.write_text(config_text(4, 4, "ws", bandwidth=2, read_bandwidth=READ_BANDWIDTH, banks=(5, 2)))
    with pytest.raises(InputError) as err:
        read_scalesim_cfg(path)
    assert err.value.where.field == "IfmapSRAMBankNum"
    path.write_text(config_text(4, 4, "ws", bandwidth=2, read_bandwidth=READ_BANDWIDTH, banks=(6, 3)))
    assert read_scalesim_cfg(path).read_bandwidth == (READ_BANDWIDTH, READ_BANDWIDTH)


# (name, ifmap H W, filter R S, C, filters — factors; ifmap intra (3), inter (3); filter intra (4), inter (4))
ROW_A = ("A", 2, 4, 1, 4, 1, 2, 3, 4, 5, 0, 1, 2, 4, 5, 6, 7, 0, 1, 2, 3)
ROW_B = ("B", 2, 2, 1, 4, 1, 2, 5, 4, 3, 2, 0, 1, 7, 6, 5, 4, 3, 2, 1, 0)
ROW_C = ("C", 1, 8, 1, 8, 1, 1, 4, 3, 5, 1, 0, 2, 7, 4, 5, 6, 0, 1, 2, 3)  # ifmap 8 wide, filter 8 taps
ROW_D = ("D", 4, 1, 1, 2, 1, 4, 5, 3, 4, 0, 2, 1, 6, 5, 4, 7, 2, 1, 0, 3)  # column-major-ish, 4 filters
# (row, M, N, K, array, ifmap (on, bw, banks, ports), filter (on, bw, banks, ports), filter offset)
LAYOUT_SETTINGS = [
    (ROW_A, 16, 10, 12, (4, 4), (True, 8, 2, 1), (True, 8, 2, 1), 10000000),
    (ROW_A, 16, 10, 12, (4, 4), (True, 8, 8, 1), (True, 8, 4, 2), 10000000),
    (ROW_B, 40, 30, 24, (8, 4), (True, 8, 4, 1), (True, 8, 2, 2), 10000000),
    (ROW_B, 40, 30, 24, (8, 4), (False, 8, 1, 2), (True, 8, 8, 1), 10000000),
    (ROW_B, 40, 30, 24, (8, 4), (True, 8, 8, 4), (False, 8, 1, 2), 10000000),
    (ROW_C, 33, 17, 21, (4, 8), (True, 16, 16, 1), (True, 8, 8, 1), 10000000),
    (ROW_C, 33, 17, 21, (4, 8), (True, 16, 4, 2), (True, 8, 2, 1), 12345),
    (ROW_D, 24, 36, 20, (8, 8), (True, 8, 8, 1), (True, 8, 8, 1), 10000000),
    (ROW_D, 24, 36, 20, (8, 8), (True, 12, 6, 1), (True, 8, 1, 1), 7),
    (ROW_A, 30, 22, 26, (6, 5), (True, 8, 4, 1), (True, 8, 4, 1), 0),
    (ROW_C, 50, 9, 40, (8, 4), (True, 8, 8, 2), (True, 8, 8, 2), 10000000),
    (ROW_D, 20, 20, 20, (4, 4), (True, 4, 4, 1), (True, 8, 8, 8), 10000000),
]
LAYOUT_SMALL = [LAYOUT_SETTINGS[0], LAYOUT_SETTINGS[3]]


def write_files(folder: Path, setting, dataflow: str, extra_rows=()):
    row, m, n, k, (rows, cols), ifmap, filter_, offset = setting
    (folder / "layouts.cfg").write_text(layout_cfg(rows, cols, dataflow, ifmap=ifmap, filter=filter_,
                                                   filter_offset=offset))
    (folder / "gemm.csv").write_text(gemm_csv(("g", m, n, k)))
    (folder / "layout.csv").write_text(layout_csv(row, *extra_rows))
    return folder / "layouts.cfg", folder / "gemm.csv", folder / "layout.csv"


def ours(cfg, layout_file, m, n, k, rule="set"):
    array = read_scalesim_cfg(cfg, layouts=True)
    layout = layout_from_cfg(cfg, layout_file, rule)
    result = simulate_gemm(m, k, n, array.rows, array.cols, array.dataflow, sram_words=sram_words(array),
                           bandwidth=array.dram_bandwidths, layout=layout)
    return {name: getattr(result, name) for name in ("cycles_incl_prefetch", "cycles", "stall_cycles",
                                                     "ifmap_dram_reads", "filter_dram_reads", "ofmap_dram_writes")}


def check_layout(tmp_path, setting, dataflow):
    cfg, topology, layout_file = write_files(tmp_path, setting, dataflow, extra_rows=[ROW_D])  # row 2: unused
    (reference,) = scalesim_files(cfg, topology, layout_file)
    assert ours(cfg, layout_file, *setting[1:4]) == reference
    return reference


@pytest.mark.parametrize("setting", LAYOUT_SMALL)
def test_layouts_and_bank_conflicts_equal_scalesim(tmp_path, setting):
    reference = check_layout(tmp_path, setting, "ws")
    assert reference["stall_cycles"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("dataflow", ["ws", "os", "is"])
@pytest.mark.parametrize("setting", range(len(LAYOUT_SETTINGS)))
def test_every_layout_setting_every_dataflow(tmp_path, setting, dataflow):
    check_layout(tmp_path, LAYOUT_SETTINGS[setting], dataflow)


def test_the_bank_rule_changes_the_stalls_and_only_the_stalls(tmp_path):
    cfg, _, layout_file = write_files(tmp_path, LAYOUT_SETTINGS[0], "ws")
    as_scalesim, interleaved = ours(cfg, layout_file, 16, 10, 12), ours(cfg, layout_file, 16, 10, 12, "line")
    assert as_scalesim["stall_cycles"] != interleaved["stall_cycles"]
    assert {k: v for k, v in as_scalesim.items() if "dram" in k} == {k: v for k, v in interleaved.items() if "dram" in k}


def test_layout_order_by_hand():
    # a 2×3×1 map, factors (1, 2, 1): tiles along W; interline H then W tiles, intraline the W factor
    words, padded = layout_order((2, 3, 1), (1, 2, 1), (0, 1, 2, 3, 4, 5))
    assert words.tolist() == [0, 1, 2, 3, 4, 5] and padded == 8  # W padded 3 → 4: one pad per row
    words, _ = layout_order((2, 3, 1), (1, 2, 1), (1, 0, 2, 3, 4, 5))  # W tiles outermost
    assert words.tolist() == [0, 1, 3, 4, 2, 5]
    words, _ = layout_order((2, 3, 1), (2, 1, 1), (1, 0, 2, 4, 3, 5))  # H factor 2 inside the line, W outer
    assert words.tolist() == [0, 3, 1, 4, 2, 5]


def test_only_the_first_row_is_read_and_dp_rows_as_scalesim(tmp_path):
    path = tmp_path / "l.csv"
    path.write_text(layout_csv(("convDP", 2, 2, 1, 1, 3, 1, 3, 4, 5, 0, 1, 2, 4, 5, 6, 7, 0, 1, 2, 3), ROW_A))
    row = read_layout_file(path)
    assert row.ifmap_factors == (2, 2, 1) and row.name == "convDPChannel_0"  # channel factor 3 → 1, as SCALE-Sim


@pytest.mark.parametrize("edit, field", [
    (lambda s: s.replace("IfmapOffset:    0", "IfmapOffset:    5"), "IfmapOffset"),
    (lambda s: s.replace("InterfaceBandwidth: USER", "InterfaceBandwidth: CALC"), "InterfaceBandwidth"),
    (lambda s: s.replace("FilterSRAMBankBandwidth: 8", "FilterSRAMBankBandwidth: 16"), "FilterSRAMBankBandwidth"),
    (lambda s: s.replace("IfmapSRAMBankBandwidth: 8", "IfmapSRAMBankBandwidth: 4"), "IfmapSRAMBankBandwidth"),
    (lambda s: s.replace("IfmapSRAMBankNum: 2", "IfmapSRAMBankNum: 3"), "IfmapSRAMBankNum"),
])
def test_what_scalesim_cannot_run_is_refused_in_one_line(tmp_path, capsys, edit, field):
    cfg, _, layout_file = write_files(tmp_path, LAYOUT_SETTINGS[0], "ws")
    cfg.write_text(edit(cfg.read_text()))
    assert main(["gemm", "--m", "16", "--n", "10", "--k", "12", "--config", str(cfg), "--layout", str(layout_file),
                 "--engine", "cycle"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and field in err


def test_bad_layout_rows_are_refused(tmp_path):
    path = tmp_path / "l.csv"
    path.write_text(layout_csv(("x", 2, 4, 1, 4, 1, 2, 3, 4, 5, 0, 1, 1)))  # order not a permutation
    with pytest.raises(InputError, match="permutation"):
        layout_order((4, 4, 1), read_layout_file(path).ifmap_factors, read_layout_file(path).ifmap_order)
    path.write_text(layout_csv(("x", 2, "a", 1)))
    with pytest.raises(InputError) as err:
        read_layout_file(path)
    assert err.value.where.line == 2


def test_the_cli_runs_the_files_and_needs_them_all(tmp_path, capsys):
    cfg, _, layout_file = write_files(tmp_path, LAYOUT_SETTINGS[0], "ws")
    assert main(["gemm", "--m", "16", "--n", "10", "--k", "12", "--config", str(cfg), "--layout", str(layout_file),
                 "--engine", "cycle", "--format", "json"]) == 0
    (record,) = json.loads(capsys.readouterr().out)["rows"]
    expected = ours(cfg, layout_file, 16, 10, 12)
    assert (record["total_cycles"], record["stall_cycles"]) == (expected["cycles"], expected["stall_cycles"])
    assert main(["gemm", "--m", "16", "--n", "10", "--k", "12", "--config", str(cfg), "--engine", "cycle"]) == 2
    assert "does not model custom SRAM layouts" in capsys.readouterr().err


@pytest.mark.slow
def test_the_set_order_does_not_depend_on_the_hash_seed(tmp_path):
    """SCALE-Sim's bank of a word is its place in a Python set of numbers: run SCALE-Sim in two
    interpreters with different PYTHONHASHSEED values and get the same stalls (numbers' hashes are not
    randomized), and the same as archsim's ``set`` rule here."""
    cfg, topology, layout_file = write_files(tmp_path, LAYOUT_SETTINGS[2], "ws")
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); from scalesim_layout_reference import scalesim_files;"
            "print(json.dumps(scalesim_files(*sys.argv[2:])))")
    outputs = []
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent), str(cfg), str(topology),
                               str(layout_file)], capture_output=True, text=True, env=env, check=True)
        outputs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert outputs[0] == outputs[1]
    assert ours(cfg, layout_file, *LAYOUT_SETTINGS[2][1:4]) == outputs[0][0]


def test_banks_must_be_positive():
    with pytest.raises(InputError):
        Banks(0, 1)
    with pytest.raises(InputError, match="bank rule"):
        GemmLayout(parse_row([str(x) for x in ROW_A]), Banks(1, 1), rule="hash")


# SCALE-Sim's own layout example (scale-sim-v3 repository): configs/tpuv5e_downscale.cfg — 128×128 ws,
# 4096/4096/8192 KiB SRAMs, Bandwidth 60, both custom layouts on, 1024-word bank bandwidth in 32 banks of
# one port — with the first GEMM of topologies/GEMM_mnk/vit_s.csv (L0: M 196, N 192, K 384) and the first
# row of each of its layouts/GEMM_mnk/vit_s_downscale_{MK_KN,MK_NK,KM_KN,KM_NK}.csv (the row SCALE-Sim
# uses for every layer). The values are typed in here; the files stay in that repository.
EXAMPLE_ROWS = {
    "MK_KN": ("L0", 49, 20, 1, 128, 1, 8, 2, 1, 0, 5, 4, 3, 2, 0, 1, 3, 6, 4, 5, 7),
    "MK_NK": ("L0", 8, 128, 1, 128, 1, 8, 1, 2, 0, 4, 5, 3, 2, 0, 1, 3, 6, 4, 5, 7),
    "KM_KN": ("L0", 49, 20, 1, 8, 1, 128, 2, 1, 0, 5, 4, 3, 3, 0, 1, 2, 7, 4, 5, 6),
    "KM_NK": ("L0", 8, 128, 1, 8, 1, 128, 1, 2, 0, 4, 5, 3, 3, 0, 1, 2, 7, 4, 5, 6),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXAMPLE_ROWS))
def test_scalesims_own_layout_example(tmp_path, name):
    cfg = tmp_path / "tpuv5e_downscale.cfg"
    cfg.write_text(layout_cfg(128, 128, "ws", ifmap=(True, 1024, 32, 1), filter=(True, 1024, 32, 1),
                              kb=(4096, 4096, 8192), bandwidth=60))
    (tmp_path / "vit_s_l0.csv").write_text(gemm_csv(("L0", 196, 192, 384)))
    (tmp_path / "layout.csv").write_text(layout_csv(EXAMPLE_ROWS[name]))
    (reference,) = scalesim_files(cfg, tmp_path / "vit_s_l0.csv", tmp_path / "layout.csv")
    assert reference["stall_cycles"] > 0
    assert ours(cfg, tmp_path / "layout.csv", 196, 192, 384) == reference


REPOS = [Path(p) for p in os.environ.get("ARCHSIM_SCALESIM_REPOS", "").split(os.pathsep) if p]
EXAMPLE_FILES = sorted(f for root in REPOS for f in (root / "layouts" / "GEMM_mnk").glob("vit_s_downscale_*.csv"))


@pytest.mark.slow
@pytest.mark.skipif(not EXAMPLE_FILES, reason="set ARCHSIM_SCALESIM_REPOS to a scale-sim-v3 checkout")
@pytest.mark.parametrize("layout_file", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_scalesims_layout_files_every_layer(tmp_path, layout_file):
    """The repository's files themselves, every layer of vit_s. SCALE-Sim 3.0.0's config reader needs three
    keys tpuv5e_downscale.cfg lacks (ReadRequestBuffer, WriteRequestBuffer: never used by its memory
    model; UseRamulatorTrace: False); a copy gets them."""
    root = layout_file.parents[2]
    text = (root / "configs" / "tpuv5e_downscale.cfg").read_text()
    text = text.replace("Dataflow : ws", "Dataflow : ws\nReadRequestBuffer: 32\nWriteRequestBuffer: 32")
    text += "\nUseRamulatorTrace: False\n" + ("" if "[sparsity]" in text else
                                             "\n[sparsity]\nSparsitySupport : false\nSparseRep : ellpack_block\n"
                                             "OptimizedMapping : false\nBlockSize : 8\nRandomNumberGeneratorSeed : 40\n")
    cfg = tmp_path / "tpuv5e_downscale.cfg"
    cfg.write_text(text)
    topology = root / "topologies" / "GEMM_mnk" / "vit_s.csv"
    reference = scalesim_files(cfg, topology, layout_file)
    gemms = [[int(x) for x in line.split(",")[1:4]] for line in topology.read_text().splitlines()[1:] if line.strip()]
    assert [ours(cfg, layout_file, m, n, k) for m, n, k in gemms] == reference


@pytest.mark.slow
def test_the_shipped_layout_example_equals_scalesim(tmp_path):
    """docs/scalesim.md's example: the shipped .cfg and layout file, read unchanged by both tools."""
    root = Path(__file__).resolve().parents[1]
    cfg, layout_file = root / "configs" / "arrays" / "scalesim_layout_32x32_ws.cfg", root / "docs" / "examples" / "gemm_layout.csv"
    (tmp_path / "gemm.csv").write_text(gemm_csv(("g", 128, 64, 256)))
    (reference,) = scalesim_files(cfg, tmp_path / "gemm.csv", layout_file)
    assert ours(cfg, layout_file, 128, 64, 256) == reference
    assert reference["stall_cycles"] > ours(cfg, layout_file, 128, 64, 256, "line")["stall_cycles"]
