"""The search across servers follows the network: the same candidates, priced by the collectives
over the cluster's NICs (archsim.collectives.Spanning), rank differently as the network changes.

References: the network's absence of a price is checked by invariance (inside one NVLink domain no
row's time depends on the NICs' speed), its presence by monotonicity (slower NICs, slower TP = 16 rows)
and the rank order by the rows themselves (the best row keeps TP inside a server on a slow network)."""

from __future__ import annotations

import pytest

from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.search import search
from archsim.workload.transformer import TransformerConfig

TINY = TransformerConfig("tiny", "gpt", layers=4, hidden=512, heads=16, vocab=1000, seq=256, ffn=2048, kv_heads=16,
                         tied_embeddings=True, positions=256)
SERVERS = '[[servers]]\ncount = {count}\ngpus = 8\nintra_server_gbps = 4800\ngpu = "a100-80gb"\n'


def _cluster(tmp_path, nic_gbps: float, domain: int = 8, count: int = 2):
    path = tmp_path / f"c_{nic_gbps}_{domain}_{count}.toml"
    path.write_text(f'[cluster]\nname = "c"\ninter_server_gbps = {nic_gbps}\ninter_server_link = "per_gpu_pair"\n'
                    f"[network]\nnics_per_server = 8\nnic_gbps = {nic_gbps}\nnvlink_domain = {domain}\n"
                    + SERVERS.format(count=count))
    return load_gpu_cluster(path)


def _rows(cluster, gpus=16):
    result = search(TINY, cluster, 32, gpus, micro_batches=(1, 2), recomputes=("full",), schedules=("1f1b",),
                    sequence_parallel=(False,), top=10**6, refine=0)
    assert "tp-straddles-servers" not in result.rejected
    return {(r["tp"], r["pp"], r["dp"], r["micro_batch"]): r for r in result.rows}


@pytest.mark.parametrize("count", [2, 4])
def test_a_slow_network_keeps_tp_inside_a_server(tmp_path, count):
    """On 2 and 4 servers of 8 A100s joined by 8 × 10 Gb/s, TP 16 is a candidate (flagged), priced over
    the NICs, and the search's best keeps TP within a server."""
    rows = _rows(_cluster(tmp_path, 10, count=count), 8 * count)
    wide = [r for k, r in rows.items() if k[0] == 16]
    assert wide and all(r["tp_spans_servers"] for r in wide)
    assert not any(r["tp_spans_servers"] for k, r in rows.items() if k[0] <= 8)
    best = min(rows.values(), key=lambda r: r["iteration_seconds"])
    assert best["tp"] <= 8
    assert min(r["iteration_seconds"] for r in wide) > best["iteration_seconds"]


def test_tp16_rows_pay_the_network_and_slower_nics_cost_more(tmp_path):
    slow, fast = _rows(_cluster(tmp_path, 10)), _rows(_cluster(tmp_path, 400))
    assert slow.keys() == fast.keys()
    for key in (k for k in slow if k[0] == 16):
        assert slow[key]["iteration_seconds"] > fast[key]["iteration_seconds"]


def test_an_nvlink_domain_over_servers_takes_tp16_without_a_network_price(tmp_path):
    """Two servers in one NVLink domain (an NVL system): TP 16 is not flagged and no row's time depends
    on the NICs, since every group stays on NVLink; across plain servers the same rows do."""
    slow, fast = _rows(_cluster(tmp_path, 10, domain=16)), _rows(_cluster(tmp_path, 400, domain=16))
    assert slow.keys() == fast.keys() and any(k[0] == 16 for k in slow)
    assert not any(r["tp_spans_servers"] for r in slow.values())
    for key in slow:
        assert slow[key]["iteration_seconds"] == fast[key]["iteration_seconds"]
    apart = _rows(_cluster(tmp_path, 400))
    for key in (k for k in slow if k[0] == 16):
        assert slow[key]["iteration_seconds"] < apart[key]["iteration_seconds"]
