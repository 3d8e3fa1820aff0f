"""Custom SRAM layouts and bank conflicts, exactly as SCALE-Sim 3.0.0 runs them (issue #31).

Every expected value comes from running the scalesim package on the same three files — a USER-mode
``.cfg`` with ``[layout]`` custom layouts on, a GEMM topology and a layout file — through its own
readers (``scalesim_layout_reference.scalesim_files``). archsim reads the same files
(``read_scalesim_cfg``, ``layout_from_cfg``) and its cycle engine must give the same cycles, stall
cycles, "Total Cycles (incl. prefetch)" and DRAM reads and writes. The SRAMs are 1 KiB so the
array really stalls; several settings have more than one bank and one port, so bank conflicts count.
A few settings run by default; the grid (every setting × every dataflow) is in the slow tier.
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

# (name, ifmap H W, filter R S, C, filters — factors; ifmap intra (3), inter (3); filter intra (4), inter (4))
ROW_A = ("A", 2, 4, 1, 4, 1, 2, 3, 4, 5, 0, 1, 2, 4, 5, 6, 7, 0, 1, 2, 3)
ROW_B = ("B", 2, 2, 1, 4, 1, 2, 5, 4, 3, 2, 0, 1, 7, 6, 5, 4, 3, 2, 1, 0)
ROW_C = ("C", 1, 8, 1, 8, 1, 1, 4, 3, 5, 1, 0, 2, 7, 4, 5, 6, 0, 1, 2, 3)  # ifmap 8 wide, filter 8 taps
ROW_D = ("D", 4, 1, 1, 2, 1, 4, 5, 3, 4, 0, 2, 1, 6, 5, 4, 7, 2, 1, 0, 3)  # column-major-ish, 4 filters
# (row, M, N, K, array, ifmap (on, bw, banks, ports), filter (on, bw, banks, ports), filter offset)
SETTINGS = [
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
SMALL = [SETTINGS[0], SETTINGS[3]]


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


def check(tmp_path, setting, dataflow):
    cfg, topology, layout_file = write_files(tmp_path, setting, dataflow, extra_rows=[ROW_D])  # row 2: unused
    (reference,) = scalesim_files(cfg, topology, layout_file)
    assert ours(cfg, layout_file, *setting[1:4]) == reference
    return reference


@pytest.mark.parametrize("setting", SMALL)
def test_layouts_and_bank_conflicts_equal_scalesim(tmp_path, setting):
    reference = check(tmp_path, setting, "ws")
    assert reference["stall_cycles"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("dataflow", ["ws", "os", "is"])
@pytest.mark.parametrize("setting", range(len(SETTINGS)))
def test_every_layout_setting_every_dataflow(tmp_path, setting, dataflow):
    check(tmp_path, SETTINGS[setting], dataflow)


def test_the_bank_rule_changes_the_stalls_and_only_the_stalls(tmp_path):
    cfg, _, layout_file = write_files(tmp_path, SETTINGS[0], "ws")
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
    cfg, _, layout_file = write_files(tmp_path, SETTINGS[0], "ws")
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
    cfg, _, layout_file = write_files(tmp_path, SETTINGS[0], "ws")
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
    cfg, topology, layout_file = write_files(tmp_path, SETTINGS[2], "ws")
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); from scalesim_layout_reference import scalesim_files;"
            "print(json.dumps(scalesim_files(*sys.argv[2:])))")
    outputs = []
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent), str(cfg), str(topology),
                               str(layout_file)], capture_output=True, text=True, env=env, check=True)
        outputs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert outputs[0] == outputs[1]
    assert ours(cfg, layout_file, *SETTINGS[2][1:4]) == outputs[0][0]


def test_banks_must_be_positive():
    with pytest.raises(InputError):
        Banks(0, 1)
    with pytest.raises(InputError, match="bank rule"):
        GemmLayout(parse_row([str(x) for x in ROW_A]), Banks(1, 1), rule="hash")
