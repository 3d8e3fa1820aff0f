"""Blocking pipeline sends (``Link.blocking``, ``--p2p``): a rank's next pass waits until the transfers its pass
sent have ended, as Megatron-LM's non-interleaved 1F1B waits on its sends' requests; the overlapped default lets
the next pass run beside them."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from conftest import assert_same_as_reference

from archsim.errors import InputError
from archsim.policies.stage_orders import published_order
from archsim.policies.stage_profile import StageProfile
from archsim.policies.stage_run import order_problem, run_order
from archsim.sim import Dep, Link, Op, Problem, Processor, simulate
from archsim.sim.validate import validate_timeline
from archsim.training.parallel import Parallelism


def _starts(run) -> dict[str, tuple[float, float]]:
    slots, ids = run.timeline.slots, run.problem.arrays.ids
    return {ids[i]: (s, e) for i, s, e in zip(slots.op.tolist(), slots.start.tolist(), slots.end.tolist(), strict=True)}


# 2 stages, 2 micro-batches, 1F1B; F = 2, B = 4 (I 4, W 0), each hop L = 1 (shorter than a pass: no link queues).
# Rank 0 runs F0 F1 B0 B1, rank 1 F0 B0 F1 B1.
# Overlapped: r0 F0 [0,2] F1 [2,4]; act hops [2,3], [4,5]; r1 F0 [3,5] B0 [5,9] (grad hop [9,10]),
#   F1 [9,11] (its input came at 5), B1 [11,15] (grad hop [15,16]); r0 B0 [10,14], B1 [16,20]: 20.
# Blocking: r0 F0 [0,2], waits for its hop [2,3], F1 [3,5], hop [5,6]; r1 F0 [3,5] B0 [5,9], waits for its grad
#   hop [9,10], F1 [10,12] B1 [12,16], hop [16,17]; r0 B0 [10,14] (send_forward_recv_backward: its send ended at
#   6, the gradient came at 10: both), B1 [17,21]: 21 = 20 + L, rank 1's F1 held one hop by its B0's send.
F, B, L = 2.0, 4.0, 1.0
PROFILE = StageProfile((F, F), (B, B), (0.0, 0.0), L)


def test_two_stage_1f1b_by_hand():
    order = published_order("1f1b", 2, 2, 1)
    free, held = run_order(order, PROFILE), run_order(order, PROFILE, blocking=True)
    assert free.timeline.makespan == pytest.approx(20.0)
    assert held.timeline.makespan == pytest.approx(20.0 + L)
    times = _starts(held)
    assert times["0F1"] == pytest.approx((F + L, 2 * F + L))  # after its F0's send ended
    assert times["1F1"] == pytest.approx((10.0, 12.0))  # after its B0's gradient send, not at its input (6)
    assert times["0B0"] == pytest.approx((10.0, 14.0))  # the later of its send's end (6) and the gradient (10)
    assert times["0B1"] == pytest.approx((17.0, 21.0))
    assert _starts(free)["0F1"] == pytest.approx((F, 2 * F))  # overlapped: at once
    assert validate_timeline(held.problem, held.timeline) == []


def test_blocking_links_still_queue_and_time_each_transfer():
    """The links keep their own rule: every transfer lasts its hop, one at a time per link."""
    run = run_order(published_order("1f1b", 2, 2, 1), StageProfile((1.0, 1.0), (2.0, 2.0), (0.0, 0.0), 5.0),
                    blocking=True)
    transfers = run.timeline.transfers
    assert np.allclose(np.asarray(transfers.end) - np.asarray(transfers.start), 5.0)
    assert all(link.blocking for link in run.problem.links)
    assert validate_timeline(run.problem, run.timeline) == []
    assert not any(link.blocking for link in order_problem(published_order("1f1b", 2, 2, 1), PROFILE).links)


@pytest.mark.parametrize("schedule,chunks", [("1f1b", 1), ("gpipe", 1), ("interleaved-1f1b", 2)])
def test_slower_link_never_shortens_blocking_iteration(schedule, chunks):
    rng = np.random.default_rng(7)
    for _ in range(6):
        p, m = int(rng.integers(2, 4)), 2 * int(rng.integers(1, 3)) * chunks
        m = m if schedule != "interleaved-1f1b" else p * int(rng.integers(1, 3))
        order = published_order(schedule, p, m, chunks)
        n = p * chunks
        f, i, w = (tuple(float(x) for x in rng.uniform(0.5, 3.0, n)) for _ in range(3))
        spans = [run_order(order, StageProfile(f, i, w, hop), blocking=True).timeline.makespan
                 for hop in (0.0, 0.3, 1.0, 2.5, 6.0)]
        assert all(b >= a - 1e-12 for a, b in pairwise(spans)), spans
        free = run_order(order, StageProfile(f, i, w, 2.5)).timeline.makespan
        assert spans[3] >= free - 1e-12  # waiting for a send never makes the iteration shorter


def test_parallelism_p2p_modes():
    assert not Parallelism(pp=2, global_batch=4, p2p="overlapped").p2p_blocking
    assert Parallelism(pp=2, global_batch=4, p2p="blocking").p2p_blocking
    assert Parallelism(pp=2, global_batch=4, p2p="megatron").p2p_blocking  # non-interleaved 1F1B: wait_on_reqs
    assert not Parallelism(pp=2, global_batch=4, interleave=2, p2p="megatron").p2p_blocking  # overlap_p2p_comm
    with pytest.raises(InputError, match="blocking"):
        Parallelism(pp=2, global_batch=4, p2p="blockng")


def test_megatron_blocks_interleaved_1f1b_of_one_chunk_as_the_1f1b_it_runs():
    """Failed before: ``interleaved-1f1b`` with one chunk a rank under ``megatron`` ran overlapped while ``1f1b``
    blocked, so the two differed. Megatron-LM turns a virtual pipeline size of 1 into None (arguments.py's
    validate_args, ``overlap_p2p_comm`` then False) and get_forward_backward_func runs
    forward_backward_pipelining_without_interleaving for None (schedules.py): the one chunk is plain 1F1B, which
    waits on its sends. The reference: 1F1B's time under the same mode."""
    import warnings

    import archsim

    assert Parallelism(pp=4, global_batch=8, schedule="interleaved-1f1b", interleave=1, p2p="megatron").p2p_blocking
    assert not Parallelism(pp=4, global_batch=8, schedule="interleaved-1f1b", interleave=2, p2p="megatron").p2p_blocking
    kwargs = {"cluster": "configs/clusters/a100_node.toml", "pp": 4, "dp": 2, "global_batch": 16, "seq": 512,
              "interleave": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the one-chunk note
        seconds = {(schedule, p2p): archsim.train("gpt3_1.3b", schedule=schedule, p2p=p2p, **kwargs)[0].iteration_seconds
                   for schedule in ("1f1b", "interleaved-1f1b") for p2p in ("megatron", "overlapped")}
    assert seconds["1f1b", "megatron"] > seconds["1f1b", "overlapped"]  # a hop here costs: the wait shows
    assert seconds["interleaved-1f1b", "megatron"] == pytest.approx(seconds["1f1b", "megatron"], rel=1e-12)


@pytest.mark.parametrize("streams,z_start", [(1, 6.0), (2, 1.0)])
def test_a_blocking_send_holds_only_its_own_stream(streams, z_start):
    """x (1 s on a) sends over a blocking link of latency 5 to y on b; z waits for x alone. One stream: z starts when
    x's transfer ends (6); two: on the other stream at once (1), x's stream kept until 6."""
    problem = Problem((Processor("a", streams), Processor("b")), (Link("ab", "a", "b", 1.0, 5.0, blocking=True),),
                      (Op("x", "a", 1.0), Op("y", "b", 1.0), Op("z", "a", 1.0)),
                      (Dep("x", "y", 0, "ab"), Dep("x", "z")))
    timeline = simulate(problem)
    slots = {slot.op: slot for slot in timeline.slots}
    assert slots["z"].start == z_start
    assert slots["y"].start == 6.0
    assert_same_as_reference(problem, None, timeline)


@pytest.mark.long
def test_compiled_kernel_blocks_as_the_reference(monkeypatch):
    """The numba kernel (not the list path small problems take) against the reference engine."""
    from archsim.sim import kernel

    monkeypatch.setattr(kernel, "PYTHON_WORK", 0)
    rng = np.random.default_rng(3)
    f, i, w = (tuple(float(x) for x in rng.uniform(0.5, 3.0, 4)) for _ in range(3))
    problem = order_problem(published_order("1f1b", 4, 16, 1), StageProfile(f, i, w, 1.7), blocking=True)
    assert_same_as_reference(problem, None, simulate(problem))


def test_train_blocking_waits_only_where_hops_cost():
    import archsim

    kwargs = {"cluster": "configs/clusters/h100_2_servers.toml", "tp": 8, "pp": 2, "dp": 1, "global_batch": 4,
              "micro_batch": 1, "seq": 512}
    free, _ = archsim.train("gpt3_1.3b", p2p="overlapped", **kwargs)
    held, _ = archsim.train("gpt3_1.3b", p2p="blocking", **kwargs)
    assert held.iteration_seconds > free.iteration_seconds  # PP across the servers: each hop a NIC transfer
    one = {**kwargs, "pp": 1, "dp": 2}
    assert archsim.train("gpt3_1.3b", p2p="blocking", **one)[0].iteration_seconds == \
        archsim.train("gpt3_1.3b", p2p="overlapped", **one)[0].iteration_seconds  # no hop: nothing to wait for


def test_cli_p2p_times_one_iteration():
    import io
    from contextlib import redirect_stderr

    from train_cli import train_json

    from archsim.cli import main

    args = ["gpt3_1.3b", "--cluster", "configs/clusters/h100_2_servers.toml", "--tp", "8", "--pp", "2",
            "--global-batch", "4", "--seq", "512"]
    free, held = train_json([*args, "--p2p", "overlapped"]), train_json([*args, "--p2p", "blocking"])
    assert held["meta"]["iteration_seconds"] > free["meta"]["iteration_seconds"]
    err = io.StringIO()
    with redirect_stderr(err):
        code = main(["train", *args, "--p2p", "blocked"])
    assert code == 2 and "expected one of overlapped, blocking, megatron, got 'blocked'" in err.getvalue()


def test_train_sweep_refuses_a_mode_that_is_none_of_the_three():
    """``train_sweep(p2p=…)`` takes the three modes (tests/test_p2p_runs_sweep.py; until 2026-12-05 all but the
    default were refused); another is named as such."""
    from pathlib import Path

    import archsim
    from archsim.errors import InputError

    node = str(Path(__file__).resolve().parents[1] / "configs" / "clusters" / "a100_node.toml")
    with pytest.raises(InputError, match="p2p"):
        archsim.train_sweep("gpt_1024h_24l", sweep={"tp": [1, 2]}, cluster=node,
                            global_batch=16, p2p="blocked")
