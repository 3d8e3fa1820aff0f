"""``host_bound_seconds`` and ``compute_split_seconds`` in ``archsim search`` rows, and the table's note when the first
row rests on the host floor.

A search row is costed by other code than one ``train`` iteration (the coster's closed forms, the rows re-timed by the
event simulator): each row's figures must be the ones ``archsim train --format json`` prints when the row's own
``command`` is replayed, on rows the event simulator timed (``--refine``, the default) and on closed-form rows
(``--refine 0``) on one GPU type, where pipeline rank 0 ends the iteration as the closed form has it.
"""

from __future__ import annotations

import json
import shlex

import pytest
from test_docs import ROOT
from train_cli import run_cli

MEDIUM = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
A100_NODE = str(ROOT / "configs" / "clusters" / "a100_node.toml")
# 8 A100s, global batch 32, 1F1B, no recompute: the best rows mix TP 1 at micro-batch 4 (a few host-bound passes),
# TP 2 at micro-batch 8 (GPU-bound) and a two-stage pipeline
SEARCH = ["search", MEDIUM, "--cluster", A100_NODE, "--global-batch", "32", "--attention", "standard",
          "--recompute", "none", "--schedule", "1f1b", "--top", "12"]
# micro-batch 1 only: short passes, whose host issue time sets them (the first row's over train's 10% mark)
SMALL = [*SEARCH[:-2], "--max-micro-batch", "1", "--top", "3"]


def replayed(row: dict) -> dict:
    """``archsim train --format json``'s meta for the row's own ``command``."""
    words = shlex.split(row["command"])
    assert words[:2] == ["archsim", "train"]
    return json.loads(run_cli([*words[1:], "--format", "json"]))["meta"]


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return json.loads(run_cli([*SEARCH, "--format", "json"]))["rows"]


@pytest.fixture(scope="module")
def small() -> list[dict]:
    return json.loads(run_cli([*SMALL, "--format", "json"]))["rows"]


def test_a_host_bound_rows_figure_is_trains_for_its_command(small):
    """The first micro-batch-1 row: over a tenth of its iteration is the host's (not vacuous), train's to the bit."""
    row = small[0]
    meta = replayed(row)
    assert row["timing"] == "event" and row["iteration_seconds"] == meta["iteration_seconds"]
    assert row["host_bound_seconds"] > 0.1 * row["iteration_seconds"]
    assert row["host_bound_seconds"] == meta["host_bound_seconds"]


def test_rows_figures_are_trains_for_their_commands(rows):
    """A partly host-bound row on one stage, one on a two-stage pipeline, and a GPU-bound one: exactly 0 there."""
    partly = rows[0]
    piped = next(r for r in rows if r["pp"] == 2 and r["host_bound_seconds"] > 0)
    gpu_bound = next(r for r in rows if r["tp"] == 2 and r["micro_batch"] == 8)
    for row in (partly, piped, gpu_bound):
        meta = replayed(row)
        assert row["iteration_seconds"] == meta["iteration_seconds"]
        assert row["host_bound_seconds"] == meta["host_bound_seconds"]
    assert partly["host_bound_seconds"] > 0 and gpu_bound["host_bound_seconds"] == 0.0


def test_closed_form_rows_figures_are_trains_on_one_gpu_type():
    """``--refine 0``: each row at its closed form; its figure is rank 0's, the rank train's run ends on here."""
    closed = json.loads(run_cli([*SEARCH[:-1], "8", "--refine", "0", "--format", "json"]))["rows"]  # a PP 2 row 7th
    piped = next(r for r in closed if r["pp"] == 2)
    for row in (closed[0], piped):
        assert row["timing"] == "closed-form"
        assert row["host_bound_seconds"] == replayed(row)["host_bound_seconds"] > 0


def test_csv_rows_carry_the_figure(rows):
    import csv
    import io

    table = list(csv.DictReader(io.StringIO(run_cli([*SEARCH, "--format", "csv"]))))
    assert [float(line["host_bound_seconds"]) for line in table] == pytest.approx(
        [row["host_bound_seconds"] for row in rows], rel=1e-12)


def test_the_table_notes_a_first_row_resting_on_the_host_floor(small, rows):
    """One line under the meta when the first row is over train's 10% mark; none when it is under it."""
    noted = [line for line in run_cli(SMALL).splitlines() if line.startswith("# host_bound:")]
    assert len(noted) == 1
    host, total = small[0]["host_bound_seconds"], small[0]["iteration_seconds"]
    assert noted[0] == (f"# host_bound: the first row's rank rests on the host floor: {host:.3g} s of {total:.3g} s "
                        "is the host issuing ops (69.4 µs per op, vTrain's A100 fit) beyond the GPU's work: a faster "
                        "host CPU, a larger micro-batch or CUDA graphs shorten it")
    assert rows[0]["host_bound_seconds"] < 0.1 * rows[0]["iteration_seconds"]
    assert "host_bound:" not in run_cli(SEARCH)


def test_rows_compute_splits_are_trains_for_their_commands(rows):
    """The rows above (one stage partly host-bound, a two-stage pipeline, a GPU-bound one), each event-timed: the
    object train's meta has for the row's command, to the bit; the parts sum to train's compute + recompute."""
    partly = rows[0]
    piped = next(r for r in rows if r["pp"] == 2 and r["host_bound_seconds"] > 0)
    gpu_bound = next(r for r in rows if r["tp"] == 2 and r["micro_batch"] == 8)
    for row in (partly, piped, gpu_bound):
        meta = replayed(row)
        assert row["timing"] == "event" and row["compute_split_seconds"] == meta["compute_split_seconds"]
        breakdown = meta["breakdown_seconds"]
        assert sum(row["compute_split_seconds"].values()) == pytest.approx(
            breakdown["compute"] + breakdown["recompute"], rel=1e-12)
    assert partly["compute_split_seconds"]["host_floor"] == partly["host_bound_seconds"] > 0


def test_closed_form_rows_compute_splits_are_trains_on_one_gpu_type():
    """``--refine 0``: rank 0's split by train's sums, the rank train's run ends on here: train's to the bit."""
    closed = json.loads(run_cli([*SEARCH[:-1], "8", "--refine", "0", "--format", "json"]))["rows"]  # a PP 2 row 7th
    piped = next(r for r in closed if r["pp"] == 2)
    for row in (closed[0], piped):
        assert row["timing"] == "closed-form"
        assert row["compute_split_seconds"] == replayed(row)["compute_split_seconds"]


def test_csv_rows_carry_the_split_in_one_cell_and_the_table_none(rows):
    """As train's csv writes its meta's: ``part: seconds, …`` at full precision (the floats read back equal); the
    table leaves it out (six parts a row)."""
    import csv
    import io

    table = list(csv.DictReader(io.StringIO(run_cli([*SEARCH, "--format", "csv"]))))
    parts = [{name: float(value) for name, value in (item.split(": ") for item in line["compute_split_seconds"].split(", "))}
             for line in table]
    assert parts == [row["compute_split_seconds"] for row in rows]
    assert "compute_split_seconds" not in run_cli(SEARCH)


TINY = {"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 4, "n_positions": 32, "vocab_size": 1000,
        "n_inner": 256, "tie_word_embeddings": True}
CATALOG_AND_FILE = """[cluster]
name = "catalog_and_file"
inter_server_gbps = 200
inter_server_link = "per_gpu_pair"

[[servers]]
count = 1
gpus = 1
intra_server_gbps = 4800
gpu = "a100-80gb"

[[servers]]
count = 1
gpus = 1
intra_server_gbps = 4800
device = "chip.toml"
"""


@pytest.fixture(scope="module")
def catalog_and_file(tmp_path_factory) -> list[str]:
    """A tiny GPT's search on a catalog A100 (host time per op: vTrain's fit, 69.4 µs) then a device file's chip
    stating ``host_s = 2e-4`` (the shipped A100-as-arrays file, renamed, its host_s raised), micro-batches short
    enough that the host sets the first row's passes."""
    folder = tmp_path_factory.mktemp("catalog_and_file")
    device = (ROOT / "configs" / "devices" / "a100_80gb_as_arrays.toml").read_text(encoding="utf-8")
    assert "host_s = 69.4e-6\n" in device and 'name = "NVIDIA A100 SXM4 80GB"\n' in device
    (folder / "chip.toml").write_text(device.replace("host_s = 69.4e-6\n", "host_s = 2e-4\n").replace(
        'name = "NVIDIA A100 SXM4 80GB"\n', 'name = "A100 as arrays, slow host"\n'), encoding="utf-8")
    (folder / "cluster.toml").write_text(CATALOG_AND_FILE, encoding="utf-8")
    (folder / "tiny.json").write_text(json.dumps(TINY), encoding="utf-8")
    return ["search", str(folder / "tiny.json"), "--cluster", str(folder / "cluster.toml"), "--global-batch", "4",
            "--top", "1"]


@pytest.mark.parametrize(("gpus", "pp", "per_op"), [
    ("1", 1, "69.4 µs per op, vTrain's A100 fit"),
    ("2", 2, "69.4 µs per op, vTrain's A100 fit; 200 µs per op, the device file's host_s")])
def test_the_note_names_the_first_rows_own_gpus_each_beside_its_source(catalog_and_file, gpus, pp, per_op):
    """Failed before: the note took every GPU type of the cluster, and labelled the whole range by comparing values
    ("69.4–200 µs per op, the device file's host_s" under a first row on the catalog A100 alone). Now ``--gpus 1``:
    the row's one A100, vTrain's fit; ``--gpus 2``: PP 2 (TP and DP groups may not mix GPU types), a rank on each
    GPU, each figure beside where it came from (the cluster's and the file's figures, set above)."""
    args = [*catalog_and_file, "--gpus", gpus]
    row = json.loads(run_cli([*args, "--format", "json"]))["rows"][0]
    assert row["pp"] == pp and row["host_bound_seconds"] > 0.1 * row["iteration_seconds"]  # the note is printed
    noted = [line for line in run_cli(args).splitlines() if line.startswith("# host_bound:")]
    assert len(noted) == 1 and f"is the host issuing ops ({per_op}) beyond the GPU's work" in noted[0], noted
