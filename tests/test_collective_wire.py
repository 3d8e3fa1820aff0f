"""The one rule for the bytes each algorithm puts on the wire (archsim.collective_wire), against hand counts of the
algorithms' sends, and the time formulas and the link energy both reading it."""

import pytest

from archsim.collective_bytes import sent_bytes
from archsim.collective_wire import to_peers, wire_bytes
from archsim.collectives import LinkClass, Spanning, collective_seconds
from archsim.errors import InputError

S = 400.0  # bytes over 4 GPUs: 100 a shard


def test_ring_counts_its_steps():
    # reduce-scatter then all-gather: 3 + 3 steps of one 100-byte shard each; a gather alone 3
    assert wire_bytes("all-reduce", "ring", S, 4) == 600
    assert wire_bytes("all-gather", "ring", S, 4) == 300
    assert wire_bytes("reduce-scatter", "ring", S, 4) == 300


def test_tree_nvls_pairwise_send_and_none():
    assert wire_bytes("all-reduce", "tree", S, 4) == 800  # the buffer up the tree and back down
    assert wire_bytes("all-reduce", "nvls", S, 4) == 400 + 100  # buffer to the switch, reduced shard back
    assert wire_bytes("all-to-all", "pairwise", S, 4) == 3 * 100  # 100 to each of 3 peers
    assert to_peers(S, 4, 2) == 200
    assert wire_bytes("p2p", "p2p", S, 2) == S
    assert wire_bytes("all-reduce", "none", S, 1) == 0
    assert wire_bytes("all-reduce", "ring", S, 1) == 0


@pytest.mark.parametrize("k", range(2, 10))
def test_torus_ring_all_to_all_is_the_shortest_paths_bytes_per_chip(k):
    """Brute force: each chip sends S/k to each peer the short way round a bidirectional ring; every link a send
    crosses carries it, so a chip's links carry the sum of the distances × S/k, over k chips."""
    s = 1000.0
    hops = sum(min(abs(i - j), k - abs(i - j)) for i in range(k) for j in range(k) if i != j)
    assert wire_bytes("all-to-all", "torus-ring", s, k) == pytest.approx(hops * s / k / k, rel=1e-15)
    assert wire_bytes("all-reduce", "torus-ring", s, k) == wire_bytes("all-reduce", "ring", s, k)


@pytest.mark.parametrize("kind, algorithm", [("all-gather", "tree"), ("all-to-all", "ring"), ("p2p", "ring"),
                                             ("all-reduce", "pairwise"), ("all-reduce", "bus")])
def test_an_algorithm_that_does_not_run_the_collective_is_refused(kind, algorithm):
    with pytest.raises(InputError, match=f"algorithm '{algorithm}' does not run {kind}"):
        wire_bytes(kind, algorithm, S, 4)


def test_unknown_collective_is_refused():
    with pytest.raises(InputError, match="unknown collective 'broadcast'"):
        wire_bytes("broadcast", "ring", S, 4)


# a link of 100 bytes/s and no latency or copy cost: a collective's seconds are its wire bytes / 100
WIRE = LinkClass("wire", 100.0, 1.0, 0.0, 0.0)


def test_time_is_the_wire_bytes_over_the_bandwidth():
    assert collective_seconds("all-reduce", S, 4, WIRE) == pytest.approx(6.0)  # ring's 600 beats the tree's 800
    assert collective_seconds("all-gather", S, 4, WIRE) == pytest.approx(3.0)
    assert collective_seconds("all-to-all", S, 4, WIRE) == pytest.approx(3.0)
    nvls = LinkClass("switch", 100.0, 1.0, 0.0, 0.0, nvls=True)
    assert collective_seconds("all-reduce", S, 4, nvls) == pytest.approx(5.0)
    # a torus ring of 6 runs both of a chip's links: 600 · ⌊36/4⌋/6 = 900 bytes at 200 bytes/s
    ring6 = LinkClass("torus", 100.0, 1.0, 0.0, 0.0, torus=(6,))
    assert collective_seconds("all-to-all", 600.0, 6, ring6) == pytest.approx(4.5)


KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "p2p")
LINKS = (WIRE, LinkClass("switch", 100.0, 1.0, 0.0, 0.0, nvls=True),
         LinkClass("torus", 100.0, 1.0, 0.0, 0.0, torus=(2, 3, 4)), Spanning(WIRE, WIRE, 4))


# a group over servers' all-to-all sends each GPU's network part over its own share of the NICs: not bytes / 100
@pytest.mark.parametrize("link, kind", [(link, kind) for link in LINKS for kind in KINDS
                                        if not (isinstance(link, Spanning) and kind == "all-to-all")])
def test_link_energy_counts_the_bytes_the_time_is_priced_on(link, kind):
    """On links with no latency or copy cost the time is the bytes sent over the bandwidth (a torus ring twice a
    link's, a group over servers its slower of NVLink and the NICs: here both 100)."""
    n = 24 if link.name == "torus" else 8
    bandwidth = 200.0 if link.name == "torus" and kind != "p2p" else 100.0
    for s in (1e3, 3.3e6, 2.0**30):
        assert collective_seconds(kind, s, n, link) * bandwidth == pytest.approx(sent_bytes(kind, s, n, link),
                                                                                  rel=1e-12)


def test_the_planners_textbook_ring_prices_the_wire_rules_bytes():
    """archsim.ring_allreduce (SPP's tables, the DP policy) sends what the rule says a ring all-reduce sends: hand
    counts (4 GPUs, 100-byte shards: 6 steps), and every group size of an array at once as one at a time."""
    import numpy as np

    from archsim.collective_wire import ring_allreduce_bytes
    from archsim.ring_allreduce import ring_allreduce_time

    assert ring_allreduce_time(S, 4, 10.0) == 600 / 10.0
    assert ring_allreduce_time(S, 4, 10.0, latency=2.0) == 600 / 10.0 + 6 * 2.0
    assert ring_allreduce_time(S, 1, 10.0, latency=2.0) == 0.0
    workers, bandwidth = np.arange(2, 40), np.linspace(1e9, 9e10, 38)
    for size in (1.0, 3.3e8):
        each = [wire_bytes("all-reduce", "ring", size, int(n)) / b for n, b in zip(workers, bandwidth, strict=True)]
        assert ring_allreduce_time(size, workers, bandwidth).tolist() == pytest.approx(each, rel=1e-15)
        assert ring_allreduce_bytes(size, workers).tolist() == [wire_bytes("all-reduce", "ring", size, int(n))
                                                                for n in workers]
