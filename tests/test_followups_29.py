"""Followups 29, each test failing on the code before its fix: natural mistakes in the Python API that ended in a
misleading or foreign error — `JobSpec(workers="1")` said "one SPB task per worker", BPPSA's `rnn_forward` of 1-D
inputs raised numpy's matmul ValueError (and a 3-D one ran, broadcasting to wrong states), `archsim.schedule` of a
branching network named the CLI command `archsim pipeline` to a Python caller."""

from __future__ import annotations

import numpy as np
import pytest

import archsim
from archsim.errors import InputError

# 1. JobSpec: a wrong type is named as such


def _job(**changes):
    from archsim.cluster import JobSpec

    fields = {"job_id": "a", "submit_s": 0.0, "workers": 1, "iterations": 10, "model": "m", "full_task_s": 1.0,
              "full_memory_bytes": 1e9, "spb_task_s": (0.8,), "spb_memory_bytes": (1e9,), "model_bytes": 1e6}
    return JobSpec(**{**fields, **changes})


@pytest.mark.parametrize(("field", "value"), [("workers", "1"), ("workers", 1.0), ("workers", True),
                                              ("iterations", "10"), ("iterations", 10.5)])
def test_jobspec_names_a_wrong_type(field, value):
    """Failed before: workers="1" said "one SPB task per worker" (len of one task ≠ "1"), workers=1.0 and
    iterations="10" were taken (the latter then failing inside with a TypeError on '<')."""
    with pytest.raises(InputError) as caught:
        _job(**{field: value})
    text = str(caught.value)
    assert caught.value.where.field == field
    assert "SPB task" not in text and type(value).__name__ in text and "int" in text


def test_jobspec_still_counts_tasks_per_worker():
    """The per-worker check stays for the mistake it is about: two workers, one task."""
    with pytest.raises(InputError, match="one SPB task per worker"):
        _job(workers=2)
    assert _job(workers=np.int64(1)).workers == 1  # a count read by numpy or pandas is an int


# 2. rnn_forward: the shape it takes


def _cell():
    from archsim.bppsa import RNNCell

    rng = np.random.default_rng(0)
    return RNNCell(rng.standard_normal((3, 2)), rng.standard_normal((3, 3)), rng.standard_normal(3))


@pytest.mark.parametrize("shape", [(2,), (3,), (4, 3), (4, 2, 1)])
def test_rnn_forward_says_the_shape_it_takes(shape):
    """Failed before: (2,) and (3,) raised numpy's matmul ValueError, (4, 3) numpy's core-dimension one, and
    (4, 2, 1) ran, broadcasting each state to 3 × 3."""
    from archsim.bppsa import rnn_forward

    with pytest.raises(InputError) as caught:
        rnn_forward(_cell(), np.ones(shape), np.zeros(3))
    text = str(caught.value)
    assert caught.value.where.field == "xs" and "T × 2" in text and str(shape) in text


def test_rnn_forward_checks_h0_and_still_runs():
    """h0 of the wrong length is named (numpy's broadcast error before); a right input gives the hand-computed
    states: h_0 = tanh(W_x x_0 + W_h·0 + b)."""
    from archsim.bppsa import rnn_forward

    cell = _cell()
    with pytest.raises(InputError) as caught:
        rnn_forward(cell, np.ones((4, 2)), np.zeros(2))
    assert caught.value.where.field == "h0" and "(3,)" in str(caught.value)
    xs = np.array([[1.0, -1.0]])
    h0 = np.tanh(cell.w_x[:, 0] - cell.w_x[:, 1] + cell.b)
    assert np.allclose(rnn_forward(cell, xs, np.zeros(3))[0], h0)


# 3. archsim.schedule of a branching network names the Python route


def test_schedule_refusal_names_the_python_route():
    """Failed before: the refusal ended "(archsim pipeline)", a command, to a Python caller."""
    with pytest.raises(InputError) as caught:
        archsim.schedule("resnet50", policy="gpipe", processors=2)
    text = str(caught.value)
    assert "archsim.pipeline" in text and "archsim.simulate" in text and "archsim pipeline" not in text


def test_schedule_command_still_names_the_command(capsys):
    """The command's refusal keeps naming the command (and the block network it can schedule)."""
    from archsim.cli import main

    assert main(["schedule", "resnet50", "--policy", "gpipe", "--processors", "2"]) != 0
    assert "(archsim pipeline)" in capsys.readouterr().err


# 4. archsim.schedule and the command's other policies: they run now (tests/test_schedule_api.py), each giving the
# command's own row


@pytest.mark.parametrize("policy", ["zb-h1", "1f1b", "list-1f1b", "dp-wfbp", "multistream"])
def test_schedule_runs_the_commands_other_policies(policy):
    """Refused before in one line naming the command ("archsim schedule --policy zb-h1 …"); ``archsim.schedule``
    now runs the command's own run (its JSON compared with the command's in tests/test_schedule_api.py)."""
    keywords = {} if policy == "multistream" else {"processors": 1, "unit_costs": True}
    assert archsim.schedule("ffnn8", policy=policy, **keywords).row["policy"].startswith(policy)


def test_looped_bfs_is_refused_on_a_network_as_the_command_refuses_it():
    """A per-stage-only policy on a network: the command's line, naming the per-stage keywords' flags."""
    with pytest.raises(InputError, match="looped-bfs runs on per-stage costs") as caught:
        archsim.schedule("ffnn8", policy="looped-bfs", processors=1, unit_costs=True)
    assert caught.value.where.field == "policy"


@pytest.mark.parametrize("policy", ["zb-h1", "dp-wfbp"])
def test_the_named_command_runs_those_policies(policy, capsys):
    """The advice holds: the command runs the policy on the same network."""
    from archsim.cli import main

    assert main(["schedule", "ffnn8", "--policy", policy, "--processors", "2", "--unit-costs"]) == 0
    assert policy in capsys.readouterr().out


def test_a_misspelt_policy_is_still_a_choice():
    """A name no policy has keeps the choice's line."""
    with pytest.raises(InputError, match="expected one of mp, gpipe, ooo-pipe1, ooo-pipe2"):
        archsim.schedule("ffnn8", policy="ooo-pipe3", processors=2)
