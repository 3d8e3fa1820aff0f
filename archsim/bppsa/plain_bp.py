"""Plain reverse-mode back-propagation in numpy — the reference BPPSA must reproduce (§2.1, Eq. 3).

Written as ordinary vector-Jacobian products (transposed convolution, ReLU mask, sigmoid's and tanh's
derivatives, max-pool routing, Wᵀg) with loops over kernel offsets and windows, never through a Jacobian
matrix, so it is an independent check on :mod:`archsim.bppsa.jacobians` and the scan. Also the tanh RNN cell
(Eq. 9) forward and back-propagation through time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from archsim.bppsa.layers import Conv2d, Layer, Linear, MaxPool2d, ReLU, Sigmoid, Tanh, chain_gradient, output_shape
from archsim.errors import InputError


def backward(layer: Layer, x_in: np.ndarray, grad_out: np.ndarray) -> np.ndarray:
    """∇ w.r.t. the layer's input (CHW), given its input and ∇ w.r.t. its output (Eq. 3)."""
    out_shape = output_shape(layer, x_in.shape)
    g = np.asarray(grad_out, dtype=float).reshape(out_shape)
    if isinstance(layer, Conv2d):
        (p_h, p_w), (s_h, s_w) = layer.padding, layer.stride
        c, h, w = x_in.shape
        _, _, h_f, w_f = layer.weight.shape
        _, h_o, w_o = out_shape
        gp = np.zeros((c, h + 2 * p_h, w + 2 * p_w))
        for kh in range(h_f):
            for kw in range(w_f):
                gp[:, kh: kh + s_h * (h_o - 1) + 1: s_h, kw: kw + s_w * (w_o - 1) + 1: s_w] += np.einsum(
                    "oc,ohw->chw", layer.weight[:, :, kh, kw], g)
        return gp[:, p_h: p_h + h, p_w: p_w + w]
    if isinstance(layer, ReLU):
        return np.where(x_in > 0, g, 0.0)
    if isinstance(layer, (Sigmoid, Tanh)):  # from e = e^−|x| (never overflows), not from the forward's value
        e = np.exp(-np.abs(x_in))
        # σ′(x) = e^−x / (1 + e^−x)², even in x; tanh′(x) = sech² x = (2e^−|x| / (1 + e^−2|x|))²
        return g * (e / (1.0 + e) ** 2 if isinstance(layer, Sigmoid) else (2.0 * e / (1.0 + e * e)) ** 2)
    if isinstance(layer, MaxPool2d):
        (p_h, p_w), (h_f, w_f), (s_h, s_w) = layer.padding, layer.kernel, layer.stride
        xp = np.pad(x_in, ((0, 0), (p_h, p_h), (p_w, p_w)), constant_values=-np.inf)
        gp = np.zeros_like(xp)
        for ch, oh, ow in np.ndindex(*out_shape):
            window = xp[ch, oh * s_h: oh * s_h + h_f, ow * s_w: ow * s_w + w_f]
            kh, kw = (int(i) for i in np.unravel_index(int(np.argmax(window)), window.shape))  # first maximum
            gp[ch, oh * s_h + kh, ow * s_w + kw] += g[ch, oh, ow]
        return gp[:, p_h: p_h + x_in.shape[1], p_w: p_w + x_in.shape[2]]
    if isinstance(layer, Linear):
        return (layer.weight.T @ g.reshape(-1)).reshape(x_in.shape)
    raise TypeError(f"not a layer: {layer!r}")


def backprop(layers: list[Layer] | tuple[Layer, ...], activations: list[np.ndarray],
             grad_output: np.ndarray) -> list[np.ndarray]:
    """``[∇x_n, ∇x_{n−1}, …, ∇x_1]`` flattened — what Algorithm 1 returns in ``a[1..n]``.

    ∇x_0 (the network input) is not needed for training and the exclusive scan does not produce it.
    """
    grads = [chain_gradient(layers, activations, grad_output)]
    for i in range(len(layers) - 1, 0, -1):
        grads.append(backward(layers[i], activations[i], grads[-1]).reshape(-1))
    return grads


def weight_gradient(layer: Layer, x_in: np.ndarray, grad_out: np.ndarray) -> np.ndarray | None:
    """∇θ = (∂x_i/∂θ_i)ᵀ ∇x_i (Eq. 2) for conv and linear layers; ``None`` for parameter-free layers."""
    g = np.asarray(grad_out, dtype=float).reshape(output_shape(layer, x_in.shape))
    if isinstance(layer, Linear):
        return np.outer(g.reshape(-1), x_in.reshape(-1))
    if isinstance(layer, Conv2d):
        (p_h, p_w), (s_h, s_w) = layer.padding, layer.stride
        xp = np.pad(x_in, ((0, 0), (p_h, p_h), (p_w, p_w)))
        grad = np.zeros_like(layer.weight, dtype=float)
        _, h_o, w_o = g.shape
        for kh in range(layer.weight.shape[2]):
            for kw in range(layer.weight.shape[3]):
                patch = xp[:, kh: kh + s_h * (h_o - 1) + 1: s_h, kw: kw + s_w * (w_o - 1) + 1: s_w]
                grad[:, :, kh, kw] = np.einsum("ohw,chw->oc", g, patch)
        return grad
    return None


@dataclass(frozen=True, eq=False)
class RNNCell:
    """h_t = tanh(W_x x_t + W_h h_{t−1} + b) (Eq. 9, with the two biases summed)."""

    w_x: np.ndarray  # (hidden, inputs)
    w_h: np.ndarray  # (hidden, hidden)
    b: np.ndarray  # (hidden,)


def rnn_forward(cell: RNNCell, xs: np.ndarray, h0: np.ndarray) -> np.ndarray:
    """Hidden states ``h_0 … h_{T−1}`` (rows) for inputs ``xs`` (T × inputs) from initial state ``h0``
    (hidden,); other shapes are refused in one line (numpy's own error, or a broadcast, otherwise)."""
    hidden, inputs = cell.w_x.shape
    xs, h = np.asarray(xs, dtype=float), np.asarray(h0, dtype=float)
    if xs.ndim != 2 or xs.shape[1] != inputs:
        raise InputError(f"expected xs as a T × {inputs} array (a row per time step, the cell's {inputs} inputs), "
                         f"got shape {xs.shape}; one step is xs.reshape(1, -1)", field="xs")
    if h.shape != (hidden,):
        raise InputError(f"expected h0 of shape ({hidden},), the cell's hidden size, got shape {h.shape}", field="h0")
    states = []
    for x in xs:
        h = np.tanh(cell.w_x @ x + cell.w_h @ h + cell.b)
        states.append(h)
    return np.array(states)


def rnn_states(cell: RNNCell, hs: np.ndarray, grad_last: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``hs`` (T × hidden, T ≥ 1: :func:`rnn_forward`'s rows) and ``grad_last`` ((hidden,)) as float arrays, other
    shapes refused in one line naming the expected one (numpy's broadcast error, or a wrong-shaped result,
    otherwise); read by :func:`rnn_backprop` and :func:`~archsim.bppsa.jacobians.rnn_scan_input`."""
    hidden = cell.w_h.shape[0]
    states, grad = np.asarray(hs, dtype=float), np.asarray(grad_last, dtype=float)
    if states.ndim != 2 or states.shape[1] != hidden or len(states) == 0:
        raise InputError(f"expected hs as a T × {hidden} array (a row per time step, T ≥ 1, the cell's hidden size "
                         f"{hidden}: rnn_forward's result), got shape {states.shape}", field="hs")
    if grad.shape != (hidden,):
        raise InputError(f"expected grad_last of shape ({hidden},), the cell's hidden size, got shape {grad.shape}",
                         field="grad_last")
    return states, grad


def rnn_backprop(cell: RNNCell, hs: np.ndarray, grad_last: np.ndarray) -> list[np.ndarray]:
    """BPTT: ``[∇h_{T−1}, ∇h_{T−2}, …, ∇h_0]`` given ∇h_{T−1} (the loss reads the last state, §4.1); shapes as
    :func:`rnn_states` checks them."""
    hs, grad_last = rnn_states(cell, hs, grad_last)
    grads = [grad_last]
    for t in range(len(hs) - 1, 0, -1):
        grads.append(cell.w_h.T @ ((1.0 - hs[t] ** 2) * grads[-1]))
    return grads
