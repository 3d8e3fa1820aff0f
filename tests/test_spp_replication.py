"""SPP's replicas of a stage and the samples of a micro-batch (``plan --replication``): the SPP paper gives each of
r replicas 1/r of a micro-batch (§III-B, "evenly dividing input data"), whatever r; a replica takes whole samples,
so with m samples a replica runs ⌈m/r⌉ of them and past m replicas some get none. ``exact`` prices that and
offers no stage more than m replicas; ``paper`` stays the default (docs/papers/spp.md)."""

import itertools
import math

import numpy as np
import pytest

from archsim import plan
from archsim.errors import InputError
from archsim.partition.profile import profile_from_costs
from archsim.spp.prm import prm, prm_tables, stage_time
from archsim.spp.topology import Topology

# 3 layers, forward + backward 1, 8 and 1 per micro-batch (F = G = D / ... split as below), on 4 GPUs of one
# bandwidth B, M = 4 micro-batches of m = 2 samples each
FORWARD, WEIGHT_GRAD, DELTA = (0.5, 4.0, 0.5), (0.25, 2.0, 0.25), (0.25, 2.0, 0.25)  # F + G + D = 1, 8, 1
ACTIVATION = (40, 40, 40)  # bytes each layer sends forward (and its δ back, below)
WEIGHTS = (100, 100, 100)  # parameter bytes of each layer
B = 1000.0  # bytes per second between any two GPUs
M, SAMPLES, GPUS = 4, 2, 4


def _profile():
    return profile_from_costs(("a", "b", "c"), FORWARD, WEIGHT_GRAD, DELTA, activation_bytes=ACTIVATION,
                              delta_bytes=(0, 40, 40), weight_bytes=WEIGHTS, unit="seconds")


def _bandwidth():
    return np.where(np.eye(GPUS, dtype=bool), 0.0, B)


def _brute_force(samples: int | None) -> float:
    """𝒲 by enumerating every partition of the 3 layers into consecutive stages and every replication that puts
    all 4 GPUs to work, written from the paper's terms (§IV-B) with its compute share replaced by whole samples:
    a stage on r replicas of a micro-batch of m samples runs ⌈m/r⌉ of them, M ⌈m/r⌉/m Σ(p^f + p^b), and at most
    m replicas work; a replicated stage adds its ring all-reduce 2(r − 1)/r · Σα / B; the channel between
    stages n and n + 1 carries M (d^f + d^b) / (r_n r_{n+1} B), d^f = d^b = 40 bytes."""
    work = (1.0, 8.0, 1.0)
    best = math.inf
    for stages in (1, 2, 3):
        for cuts in itertools.combinations((1, 2), stages - 1):
            bounds = list(zip((0, *cuts), (*cuts, 3)))
            for reps in itertools.product(range(1, GPUS + 1), repeat=stages):
                if sum(reps) != GPUS or (samples is not None and max(reps) > samples):
                    continue
                terms = []
                for (a, b), r in zip(bounds, reps):
                    share = 1 / r if samples is None else math.ceil(samples / r) / samples
                    terms.append(M * share * sum(work[a:b]) + 2 * (r - 1) / r * sum(WEIGHTS[a:b]) / B)
                for n in range(stages - 1):
                    terms.append(M * (40 + 40) / (reps[n] * reps[n + 1] * B))
                best = min(best, max(terms))
    return best


def test_exact_prm_equals_brute_force_over_partitions_and_replications():
    """PRM's exact-mode optimum over every stage count is the enumeration's: 3 stages (a | b on 2 | c), 𝒲 =
    max(4·1, 4·8·1/2 + 2·1/2·100/1000, 4) = 16.1. Before ``samples``, PRM had no whole-sample model: its optimum
    (the paper's 1/r) was one stage on all 4 GPUs, 4·10/4 + 2·3/4·300/1000 = 10.45, a plan of 4 replicas of a
    2-sample micro-batch, 2 of which have no sample."""
    profile, bandwidth = _profile(), _bandwidth()
    assert _brute_force(SAMPLES) == pytest.approx(16.1)
    plans = prm_tables(profile, range(GPUS), bandwidth, M, 3, samples=SAMPLES)
    best = min(plans, key=lambda p: p.value)
    assert best.value == pytest.approx(_brute_force(SAMPLES))
    assert (best.stages, best.replicas) == (((0, 1), (1, 2), (2, 3)), (1, 2, 1))
    assert all(max(p.replicas) <= SAMPLES for p in plans)
    assert len(plans) == 2  # one stage would need 4 replicas of 2 samples: no plan
    for p in plans:  # the recursive reference, stage count by stage count
        assert prm(profile, range(GPUS), bandwidth, M, len(p.stages), samples=SAMPLES).value == pytest.approx(p.value)


def test_paper_prm_still_equals_its_own_brute_force():
    """The paper's 1/r is kept (the default): its optimum, 10.45 (one stage on 4 GPUs, hand count above), is the
    enumeration's with any replica count."""
    paper = min(prm_tables(_profile(), range(GPUS), _bandwidth(), M, 3), key=lambda p: p.value)
    assert paper.value == pytest.approx(_brute_force(None)) == pytest.approx(10.45)
    assert paper.replicas == (4,)


def test_a_replica_runs_whole_samples():
    """3 samples on 2 replicas: one replica runs 2 of them, so the stage takes 2/3 of the micro-batch's time, not
    the paper's 1/2: M = 4 micro-batches of layer b (8 s) → 4·8·2/3 = 21.33 s, plus the all-reduce
    2·1/2·100/1000 = 0.1 s. Before ``samples`` stage_time had only 1/r (4·8/2 + 0.1 = 16.1 s)."""
    profile, bandwidth = _profile(), _bandwidth()
    assert stage_time(profile, M, 1, 2, (0, 1), bandwidth, samples=3) == pytest.approx(4 * 8 * 2 / 3 + 0.1)
    assert stage_time(profile, M, 1, 2, (0, 1), bandwidth) == pytest.approx(16.1)
    assert stage_time(profile, M, 1, 2, (0, 1, 2, 3), bandwidth, samples=3) == math.inf  # a fourth has no sample


MLP = """Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, Padding, Type, Inputs, Bias, Repeat,
fc1, 1, 1, 1, 1, 1024, 1024, 1, 0, fc, input, 1, 1,
fc2, 1, 1, 1, 1, 1024, 1024, 1, 0, fc, fc1, 1, 1,
"""
def test_spp_refuses_what_whole_samples_cannot_fill():
    """SPP on the 3 layers over 4 GPUs at 1 sample per micro-batch: at most 3 stages of 1 replica, 3 GPUs of the
    4 (hand count), so no stage count has a plan: one line, not an assertion (before: no such model). At 2 samples
    SPP plans: 3 stages (a | b on 2 | c, 𝒲 16.1, the enumeration's best) against 2 stages of 2 + 2 GPUs (𝒲 18),
    whose slowest stage runs 4.5 s a micro-batch against 4 s."""
    from archsim.spp.plan import spp

    with pytest.raises(InputError, match="no plan puts all 4 GPUs to work") as caught:
        spp(_profile(), Topology.flat(4, B), M, samples=1)
    assert caught.value.where.field == "replication"
    assert spp(_profile(), Topology.flat(4, B), M, samples=2).plan.replicas == (1, 2, 1)


CLUSTER = """[cluster]
name = "four"
[[servers]]
gpus = 4
intra_server_gbps = 100
"""


def test_plan_exact_never_gives_a_stage_more_replicas_than_samples(tmp_path):
    """archsim.plan on two 1024 → 1024 fc layers over 4 GPUs at 2 samples per micro-batch: exact's only plan is two
    stages of 2 replicas (one stage would need 4 replicas of 2 samples), and the meta says the model; at 1 sample
    and at most 2 stages no plan reaches 4 GPUs (2 stages × 1 replica), refused in one line. Before
    ``replication`` the keyword did not exist."""
    cluster = tmp_path / "four.toml"
    cluster.write_text(CLUSTER)
    mlp = tmp_path / "mlp.csv"
    mlp.write_text(MLP)
    exact = plan(mlp, cluster=cluster, microbatches=4, micro_batch=2, replication="exact", baselines="none")
    assert [row["replicas"] for row in exact.to_dict()["rows"]] == [2, 2]
    assert exact.meta["replication"] == "exact"
    with pytest.raises(InputError, match="no plan puts all 4 GPUs to work") as caught:  # 1 stage, ≤ 1 replica
        plan(mlp, cluster=cluster, microbatches=4, micro_batch=1, replication="exact", baselines="none",
             max_stages=2)
    assert caught.value.where.field == "replication"


@pytest.mark.long  # VGG16 priced on the 1080 Ti twice: about 2 s
def test_vgg16_on_the_1080ti_testbed_takes_whole_samples():
    """docs/papers/spp.md's VGG16 row (8 micro-batches of 32 samples): the paper's plan, 7 + 1 replicas, 0.3463 s,
    is the default's still. Under exact the 7 replicas of conv1_1–conv4_3 take ⌈32/7⌉ = 5 samples each, 5/32 of a
    micro-batch where the paper's share is 1/7: the stage's per-micro-batch seconds × 35/32; the one-replica stage's
    are the same (⌈32/1⌉/32 = 1). Before ``replication`` there was no exact model."""
    from pathlib import Path

    cluster = Path(__file__).parent.parent / "configs" / "clusters" / "testbed_1080ti_gpu.toml"
    runs = {mode: plan("vgg16", cluster=cluster, microbatches=8, micro_batch=32, dtype="fp32", baselines="none",
                       replication=mode).to_dict() for mode in ("paper", "exact")}
    paper, exact = (runs[mode]["rows"] for mode in ("paper", "exact"))
    assert runs["paper"]["meta"]["makespan_seconds"] == pytest.approx(0.3463, abs=1e-4)
    assert [(r["replicas"], r["first_layer"]) for r in paper] == [(r["replicas"], r["first_layer"]) for r in exact] \
        == [(7, "conv1_1"), (1, "relu4_3")]
    for key in ("microbatch_forward_seconds", "microbatch_backward_seconds"):
        assert exact[0][key] == pytest.approx(paper[0][key] * 35 / 32)
        assert exact[1][key] == pytest.approx(paper[1][key])


def test_exact_replication_refused_where_it_has_no_meaning(tmp_path):
    """PipeDream's optimizer replicates by its own model: ``replication="exact"`` beside it is refused in one line
    before any work, naming the setting (it was no keyword before)."""
    cluster = tmp_path / "four.toml"
    cluster.write_text(CLUSTER)
    with pytest.raises(InputError, match="PipeDream's optimizer") as caught:
        plan("ffnn8", cluster=cluster, microbatches=4, method="pipedream", replication="exact")
    assert caught.value.where.field == "replication"
