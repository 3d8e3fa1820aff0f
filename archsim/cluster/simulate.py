"""One entry point for the cluster study: trace + catalog + cluster + policy → result(s).

``simulate`` runs one policy; ``compare`` runs several policies over several seeds of the
synthetic trace (§4.2) and returns the per-run summaries (aggregate with
:func:`archsim.cluster.metrics.aggregate`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from archsim.choices.cluster import MAIN_POLICIES, POLICIES
from archsim.cluster.catalog import ModelProfile, paper_catalog
from archsim.cluster.gang import simulate_gang
from archsim.cluster.jigsaw import simulate_jigsaw
from archsim.cluster.jobs import JobCluster, JobSpec, SimConfig, SimResult, build_jobs
from archsim.cluster.metrics import summarize
from archsim.cluster.trace import TraceJob, synthetic_trace
from archsim.errors import InputError

# POLICIES (archsim.choices.cluster): ``jigsaw-nospb`` is an ablation, iteration-level scheduling without SPB
# (every task full); MAIN_POLICIES the three the paper compares.


def simulate(jobs: Sequence[JobSpec], cluster: JobCluster, policy: str, config: SimConfig | None = None,
             finished: np.ndarray | None = None) -> SimResult:
    """Run one policy over prepared jobs; ``finished[0]`` (an int64 array) counts the jobs done as they
    finish, for a progress bar (:func:`archsim.progress.polled`)."""
    config = config or SimConfig()
    if not jobs:
        raise InputError("no jobs to schedule: give at least one JobSpec (or a trace of one row)", field="jobs")
    if policy == "jigsaw":
        return simulate_jigsaw(jobs, cluster, config, finished=finished)
    if policy == "jigsaw-nospb":
        return simulate_jigsaw(jobs, cluster, config, spb=False, policy=policy, finished=finished)
    if policy in ("gandiva", "tiresias"):
        return simulate_gang(jobs, cluster, config, policy, finished)
    raise InputError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}", field="policy")


def simulate_trace(trace: Sequence[TraceJob], cluster: JobCluster, policy: str, config: SimConfig | None = None,
                   catalog: dict[str, ModelProfile] | None = None) -> SimResult:
    """Join the trace with the catalog (default: the paper's Table 1/2 profiles) and simulate."""
    jobs = build_jobs(trace, paper_catalog() if catalog is None else catalog, cluster)
    return simulate(jobs, cluster, policy, config)


def compare(cluster: JobCluster, seeds: Sequence[int], *, jobs: int = 500, policies: Sequence[str] = MAIN_POLICIES,
            config: SimConfig | None = None, catalog: dict[str, ModelProfile] | None = None,
            keep_results: bool = False) -> tuple[list[dict], list[SimResult]]:
    """Every policy on the synthetic trace of every seed: one summary per (policy, seed)."""
    catalog = paper_catalog() if catalog is None else catalog
    summaries, results = [], []
    for seed in seeds:
        trace = synthetic_trace(jobs, seed, catalog=catalog)
        prepared = build_jobs(trace, catalog, cluster)
        for policy in policies:
            result = simulate(prepared, cluster, policy, config)
            summaries.append({**summarize(result), "seed": seed})
            if keep_results:
                results.append(result)
    return summaries, results
