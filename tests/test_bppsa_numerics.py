"""BPPSA numerics: the scan of transposed Jacobians reproduces plain numpy back-propagation (§3.1–3.5).

References are independent of the code under test: BP is written as vector-Jacobian products
(:mod:`archsim.bppsa.plain_bp`), Jacobians are also built column by column from the forward pass
or by finite differences, and nonzero counts are compared with Table 1's printed examples.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archsim.bppsa.jacobians import rnn_jacobian_t, rnn_scan_input, scan_input, transposed_jacobian
from archsim.bppsa.layers import Conv2d, Linear, MaxPool2d, ReLU, forward, forward_chain, output_shape
from archsim.bppsa.plain_bp import RNNCell, backprop, rnn_backprop, rnn_forward, weight_gradient
from archsim.bppsa.scan import IDENTITY, blelloch_scan, ceil_log2, linear_scan
from archsim.bppsa.sparsity import (
    conv_nnz,
    linear_nnz,
    maxpool_nnz,
    relu_nnz,
    sparsity,
    table1_conv,
    table1_maxpool,
    table1_relu,
)
from archsim.bppsa.vgg import vgg11_conv_stack
from archsim.errors import InputError

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def rel_err(got, want) -> float:
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300))


def random_layer(draw, rng, shape):
    c, h, w = shape
    choice = draw(st.sampled_from(["conv", "relu", "pool", "linear"]))
    if choice == "conv":
        kh, kw = draw(st.integers(1, min(3, h))), draw(st.integers(1, min(3, w)))
        return Conv2d(rng.standard_normal((draw(st.integers(1, 3)), c, kh, kw)),
                      (draw(st.integers(1, 2)), draw(st.integers(1, 2))),
                      (draw(st.integers(0, kh - 1)), draw(st.integers(0, kw - 1))))
    if choice == "pool" and h >= 2 and w >= 2:
        kh, kw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
        return MaxPool2d((kh, kw), (draw(st.integers(1, 2)), draw(st.integers(1, 2))),
                         (draw(st.integers(0, kh // 2)), draw(st.integers(0, kw // 2))))
    if choice == "linear":
        return Linear(rng.standard_normal((draw(st.integers(1, 6)), c * h * w)))
    return ReLU()


@st.composite
def chains(draw):
    """(layers, x0, ∇x_n, up-sweep depth or None) for a random conv/relu/maxpool/linear chain."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    shape = (draw(st.integers(1, 3)), draw(st.integers(3, 8)), draw(st.integers(3, 8)))
    x0, layers = rng.standard_normal(shape), []
    for _ in range(draw(st.integers(1, 9))):
        layers.append(random_layer(draw, rng, shape))
        shape = output_shape(layers[-1], shape)
    return layers, x0, rng.standard_normal(int(np.prod(shape))), draw(st.none() | st.integers(0, 3))


@SETTINGS
@given(chains())
def test_blelloch_scan_equals_backprop_on_random_networks(case):
    layers, x0, grad, up = case
    acts = forward_chain(layers, x0)
    want = backprop(layers, acts, grad)
    elements = scan_input(layers, acts, grad)
    up = None if up is None else min(up, ceil_log2(len(elements)) - 1)
    got = blelloch_scan(elements, up_levels=up).gradients()
    assert len(got) == len(want) == len(layers)
    for g, w in zip(got, want):
        assert rel_err(g, w) <= 1e-9
    # Eq. 2 from the scan's ∇x equals Eq. 2 from BP's.
    for i, layer in enumerate(layers[1:], start=1):
        mine, ref = (weight_gradient(layer, acts[i], grads[len(layers) - 1 - i]) for grads in (got, want))
        assert (mine is None and ref is None) or rel_err(mine, ref) <= 1e-9


@st.composite
def rnns(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    hidden, inputs, steps = draw(st.integers(1, 8)), draw(st.integers(1, 3)), draw(st.integers(1, 48))
    cell = RNNCell(rng.standard_normal((hidden, inputs)), rng.standard_normal((hidden, hidden)) / np.sqrt(hidden),
                   rng.standard_normal(hidden))
    return cell, rng.standard_normal((steps, inputs)), rng.standard_normal(hidden), rng.standard_normal(hidden)


@SETTINGS
@given(rnns())
def test_blelloch_scan_equals_bptt_on_random_rnn_sequences(case):
    cell, xs, h0, grad = case
    hs = rnn_forward(cell, xs, h0)
    want = rnn_backprop(cell, hs, grad)
    elements = rnn_scan_input(cell, hs, grad)
    for up in (None, *range(ceil_log2(len(elements)))):
        got = blelloch_scan(elements, up_levels=up).gradients()
        assert all(rel_err(g, w) <= 1e-9 for g, w in zip(got, want, strict=True))


def test_algorithm1_and_every_hybrid_match_the_linear_scan_for_n_1_to_64():
    rng = np.random.default_rng(7)
    for n in range(1, 65):
        elements = [rng.standard_normal(3)] + [rng.standard_normal((3, 3)) for _ in range(n)]
        want = linear_scan(elements).values
        assert want[0] is IDENTITY
        for up in (None, *range(ceil_log2(n + 1))):
            got = blelloch_scan(elements, up_levels=up).values
            assert got[0] is IDENTITY and all(rel_err(g, w) <= 1e-12 for g, w in zip(got[1:], want[1:]))


def _rnn_case(seed=3, hidden=5, steps=13):
    rng = np.random.default_rng(seed)
    cell = RNNCell(rng.standard_normal((hidden, 2)), rng.standard_normal((hidden, hidden)), rng.standard_normal(hidden))
    hs = rnn_forward(cell, rng.standard_normal((steps, 2)), rng.standard_normal(hidden))
    grad = rng.standard_normal(hidden)
    return rnn_scan_input(cell, hs, grad), rnn_backprop(cell, hs, grad)


def _exact(elements, want, **kwargs) -> bool:
    return all(rel_err(g, w) <= 1e-9 for g, w in zip(blelloch_scan(elements, **kwargs).gradients(), want))


@pytest.mark.parametrize("seed", [3, 11])
def test_planted_textbook_operand_order_breaks_exactness(seed):
    """The down-sweep's ◇ with its operands swapped (Algorithm 1's line 13 as textbooks print it) is no
    longer exact: ``reverse_downsweep=False`` is that swap, and nothing else of the scan changes."""
    elements, want = _rnn_case(seed=seed)
    assert _exact(elements, want)
    assert not _exact(elements, want, reverse_downsweep=False)


def test_conv_jacobian_columns_are_the_forward_pass_of_unit_inputs():
    rng = np.random.default_rng(5)
    layer = Conv2d(rng.standard_normal((3, 2, 3, 2)), (2, 1), (1, 1))
    shape = (2, 5, 4)
    jt = transposed_jacobian(layer, np.zeros(shape)).toarray()
    brute = np.array([forward(layer, np.eye(np.prod(shape))[j].reshape(shape)).ravel() for j in range(np.prod(shape))])
    assert np.allclose(jt, brute, rtol=0, atol=1e-14)


def test_rnn_jacobian_matches_central_differences():
    rng = np.random.default_rng(2)
    cell = RNNCell(rng.standard_normal((4, 2)), rng.standard_normal((4, 4)), rng.standard_normal(4))
    x, h_prev, eps = rng.standard_normal(2), rng.standard_normal(4), 1e-6

    def step(h):
        return np.tanh(cell.w_x @ x + cell.w_h @ h + cell.b)

    numeric = np.array([(step(h_prev + eps * e) - step(h_prev - eps * e)) / (2 * eps) for e in np.eye(4)])
    assert np.allclose(rnn_jacobian_t(cell, step(h_prev)).toarray(), numeric, atol=1e-8)


def test_conv_weight_gradient_matches_finite_differences():
    rng = np.random.default_rng(4)
    layer = Conv2d(rng.standard_normal((2, 2, 2, 3)), (1, 2), (1, 0))
    x, g = rng.standard_normal((2, 4, 5)), rng.standard_normal(output_shape(layer, (2, 4, 5)))
    grad = weight_gradient(layer, x, g)
    for idx in [(0, 0, 0, 0), (1, 1, 1, 2), (0, 1, 1, 1)]:
        bump = np.zeros_like(layer.weight)
        bump[idx] = 1e-6
        plus, minus = (Conv2d(layer.weight + s * bump, layer.stride, layer.padding) for s in (1, -1))
        assert abs((np.sum(g * forward(plus, x)) - np.sum(g * forward(minus, x))) / 2e-6 - grad[idx]) < 1e-7


@SETTINGS
@given(st.data())
def test_nonzero_counts_match_the_derived_expressions(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    c, h, w = data.draw(st.integers(1, 4)), data.draw(st.integers(2, 9)), data.draw(st.integers(2, 9))
    x = rng.standard_normal((c, h, w))
    conv = random_layer(data.draw, rng, (c, h, w))
    pool = MaxPool2d(k := (data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))),
                     (data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))), (k[0] // 2, 0))
    for layer in (conv, pool, ReLU(), Linear(rng.standard_normal((3, c * h * w)))):
        out = output_shape(layer, (c, h, w))
        nnz = transposed_jacobian(layer, x).nnz
        if isinstance(layer, Conv2d):
            c_o, c_i, h_f, w_f = layer.weight.shape
            assert nnz == conv_nnz(c_i, c_o, (h, w), out[1:], (h_f, w_f), layer.stride, layer.padding)
        elif isinstance(layer, MaxPool2d):
            assert nnz == maxpool_nnz(c, (h, w), out[1:], layer.kernel, layer.stride, layer.padding)
        elif isinstance(layer, ReLU):
            assert nnz == relu_nnz(c, h, w)
        elif isinstance(layer, Linear):
            assert nnz == linear_nnz(c * h * w, layer.weight.shape[0])


def test_table1_examples_for_vgg11_first_operators_on_32x32():
    conv, relu, pool = vgg11_conv_stack(seed=0)[:3]
    x = np.random.default_rng(0).standard_normal((3, 32, 32))
    y = forward(conv, x)
    printed = {"conv": 0.99157, "relu": 0.99998, "pool": 0.99994}  # Table 1, "Examples" column
    for name, layer, inp in (("conv", conv, x), ("relu", relu, y), ("pool", pool, y)):
        jt = transposed_jacobian(layer, inp)
        assert round(sparsity(jt.nnz, *jt.shape), 5) == printed[name]
    assert sparsity(transposed_jacobian(relu, y).nnz, 65536, 65536) == pytest.approx(table1_relu(64, 32, 32), abs=1e-15)
    jt = transposed_jacobian(pool, y)
    assert sparsity(jt.nnz, *jt.shape) == pytest.approx(table1_maxpool(2, 2, 64, 32, 32), abs=1e-15)
    # Convolution: Table 1's expression is the large-input limit (footnote ‡).
    for size in (8, 32, 128):
        exact = sparsity(conv_nnz(1, 1, (size, size), (size, size), (3, 3), (1, 1), (1, 1)), size * size, size * size)
        assert abs(exact - table1_conv(3, 3, size, size)) <= 9 * 4 / size**3


def test_bad_inputs_name_their_field():
    with pytest.raises(InputError, match="elements"):
        blelloch_scan([np.ones(2)])
    with pytest.raises(InputError, match="up_levels"):
        blelloch_scan([np.ones(2), np.eye(2), np.eye(2)], up_levels=2)
    with pytest.raises(InputError, match="kernel"):
        output_shape(MaxPool2d((5, 5), (1, 1)), (1, 3, 3))
