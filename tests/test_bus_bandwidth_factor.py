"""nccl-tests' bus bandwidth factor has one home (archsim.collective_units.bus_bandwidth_factor): ``archsim.collective``'s
``bus_gbytes_per_s`` and the cited runs' check (archsim.training.nccl_cited) both read it, so the two agree."""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim.collective_units import bus_bandwidth_factor

NODE = Path(__file__).resolve().parents[1] / "configs" / "clusters" / "a100_node.toml"


@pytest.mark.parametrize(("kind", "n", "factor"), [
    ("all-reduce", 8, 1.75),  # 2 · 7/8: nccl-tests' doc/PERFORMANCE.md, by hand
    ("all-reduce", 2, 1.0),
    ("all-gather", 8, 0.875),  # 7/8
    ("reduce-scatter", 2, 0.5),
    ("all-to-all", 4, 0.75),
])
def test_bus_bandwidth_factor_is_nccl_tests_definition(kind, n, factor):
    assert bus_bandwidth_factor(kind, n) == factor


@pytest.mark.parametrize("kind", ["all-reduce", "all-gather", "reduce-scatter", "all-to-all"])
def test_the_face_and_the_cited_check_price_the_same_bus_bandwidth(kind):
    """One A100 server's 8 GPUs: archsim.collective's busBw equals nccl_cited's on the link train gives that group."""
    import archsim
    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.training.nccl_cited import bus_gbytes_per_s
    from archsim.training.parallel import Parallelism

    size = 2**28
    face = archsim.collective(kind, size, cluster=NODE, gpus=8)
    link = load_gpu_cluster(NODE).machine(Parallelism(tp=8)).links.tp
    assert face.bus_gbytes_per_s == pytest.approx(bus_gbytes_per_s(kind, size, 8, link), rel=1e-12)  # rounding order
    assert face.bus_gbytes_per_s == pytest.approx(bus_bandwidth_factor(kind, 8) * face.algorithm_gbytes_per_s)
