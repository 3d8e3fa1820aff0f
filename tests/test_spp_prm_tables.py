"""SPP's PRM tables (numba) against the numpy version they replace (tests/spp_prm_reference.py):
the same plans — values, stages, replicas and devices — bit for bit, on random profiles and
topologies, including equal bandwidths (ties) and a device order that is not the identity."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from spp_prm_reference import prm_tables as reference_tables
from test_spp import random_profile, random_topology

from archsim.spp.prm import prm_tables


@pytest.mark.long
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), layers=st.integers(1, 9), devices=st.integers(1, 8),
       microbatches=st.integers(1, 9), ties=st.booleans(), shuffle=st.booleans())
def test_prm_tables_equal_the_numpy_reference(seed, layers, devices, microbatches, ties, shuffle):
    profile = random_profile(seed, layers)
    bandwidth = random_topology(seed + 5, devices).bandwidth
    if ties:
        bandwidth = np.where(bandwidth > 0, np.round(bandwidth / 4) + 1, 0.0)
    order = list(np.random.default_rng(seed).permutation(devices)) if shuffle else list(range(devices))
    stages = min(layers, devices)
    assert prm_tables(profile, order, bandwidth, microbatches, stages) == \
        reference_tables(profile, order, bandwidth, microbatches, stages)
