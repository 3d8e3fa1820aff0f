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
    ("[cluster]\n" + NETWORK + SERVERS.replace("gpus = 8\n", ""), "gpus"),
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
