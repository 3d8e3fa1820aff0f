"""SPP's refusal of a PRM search over 4 GB counts every array the search holds: the estimate
(:func:`archsim.spp.prm.prm_search_size`) is at least the bytes of the arrays :func:`prm_inputs` returns and each
level of :func:`prm_tables` builds, measured here by their ``nbytes``, and in the paper's model within 2× of them."""

import numpy as np
import pytest
from test_plan_exact_search import ONE_SERVER, _exact
from test_spp import random_profile, random_topology

from archsim.numba_cache import small_in_python
from archsim.spp.prm import PYTHON_WORK, prm_inputs, prm_level, prm_search_parts, prm_search_size


def _measured(profile, order, bandwidth, stages, links=None) -> int:
    """Bytes of the inputs and of every level's tables (values and choices), as prm_tables builds them; with
    ``links`` the all-reduce tables count twice, as the list np.stack copies is alive while it does."""
    inputs = prm_inputs(profile, order, bandwidth, 2, 0.0, links)
    total = sum(a.nbytes for a in inputs)
    if links is not None:
        total += inputs[-1].nbytes
    inner, _ = prm_search_size(len(profile), len(order), stages)  # steps: the same with links
    tables = [inputs[0]]
    with small_in_python(prm_level, inner, PYTHON_WORK), np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(2, stages + 1):
            new, pick = prm_level(tables[-1], *inputs[1:], 2, len(order))  # every replica count (the paper)
            tables.append(new)
            total += new.nbytes + pick.nbytes
    return total


@pytest.mark.parametrize(("layers", "devices", "stages"), [(2, 8, 2), (3, 4, 2), (6, 5, 4), (4, 3, 3), (5, 1, 1)])
def test_the_estimate_bounds_the_arrays_of_the_paper_search(layers, devices, stages):
    """The (V+1)³ table of latencies between blocks, beside the one of links, counts: with V large against L
    (8 GPUs, 2 layers) the old estimate, which left it out, was below the arrays' bytes."""
    profile = random_profile(layers, layers)
    bandwidth = random_topology(devices, devices).bandwidth
    measured = _measured(profile, list(range(devices)), bandwidth, stages)
    _, estimate = prm_search_size(layers, devices, stages)
    assert measured <= estimate <= 2 * measured


def test_the_estimate_bounds_the_arrays_of_the_exact_search():
    """With ``--links exact`` the all-reduce tables are counted per block of 2 or more GPUs, a bound on the
    groups that are only known once priced, and at twice their size, np.stack's peak."""
    from test_plan_exact_search import _profile

    topology = _exact(ONE_SERVER)
    profile = _profile()
    measured = _measured(profile, list(range(topology.devices)), topology.bandwidth, 3, topology.links)
    _, estimate = prm_search_size(len(profile), topology.devices, 3, topology.links)
    _, paper = prm_search_size(len(profile), topology.devices, 3)
    assert estimate >= measured > paper


def test_the_parts_add_up_to_the_estimate_and_the_exact_tables_grow_with_the_blocks():
    """4 GPUs: 6 blocks of 2 or more GPUs and group 0, each 8 · (L+1)² B, twice (np.stack's copy)."""
    from archsim.spp.prm import prm_search_parts

    topology = _exact(ONE_SERVER)
    parts = prm_search_parts(3, 4, 2, topology.links)
    assert sum(parts.values()) == prm_search_size(3, 4, 2, topology.links)[1]
    assert parts["the all-reduce tables"] == 2 * 7 * 8 * 4**2
    assert prm_search_parts(3, 4, 2)["the all-reduce tables"] == 8 * 4**2


def test_the_refusal_leaves_the_exact_links_bound_out():
    """176 layers, 128 GPUs, 2 stages under exact links: the arrays known before pricing are ≈ 0.57 GB; the exact
    all-reduce tables' bound, V(V−1)/2 + 1 = 8,129 tables of 8·177² B, twice for the stack, adds ≈ 4.07 GB and
    would refuse a search whose real tables (one per distinct group) fit. The refusal counts what is known."""
    from types import SimpleNamespace

    from archsim.spp import SEARCH_BYTES_LIMIT
    from archsim.spp.plan import check_search_size

    bound = prm_search_parts(176, 128, 2, links=object())["the all-reduce tables"]
    assert bound == 2 * 8 * (128 * 127 // 2 + 1) * 177 ** 2  # ≈ 4.07 GB, the bound alone near the 4 GB limit
    assert prm_search_size(176, 128, 2, links=object())[1] > SEARCH_BYTES_LIMIT
    topology = SimpleNamespace(devices=128, links=object())
    check_search_size(list(range(176)), topology, 2, limit=10**13)  # not refused
