"""User trial 48: a training-systems engineer checks archsim against their own cluster — 4 servers of 8 H100 SXM,
8 × 400 Gb/s NICs per server (one per GPU, its rail), an NVSwitch domain per server — with their own
Llama-2-7B-like model and a runs file of their measured configurations. Each test failed on the code before its fix
(its docstring says how)."""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim.cli import main
from archsim.errors import InputError
from archsim.training.runs import frame_text, read_runs

MODEL = """[transformer]
family = "llama"
name = "llama2_7b"
layers = 32
hidden = 4096
heads = 32
vocab = 32000
seq = 4096
ffn = 11008
"""

CLUSTER = """[cluster]
name = "my_h100_4x8"

[network]
nics_per_server = 8
nic_gbps = 400
gpus_per_nic = 1
nvlink_domain = 8
nvls = true

[[servers]]
count = 4
gpus = 8
intra_server_gbps = 7200
gpu = "h100-80gb-sxm"
"""

HEADER = "tp,pp,dp,micro_batch,global_batch,recompute,sequence_parallel,interleave,gpus,measured_seconds"


def _files(folder: Path, runs: str) -> list[str]:
    (folder / "llama.toml").write_text(MODEL)
    (folder / "cluster.toml").write_text(CLUSTER)
    (folder / "runs.csv").write_text(runs)
    return ["train", str(folder / "llama.toml"), "--cluster", str(folder / "cluster.toml"),
            "--runs", str(folder / "runs.csv")]


def _refused(capsys, argv: list[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    return err


# -- a spreadsheet's trailing comma


@pytest.mark.parametrize("commas", [",", ",,"])
def test_a_trailing_comma_on_every_line_reads_as_the_file_without_it(tmp_path, commas):
    """Failed before: a runs file saved with an empty last column (a trailing comma on the header and every row,
    as a spreadsheet writes a column it was left) was refused as "unknown column(s) : a runs file names …" —
    an empty name, which named nothing — though a trailing comma names no column (every other CSV header check
    skips it). Reference: the same file without the commas, read alike."""
    rows = ["2,2,8,1,256,selective,true,1,32,10.9", "2,4,4,1,256,selective,true,2,32,10.4"]
    plain = tmp_path / "plain.csv"
    plain.write_text("\n".join([HEADER, *rows]) + "\n")
    trailing = tmp_path / "trailing.csv"
    trailing.write_text("\n".join(line + commas for line in [HEADER, *rows]) + "\n")
    assert read_runs(trailing) == read_runs(plain)
    assert [row.measured_seconds for row in read_runs(trailing)] == [10.9, 10.4]


def test_pandas_reading_of_a_trailing_comma_file_reads_as_the_file(tmp_path):
    """Failed before: ``pandas.read_csv`` of that file names its empty last column ``Unnamed: 10`` (all NaN), and
    ``archsim.train_runs(runs=frame)`` refused it as "unknown column(s) unnamed: 10" while the file itself (after
    the fix above) reads. The frame is written back as its file, the blank header cell blank: same rows."""
    import pandas

    rows = ["2,2,8,1,256,selective,true,1,32,10.9", "2,4,4,1,256,selective,true,2,32,10.4"]
    plain = tmp_path / "plain.csv"
    plain.write_text("\n".join([HEADER, *rows]) + "\n")
    trailing = tmp_path / "trailing.csv"
    trailing.write_text("\n".join(line + "," for line in [HEADER, *rows]) + "\n")
    frame = pandas.read_csv(trailing)
    assert list(frame.columns)[-1] == "Unnamed: 10"
    assert read_runs(frame_text(frame)) == read_runs(plain)


def test_a_column_without_a_name_is_refused_naming_its_position(tmp_path):
    """Failed before: a header with an empty cell inside it (``tp,,pp,…``) was refused as "unknown column(s) :",
    naming no column; now it names the column by its position (2, counted from 1)."""
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,,pp,dp,micro_batch,global_batch\n2,,2,8,1,256\n")
    with pytest.raises(InputError, match="column 2 has no name"):
        read_runs(runs)


def test_a_filled_cell_past_the_header_is_still_refused(tmp_path):
    """The trailing comma's cells are empty; a filled cell past the header's columns still has no name to be read
    by, and is refused at its line (line 2: the header is line 1). Failed before: the header's trailing comma
    itself was refused, at line 1, as an unknown column with an empty name."""
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,micro_batch,global_batch,\n2,2,8,1,256,oops\n")
    with pytest.raises(InputError, match="6 cells, the header names 5 columns") as caught:
        read_runs(runs)
    assert caught.value.where.line == 2


# -- a row's error speaks the file's columns, not train's flags


@pytest.mark.parametrize(("row", "column", "said", "flag"), [
    # (sequence_parallel true at tp 1 was refused here; it now runs without it, as train does, with one note)
    ("2,1,16,1,256,selective,true,2,32,10", "interleave", "interleave=2 runs 1f1b as interleaved-1f1b", "--pp"),
])
def test_a_bad_row_names_its_columns_not_flags(tmp_path, capsys, row, column, said, flag):
    """Failed before: a row with sequence parallelism on TP 1, or two model chunks on one pipeline stage, was
    refused with train's flags ("sequence parallelism needs --tp > 1", "--interleave 2 … needs --pp > 1"), which
    the runs file has no use for: the user edits the row's ``tp`` / ``pp`` / ``interleave`` cells. The line now
    names them as ``archsim.train_runs`` already did (its keywords are the file's column names)."""
    err = _refused(capsys, _files(tmp_path, f"{HEADER}\n{row}\n"))
    assert f"line 2, field '{column}'" in err and said in err
    assert flag not in err and "--interleave" not in err


# -- the TP-across-servers warning names the collectives that cross


def test_a_sequence_parallel_tp_group_across_servers_warns_of_its_gathers_not_all_reduces(tmp_path, capsys):
    """Failed before: TP 16 with sequence parallelism over two of the 8-GPU servers warned "its all-reduces
    cross the network", though such a group runs no all-reduce on its activations: per layer two all-gathers and
    two reduce-scatters each way (Korthikanti et al.), which the breakdown lists. Counted here: 16 GPUs ÷ 8 per
    server = 2 servers spanned."""
    (tmp_path / "llama.toml").write_text(MODEL)
    (tmp_path / "cluster.toml").write_text(CLUSTER)
    argv = ["train", str(tmp_path / "llama.toml"), "--cluster", str(tmp_path / "cluster.toml"), "--tp", "16",
            "--dp", "2", "--global-batch", "4", "--micro-batch", "2", "--seq", "512", "--out", str(tmp_path / "o.txt")]
    capsys.readouterr()
    assert main([*argv, "--sequence-parallel"]) == 0
    err = capsys.readouterr().err
    assert "a TP group spans 2 servers: its all-gathers and reduce-scatters cross the network" in err
    assert "all-reduces" not in err
    assert main(argv) == 0  # without sequence parallelism the group does all-reduce
    assert "a TP group spans 2 servers: its all-reduces cross the network" in capsys.readouterr().err


# -- the [network] table's servers_per_leaf


@pytest.mark.parametrize("value", ["0", "0.0", "false"])
def test_servers_per_leaf_zero_or_false_is_refused_as_minus_one_is(tmp_path, capsys, value):
    """Failed before: ``servers_per_leaf = 0`` (or ``0.0``, or ``false``) ran as if the key were left out — every
    server under one leaf, the note on an oversubscription even saying "no servers_per_leaf" — while ``-1`` was
    refused as "expected a positive integer". A leaf holds at least one server, so each is refused alike, in
    one line naming the key."""
    cluster = CLUSTER.replace("nvls = true", f"nvls = true\nservers_per_leaf = {value}\noversubscription = 2")
    (tmp_path / "llama.toml").write_text(MODEL)
    (tmp_path / "cluster.toml").write_text(cluster)
    argv = ["train", str(tmp_path / "llama.toml"), "--cluster", str(tmp_path / "cluster.toml"), "--tp", "8",
            "--dp", "4", "--global-batch", "4", "--seq", "512"]
    err = _refused(capsys, argv)
    assert "field 'servers_per_leaf': expected a positive integer" in err


# -- vTrain's released runs need the GPT they were measured on

VTRAIN_ROWS = ("# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,tensor parallelism,"
               "data parallelism,pipeline parallelism,iteration time (ms)\n2,16,8,1024,16,24,1024,1,1,2,372.160408\n")


def test_vtrain_rows_on_a_llama_model_are_refused(tmp_path, capsys):
    """Failed before: vTrain's CSV given beside the user's Llama config ran every row as a Llama layer (SwiGLU,
    RMSNorm, rotary, 32,000 tokens) at vTrain's hidden 1,024 and 24 layers, named ``llama2_7b-h1024-l24``, and
    printed an error against vTrain's measured GPT (−31% on this row) as if it compared like with like. The
    rows replace MODEL's shape only; the layer they were measured on is Megatron-LM's GPT, so another family is
    refused at the first row (line 2), nothing written."""
    (tmp_path / "llama.toml").write_text(MODEL)
    (tmp_path / "vtrain.csv").write_text(VTRAIN_ROWS)
    out = tmp_path / "out.csv"
    node = Path(__file__).resolve().parents[1] / "configs" / "clusters" / "a100_node.toml"
    err = _refused(capsys, ["train", str(tmp_path / "llama.toml"), "--cluster", str(node), "--runs",
                            str(tmp_path / "vtrain.csv"), "--out", str(out)])
    assert "vtrain.csv, line 2, field 'model'" in err and "give a GPT config" in err and "not a llama one" in err
    assert not out.exists()


# -- a GPU the catalog lacks


def test_a_gpu_the_catalog_lacks_is_refused_naming_the_device_key(tmp_path, capsys):
    """Failed before: ``gpu = "b200"`` was refused listing the catalog's fifteen GPUs and nothing else, so a user
    with a GPU not in it learned only that theirs was missing; the one way archsim takes another GPU, a device
    file named by the server's ``device`` key, now ends the same line."""
    (tmp_path / "llama.toml").write_text(MODEL)
    (tmp_path / "cluster.toml").write_text(CLUSTER.replace('gpu = "h100-80gb-sxm"', 'gpu = "b200"'))
    err = _refused(capsys, ["train", str(tmp_path / "llama.toml"), "--cluster", str(tmp_path / "cluster.toml"),
                            "--tp", "8", "--dp", "4", "--global-batch", "4"])
    assert "field 'servers[1].gpu': unknown GPU 'b200'; the catalog has" in err and "h100-80gb-sxm" in err
    assert 'device = "FILE" in place of gpu' in err
