"""``archsim train``'s ``energy_breakdown_j`` on array devices: ``energy_j`` by part (mac, register, sram, dram,
vector, nonmatmul, leakage). The references are independent of the breakdown's own code: ``energy_j`` itself
(the parts must sum to it), and the energy model's linearity in every per-event figure (``archsim/energy/model.py``):
a device file whose ``[energy]`` section zeroes a part's figures lowers ``energy_j`` by exactly that part, each
run's total found by the code that priced it before the breakdown existed. Static power: the hand formula
``static_watts`` × chips × seconds. Every test here failed before the key existed (no ``energy_breakdown_j``); the
csv's column (one ``part: J, …`` cell, as ``breakdown_seconds``) against the JSON's object, before it had none."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from test_docs import ROOT
from test_robustness import write

import archsim
from archsim.cli import main

MODEL = str(ROOT / "configs" / "transformers" / "gpt2.json")
DEVICE_TEXT = (ROOT / "configs" / "devices" / "tpu_v4_like.toml").read_text(encoding="utf-8")
PARTS = ["mac", "register", "sram", "dram", "vector", "nonmatmul", "leakage"]
SRAM = ("ifmap_read_pj", "filter_read_pj", "ofmap_read_pj", "ifmap_write_pj", "filter_write_pj", "ofmap_write_pj")
DRAM = ("dram_read_pj", "dram_write_pj")
CHIPS = 4


def cluster(tmp_path: Path, name: str, energy: tuple[str, ...] = (), device: str = "") -> Path:
    """A one-server cluster of :data:`CHIPS` tpu_v4_like chips whose ``[energy]`` section zeroes the figures
    ``energy`` (none: the default table), with ``device`` added under ``[device]``; the cluster file's path."""
    text = DEVICE_TEXT.replace("[device]\n", f"[device]\n{device}", 1)
    if energy:
        text += "\n[energy]\n" + "".join(f"{key} = 0\n" for key in energy)
    write(tmp_path / f"{name}.toml", text)
    return write(tmp_path / f"{name}_cluster.toml", f'[cluster]\nname = "c"\n\n[[servers]]\ncount = 1\ngpus = {CHIPS}\n'
                                                     f'intra_server_gbps = 4800\ndevice = "{name}.toml"\n')


def meta(capsys, cluster_file: Path | str, *extra: str) -> dict:
    argv = ["train", MODEL, "--cluster", str(cluster_file), "--dp", "4", "--global-batch", "4", "--format", "json", *extra]
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)["meta"]


def test_the_parts_sum_to_energy_j_in_a_fixed_order(tmp_path, capsys):
    got = meta(capsys, cluster(tmp_path, "plain"))
    parts = got["energy_breakdown_j"]
    assert list(parts) == PARTS
    assert all(value >= 0 for value in parts.values())
    assert sum(parts.values()) == pytest.approx(got["energy_j"], rel=1e-12)
    assert parts["mac"] > 0 and parts["sram"] > 0 and parts["dram"] > 0 and parts["leakage"] == 0  # default table
    keys = list(got)
    assert keys.index("energy_j") < keys.index("energy_breakdown_j") < keys.index("energy_source")


@pytest.mark.parametrize(("part", "figures"), [("sram", SRAM), ("dram", DRAM), ("mac", ("mac_pj",))])
def test_zeroing_a_parts_figures_lowers_energy_j_by_that_part(tmp_path, capsys, part, figures):
    """The energy model is linear in every figure: the run whose device file zeroes the part's figures costs
    exactly the part less (the same ops, the same seconds), and its own breakdown shows that part at 0."""
    base = meta(capsys, cluster(tmp_path, "base"))
    zeroed = meta(capsys, cluster(tmp_path, "zeroed", figures))
    assert zeroed["iteration_seconds"] == base["iteration_seconds"]
    assert base["energy_j"] - zeroed["energy_j"] == pytest.approx(base["energy_breakdown_j"][part], rel=1e-9)
    assert zeroed["energy_breakdown_j"][part] == 0
    others = [name for name in PARTS if name != part]
    assert [zeroed["energy_breakdown_j"][n] for n in others] == pytest.approx(
        [base["energy_breakdown_j"][n] for n in others], rel=1e-12)


def test_static_power_is_the_leakage_part_by_hand(tmp_path, capsys):
    """25 W on each of 4 chips for the iteration's seconds, as energy_static_j states it."""
    got = meta(capsys, cluster(tmp_path, "leaky", device="static_watts = 25\n"))
    parts = got["energy_breakdown_j"]
    assert parts["leakage"] == pytest.approx(25 * CHIPS * got["iteration_seconds"], rel=1e-12)
    assert sum(parts.values()) == pytest.approx(got["energy_j"], rel=1e-12)
    assert sum(v for k, v in parts.items() if k != "leakage") == pytest.approx(got["energy_dynamic_j"], rel=1e-12)


def test_a_catalog_gpu_has_no_breakdown(capsys):
    """Board power × time has no parts: the key is absent."""
    got = meta(capsys, ROOT / "configs" / "clusters" / "a100_node.toml")
    assert got["energy_j"] > 0 and "energy_breakdown_j" not in got


def table_lines(capsys, cluster_file: Path | str) -> list[str]:
    argv = ["train", MODEL, "--cluster", str(cluster_file), "--dp", "4", "--global-batch", "4"]
    capsys.readouterr()
    assert main(argv) == 0
    return capsys.readouterr().out.splitlines()


def test_the_table_ends_with_each_parts_share_of_the_json_breakdown(tmp_path, capsys):
    """The line under the table: the JSON's energy_j and every nonzero part as a percentage of it (2 significant
    figures), largest first, worked out here from the JSON meta."""
    path = cluster(tmp_path, "shares")
    got = meta(capsys, path)
    line = table_lines(capsys, path)[-1]
    head, shares = line.split(" — ")
    assert head == f"energy: {got['energy_j']:.4g} J"
    named = [item.rsplit(" ", 1) for item in shares.split(", ")]
    expected = sorted(((v / got["energy_j"], k) for k, v in got["energy_breakdown_j"].items() if v), reverse=True)
    assert [name for name, _ in named] == [name for _, name in expected]
    for (_, percent), (share, _) in zip(named, expected, strict=True):
        assert float(percent.rstrip("%")) == pytest.approx(100 * share, rel=0.05)


def test_a_catalog_gpus_table_has_no_energy_line(capsys):
    assert not any(line.startswith("energy:") for line in table_lines(capsys, ROOT / "configs" / "clusters" / "a100_node.toml"))


def csv_rows(capsys, cluster_file: Path | str) -> list[dict[str, str]]:
    argv = ["train", MODEL, "--cluster", str(cluster_file), "--dp", "4", "--global-batch", "4", "--format", "csv"]
    capsys.readouterr()
    assert main(argv) == 0
    return list(csv.DictReader(io.StringIO(capsys.readouterr().out)))


def test_the_csv_carries_the_json_parts_in_one_cell_each(tmp_path, capsys):
    """As the csv writes ``breakdown_seconds`` and ``compute_split_seconds``: one ``part: J, …`` cell, the JSON's parts
    in its order at full precision (the floats read back equal), summing to the csv's own ``energy_j``; the static
    part too (25 W), the one part the default table leaves at 0. ``archsim.train``'s ``to_frame()`` has the same cell."""
    path = cluster(tmp_path, "csv", device="static_watts = 25\n")
    got = meta(capsys, path)
    rows = csv_rows(capsys, path)
    cells = {row["energy_breakdown_j"] for row in rows}
    assert len(cells) == 1  # a meta figure: the same on every op row
    cell = cells.pop()
    parts = {name: float(value) for name, value in (item.split(": ") for item in cell.split(", "))}
    assert list(parts) == PARTS
    assert parts == got["energy_breakdown_j"]
    assert parts["leakage"] > 0
    assert sum(parts.values()) == pytest.approx(float(rows[0]["energy_j"]), rel=1e-12)
    result, _ = archsim.train(MODEL, cluster=str(path), dp=4, global_batch=4)
    assert result.to_frame()["energy_breakdown_j"].tolist() == [cell] * len(rows)


def test_a_catalog_gpus_csv_has_no_breakdown_column(capsys):
    rows = csv_rows(capsys, ROOT / "configs" / "clusters" / "a100_node.toml")
    assert float(rows[0]["energy_j"]) > 0 and "energy_breakdown_j" not in rows[0]


def runs_output(capsys, tmp_path: Path, form: str) -> str:
    """``archsim train --runs`` of one row on the :data:`CHIPS`-chip array cluster, printed as ``form``."""
    runs = write(tmp_path / "runs.csv", f"gpus,tp,pp,dp,micro_batch,global_batch\n{CHIPS},1,1,{CHIPS},1,{CHIPS}\n")
    argv = ["train", MODEL, "--runs", str(runs), "--cluster", str(cluster(tmp_path, "runs")), "--format", form]
    capsys.readouterr()
    assert main(argv) == 0
    return capsys.readouterr().out


def test_a_runs_rows_breakdown_is_one_part_cell_in_csv_and_no_table_column(tmp_path, capsys):
    """A --runs row on array devices carries ``energy_breakdown_j`` (an object in JSON): its csv cell is the
    ``part: J, …`` text train's csv writes, the JSON's parts at full precision, not a Python dict's repr; the table
    leaves the object out as it leaves the compute split out (a row's line would be a dict's text)."""
    parts = json.loads(runs_output(capsys, tmp_path, "json"))["rows"][0]["energy_breakdown_j"]
    assert list(parts) == PARTS
    row = next(csv.DictReader(io.StringIO(runs_output(capsys, tmp_path, "csv"))))
    cell = {name: float(value) for name, value in (item.split(": ") for item in row["energy_breakdown_j"].split(", "))}
    assert cell == parts
    frame = archsim.train_runs(MODEL, runs=str(tmp_path / "runs.csv"), cluster=str(tmp_path / "runs_cluster.toml")).to_frame()
    assert frame["energy_breakdown_j"].tolist() == [row["energy_breakdown_j"]]  # the library's csv rows, the same cell
    header = next(line for line in runs_output(capsys, tmp_path, "table").splitlines() if not line.startswith("#"))
    assert "energy_j" in header.split() and "energy_breakdown_j" not in header.split()


def test_a_share_near_the_whole_is_written_as_a_percentage_not_in_e_notation():
    """Shares are 2 significant figures written out: 99.7% is "100%" (``:.2g`` wrote "1e+02%"), a millionth of the
    whole "0.0001%" (it wrote "1e-04%"), as a reader of a percentage reads them (hand-rounded references)."""
    from archsim.training.table_lines import energy_line, split_line

    line = energy_line({"energy_j": 10.0, "energy_breakdown_j": {"mac": 9.97, "dram": 0.03, "vector": 1e-5}})
    assert line == "energy: 10 J — mac 100%, dram 0.3%, vector 0.0001%"
    split = {"gemm": 0.997, "memory_bound": 0.003, "kernel_gaps": 0.0, "host_floor": 0.0,
             "recompute_communication": 0.0, "other": 0.0}
    assert split_line(split) == "1 s of compute and recompute — gemm 100%, memory-bound 0.3%, kernel gaps 0%, host floor 0%"


@pytest.mark.parametrize(("precision", "joules", "share"), [(None, 4, 2), ("6", 6, 6)])
def test_the_energy_line_follows_precision_as_the_tables_other_figures(tmp_path, capsys, precision, joules, share):
    """Failed before: ``--precision 6`` printed the table's figures to 6 significant digits but the energy line's
    joules to 4 and its shares to 2. Without the flag the line keeps 4 and 2 (docs/training.md quotes one). The
    references are the JSON's full-precision ``energy_j`` and parts, each share part / ``energy_j`` × 100, within
    the rounding of that many digits (half a unit in the last place)."""
    path = cluster(tmp_path, "plain")
    got = meta(capsys, path)
    assert main(["train", MODEL, "--cluster", str(path), "--dp", "4", "--global-batch", "4",
                 *(["--precision", precision] if precision else [])]) == 0
    line = next(text for text in capsys.readouterr().out.splitlines() if text.startswith("energy: "))
    assert line.startswith(f"energy: {got['energy_j']:.{joules}g} J — ")
    shown = dict(item.split(" ") for item in line.split(" — ")[1].split(", "))
    nonzero = {name: value for name, value in got["energy_breakdown_j"].items() if value}
    assert set(shown) == set(nonzero)
    for name, value in nonzero.items():
        assert float(shown[name].removesuffix("%")) == pytest.approx(100 * value / got["energy_j"],
                                                                     rel=0.5 * 10 ** (1 - share) * (1 + 1e-9))
