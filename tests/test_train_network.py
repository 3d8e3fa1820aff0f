"""What ``archsim train`` priced the network at, and the warnings it gives, the same from the library:
a TP group across servers is a :class:`UserWarning` of ``archsim.train`` with the line the command prints."""

from __future__ import annotations

import json
import warnings

import pytest
from test_docs import ROOT

import archsim
from archsim.cli import main

MODEL = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
TWO_H100_SERVERS = str(ROOT / "configs" / "clusters" / "h100_2_servers.toml")


def test_the_library_warns_of_a_tp_group_across_servers_as_the_command_does(capsys):
    """TP 16 on two 8-GPU servers: ``archsim train`` prints one warning line; ``archsim.train`` issued
    none (a notebook priced all-reduces over the NICs without a word). TP 8 × DP 2 stays in each server."""
    assert main(["train", MODEL, "--cluster", TWO_H100_SERVERS, "--tp", "16", "--global-batch", "4",
                 "--format", "json"]) == 0
    printed = capsys.readouterr().err.strip()
    assert printed == "archsim train: warning: a TP group spans 2 servers: its all-reduces cross the network"
    with pytest.warns(UserWarning) as caught:
        archsim.train(MODEL, cluster=TWO_H100_SERVERS, tp=16, global_batch=4)
    assert [str(w.message) for w in caught] == [printed.removeprefix("archsim train: warning: ")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        archsim.train(MODEL, cluster=TWO_H100_SERVERS, tp=8, dp=2, global_batch=4)


def _cluster(tmp_path, text: str) -> str:
    path = tmp_path / "cluster.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


NETWORK_TABLE = """[cluster]
name = "two_a100_servers_shared_nics"
inter_server_gbps = 200

[network]
nics_per_server = 4
nic_gbps = 200
gpus_per_nic = 2

[[servers]]
count = 2
gpus = 8
intra_server_gbps = 4800
gpu = "a100-80gb"
"""


def test_train_names_the_network_of_a_network_table(tmp_path, capsys):
    """4 NICs of 200 Gb/s per 8-GPU server, 2 GPUs each: 4 × 200 / 8 bits / 8 GPUs = 12.5 GB/s per GPU;
    4800 Gb/s both directions in a server is 4800 / 8 / 2 = 300 GB/s per direction. DP 2 over the two
    servers crosses the network, TP 8 does not. The meta of ``archsim train --format json``, the table's
    two lines and ``archsim.train(...).to_dict()`` say so (before: none of them named the network)."""
    cluster = _cluster(tmp_path, NETWORK_TABLE)
    flags = ["--tp", "8", "--dp", "2", "--global-batch", "4"]
    assert main(["train", MODEL, "--cluster", cluster, *flags, "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert meta["intra_server"] == {"link": "nvlink", "gb_per_s_per_gpu": pytest.approx(4800 / 8 / 2), "nvls": False}
    assert meta["inter_server"] == {"nics_per_server": 4, "nic_gbps": pytest.approx(200), "gpus_per_nic": 2,
                                    "gb_per_s_per_gpu": pytest.approx(4 * 200 / 8 / 8), "crossed_by": ["dp"]}
    result, _ = archsim.train(MODEL, cluster=cluster, tp=8, dp=2, global_batch=4)
    library = result.to_dict()["meta"]
    assert (library["intra_server"], library["inter_server"]) == (meta["intra_server"], meta["inter_server"])
    assert main(["train", MODEL, "--cluster", cluster, *flags]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith(("# intra_server", "# inter_server"))]
    assert lines == ["# intra_server: 300 GB/s per direction per GPU (nvlink), NVLS off",
                     "# inter_server: 4 NICs × 200 Gb/s per server, 2 GPUs per NIC: 12.5 GB/s per direction per GPU; crossed by dp"]


def test_train_names_the_network_of_the_older_keys_and_the_catalog(tmp_path, capsys):
    """No [network] table: ``inter_server_gbps = 400`` with ``per_gpu_pair`` is one 400 Gb/s NIC per GPU
    (50 GB/s each); no ``intra_server_gbps``: the catalog H100 SXM's NVLink 4, 900 GB/s both directions,
    450 per direction. TP 16 spans both servers; on one server there is no inter-server network."""
    two = _cluster(tmp_path, '[cluster]\nname = "two"\ninter_server_gbps = 400\ninter_server_link = "per_gpu_pair"\n'
                             '\n[[servers]]\ncount = 2\ngpus = 8\ngpu = "h100-80gb-sxm"\n')
    assert main(["train", MODEL, "--cluster", two, "--tp", "16", "--global-batch", "4", "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert meta["intra_server"] == {"link": "nvlink", "gb_per_s_per_gpu": pytest.approx(900 / 2), "nvls": False}
    assert meta["inter_server"] == {"nics_per_server": 8, "nic_gbps": pytest.approx(400), "gpus_per_nic": 1,
                                    "gb_per_s_per_gpu": pytest.approx(400 / 8), "crossed_by": ["tp"]}
    node = str(ROOT / "configs" / "clusters" / "a100_node.toml")
    assert main(["train", MODEL, "--cluster", node, "--tp", "8", "--global-batch", "4", "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert meta["intra_server"]["gb_per_s_per_gpu"] == pytest.approx(4800 / 8 / 2)
    assert meta["inter_server"] == {"nics_per_server": None, "nic_gbps": None, "gpus_per_nic": None,
                                    "gb_per_s_per_gpu": None, "crossed_by": []}
    assert main(["train", MODEL, "--cluster", node, "--tp", "8", "--global-batch", "4"]) == 0
    assert "# inter_server: none (one server)" in capsys.readouterr().out.splitlines()
