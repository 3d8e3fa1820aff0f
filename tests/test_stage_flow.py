"""builder.stage_flow on a hand-worked order: 2 stages on 2 ranks, one micro-batch.

Rank 0 runs 0F0, 0I0, 0W0; rank 1 runs 1F0, 1B0 (actions 0 … 4). By the stage chain (hand-derived):
0I0 needs 0F0 (same rank) and the gradient 1B0 (crosses); 0W0 needs 0I0; 1F0 needs 0F0 (crosses);
1B0 needs 1F0 and, on the last stage, no gradient."""

import numpy as np

from archsim.sim.builder import stage_flow

STAGE = np.array([0, 0, 0, 1, 1])
CODE = np.array([0, 1, 2, 0, 3])  # F I W F B
RANK_OF_STAGE = np.array([0, 1, -1])


def test_dependencies_of_a_hand_worked_order():
    flow = stage_flow(STAGE, CODE, np.zeros(5, dtype=np.int64), RANK_OF_STAGE, last=1)
    assert flow.src.tolist() == [0, 4, 1, 0, 3]
    assert flow.dst.tolist() == [1, 1, 2, 3, 4]
    assert flow.grad.tolist() == [0, 1, 0, 0, 0]
    assert flow.cross.tolist() == [False, True, False, True, False]
    assert not flow.missing.any()


def test_a_missing_gradient_is_marked_on_the_action_that_needs_it():
    keep = [0, 1, 2, 3]  # without 1B0: 0I0 lacks its gradient, its input is there
    flow = stage_flow(STAGE[keep], CODE[keep], np.zeros(4, dtype=np.int64), RANK_OF_STAGE, last=1)
    assert flow.missing.tolist() == [False, True, False, False]
    assert not flow.missing_first.any()
