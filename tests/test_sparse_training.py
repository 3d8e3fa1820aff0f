"""The closed forms behind ``archsim sparse``'s δ and G options, against brute force over the K×N
pattern (SCALE-Sim's own patterns are compared in test_scalesim_sparsity), and the input limits."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from archsim.array.sparse_training import live_channels, pattern_period, weight_mask
from archsim.array.sparsity import SparsityConfig, kept_rows, sparse_layer_cost
from archsim.errors import InputError


def test_live_channels_equals_brute_force():
    """Channels with a kept weight on some tap, counted from the pattern itself (K rows, channel fastest)."""
    for taps, channels, n, m in itertools.product([1, 2, 3, 4, 9, 25], [1, 2, 3, 4, 5, 6, 8, 12, 13, 64],
                                                  [1, 2, 3, 5], [1, 2, 3, 4, 7, 8, 16]):
        if n > m:
            continue
        rows = np.arange(taps * channels).reshape(taps, channels)
        assert live_channels(taps, channels, n, m) == int(((rows % m) < n).any(axis=0).sum())


@pytest.mark.parametrize("optimized, block", [(False, 4), (True, 4), (True, 8)])
def test_pattern_period_and_kept_rows_equal_the_mask(optimized, block):
    config = SparsityConfig("csr", optimized, block)
    for k, filters, ratio in [(18, 5, (2, 4)), (37, 11, (3, 8)), (9, 1, (1, 1)), (64, 29, (1, 4))]:
        mask = weight_mask(k, filters, ratio, config)
        n, m = pattern_period(filters, ratio, config)
        assert kept_rows(k, n, m) == int(mask.any(axis=1).sum())
        channels = 3 if k % 3 == 0 else 1
        by_channel = mask.reshape(k // channels, channels, filters).any(axis=(0, 2)).sum()
        assert live_channels(k // channels, channels, n, m) == by_channel


def test_limits_are_one_line_errors():
    with pytest.raises(InputError, match="at most"):
        sparse_layer_cost(16, 18, 5, 4, 4, "ws", (1, 2**21), SparsityConfig("csr"))
    with pytest.raises(InputError, match="filters"):
        sparse_layer_cost(16, 18, 2**25, 8, 8, "ws", (1, 4), SparsityConfig("csr", True, 4))
    huge = live_channels(2**30, 2**31 - 1, 3, 2**20)  # closed form: no K×N mask is built
    assert 0 < huge <= 2**31 - 1
