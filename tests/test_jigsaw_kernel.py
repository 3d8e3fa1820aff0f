"""The compiled Jigsaw event loop against the plain-Python loop it replaced (tests/jigsaw_reference.py):
same start, end and migrations per job and the same busy segments, on random small clusters and
traces (ties, migrations, affinity waits, blocks of iterations) and on the §4.2 synthetic trace."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jigsaw_reference import reference_jigsaw

from archsim.cluster.catalog import paper_catalog
from archsim.cluster.jigsaw import simulate_jigsaw
from archsim.cluster.jobs import JobCluster, JobSpec, SimConfig, build_jobs
from archsim.cluster.trace import synthetic_trace

GIB = 2**30


def assert_same(ours, reference):
    columns = ["job_id", "start_s", "end_s", "workers", "iterations", "migrations", "jct_s"]
    assert ours.jobs[columns].astype(str).equals(reference.jobs[columns].astype(str))
    assert np.array_equal(ours.busy, reference.busy)
    assert (ours.makespan_s, ours.devices, ours.policy) == (reference.makespan_s, reference.devices, reference.policy)


@st.composite
def cases(draw):
    machines = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=4)))
    devices = sum(machines)
    jobs = []
    for j in range(draw(st.integers(1, 7))):
        workers = draw(st.integers(1, devices))
        # task times on a coarse grid so equal times (ties) are common
        spb = tuple(draw(st.integers(1, 8)) / 4 for _ in range(workers))
        memory = tuple(draw(st.integers(1, 4)) * GIB for _ in range(workers))
        jobs.append(JobSpec(f"j{j}", draw(st.integers(0, 12)) / 2, workers, draw(st.integers(1, 6)), "m",
                            max(spb), max(memory), spb, memory, draw(st.sampled_from([0.0, 1e8, 1e9, 4e9]))))
    config = SimConfig(interval_s=draw(st.sampled_from([0.0, 1.0, 3.0])),
                       gamma_s_per_byte=draw(st.sampled_from([0.0, 1e-10, 8e-10])),
                       unit_s=draw(st.sampled_from([0.0, 0.0, 1.0, 4.0])))
    return jobs, JobCluster(machines, 16 * GIB), config, draw(st.booleans())


@pytest.mark.long
@settings(max_examples=150, deadline=None)
@given(cases())
def test_kernel_equals_the_python_loop_on_random_cases(case):
    jobs, cluster, config, spb = case
    policy = "jigsaw" if spb else "jigsaw-nospb"
    assert_same(simulate_jigsaw(jobs, cluster, config, spb=spb, policy=policy),
                reference_jigsaw(jobs, cluster, config, spb=spb, policy=policy))


@pytest.mark.long
def test_kernel_equals_the_python_loop_on_the_synthetic_trace():
    """60 jobs of the §4.2 mix (shortened to 30–120 s, arriving every 5 s on average, so the cluster is
    crowded) on the default 45-device cluster, every iteration planned: 352k placements, 19k migrations."""
    catalog = paper_catalog()
    cluster = JobCluster.uniform(45)
    trace = synthetic_trace(60, 3, catalog=catalog, duration_range_s=(30.0, 120.0), mean_interarrival_s=5.0)
    jobs = build_jobs(trace, catalog, cluster)
    config = SimConfig(unit_s=0.0)
    ours, reference = simulate_jigsaw(jobs, cluster, config), reference_jigsaw(jobs, cluster, config)
    assert ours.jobs.migrations.sum() > 1_000 and len(ours.busy) > 100_000
    assert_same(ours, reference)
