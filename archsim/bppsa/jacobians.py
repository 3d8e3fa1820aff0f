"""Transposed Jacobians generated analytically in CSR (BPPSA §3.3–3.4, Appendix D).

``J_iᵀ = (∂x_i/∂x_{i−1})ᵀ`` has one row per input element and one column per output element,
both CHW-flattened per sample (see :mod:`archsim.bppsa.layers`). Each routine writes the
**sparsity pattern** — every position that is not a *guaranteed* zero (§3.3) — straight from the
layer's geometry, then fills in values; input-dependent *possible* zeros (ReLU's inactive
diagonal, the non-maximal entries of a pooling window) are stored explicitly, as Algorithm 7 does,
so ``nnz`` is input-independent and equals the counts in :mod:`archsim.bppsa.sparsity`.
A pruned convolution or linear weight is a guaranteed zero too (its mask is fixed during
retraining, §4.3) unless ``prune_zeros=False``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from archsim.bppsa.layers import (
    Conv2d,
    Layer,
    Linear,
    MaxPool2d,
    ReLU,
    Sigmoid,
    Tanh,
    chain_gradient,
    forward,
    output_shape,
)
from archsim.bppsa.plain_bp import RNNCell, rnn_states

if TYPE_CHECKING:
    import scipy.sparse as sp  # annotations only: loaded where used


def _valid(out_size: int, in_size: int, stride: int, pad: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Output positions whose kernel offset ``k`` lands inside the input, and those input positions."""
    out = np.arange(out_size)
    inp = out * stride - pad + k
    keep = (inp >= 0) & (inp < in_size)
    return out[keep], inp[keep]


def _spatial_pairs(in_hw, out_hw, stride, pad, kh: int, kw: int) -> tuple[np.ndarray, np.ndarray]:
    """Flattened (input, output) spatial index pairs linked by kernel offset (kh, kw)."""
    oh, ih = _valid(out_hw[0], in_hw[0], stride[0], pad[0], kh)
    ow, iw = _valid(out_hw[1], in_hw[1], stride[1], pad[1], kw)
    return (ih[:, None] * in_hw[1] + iw[None, :]).ravel(), (oh[:, None] * out_hw[1] + ow[None, :]).ravel()


def _csr(rows: list, cols: list, data: list, shape: tuple[int, int]) -> sp.csr_array:
    """CSR from COO pieces, keeping explicitly stored zeros (they are pattern, not absence)."""
    import scipy.sparse as sp

    r, c, d = (np.concatenate(x) if x else np.zeros(0, dtype=t) for x, t in
               ((rows, np.int64), (cols, np.int64), (data, float)))
    order = np.lexsort((c, r))
    indptr = np.zeros(shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=shape[0]), out=indptr[1:])
    return sp.csr_array((d[order], c[order], indptr), shape=shape)


def conv_jacobian_t(layer: Conv2d, in_shape: tuple[int, int, int], *, prune_zeros: bool = True) -> sp.csr_array:
    """Jᵀ[c·h_i·w_i + ih·w_i + iw, o·h_o·w_o + oh·w_o + ow] = W[o, c, kh, kw] with ih = oh·s − p + kh.

    Any filter size, stride and padding. Values depend only on the weights (Appendix D.1), so a
    pruned weight removes c-to-o entries everywhere.
    """
    c_i, h_i, w_i = in_shape
    c_o, h_o, w_o = output_shape(layer, in_shape)
    rows, cols, data = [], [], []
    for kh in range(layer.weight.shape[2]):
        for kw in range(layer.weight.shape[3]):
            s_in, s_out = _spatial_pairs((h_i, w_i), (h_o, w_o), layer.stride, layer.padding, kh, kw)
            w = layer.weight[:, :, kh, kw]
            o, c = np.nonzero(w) if prune_zeros else np.indices(w.shape).reshape(2, -1)
            rows.append((c[:, None] * (h_i * w_i) + s_in[None, :]).ravel())
            cols.append((o[:, None] * (h_o * w_o) + s_out[None, :]).ravel())
            data.append(np.repeat(w[o, c], s_in.size))
    return _csr(rows, cols, data, (c_i * h_i * w_i, c_o * h_o * w_o))


def relu_jacobian_t(x_in: np.ndarray) -> sp.csr_array:
    """Diagonal: 1 where x > 0, an explicitly stored 0 elsewhere (Algorithms 5–7)."""
    import scipy.sparse as sp

    d = x_in.size
    values = (x_in.reshape(-1) > 0).astype(float)
    return sp.csr_array((values, np.arange(d), np.arange(d + 1)), shape=(d, d))


def diagonal_jacobian_t(derivative: np.ndarray) -> sp.csr_array:
    """Jᵀ of an elementwise operator: its derivative at each input element on the diagonal, every one stored
    (a zero that depends on the input is pattern, as ReLU's), so nnz is the input's size."""
    import scipy.sparse as sp

    d = derivative.size
    return sp.csr_array((np.asarray(derivative, dtype=float).reshape(-1), np.arange(d), np.arange(d + 1)),
                        shape=(d, d))


def maxpool_jacobian_t(layer: MaxPool2d, x_in: np.ndarray) -> sp.csr_array:
    """Every in-bounds (window element, output) pair; 1 at the window's first maximum, 0 elsewhere.

    Generalizes Algorithms 8–10 (which store only the pooled element and assume stride = window)
    to any stride and padding, and keeps the whole window as the input-independent pattern.
    """
    c, h_i, w_i = x_in.shape
    _, h_o, w_o = out_shape = output_shape(layer, x_in.shape)
    (h_f, w_f), (p_h, p_w), (s_h, s_w) = layer.kernel, layer.padding, layer.stride
    xp = np.pad(x_in, ((0, 0), (p_h, p_h), (p_w, p_w)), constant_values=-np.inf)
    windows = np.stack([xp[:, kh: kh + s_h * (h_o - 1) + 1: s_h, kw: kw + s_w * (w_o - 1) + 1: s_w]
                        for kh in range(h_f) for kw in range(w_f)])
    winner = np.argmax(windows, axis=0)  # first maximum in row-major window order
    rows, cols, data = [], [], []
    channel = np.arange(c)[:, None]
    for k in range(h_f * w_f):
        s_in, s_out = _spatial_pairs((h_i, w_i), (h_o, w_o), layer.stride, layer.padding, *divmod(k, w_f))
        rows.append((channel * (h_i * w_i) + s_in[None, :]).ravel())
        cols.append((channel * (h_o * w_o) + s_out[None, :]).ravel())
        data.append((winner.reshape(c, -1)[:, s_out] == k).astype(float).ravel())
    return _csr(rows, cols, data, (x_in.size, int(np.prod(out_shape))))


def linear_jacobian_t(layer: Linear, *, prune_zeros: bool = True) -> sp.csr_array:
    """Jᵀ = Wᵀ (in × out); zero (pruned) weights are guaranteed zeros."""
    wt = layer.weight.T
    r, c = np.nonzero(wt) if prune_zeros else np.indices(wt.shape).reshape(2, -1)
    return _csr([r], [c], [wt[r, c]], wt.shape)


def rnn_jacobian_t(cell: RNNCell, h_t: np.ndarray) -> sp.csr_array:
    """(∂h_t/∂h_{t−1})ᵀ = W_hᵀ·diag(1 − h_t²) for h_t = tanh(W_x x_t + W_h h_{t−1} + b).

    Column j is row j of W_h scaled by tanh′ = 1 − h_t[j]²; dense (H² entries) unless W_h has zeros.
    """
    hidden = cell.w_h.shape[0]
    scaled = cell.w_h.T * (1.0 - np.asarray(h_t) ** 2)[None, :]
    r, c = np.indices((hidden, hidden)).reshape(2, -1)
    return _csr([r], [c], [scaled[r, c]], (hidden, hidden))


def transposed_jacobian(layer: Layer, x_in: np.ndarray, *, prune_zeros: bool = True) -> sp.csr_array:
    """Jᵀ of one layer at input ``x_in`` (CHW)."""
    if isinstance(layer, Conv2d):
        return conv_jacobian_t(layer, x_in.shape, prune_zeros=prune_zeros)
    if isinstance(layer, ReLU):
        return relu_jacobian_t(x_in)
    if isinstance(layer, Sigmoid):  # σ′ = σ·(1 − σ)
        y = forward(layer, x_in)
        return diagonal_jacobian_t(y * (1.0 - y))
    if isinstance(layer, Tanh):  # tanh′ = 1 − tanh²
        return diagonal_jacobian_t(1.0 - np.tanh(x_in) ** 2)
    if isinstance(layer, MaxPool2d):
        return maxpool_jacobian_t(layer, x_in)
    if isinstance(layer, Linear):
        return linear_jacobian_t(layer, prune_zeros=prune_zeros)
    raise TypeError(f"not a layer: {layer!r}")


def scan_input(layers, activations, grad_output: np.ndarray, *, prune_zeros: bool = True) -> list:
    """Equation 5's array ``[∇x_n l, J_nᵀ, J_{n−1}ᵀ, …, J_1ᵀ]`` (gradient as a flat vector)."""
    grad = chain_gradient(layers, activations, grad_output)
    jacobians = [transposed_jacobian(layer, activations[i], prune_zeros=prune_zeros)
                 for i, layer in enumerate(layers)]
    return [grad, *reversed(jacobians)]


def rnn_scan_input(cell: RNNCell, hs: np.ndarray, grad_last: np.ndarray) -> list:
    """``[∇h_{T−1}, J_{T−1}ᵀ, …, J_0ᵀ]`` with J_t = ∂h_t/∂h_{t−1} (h_{−1} is the initial state); shapes as
    :func:`~archsim.bppsa.plain_bp.rnn_states` checks them."""
    hs, grad_last = rnn_states(cell, hs, grad_last)
    return [grad_last, *(rnn_jacobian_t(cell, hs[t]) for t in range(len(hs) - 1, -1, -1))]
