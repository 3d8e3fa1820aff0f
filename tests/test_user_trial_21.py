"""A training-systems engineer's own cluster file, written from the docs: 4 servers × 8 H100 SXM, 4 NICs of
400 Gb/s each (two GPUs per rail), NVSwitch inside. The slips such a user makes in it must be one line that
names the key or table at fault, as a typo inside a table already is."""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim.cli import main
from archsim.errors import InputError
from archsim.training.cluster_file import load_gpu_cluster

NETWORK = "[network]\nnics_per_server = 4\nnic_gbps = 400\ngpus_per_nic = 2\nnvlink_domain = 8\nnvls = true\n"
SERVERS = '[[servers]]\ncount = 4\ngpus = 8\ngpu = "h100"\n'
LLAMA = ('[transformer]\nfamily = "llama"\nlayers = 32\nhidden = 4096\nheads = 32\nkv_heads = 8\nffn = 11008\n'
         'vocab = 32000\nseq = 4096\n')


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "my_cluster.toml"
    path.write_text(text)
    return path


def test_the_users_cluster_loads(tmp_path) -> None:
    """The file as written from docs/formats.md: 32 GPUs, 4 NICs of 400 Gb/s, 2 GPUs on each."""
    cluster = load_gpu_cluster(_write(tmp_path, "[cluster]\n" + NETWORK + SERVERS))
    assert cluster.gpus == 32
    assert (cluster.network.nics_per_server, cluster.network.nic_gbps, cluster.network.gpus_per_nic) == (4, 400.0, 2)


@pytest.mark.parametrize(("text", "stray"), [
    ("[cluster]\n" + NETWORK.replace("[network]", "[networks]") + SERVERS, "networks"),
    ("[cluster]\n" + NETWORK + SERVERS.replace("[[servers]]", "[[server]]"), "server"),
    ("[cluster]\n" + NETWORK + SERVERS + '[[gpus]]\nname = "h100"\n', "gpus"),
])
def test_a_misspelt_table_is_named(tmp_path, text, stray) -> None:
    """`[networks]` for `[network]` (or `[[server]]`) was refused as "expected a [cluster] table and
    [[servers]] entries" under the field 'cluster', though the file has a [cluster] table: the line must
    name the table that is not one and list the tables a cluster file has."""
    with pytest.raises(InputError) as caught:
        load_gpu_cluster(_write(tmp_path, text))
    assert caught.value.where.field == stray
    assert "unknown table" in caught.value.message and "[network]" in caught.value.message
    assert "\n" not in caught.value.message


@pytest.mark.parametrize(("text", "missing"), [
    (NETWORK + SERVERS, "cluster"),
    ("[cluster]\n" + NETWORK, "servers"),
])
def test_a_missing_table_is_named(tmp_path, text, missing) -> None:
    """A file without its [cluster] table (or its [[servers]]) says which one it lacks."""
    with pytest.raises(InputError) as caught:
        load_gpu_cluster(_write(tmp_path, text))
    assert caught.value.where.field == missing
    assert "missing" in caught.value.message and f"[{missing}]" in caught.value.message


@pytest.mark.parametrize(("text", "key"), [
    ("[cluster]\n" + NETWORK.replace("nic_gbps = 400\n", "") + SERVERS, "nic_gbps"),
    ("[cluster]\n" + NETWORK.replace("nics_per_server = 4\n", "") + SERVERS, "nics_per_server"),
    ("[cluster]\n" + NETWORK + SERVERS.replace("gpus = 8\n", ""), "servers[1].gpus"),
])
def test_a_required_key_left_out_says_missing(tmp_path, text, key) -> None:
    """A required key left out was "expected a positive number, got 'None'": the user wrote no None.
    It must say the key is missing, as a transformer TOML's missing key does."""
    with pytest.raises(InputError) as caught:
        load_gpu_cluster(_write(tmp_path, text))
    assert caught.value.where.field == key
    assert "missing key" in caught.value.message
    assert "None" not in caught.value.message


def test_cli_names_the_misspelt_table(tmp_path, capsys) -> None:
    """`archsim train` on the misspelt file: exit 2, one line naming the file and `networks`, nothing on
    stdout."""
    path = _write(tmp_path, "[cluster]\n" + NETWORK.replace("[network]", "[networks]") + SERVERS)
    code = main(["train", "gpt3_1.3b", "--cluster", str(path), "--tp", "8", "--pp", "2", "--dp", "2",
                 "--global-batch", "64", "--dtype", "bf16"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "my_cluster.toml" in err and "'networks'" in err and "unknown table" in err


def test_an_unknown_runs_column_lists_the_columns(tmp_path) -> None:
    """A runs file with `measured_ms` (for `measured_seconds`) said only "unknown column(s) measured_ms";
    the user needs the columns a runs file may have, as a missing column's line already gives them."""
    from archsim.training.runs import OPTIONAL, REQUIRED, read_runs

    path = tmp_path / "runs.csv"
    path.write_text("tp,pp,dp,micro_batch,global_batch,measured_ms\n4,4,2,1,64,1600\n")
    with pytest.raises(InputError) as caught:
        read_runs(path)
    message = caught.value.message
    assert "measured_ms" in message and caught.value.where.line == 1
    assert all(column in message for column in REQUIRED + OPTIONAL)


def test_an_empty_search_says_why_from_python_too(tmp_path, capsys) -> None:
    """`archsim search --gpus 24` (no TP × PP × DP of 24 GPUs divides a batch of 256 with TP dividing the
    heads and PP the layers) prints a note saying why and naming `--gpus 32`; `archsim.search(gpus=24)`
    returned the same empty rows without a word. It must warn the same line."""
    import warnings

    import archsim

    path = _write(tmp_path, "[cluster]\n" + NETWORK + SERVERS)
    model = str(tmp_path / "llama_like.toml")  # 32 heads, 32 layers: TP, PP and DP are powers of 2, 24 is not
    Path(model).write_text(LLAMA)
    assert main(["search", model, "--cluster", str(path), "--global-batch", "256", "--gpus", "24",
                 "--schedule", "1f1b", "--format", "json"]) == 0
    notes = [line.removeprefix("archsim search: note: ") for line in capsys.readouterr().err.splitlines()]
    assert len(notes) == 1 and "--gpus 32" in notes[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = archsim.search(model, cluster=str(path), global_batch=256, gpus=24, schedule="1f1b")
    assert found.costed == 0 and found.rows == ()
    assert [str(w.message) for w in caught] == [note.replace("--gpus ", "gpus=").replace("--balance planned",
                                                                                         "balance='planned'")
                                                for note in notes]  # as keywords


def test_a_search_with_rows_warns_nothing(tmp_path) -> None:
    """The note is for an empty answer only: a search that ranks configurations warns nothing."""
    import warnings

    import archsim

    path = _write(tmp_path, "[cluster]\n" + NETWORK + SERVERS)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = archsim.search("gpt3_1.3b", cluster=str(path), global_batch=256, gpus=8, schedule="1f1b",
                               max_micro_batch=1, recompute="full", sequence_parallel="off")
    assert found.costed > 0 and found.rows
    assert [str(w.message) for w in caught] == []


def test_a_shipped_clusters_name_points_at_its_file(tmp_path, monkeypatch, capsys) -> None:
    """MODEL takes a shipped name (`gpt3_1.3b`); `--cluster h100_2_servers` said only "cluster file not
    found". Clusters are read by path (their device files are relative to them), so the line must say
    where the shipped cluster of that name is; a name no cluster ships keeps the plain line."""
    from archsim.validate import shipped_file

    monkeypatch.chdir(tmp_path)
    shipped = shipped_file("clusters", "h100_2_servers", (".toml",), "cluster")
    assert shipped is not None
    args = ["train", "gpt3_1.3b", "--tp", "8", "--pp", "2", "--global-batch", "16", "--cluster"]
    assert main([*args, "h100_2_servers"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert "cluster file not found" in err and str(shipped) in err
    assert main([*args, "no_such_cluster"]) == 2
    err = capsys.readouterr().err
    assert "cluster file not found" in err and "shipped" not in err


@pytest.mark.parametrize(("text", "says"), [
    ('"tp","pp","dp","micro_batch","global_batch"\n"4","4","2","1","64"\n', "quote"),
    ("tp;pp;dp;micro_batch;global_batch\n4;4;2;1;64\n", "comma"),
])
def test_a_quoted_or_semicolon_runs_header_says_so(tmp_path, text, says) -> None:
    """A runs file saved with every cell quoted, or with semicolons (a spreadsheet's export), was refused as
    "missing column(s) tp, pp, dp, micro_batch, global_batch" though its header names them all: the line
    must say what is wrong with it."""
    from archsim.training.runs import read_runs

    path = tmp_path / "runs.csv"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        read_runs(path)
    assert says in caught.value.message and "missing column" not in caught.value.message
    assert caught.value.where.line == 1


@pytest.mark.parametrize(("given", "meant"), [("a100", "a100_node"), ("h100_2_server", "h100_2_servers"),
                                              ("A100_NODE.toml", "a100_node")])
def test_a_name_near_a_shipped_clusters_points_at_that_file(tmp_path, monkeypatch, capsys, given, meant) -> None:
    """`--cluster a100` (a newcomer's guess at the shipped a100_node) said only "cluster file not found": the line
    must name the shipped cluster it is near and where its file is, in one line."""
    from archsim.validate import shipped_file

    monkeypatch.chdir(tmp_path)
    shipped = shipped_file("clusters", meant, (".toml",), "cluster")
    assert shipped is not None
    assert main(["train", "gpt2", "--global-batch", "8", "--cluster", given]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert "cluster file not found" in err and f"did you mean {meant!r}?" in err and str(shipped) in err
