"""Runs files and model inputs as users write them (a user trial's follow-ups): each test failed on the old code."""

import json
import re
from pathlib import Path

import pytest

from archsim.cli import main
from archsim.errors import InputError
from archsim.training.runs import read_runs
from archsim.workload.csv_loader import parse_topology

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
CLUSTER = str(ROOT / "configs" / "clusters" / "a100_node.toml")
HEADER = "tp,pp,dp,micro_batch,global_batch"


def test_a_hash_line_between_rows_of_a_runs_file_is_a_comment_and_each_row_keeps_its_line(tmp_path):
    """Failed before: line 4 was refused as "expected a positive integer, got '# second batch'"."""
    runs = tmp_path / "runs.csv"
    runs.write_text(f"# source: my lab\n{HEADER}\n2,2,2,2,16\n# second batch\n  # indented too\n1,2,4,2,16\n")
    rows = read_runs(runs)
    assert [(r.line, r.par.tp, r.par.dp) for r in rows] == [(3, 2, 2), (6, 1, 4)]


def test_a_hash_line_without_a_colon_above_the_header_is_a_comment_not_the_header(tmp_path):
    """Failed before: '# just a comment' was read as the header ("missing column(s) tp, …")."""
    runs = tmp_path / "runs.csv"
    runs.write_text(f"# just a comment, of my runs\n{HEADER}\n2,2,2,2,16\n")
    assert [r.line for r in read_runs(runs)] == [3]


def test_vtrain_header_still_starts_with_a_hash_and_is_read(tmp_path):
    """vTrain's released header begins '# GPUs,': the one '#' line that is not a comment (its rows and a
    comment between them read as written: hand-copied from the released CSV's first row)."""
    runs = tmp_path / "vtrain.csv"
    head = ("# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,"
            "tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms)")
    runs.write_text(f"# source: vTrain\n{head}\n# one run\n8,16,1,1024,16,24,2048,2,2,2,500\n")
    (row,) = read_runs(runs)
    assert (row.line, row.par.tp, row.par.dp, row.par.pp, row.measured_seconds) == (4, 2, 2, 2, 0.5)


def test_topology_hash_lines_are_comments_by_the_same_rule():
    """Failed before: a '#' line above the header was the header ("header has 1 columns"), one between rows a
    layer ("row has 1 fields"). Two fc layers, each on its own line number."""
    text = ("# my network\nLayer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
            "Strides,\nfc1, 4, 1, 1, 1, 8, 16, 1,\n# the second layer\nfc2, 4, 1, 1, 1, 16, 2, 1,\n")
    network = parse_topology(text, source="t.csv")
    assert [(layer.name, layer.channels, layer.filters) for layer in network.layers] == [("fc1", 8, 16), ("fc2", 16, 2)]
    bad = text.replace("fc2, 4,", "fc2, x,")
    with pytest.raises(InputError) as info:
        parse_topology(bad, source="t.csv")
    assert info.value.where.line == 5


@pytest.mark.parametrize("written", ["Full", "FULL", " Selective", "NONE"])
def test_recompute_cells_take_any_case_as_true_false_cells_do(tmp_path, written):
    """Failed before: 'Full' was refused ("expected one of none, selective, full")."""
    runs = tmp_path / "runs.csv"
    runs.write_text(f"{HEADER},recompute,sequence_parallel\n2,2,2,2,16,{written},TRUE\n")
    (row,) = read_runs(runs)
    assert row.par.recompute == written.strip().lower() and row.par.sequence_parallel is True


def test_an_unknown_recompute_is_still_refused_in_one_line(tmp_path, capsys):
    runs = tmp_path / "runs.csv"
    runs.write_text(f"{HEADER},recompute\n2,2,2,2,16,partial\n")
    assert main(["train", MODEL, "--cluster", CLUSTER, "--runs", str(runs)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "line 2, field 'recompute'" in err and "'partial'" in err


def _with_bom(source: Path, target: Path) -> Path:
    """``source``'s bytes after a UTF-8 byte-order mark, CRLF line ends (Windows Notepad's "UTF-8 with BOM")."""
    target.write_bytes(b"\xef\xbb\xbf" + source.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
    return target


def test_a_scalesim_cfg_with_a_bom_costs_as_without(tmp_path, capsys):
    """Failed before: "a key before any [section] header" at line 1 (the mark glued to '[general]')."""
    shipped = ROOT / "configs" / "arrays" / "scalesim_32x32_ws.cfg"
    outs = []
    for config in (shipped, _with_bom(shipped, tmp_path / "bom.cfg")):
        assert main(["cost", "layerpipe_sample", "--config", str(config), "--format", "json"]) == 0
        out, err = capsys.readouterr()
        outs.append(out)
    assert err == "" and outs[0] == outs[1]


def test_a_device_cfg_with_a_bom_trains_as_without(tmp_path, capsys):
    """Failed before, as above, for a cluster's device .cfg (read by the device-file reader and the SCALE-Sim one)."""
    device = ROOT / "configs" / "devices" / "scalesim_32x32_device.cfg"
    _with_bom(device, tmp_path / "device.cfg")
    cluster = ROOT / "configs" / "clusters" / "scalesim_32x32_device.toml"
    outs = []
    for folder in (cluster.parent, tmp_path):
        toml = folder / "cluster.toml"
        if folder == tmp_path:
            toml.write_text(cluster.read_text().replace("../devices/scalesim_32x32_device.cfg", "device.cfg"))
        else:
            toml = cluster
        assert main(["train", MODEL, "--cluster", str(toml), "--tp", "2", "--pp", "2", "--dp", "2", "--micro-batch", "2",
                     "--global-batch", "16", "--format", "json"]) == 0
        out, _ = capsys.readouterr()
        outs.append(json.loads(out)["meta"])
    assert {k: v for k, v in outs[0].items() if k != "cluster"} == {k: v for k, v in outs[1].items() if k != "cluster"}


def test_counts_given_as_whole_floats_are_the_integers_and_8_5_is_refused_as_before():
    """Failed before: tp=8.0 (a pandas float column's value) was refused as "expected a positive integer, got
    '8.0'". 8.0 runs as 8 (the same iteration as tp=8); 8.5 keeps the one-line refusal."""
    import numpy as np

    import archsim

    kwargs = {"cluster": CLUSTER, "pp": 1, "dp": 1, "micro_batch": 1, "global_batch": 8}
    expected, _ = archsim.train(MODEL, tp=8, **kwargs)
    for tp in (8.0, np.float64(8.0), np.float32(8.0)):
        got, _ = archsim.train(MODEL, tp=tp, **{**kwargs, "global_batch": 8.0})
        assert got.iteration_seconds == expected.iteration_seconds and got.to_dict()["meta"]["tp"] == 8
    for bad in (8.5, float("nan"), 1e300):
        with pytest.raises(InputError, match=r"^field 'tp': expected a positive integer, got") as info:
            archsim.train(MODEL, tp=bad, **kwargs)
        assert "\n" not in str(info.value)


def test_search_takes_gpus_and_global_batch_as_whole_floats():
    """Failed before: gpus=8.0 was iterated as a list (TypeError: 'float' object is not iterable). The search
    with 8.0 and 16.0 is the search with 8 and 16."""
    import archsim

    # 1F1B alone: a fraction of every schedule's search (2.5 s); the numbers' reading is what is checked
    floats = archsim.search(MODEL, cluster=CLUSTER, global_batch=16.0, gpus=8.0, top=2.0, schedule="1f1b")
    ints = archsim.search(MODEL, cluster=CLUSTER, global_batch=16, gpus=8, top=2, schedule="1f1b")
    assert repr(floats.to_dict()) == repr(ints.to_dict()) and len(floats.rows) == 2  # (repr: NaN == NaN)


def test_train_runs_takes_a_dataframe_as_its_csv_with_the_same_checks_and_line_numbers(tmp_path):
    """Failed before: a DataFrame was refused ("expected a runs CSV path, got DataFrame"). The frame predicts as
    the CSV holding the same runs (written by hand below, integers as integers); a bad cell names the line it
    would have in ``frame.to_csv(index=False)``: header line 1, its second row line 3."""
    import numpy as np
    import pandas as pd

    import archsim

    frame = pd.DataFrame({"tp": [2.0, 1.0], "pp": [2, 2], "dp": [2, 4], "micro_batch": [2, 2], "global_batch": [16, 16],
                          "recompute": ["Full", None], "sequence_parallel": [True, False],
                          "measured_seconds": [0.25, np.nan]})
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch,recompute,sequence_parallel,measured_seconds\n"
                    "2,2,2,2,16,full,true,0.25\n1,2,4,2,16,,false,\n")
    from_file = archsim.train_runs(MODEL, runs=str(runs), cluster=CLUSTER)
    from_frame = archsim.train_runs(MODEL, runs=frame, cluster=CLUSTER)
    assert [r["line"] for r in from_frame] == [2, 3]
    assert from_frame == from_file
    frame.loc[1, "tp"] = 8.5
    with pytest.raises(InputError) as info:
        archsim.train_runs(MODEL, runs=frame, cluster=CLUSTER)
    assert (info.value.where.line, info.value.where.field) == (3, "tp") and "got '8.5'" in str(info.value)
    frame.loc[1, "tp"] = 1
    frame.loc[0, "recompute"] = "full, selective"
    with pytest.raises(InputError) as info:
        archsim.train_runs(MODEL, runs=frame, cluster=CLUSTER)
    assert (info.value.where.line, info.value.where.field) == (2, "recompute")
    with pytest.raises(InputError, match="a runs CSV path or a pandas DataFrame"):
        archsim.train_runs(MODEL, runs=5, cluster=CLUSTER)


def _bf16_llama(tmp_path) -> str:
    """A two-layer Llama config.json stating torch_dtype bfloat16 (priced in fp16 unless a dtype is given)."""
    config = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1024,
              "max_position_embeddings": 128, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return str(path)


ONE_GPU = str(ROOT / "configs" / "clusters" / "h100_1gpu.toml")  # one GPU: no note on idle GPUs


def _note(command: str) -> str:
    return f"config.json says bfloat16; priced in fp16, {command}'s default: give --dtype bf16 to price it so"


@pytest.mark.parametrize("dtype", [None, "fp16", "bf16"])
def test_search_gives_trains_torch_dtype_note_when_no_dtype_is_given(tmp_path, capsys, dtype):
    """Failed before: search's --dtype defaulted to fp16, so a bfloat16 config got no note."""
    model = _bf16_llama(tmp_path)
    given = ["--dtype", dtype] if dtype else []
    assert main(["search", model, "--cluster", ONE_GPU, "--global-batch", "1", "--seq", "128", "--top", "1",
                 "--format", "json", *given]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["meta"]["dtype"] == (dtype or "fp16")
    assert err == ("" if dtype else f"archsim search: note: {_note('search')}\n")


def test_api_search_warns_the_same_note(tmp_path):
    """Failed before: archsim.search gave no such warning."""
    import warnings

    import archsim

    model = _bf16_llama(tmp_path)
    with pytest.warns(UserWarning) as caught:
        archsim.search(model, cluster=ONE_GPU, global_batch=1, seq=128, top=1)
    assert [str(w.message) for w in caught] == [_note("search").replace("--dtype bf16", "dtype='bf16'")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        archsim.search(model, cluster=ONE_GPU, global_batch=1, seq=128, top=1, dtype="fp16")


@pytest.mark.parametrize("dtype", [None, "bf16"])
def test_train_sweep_gives_the_note_as_one_iteration_does(tmp_path, capsys, dtype):
    """Failed before: train --sweep gave no torch_dtype note."""
    model = _bf16_llama(tmp_path)
    given = ["--dtype", dtype] if dtype else []
    assert main(["train", model, "--cluster", ONE_GPU, "--global-batch", "2", "--seq", "128",
                 "--sweep", "micro_batch=1,2", "--format", "json", *given]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["meta"]["dtype"] == (dtype or "fp16")
    assert err == ("" if dtype else f"archsim train: note: {_note('train')}\n")


def test_every_csv_reader_skips_hash_lines_by_the_one_rule(tmp_path):
    """Failed before: a '#' line above the header or between rows of a job trace, a shapes file or a stage
    profile was read as the header or a row. Each file read with and without its comment lines gives the same
    records, each at its own line (the values hand-written here)."""
    from archsim.array.gemm_run import read_shapes
    from archsim.cluster.trace import load_tiresias_csv
    from archsim.policies.stage_profile import read_stage_profile

    def commented(text: str) -> str:
        head, *rows = text.splitlines()
        return "\n".join(["# written by hand", head, "# rows follow, one a line", rows[0], "   # indented", *rows[1:]]) + "\n"

    trace = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\nj0,8,0,1426,googlenet,200,0\n" \
            "j1,4,30,2288,resnet101,447,0\n"
    shapes = "m,k,n,rows,cols,dataflow\n64,64,64,32,32,ws\n128,64,32,32,32,os\n"
    stages = "forward,backward_input,backward_weight\n1,2,1\n1.5,2,0.5\n"
    for text, read in ((trace, load_tiresias_csv), (shapes, read_shapes), (stages, read_stage_profile)):
        plain, hashed = tmp_path / "plain.csv", tmp_path / "hashed.csv"
        plain.write_text(text)
        hashed.write_text(commented(text))
        a, b = read(plain), read(hashed)
        unlined = lambda records, name: re.sub(r"line=[0-9]+", "line=L", repr(records).replace(name, "X"))
        assert len(repr(a)) > 40 and unlined(a, "plain") == unlined(b, "hashed")
        if read is load_tiresias_csv:  # a trace's jobs name their own lines (an error names them), comments counted
            assert [job.line for job in a] == [2, 3] and [job.line for job in b] == [4, 6]
    bad = tmp_path / "bad.csv"
    bad.write_text(commented(trace.replace("j1,4,", "j1,x,")))
    with pytest.raises(InputError) as info:
        load_tiresias_csv(bad)
    assert info.value.where.line == 6  # the second job's own line, the comments counted
