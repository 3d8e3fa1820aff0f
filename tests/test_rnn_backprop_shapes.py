"""``rnn_backprop`` and ``rnn_scan_input`` say the shapes they take: hidden states ``hs`` as a T × hidden array
(rows from :func:`rnn_forward`) and ``grad_last`` as a (hidden,) vector. Failed before (all 12 cases): numpy's
broadcast ValueError or IndexError, or a run that silently produced a wrong-shaped result
(``rnn_scan_input`` with a (2,) gradient for a hidden size of 3, ``rnn_backprop`` with a 1-D ``hs``)."""

from __future__ import annotations

import numpy as np
import pytest

from archsim.bppsa import RNNCell, rnn_backprop, rnn_forward, rnn_scan_input
from archsim.errors import InputError

FUNCTIONS = [rnn_backprop, rnn_scan_input]


def _cell() -> RNNCell:  # hidden 3, inputs 2
    rng = np.random.default_rng(1)
    return RNNCell(rng.standard_normal((3, 2)), rng.standard_normal((3, 3)), rng.standard_normal(3))


@pytest.mark.parametrize("function", FUNCTIONS)
@pytest.mark.parametrize("shape", [(4, 2), (3,), (4, 3, 1), (0, 3)])
def test_hidden_states_of_the_wrong_shape_are_one_line(function, shape):
    with pytest.raises(InputError) as caught:
        function(_cell(), np.ones(shape), np.ones(3))
    text = str(caught.value)
    assert caught.value.where.field == "hs" and "T × 3" in text and str(shape) in text and "\n" not in text


@pytest.mark.parametrize("function", FUNCTIONS)
@pytest.mark.parametrize("shape", [(2,), (1, 3)])
def test_a_gradient_of_the_wrong_shape_is_one_line(function, shape):
    with pytest.raises(InputError) as caught:
        function(_cell(), np.ones((4, 3)), np.ones(shape))
    text = str(caught.value)
    assert caught.value.where.field == "grad_last" and "(3,)" in text and str(shape) in text


def test_right_shapes_still_give_the_hand_computed_bptt():
    """T = 2: ∇h_0 = W_hᵀ((1 − h_1²) ⊙ ∇h_1), written out here element by element."""
    cell = _cell()
    hs = rnn_forward(cell, np.array([[1.0, 0.0], [0.0, 1.0]]), np.zeros(3))
    grad = np.array([1.0, -2.0, 0.5])
    want = [sum(cell.w_h[j, i] * (1.0 - hs[1][j] ** 2) * grad[j] for j in range(3)) for i in range(3)]
    got = rnn_backprop(cell, hs, grad)
    assert len(got) == 2 and np.allclose(got[0], grad) and np.allclose(got[1], want)
    assert len(rnn_scan_input(cell, hs, grad)) == 3  # the gradient, then J_1ᵀ and J_0ᵀ
