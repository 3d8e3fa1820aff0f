"""``archsim plan`` reads a cluster's ``[network]`` table as train and search do (issue 38: one cluster model).

plan refused a cluster whose servers were joined by a ``[network]`` table alone (it required
``inter_server_gbps``) and, given both, planned on ``inter_server_gbps`` while train priced the NICs. The
references here are the two older spellings of the same NICs (docs/formats.md, "Cluster (TOML)"): one NIC per
GPU is ``inter_server_link = "per_gpu_pair"``, one NIC per server ``"shared"``, each at ``nic_gbps``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from archsim.cli import main
from archsim.spp.topology import load_topology_file

SERVERS = "[[servers]]\ncount = 3\ngpus = 4\nintra_server_gbps = 800\n"
# 1 Gb/s between servers: slow enough that the plan's makespan depends on it (checked below)
RAILS = "[network]\nnics_per_server = 4\nnic_gbps = 1\ngpus_per_nic = 1\n"
ONE_NIC = "[network]\nnics_per_server = 1\nnic_gbps = 1\n"


def _file(folder: Path, name: str, cluster: str, rest: str) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(f'[cluster]\nname = "c"\n{cluster}{rest}', encoding="utf-8")
    return path


def _plan(capsys, path: Path) -> tuple[dict, str]:
    """The plan's JSON document and its stderr."""
    assert main(["plan", "layerpipe_sample", "--microbatches", "4", "--format", "json", "--cluster", str(path)]) == 0
    out = capsys.readouterr()
    return json.loads(out.out), out.err


@pytest.mark.parametrize(("network", "link"), [(RAILS, "per_gpu_pair"), (ONE_NIC, "shared")],
                         ids=["nic_per_gpu", "nic_per_server"])
def test_a_network_only_cluster_plans_as_its_inter_server_twin(tmp_path, capsys, network, link):
    """No inter_server_gbps: the old code refused the file; now its plan is the twin's, to the last digit."""
    twin, _ = _plan(capsys, _file(tmp_path, "twin", f'inter_server_gbps = 1\ninter_server_link = "{link}"\n', SERVERS))
    faster, _ = _plan(capsys, _file(tmp_path, "fast", f'inter_server_gbps = 100\ninter_server_link = "{link}"\n',
                                    SERVERS))
    assert faster["meta"]["makespan_seconds"] != twin["meta"]["makespan_seconds"]  # the links between servers count
    planned, err = _plan(capsys, _file(tmp_path, "net", "", SERVERS + network))
    assert planned == twin
    assert "note:" not in err


def test_both_keys_plan_on_the_network_and_note_the_disagreement(tmp_path, capsys):
    """[network] and an inter_server_gbps that says otherwise: the NICs price the links (as in train), and the
    superseded key is noted once, in train's words."""
    alone, _ = _plan(capsys, _file(tmp_path, "net", "", SERVERS + RAILS))
    both, err = _plan(capsys, _file(tmp_path, "both", 'inter_server_gbps = 100\ninter_server_link = "per_gpu_pair"\n',
                                    SERVERS + RAILS))
    assert both == alone
    assert err.count("note: inter_server_gbps = 100 is not read: [network] gives the NICs (1 Gb/s each)") == 1, err
    assert "inter_server_link" not in err  # one NIC per GPU is what per_gpu_pair says


def test_nics_shared_by_gpus_split_their_link(tmp_path):
    """2 NICs of 100 Gb/s for 4 GPUs (2 per NIC): a transfer runs at one NIC's 12.5 GB/s, and the 2 × 2 GPU pairs
    of two NICs share that link in the min-cut (3.125 GB/s each); within a server one direction of the fabric's
    800 Gb/s (both directions), 50 GB/s."""
    topology = load_topology_file(_file(tmp_path, "pairs", "", "[[servers]]\ncount = 2\ngpus = 4\n"
                                        "intra_server_gbps = 800\n[network]\nnics_per_server = 2\nnic_gbps = 100\n"))
    assert topology.bandwidth[0, 4] == pytest.approx(12.5e9) and topology.bandwidth[3, 7] == pytest.approx(12.5e9)
    assert topology.capacity is not None
    assert topology.capacity[0, 4] == pytest.approx(3.125e9) and topology.capacity[1, 6] == pytest.approx(3.125e9)
    assert topology.bandwidth[0, 1] == pytest.approx(50e9) == topology.capacity[0, 1]
    assert np.all(np.diag(topology.bandwidth) == 0)


def test_servers_under_different_leaves_get_the_oversubscribed_share(tmp_path):
    """servers_per_leaf = 2, oversubscription = 4 over 3 servers: servers 0 and 1 share a leaf (the NIC's full
    12.5 GB/s); server 2 is under another, reached at a quarter of it (as train divides a group crossing leaves)."""
    topology = load_topology_file(_file(tmp_path, "leaves", "", "[[servers]]\ncount = 3\ngpus = 2\n"
                                        "intra_server_gbps = 800\n[network]\nnics_per_server = 2\nnic_gbps = 100\n"
                                        "servers_per_leaf = 2\noversubscription = 4\n"))
    assert topology.bandwidth[0, 2] == pytest.approx(12.5e9)  # servers 0 and 1
    assert topology.bandwidth[0, 4] == pytest.approx(12.5e9 / 4) == topology.bandwidth[3, 5]  # to server 2


def test_a_network_table_is_checked_by_plan(tmp_path):
    """plan reads the table with train's reader, so its refusals are train's (here rails that leave GPUs without
    a NIC), naming the key."""
    from archsim.errors import InputError

    with pytest.raises(InputError) as caught:
        load_topology_file(_file(tmp_path, "bad", "", SERVERS + "[network]\nnics_per_server = 2\nnic_gbps = 100\n"
                                 "gpus_per_nic = 1\n"))
    assert caught.value.where.field == "gpus_per_nic"


@pytest.mark.parametrize("tiers", [2, 3])
def test_plan_notes_switch_tiers_only_other_than_the_default(tmp_path, capsys, tiers):
    """plan prints train's notes on the table: switch_tiers = 3 is not modelled (noted once); the default 2, written
    out, is not noted."""
    _, err = _plan(capsys, _file(tmp_path, "tiers", "", SERVERS + RAILS + f"switch_tiers = {tiers}\n"))
    assert err.count(f"note: switch_tiers = {tiers} is not read") == (tiers != 2), err
