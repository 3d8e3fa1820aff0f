"""The one ring all-reduce, against hand sums of its two phases."""

import numpy as np

from archsim.matrix_collectives import ring_allreduce_on, slowest_link
from archsim.ring_allreduce import ring_allreduce_time


def test_ring_allreduce_is_reduce_scatter_then_all_gather():
    # 4 workers, 400 bytes: each phase is 3 steps of one 100-byte chunk per link at 10 bytes/unit
    # (10 units a step), and each step pays the latency once.
    assert ring_allreduce_time(400.0, 4, 10.0) == 3 * 10 + 3 * 10
    assert ring_allreduce_time(400.0, 4, 10.0, latency=1.0) == 3 * 11 + 3 * 11
    assert ring_allreduce_time(400.0, 1, 10.0, latency=1.0) == 0.0


def test_ring_on_devices_runs_at_their_slowest_link():
    bandwidth = np.array([[0, 8, 2], [8, 0, 8], [2, 8, 0]], dtype=float)
    assert slowest_link(bandwidth, [0, 1]) == 8
    assert slowest_link(bandwidth, [0, 1, 2]) == 2
    assert slowest_link(bandwidth, [0], [1, 2]) == 2
    # 3 devices, 300 bytes at 2 bytes/unit: 2 + 2 steps of 100 bytes, 50 units each
    assert ring_allreduce_on(300.0, [0, 1, 2], bandwidth) == 4 * 50
    assert ring_allreduce_on(300.0, [1], bandwidth) == 0.0
