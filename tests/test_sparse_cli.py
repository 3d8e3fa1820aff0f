"""``archsim sparse``: SCALE-Sim's sparsity inputs read unchanged, bad ones refused in one line, and the
pruned network's pipeline plan. (Its numbers against the scalesim package: test_scalesim_sparsity.)"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest

from archsim.array.sparse_input import read_sparsity_column, read_sparsity_section
from archsim.array.sparsity import SparsityConfig
from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "arrays" / "scalesim_sparsity_128x128_ws.cfg"
TOPOLOGY = ROOT / "docs" / "examples" / "pruned_convs.csv"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_example_config_reads_as_scalesim_reads_it():
    assert read_sparsity_section(CONFIG) == SparsityConfig("ellpack_block", True, 8, 40)
    assert read_sparsity_section(ROOT / "configs" / "arrays" / "scalesim_32x32_ws.cfg") is None  # off
    assert read_sparsity_column(TOPOLOGY) == [(4, 4), (2, 4), (1, 4), (1, 8)]
    assert read_sparsity_column(ROOT / "tests" / "data" / "scalesim_formats" / "conv_comment.csv")[0] == (1, 1)


def test_layer_table_and_its_sums(capsys):
    code, out, _ = run(capsys, "sparse", str(TOPOLOGY), "--config", str(CONFIG), "--format", "csv")
    assert code == 0
    assert run(capsys, "sparse", "--config", str(CONFIG), "--topology", str(TOPOLOGY), "--format", "csv") == (
        0, out, "")  # --topology: the older spelling of the positional network, the same run
    table = pd.read_csv(io.StringIO(out))
    assert list(table.layer) == ["conv1", "conv2", "conv3", "conv4"]
    assert (table.F_cycles <= table.F_dense_cycles).all() and (table.F_cycles < table.F_dense_cycles).any()
    assert table.D_cycles.iloc[0] == 0  # the first layer needs no δ
    assert (table.new_storage < table.original_storage)[1:].all()


@pytest.mark.parametrize("argv, words", [
    ([], "one of the arguments NETWORK --topology is required"),
    ([str(TOPOLOGY), "--topology", str(TOPOLOGY)], "argument --topology: not allowed with argument NETWORK"),
])
def test_the_network_is_given_once_positionally_or_by_topology(argv, words, capsys):
    code, out, err = run(capsys, "sparse", "--config", str(CONFIG), *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and words in err, err


@pytest.mark.parametrize("flags, named", [(["--method", "gpipe"], "--method"),
                                          (["--energy", "--processors", "2"], "--energy")])
def test_a_flag_the_run_would_drop_is_refused(flags, named, capsys):
    # --method without --processors printed the layer table as if it were not there; --energy with
    # --processors computed the energy, then printed the partition without it
    code, out, err = run(capsys, "sparse", str(TOPOLOGY), "--config", str(CONFIG), *flags)
    assert code == 2 and out == "" and err.count("\n") == 1 and named in err, err


def test_pruned_pipeline_plan_covers_every_op_once(capsys):
    base = ["sparse", str(TOPOLOGY), "--config", str(CONFIG), "--gradient", "masked"]
    code, out, _ = run(capsys, *base, "--format", "csv")
    table = pd.read_csv(io.StringIO(out))
    code, out, _ = run(capsys, *base, "--processors", "2", "--format", "json")
    assert code == 0
    import json

    plan = json.loads(out)
    single = int((table.F_cycles + table.G_cycles + table.D_cycles).sum())  # hand sum of the layer table
    assert plan["meta"]["single_processor_cycles"] == single
    stages = plan["rows"]
    assert sum(stage["total_cycles"] for stage in stages) == single
    assert plan["meta"]["iteration_cycles"] == max(stage["total_cycles"] for stage in stages)
    ops = " ".join(stage["ops"] for stage in stages).split()
    assert sorted(ops) == sorted(f"{op}:{layer}" for layer in table.layer for op in "FGD"
                                 if not (op == "D" and layer == "conv1"))


@pytest.mark.parametrize("edit, field", [
    (("SparsitySupport : true", "SparsitySupport : false"), "SparsitySupport"),
    (("SparseRep : ellpack_block", "SparseRep : CSR"), "SparseRep"),
    (("BlockSize : 8", "BlockSize : 1"), "BlockSize"),
    (("FilterOffset:   100", "FilterOffset:   0"), "FilterOffset"),
    (("RandomNumberGeneratorSeed : 40", "RandomNumberGeneratorSeed : -1"), "RandomNumberGeneratorSeed"),
])
def test_bad_sparsity_settings_are_one_line(tmp_path, capsys, edit, field):
    path = tmp_path / "bad.cfg"
    path.write_text(CONFIG.read_text().replace(*edit))
    code, _, err = run(capsys, "sparse", "--config", str(path), "--topology", str(TOPOLOGY))
    assert code == 2 and err.count("\n") == 1 and field in err


@pytest.mark.parametrize("cell", ["5:4", "0:4", "2/4", "x"])
def test_bad_ratio_cells_name_their_line(tmp_path, capsys, cell):
    path = tmp_path / "bad.csv"
    path.write_text(TOPOLOGY.read_text().replace("1:4", cell))
    code, _, err = run(capsys, "sparse", "--config", str(CONFIG), "--topology", str(path))
    assert code == 2 and err.count("\n") == 1 and "line 4" in err and "Sparsity" in err


def test_dense_commands_still_refuse_a_sparse_config(capsys):
    code, _, err = run(capsys, "cost", "layerpipe_sample", "--config", str(CONFIG))
    assert code == 2 and "archsim sparse" in err and err.count("\n") == 1


CFG_VALUES = ["", "0", "-1", "1e3", "2147483648", "ws", "true", "TRUE", "csr", "csc", "coo", "nan", "3", "8", "128"]
CFG_KEYS = ["ArrayHeight", "ArrayWidth", "Dataflow", "SparsitySupport", "SparseRep", "OptimizedMapping",
            "BlockSize", "RandomNumberGeneratorSeed", "FilterOffset", "IfmapSRAMBankNum", "IfmapSRAMBankBandwidth"]
CELLS = ["", "0", "-3", "x", "2:4", "4:2", "1:1048577", "3:3", "2147483647", "1:8", "1e9"]


def test_hostile_edits_give_a_table_or_one_clean_line(tmp_path, capsys):
    """Seeded edits of one .cfg value and one topology cell at a time (each key × value, a sample of cells):
    exit 0 with a table, or exit 2 with one line — never a traceback."""
    import random

    rng = random.Random(2026)
    config_text, topology_text = CONFIG.read_text(), TOPOLOGY.read_text()
    outcomes = set()
    for key in CFG_KEYS:
        for value in CFG_VALUES:
            lines = [f"{key} : {value}" if line.split(":")[0].strip() == key else line
                     for line in config_text.splitlines()]
            config = tmp_path / "edit.cfg"
            config.write_text("\n".join(lines) + "\n")
            topology = tmp_path / "edit.csv"
            rows = [line.split(",") for line in topology_text.splitlines()]
            row, column = rng.randrange(1, len(rows)), rng.randrange(1, 9)
            rows[row][column] = " " + rng.choice(CELLS)
            topology.write_text("\n".join(",".join(r) for r in rows) + "\n")
            code, out, err = run(capsys, "sparse", "--config", str(config), "--topology", str(topology))
            assert (code, err) == (0, "") and out or code == 2 and err.count("\n") == 1, (key, value, err)
            outcomes.add(code)
    assert outcomes == {0, 2}


def test_a_shipped_name_says_sparse_needs_a_sparsity_column(capsys, tmp_path, monkeypatch):
    """`archsim sparse layerpipe_sample` said "layerpipe_sample: topology file not found", though NETWORK is
    a shipped name everywhere else; a shipped network has no Sparsity N:M column, which the line now says."""
    monkeypatch.chdir(tmp_path)  # no file of that name here
    code, out, err = run(capsys, "sparse", "layerpipe_sample", "--config", str(CONFIG))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "shipped network" in err and "Sparsity" in err and "not found" not in err
