"""An unknown key in a cluster file's [cluster], [[servers]] or [network] table is one line that names it
and the keys the table takes, as a [transformer] TOML's does: a guess (`rails` for `gpus_per_nic`,
`nodes` for `count`) is answered with the key to write."""

import pytest

from archsim.errors import InputError
from archsim.training.cluster_file import load_gpu_cluster

SERVERS = '[[servers]]\ncount = 2\ngpus = 8\ngpu = "h100"\n'
NETWORK = "[network]\nnics_per_server = 8\nnic_gbps = 400\n"


@pytest.mark.parametrize(("text", "key", "listed"), [
    ("[cluster]\n" + NETWORK + "rails = 8\n" + SERVERS, "rails", "gpus_per_nic"),
    ("[cluster]\n" + NETWORK + '[[servers]]\ncount = 2\ngpus = 8\ngpu = "h100"\nnics = 8\n', "servers[1].nics",
     "gpu_watts"),
    ("[cluster]\nnodes = 2\n" + NETWORK + SERVERS, "nodes", "inter_server_gbps"),
])
def test_an_unknown_key_names_the_tables_keys(tmp_path, text, key, listed):
    path = tmp_path / "cluster.toml"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        load_gpu_cluster(str(path))
    assert caught.value.where.field == key
    assert "unknown key" in caught.value.message and listed in caught.value.message


@pytest.mark.parametrize(("key", "meant"), [("gpu_count", "gpus"), ("gpus_per_node", "gpus"), ("num_nodes", "count"),
                                            ("gpu_wats", "gpu_watts")])
def test_another_tools_name_for_a_servers_counts_is_told_the_key_meant(tmp_path, key, meant):
    """Failed before: ``gpu_count`` (a server's GPUs) was told "did you mean 'count'?", the servers: a count of 8
    written there would ask for 8 servers."""
    path = tmp_path / "cluster.toml"
    path.write_text(f'[cluster]\n[[servers]]\ncount = 2\n{key} = 8\ngpu = "h100"\n')
    with pytest.raises(InputError) as caught:
        load_gpu_cluster(str(path))
    assert f"unknown key in [[servers]] (did you mean {meant!r}?)" in caught.value.message


@pytest.mark.parametrize(("table", "meant"), [
    ('[cluster]\n[[servers]]\ncount = 1\ngpsu = 8\ngpu = "a100-80gb"\n', "gpus"),  # gpu is written: gpus is meant
    ('[cluster]\nnmae = "a"\nname = "b"\n[[servers]]\ngpus = 8\ngpu = "h100"\n', None),  # name written: no guess
])
def test_a_misspelt_key_is_not_told_a_key_the_table_already_holds(tmp_path, table, meant):
    """Failed before: ``gpsu = 8`` beside ``gpu = "a100-80gb"`` (a transposed ``gpus``) was told "did you mean 'gpu'?",
    a key the table already holds; renamed so, the file is no TOML (a key twice)."""
    path = tmp_path / "cluster.toml"
    path.write_text(table)
    with pytest.raises(InputError) as caught:
        load_gpu_cluster(str(path))
    hint = caught.value.message.split(";")[0]
    assert hint.startswith("unknown key in ")
    assert (f"(did you mean {meant!r}?)" in hint) if meant else "did you mean" not in hint
