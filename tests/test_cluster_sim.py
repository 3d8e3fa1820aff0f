"""Cluster simulators on hand-built cases (SPB paper Fig. 2(b)/(c)), with every makespan derived by hand,
and invariants on random small cases."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archsim.cluster.jobs import JobCluster, JobSpec, SimConfig
from archsim.cluster.metrics import aggregate, busy_device_seconds, gain_pct, summarize, utilization_series
from archsim.cluster.simulate import simulate

GIB = 2**30
# Three single-device machines, 16 GiB each; no admission delay; no migration cost unless a test sets it.
THREE = JobCluster((1, 1, 1), 16 * GIB)
EXACT = SimConfig(interval_s=0.0, gamma_s_per_byte=0.0, unit_s=0.0)


def job(name, workers, iterations, spb, full=1.0, submit=0.0, model_bytes=0.0, memory=GIB):
    return JobSpec(name, submit, workers, iterations, "m", full, memory, tuple(spb), (memory,) * workers, model_bytes)


def ends(result):
    return dict(zip(result.jobs.job_id, result.jobs.end_s.round(9)))


# Fig. 2: two jobs of three SPB workers (0.3 s, 0.6 s, 1.0 s; 1.0 s without SPB), two iterations each.
FIG2 = [job("J1", 3, 2, (0.3, 0.6, 1.0)), job("J2", 3, 2, (0.3, 0.6, 1.0))]


def test_fig2_gang_tiresias():
    # Gang, exclusive devices: J1 holds all three devices for 2 × 1.0 s = [0, 2]; J2 waits, runs [2, 4].
    r = simulate(FIG2, THREE, "tiresias", EXACT)
    assert ends(r) == {"J1": 2.0, "J2": 4.0} and r.makespan_s == 4.0


def test_fig2_gang_gandiva_packs_both_jobs():
    # No free device for J2, so Gandiva packs it onto J1's three devices (2 jobs/device, memory fits):
    # each gang gets half of every device, 2 iterations × 1.0 s / 0.5 = 4.0 s for both.
    r = simulate(FIG2, THREE, "gandiva", EXACT)
    assert ends(r) == {"J1": 4.0, "J2": 4.0} and r.makespan_s == 4.0
    # Without packing Gandiva is FIFO: J1 [0, 2], J2 [2, 4].
    r = simulate(FIG2, THREE, "gandiva", SimConfig(interval_s=0, gamma_s_per_byte=0, unit_s=0, max_pack=1))
    assert ends(r) == {"J1": 2.0, "J2": 4.0}


def test_fig2_jigsaw_iteration_level():
    # Priority ∝ task time (equal memory); ties: earlier job. t=0: J1w2→d0 [0,1], J2w2→d1 [0,1],
    # J1w1→d2 [0,.6]. t=.6: J2w1→d2 [.6,1.2]. t=1: J1w0→d0 [1,1.3], J2w0→d1 [1,1.3]. Both iterations end
    # at 1.3. Iteration 2 (every worker's previous device is idle at 1.3): J1w2→d0 [1.3,2.3],
    # J2w2→d1 [1.3,2.3], J1w1→d2 [1.3,1.9]; t=1.9: J2w1→d2 [1.9,2.5]; t=2.3: J1w0→d0, J2w0→d1 [2.3,2.6].
    r = simulate(FIG2, THREE, "jigsaw", EXACT)
    assert ends(r) == {"J1": 2.6, "J2": 2.6} and r.makespan_s == pytest.approx(2.6)
    assert r.jobs.migrations.sum() == 0
    # Busy device time is the SPB work: 2 jobs × 2 iterations × (0.3 + 0.6 + 1.0) = 7.6 s.
    assert busy_device_seconds(r) == pytest.approx(7.6)


# Fig. 2(c)'s point: a short SPB task frees its device for another job. J1: three SPB workers as above,
# two iterations; J2: one worker, 1.0 s, three iterations.
MIXED = [job("J1", 3, 2, (0.3, 0.6, 1.0)), job("J2", 1, 3, (1.0,))]


def test_mixed_gang_baselines():
    # Tiresias: J1 takes all 3 devices [0, 2]; J2 (1 device) runs after, [2, 5].
    assert ends(simulate(MIXED, THREE, "tiresias", EXACT)) == {"J1": 2.0, "J2": 5.0}
    # Gandiva: J1 on d0–d2, J2 packed on d0 (lowest load, then index). Both at half speed: J1 ends at
    # 2 / 0.5 = 4.0; J2 has done 2 of 3 iterations by then, alone on d0 it finishes the last at 5.0.
    assert ends(simulate(MIXED, THREE, "gandiva", EXACT)) == {"J1": 4.0, "J2": 5.0}


def test_mixed_jigsaw_fills_the_spb_gap():
    # t=0: J1w2→d0 [0,1] (tie at 1.0 s goes to J1), J2→d1 [0,1], J1w1→d2 [0,.6]. t=.6: J1w0→d2 [.6,.9]:
    # J1's iteration ends at 1.0. t=1: J1w2→d0 [1,2], J2→d1 [1,2], J1w1→d2 [1,1.6]; t=1.6: J1w0→d2
    # [1.6,1.9]. J1 ends at 2.0; J2's third iteration d1 [2,3]. Makespan 3.0 against 5.0 for both gangs.
    r = simulate(MIXED, THREE, "jigsaw", EXACT)
    assert ends(r) == {"J1": 2.0, "J2": 3.0} and r.makespan_s == 3.0


# §3.2 orders tasks by normalised memory × time, largest first, to cut makespan; nothing in it favours
# short or early jobs. Two one-device machines; N1, N2: one worker, 1 GiB, one 2 s iteration, listed
# first; W: two SPB workers (0.5 s, 1.0 s; 1.0 s without SPB), 8 GiB, four iterations. All submitted at 0.
TWO = JobCluster((1, 1), 16 * GIB)
NARROW_FIRST = [job("N1", 1, 1, (2.0,), full=2.0), job("N2", 1, 1, (2.0,), full=2.0),
                job("W", 2, 4, (0.5, 1.0), memory=8 * GIB)]


def test_jigsaw_trades_mean_jct_for_makespan_as_its_priority_rule_says():
    # Gangs, FIFO, no packing: N1 d0 and N2 d1 [0, 2], then W on both [2, 6]. Mean JCT (2+2+6)/3 = 10/3.
    no_pack = SimConfig(interval_s=0, gamma_s_per_byte=0, unit_s=0, max_pack=1)
    for policy in ("gandiva", "tiresias"):
        r = simulate(NARROW_FIRST, TWO, policy, no_pack)
        assert ends(r) == {"N1": 2.0, "N2": 2.0, "W": 6.0} and r.makespan_s == 6.0
    # Jigsaw, priorities W1 .5·1 = .5 > W0 .5·.5 = .25 > N 1/16·2 = .125. t=0: W1 d0 [0,1], W0 d1 [0,.5];
    # t=.5: N1 d1 [.5,2.5]; t=1: W1 d0 [1,2], W0 waits for a device; t=2: W0 d0 [2,2.5] (moved);
    # t=2.5: W1 d0 [2.5,3.5], W0 d1 [2.5,3] (moved); t=3: N2 d1 [3,5]; t=3.5: W1 d0 [3.5,4.5];
    # t=4.5: W0 d0 [4.5,5] (moved). Makespan 5 (1/6 below the gangs'), mean JCT (2.5+5+5)/3 = 25/6 (25 % above).
    r = simulate(NARROW_FIRST, TWO, "jigsaw", EXACT)
    assert ends(r) == {"N1": 2.5, "N2": 5.0, "W": 5.0} and r.makespan_s == 5.0
    assert r.jobs.migrations.sum() == 3
    assert r.jobs.jct_s.mean() == pytest.approx(25 / 6)


@pytest.mark.parametrize("cost, expected_a, migrations", [(0.5, 2.0, 1), (2.0, 2.9, 0)])
def test_jigsaw_affinity_waits_or_migrates(cost, expected_a, migrations):
    # A: workers (0.2 s, 1.0 s), 2 iterations; B: one 2.5 s task submitted at 0.2. γ = 1 ns/B.
    # t=0: Aw1→d0 [0,1], Aw0→d1 [0,.2]. t=.2: B→d1 (lowest idle) [.2,2.7]. t=1: Aw1→d0 [1,2].
    # Aw0's device d1 frees at 2.7; d2 is idle. Migrating starts compute at 1 + γ·size:
    #   γ·size = 0.5 → 1.5 < 2.7: migrate, d2 [1, 1.7]; A ends at max(2.0, 1.7) = 2.0.
    #   γ·size = 2.0 → 3.0 ≥ 2.7: wait for d1, [2.7, 2.9]; A ends at 2.9.
    jobs = [job("A", 2, 2, (0.2, 1.0), model_bytes=cost * 1e9), job("B", 1, 1, (2.5,), full=2.5, submit=0.2)]
    r = simulate(jobs, THREE, "jigsaw", SimConfig(interval_s=0, gamma_s_per_byte=1e-9, unit_s=0))
    assert ends(r) == {"A": expected_a, "B": 2.7}
    assert dict(zip(r.jobs.job_id, r.jobs.migrations))["A"] == migrations


def test_tiresias_2d_las_preempts_at_interval_boundaries():
    # Threshold 2 device-seconds, interval 1 s. t=0: J1 runs on all devices. t=1: J1 has 3 device-s
    # (queue 1), J2 0 (queue 0): J2 preempts J1. t=2: both in queue 1, FIFO by submission → J1 resumes
    # on its old devices (no migration), finishes its last iteration at 3; J2 finishes at 4.
    config = SimConfig(interval_s=1.0, gamma_s_per_byte=1e-9, unit_s=0, tiresias_thresholds=(2.0,))
    jobs = [job("J1", 3, 2, (1.0,) * 3, model_bytes=1e9), job("J2", 3, 2, (1.0,) * 3, model_bytes=1e9)]
    r = simulate(jobs, THREE, "tiresias", config)
    assert ends(r) == {"J1": 3.0, "J2": 4.0} and r.jobs.migrations.sum() == 0


def test_gandiva_unpacks_with_migration_cost():
    # Two devices. J1 (4 it) → d0, J2 (1 it) → d1, J3 (4 it) packed on d0. t=1: J2 done, J1 (0.5 it done)
    # moves to d1 paying γ·size = 0.25 s: ends 1 + 0.25 + 3.5 = 4.75; J3, alone on d0: 1 + 3.5 = 4.5.
    two = JobCluster((1, 1), 16 * GIB)
    jobs = [job("J1", 1, 4, (1.0,), model_bytes=0.25e9), job("J2", 1, 1, (1.0,)), job("J3", 1, 4, (1.0,))]
    r = simulate(jobs, two, "gandiva", SimConfig(interval_s=0, gamma_s_per_byte=1e-9, unit_s=0))
    assert ends(r) == {"J1": 4.75, "J2": 1.0, "J3": 4.5}
    assert list(r.jobs.migrations) == [1, 0, 0]


def test_admission_waits_for_the_interval_boundary():
    # Submitted at 10 s with a 60 s interval: every policy starts it at 60 s.
    jobs = [job("J", 1, 5, (1.0,), submit=10.0)]
    for policy in ("jigsaw", "gandiva", "tiresias"):
        r = simulate(jobs, THREE, policy, SimConfig(gamma_s_per_byte=0, unit_s=0))
        assert r.jobs.start_s[0] == 60.0 and r.makespan_s == 65.0 and r.jobs.jct_s[0] == 55.0


def test_blocks_keep_a_lone_job_exact():
    # 25 iterations of (0.05, 0.08, 0.1) s with unit 1 s: blocks of 10, 10, 5 iterations, each lasting
    # block × 0.1 s, so the job still takes 25 × 0.1 = 2.5 s.
    jobs = [job("J", 3, 25, (0.05, 0.08, 0.1), full=0.1)]
    r = simulate(jobs, THREE, "jigsaw", SimConfig(interval_s=0, unit_s=1.0))
    assert r.makespan_s == pytest.approx(2.5)
    assert busy_device_seconds(r) == pytest.approx(25 * 0.23)


@st.composite
def small_cases(draw):
    jobs = []
    for i in range(draw(st.integers(1, 5))):
        workers = draw(st.integers(1, 3))
        full = draw(st.sampled_from([0.5, 1.0, 1.5]))
        spb = tuple(full * (w + 1) / workers for w in range(workers))
        jobs.append(job(f"j{i}", workers, draw(st.integers(1, 4)), spb, full=full,
                        submit=draw(st.sampled_from([0.0, 0.5, 2.0])), model_bytes=draw(st.sampled_from([0, 2e8]))))
    return sorted(jobs, key=lambda j: j.submit_s)


@settings(max_examples=40, deadline=None)
@given(small_cases(), st.sampled_from(["jigsaw", "gandiva", "tiresias", "jigsaw-nospb"]))
def test_invariants(jobs, policy):
    config = SimConfig(interval_s=0.0, gamma_s_per_byte=1e-9, unit_s=0.0, tiresias_thresholds=(1.0,))
    r = simulate(jobs, THREE, policy, config)
    spb = policy == "jigsaw"
    busy = sum(j.iterations * (sum(j.spb_task_s) if spb else j.workers * j.full_task_s) for j in jobs)
    assert busy_device_seconds(r) == pytest.approx(busy)  # every task's work is done exactly once
    alone = [j.submit_s + j.iterations * (max(j.spb_task_s) if spb else j.full_task_s) for j in jobs]
    assert (r.jobs.end_s.to_numpy() >= np.array(alone) - 1e-9).all()  # no job beats running alone
    assert r.makespan_s >= busy / THREE.devices - 1e-9
    assert (utilization_series(r, 0.25).utilization <= 1 + 1e-9).all()
    assert r.jobs.jct_s.notna().all()


def test_summaries_and_aggregate():
    runs = []
    for seed, scale in ((0, 1.0), (1, 2.0)):
        jobs = [job("J1", 3, 2, (0.3 * scale, 0.6 * scale, 1.0 * scale), full=scale), job("J2", 1, 3, (scale,), full=scale)]
        for policy in ("jigsaw", "tiresias"):
            runs.append({**summarize(simulate(jobs, THREE, policy, EXACT)), "seed": seed})
    table = aggregate(runs).set_index("policy")
    # Makespans: jigsaw 3.0 and 6.0, tiresias 5.0 and 10.0 → Jigsaw gains 40 % on both seeds.
    assert table.loc["jigsaw", "makespan_seconds_mean"] == 4.5 and table.loc["tiresias", "makespan_seconds_max"] == 10.0
    assert table.loc["tiresias", "jigsaw_gain_makespan_pct_mean"] == pytest.approx(40.0)
    assert table.loc["tiresias", "jigsaw_gain_makespan_pct_std"] == pytest.approx(0.0)


def test_gain_of_a_float_noise_tie_is_exactly_zero():
    # 1533.45 summed two ways differs in the last bit: 100·(1 − a/b) would be −4.4e-14, a tie all the same.
    noisy = 1533.4500000000007
    assert 100 * (1 - noisy / 1533.45) != 0.0
    gains = gain_pct(np.array([noisy, 1533.45, 3.0, 1000.0]), np.array([1533.45, noisy, 5.0, 1000.001]))
    assert gains[0] == 0.0 and gains[1] == 0.0 and not np.signbit(gains[:2]).any()
    # Real differences stay: 3 against 5 is 40 %; 1000 against 1000.001 is 1e-4 % (1e-6 relative).
    assert gains[2] == pytest.approx(40.0) and gains[3] == pytest.approx(1e-4, rel=1e-6)
    runs = [{"policy": "jigsaw", "seed": 0, "makespan_seconds": noisy, "jct_mean_seconds": 2.0},
            {"policy": "gandiva", "seed": 0, "makespan_seconds": 1533.45, "jct_mean_seconds": 4.0}]
    for run in runs:
        run.update(jct_median_seconds=1.0, jct_p95_seconds=1.0, utilization=0.5, migrations_per_iteration=0.0)
    row = aggregate(runs).set_index("policy").loc["gandiva"]
    assert row["jigsaw_gain_makespan_pct_mean"] == 0.0 and row["jigsaw_gain_jct_mean_pct_mean"] == 50.0
