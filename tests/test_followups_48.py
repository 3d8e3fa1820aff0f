"""Follow-ups: small defects, each test failing before its fix (said in its docstring).

1. A CSV row of fewer cells than its header's columns lost its last cells without a word (a runs file's
   ``measured_seconds``, a kernel CSV's ``algorithm``); refused now in one line naming the row's line and the
   columns it has no cell for (a topology's row may still leave its last optional columns out: docs/formats.md).
2. ``listed`` (a list keyword's comma string) split commas itself; it reads them with the flags' one reader.
3. An array sweep's ``energy_tables = []`` and ``clocks_ghz = []`` were read as the default table and no clock.
4. ``archsim.array_config`` of a device file stating a key its kind does not read said nothing.
5. ``archsim.plan``'s notes said after the run pointed past the caller (``stacklevel=6`` fits one depth only).
6. A required argument left out of an API job was Python's TypeError, not a line naming it.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import archsim
from archsim.array.gemm_run import read_shapes
from archsim.cli import main
from archsim.errors import InputError
from archsim.validation.gpu_csv import parse_kernel_csv
from archsim.validation.neusight import parse_neusight_csv

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
CLUSTER = str(ROOT / "configs" / "clusters" / "a100_node.toml")
RUNS = "tp,pp,dp,micro_batch,global_batch,measured_seconds\n1,1,8,1,8,0.5\n1,1,8,1,8\n"


def test_a_short_runs_row_is_refused_by_the_command_naming_its_line_and_column(tmp_path, capsys):
    """Line 3 has 5 cells, the header 6 columns (hand count): its ``measured_seconds`` has no cell. Before, the row
    ran as not measured (exit 0, its error empty)."""
    runs = tmp_path / "runs.csv"
    runs.write_text(RUNS)
    code = main(["train", MODEL, "--cluster", CLUSTER, "--runs", str(runs)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [(f"archsim train: error: {runs}, line 3: 5 cells, the header names 6 columns: "
                                        "no cell for measured_seconds (write an empty cell between commas to leave "
                                        "one empty)")]


def test_a_short_runs_row_is_refused_by_train_runs(tmp_path):
    """archsim.train_runs reads the file with the command's reader: the same refusal (before: a row not measured)."""
    runs = tmp_path / "runs.csv"
    runs.write_text(RUNS)
    with pytest.raises(InputError) as refused:
        archsim.train_runs(MODEL, runs=runs, cluster=CLUSTER)
    assert refused.value.where.line == 3 and "no cell for measured_seconds" in refused.value.message


def test_an_empty_cell_between_commas_is_still_not_measured(tmp_path):
    """``1,1,8,1,8,`` has 6 cells, the last empty: not measured, as docs/formats.md's runs-file table says."""
    runs = tmp_path / "runs.csv"
    runs.write_text(RUNS.replace("\n1,1,8,1,8\n", "\n1,1,8,1,8,\n"))
    rows = archsim.train_runs(MODEL, runs=runs, cluster=CLUSTER)
    assert [row["measured_seconds"] for row in rows] == [0.5, None]


def test_a_short_vtrain_row_loses_no_recompute_cell(tmp_path):
    """vTrain's layout with a ``recompute`` column: a row of its 11 first cells only read as full before (the
    default); 11 cells for 12 columns now, naming recompute."""
    header = ("# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,"
              "tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms),recompute")
    runs = tmp_path / "vtrain.csv"
    runs.write_text(f"{header}\n1,8,1,1024,16,24,1024,1,1,1,800,none\n1,8,1,1024,16,24,1024,1,1,1,800\n")
    with pytest.raises(InputError) as refused:
        archsim.train_runs(MODEL, runs=runs, cluster=CLUSTER)
    assert refused.value.where.line == 3 and refused.value.message.startswith(
        "11 cells, the header names 12 columns: no cell for recompute")


def test_a_short_kernel_csv_row_is_refused():
    """Line 4 lacks its ``algorithm`` cell (5 cells, 6 columns); before, read as not recorded."""
    text = "network,layer,batch,op,measured_ms,algorithm\nvgg,c1,8,F,1.5,implicit\nvgg,c2,8,F,2.5,\nvgg,c3,8,F,2.5\n"
    with pytest.raises(InputError) as refused:
        parse_kernel_csv(text)
    assert refused.value.where.line == 4 and "no cell for algorithm" in refused.value.message


def test_a_short_neusight_row_is_refused():
    """Device is the last column; line 2 stops before it (6 cells, 7 columns). Before, the device read as ''."""
    text = "OPName,Latency,B,M,N,K,Device\nlinear,0.5,1,64,128,256\n"
    with pytest.raises(InputError) as refused:
        parse_neusight_csv(text)
    assert refused.value.where.line == 2 and "6 cells, the header names 7 columns: no cell for Device" in str(
        refused.value)


def test_a_short_shapes_row_names_the_columns_it_lacks(tmp_path):
    """4 cells for 6 columns: no cell for the 5th and 6th (hand count: cols, dataflow). Before,
    the line said ``expected a positive integer, got ''`` of ``cols``, as if the cell were written empty."""
    shapes = tmp_path / "shapes.csv"
    shapes.write_text("m,k,n,rows,cols,dataflow\n64,64,64,32,32,ws\n64,64,64,32\n")
    with pytest.raises(InputError) as refused:
        read_shapes(shapes)
    assert refused.value.where.line == 3 and "no cell for cols, dataflow" in refused.value.message


def test_a_topology_row_may_still_leave_its_last_optional_columns_out(tmp_path):
    """docs/formats.md: "A row may leave its last optional columns out, or empty: they take their defaults" —
    the one CSV whose format gives a short row a meaning; ``Padding`` left out is 0."""
    net = tmp_path / "net.csv"
    net.write_text("Layer name,IFMAP Height,IFMAP Width,Filter Height,Filter Width,Channels,Num Filter,Strides,"
                   "Padding\nc1,8,8,3,3,4,4,1,1\nc2,8,8,3,3,4,4,1\n")
    layers = archsim.load_network(net).layers
    assert [layer.padding for layer in layers] == [1, 0]


@pytest.mark.parametrize("keywords", [{"gpus": "4,,8"}, {"gpus": "4,8,"}, {"recompute": "none,,full"}])
def test_a_comma_keywords_empty_entry_is_refused_as_its_flags(keywords, monkeypatch):
    """``gpus="4,,8"`` is refused as ``--gpus 4,,8`` is: an empty item, naming the keyword (comma_items's line).
    Before, ``listed`` split it itself: gpus said ``expected a positive integer, got ''`` and ``recompute`` said
    ``expected one of …``, neither the flag's line."""
    monkeypatch.chdir(ROOT)
    (field, value), = keywords.items()
    with pytest.raises(InputError) as refused:
        archsim.search(MODEL, cluster=CLUSTER, global_batch=16, progress=False, **keywords)
    assert refused.value.where.field == field
    assert refused.value.message == f"'{value}' has an empty item; give values separated by commas"


ARRAY_SPEC = ('[sweep]\nname = "q"\nnetworks = ["layerpipe_sample"]\narrays = ["32x32"]\ndataflows = ["ws"]\n'
              'methods = ["layerpipe"]\nmode = "paper"\nbatches = [16]\nprocessors = [2]\n')


@pytest.mark.parametrize(("axis", "expected"), [
    ("energy_tables = []", ("line 10, field 'energy_tables': expected at least one energy table (a shipped name or a "
                           ".toml path), got []")),
    ("clocks_ghz = []", "line 10, field 'clocks_ghz': expected at least one clock in GHz, got []"),
])
def test_an_empty_energy_table_or_clock_axis_is_refused(tmp_path, capsys, axis, expected):
    """As ``batches = []`` is (line 10: the spec's tenth line, hand count). Before, ``energy_tables = []`` ran on
    horowitz45 and ``clocks_ghz = []`` with no clock, exit 0."""
    spec = tmp_path / "spec.toml"
    spec.write_text(f"{ARRAY_SPEC}{axis}\n")
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == f"archsim sweep: error: {spec}, {expected}" and not (tmp_path / "out").exists()


UNREAD = "this key is not read: [device] board_watts"


def _said(call) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return list(caught)


JOBS = {
    "array_config": lambda cfg: archsim.array_config(cfg),
    "array_config(config=)": lambda cfg: archsim.array_config(config=cfg),
    "cost": lambda cfg: archsim.cost("ffnn8", config=cfg),
    "profile": lambda cfg: archsim.profile("ffnn8", config=cfg),
    "plan": lambda cfg: archsim.plan("ffnn8", cluster=CLUSTER, microbatches=2, baselines="none", config=cfg),
    "bppsa_rnn": lambda cfg: archsim.bppsa_rnn(seq_len=[2, 4], processors=[2], config=cfg),
}


@pytest.mark.parametrize("job", sorted(JOBS))
def test_a_device_files_unread_key_is_said_once_at_the_callers_line(unread_key_chip, job):
    """One UserWarning naming board_watts, at this file's line: array_config said none before (its two rows failed);
    cost, profile, plan and bppsa_rnn build their array through the same builder and say it once, not twice."""
    said = [w for w in _said(lambda: JOBS[job](unread_key_chip)) if UNREAD in str(w.message)]
    assert len(said) == 1 and Path(said[0].filename).name == Path(__file__).name


def test_plans_notes_point_at_the_callers_line(tmp_path):
    """A cluster whose servers state ``gpu_watts`` (plan reads it not: a note said after the run) and one whose
    servers name a device with an array given (a note said inside run_plan): both at this file. Before, the first
    pointed past the caller (``sys``, line 1: stacklevel 6 from a call three frames deep)."""
    watts = tmp_path / "c.toml"
    watts.write_text((ROOT / "configs" / "clusters" / "testbed_1080ti.toml").read_text() + "gpu_watts = 250\n")
    with warnings.catch_warnings(record=True) as said:  # called here, not through a helper: the caller's frame
        warnings.simplefilter("always")
        archsim.plan("layerpipe_sample", cluster=watts, microbatches=4, baselines="none")
        archsim.plan("layerpipe_sample", cluster=ROOT / "configs" / "clusters" / "a100_node_device_file.toml",
                     microbatches=4, array="32x32", baselines="none")
    texts = [str(w.message) for w in said]
    assert any("gpu_watts is not read by plan" in t for t in texts) and any("servers name" in t for t in texts)
    assert {Path(w.filename).name for w in said} == {Path(__file__).name}


@pytest.mark.parametrize(("call", "field"), [
    (lambda: archsim.train(cluster=CLUSTER, global_batch=8), "model"),
    (lambda: archsim.train(MODEL, cluster=CLUSTER), "global_batch"),
    (lambda: archsim.search(MODEL, global_batch=8), "cluster"),
    (lambda: archsim.cost(), "network"),
])
def test_a_required_argument_left_out_is_one_line_naming_it(call, field):
    """As ``archsim train`` without MODEL is a usage error naming it (docs/api.md). Before: Python's TypeError."""
    with pytest.raises(InputError) as refused:
        call()
    assert refused.value.where.field == field and "required by archsim." in str(refused.value)


def test_a_call_python_cannot_make_is_still_a_type_error():
    """Two positional arguments where cost takes one: Python's own call rule (docs/api.md), a TypeError."""
    with pytest.raises(TypeError):
        archsim.cost("ffnn8", "32x32")  # type: ignore[misc]
