"""LayerProfile.producers / consumers: each node's neighbours over ``edges``, in the edges' order."""

from __future__ import annotations

from archsim.partition import profile_from_costs


def test_dag_neighbours_follow_the_edge_order():
    # a diamond with a skip edge; (0, 3) listed last, so it comes last among 3's producers
    edges = ((0, 2), (0, 1), (1, 3), (2, 3), (0, 3))
    profile = profile_from_costs(list("abcd"), [1] * 4, [1] * 4, [1] * 4, edges=edges)
    assert [profile.producers(k) for k in range(4)] == [(), (0,), (0,), (1, 2, 0)]
    assert [profile.consumers(k) for k in range(4)] == [(2, 1, 3), (3,), (3,), ()]


def test_a_chain_links_consecutive_layers():
    profile = profile_from_costs(list("abc"), [1] * 3, [1] * 3, [1] * 3)
    assert [profile.producers(k) for k in range(3)] == [(), (0,), (1,)]
    assert [profile.consumers(k) for k in range(3)] == [(1,), (2,), ()]
