"""Layer descriptions and their numpy forward passes, one sample at a time (BPPSA §2.1).

A network is a chain ``x_i = f_i(x_{i-1})`` (Eq. 1). Every activation is one sample's tensor in
**CHW** layout (channels, height, width), flattened in C order when it meets a Jacobian — the layout
of Table 1 (``c × h × w``). A batch is B independent chains (its Jacobian is block diagonal), so
the numerics here are per sample. A linear layer's output is shaped ``(out, 1, 1)`` so that any
layer may follow it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from archsim.errors import InputError

Shape = tuple[int, int, int]


@dataclass(frozen=True, eq=False)
class Conv2d:
    """Cross-correlation (PyTorch's conv2d, no bias): weight is (c_o, c_i, h_f, w_f)."""

    weight: np.ndarray
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class ReLU:
    """max(x, 0), elementwise."""


@dataclass(frozen=True)
class Sigmoid:
    """1 / (1 + e^−x), elementwise."""


@dataclass(frozen=True)
class Tanh:
    """tanh x, elementwise."""


Elementwise = ReLU | Sigmoid | Tanh
"""The elementwise operators: each keeps its input's shape, its Jacobian a diagonal."""


@dataclass(frozen=True)
class MaxPool2d:
    """Max over h_f × w_f windows; padding counts as −∞; ties go to the first maximum (row-major)."""

    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int] = (0, 0)


@dataclass(frozen=True, eq=False)
class Linear:
    """Fully connected, no bias: weight is (out, in) and ``in`` is the flattened CHW input."""

    weight: np.ndarray


Layer = Conv2d | ReLU | Sigmoid | Tanh | MaxPool2d | Linear


def _window_out(size: int, kernel: int, stride: int, pad: int, field: str) -> int:
    if kernel <= 0 or stride <= 0 or pad < 0:
        raise InputError(f"kernel and stride must be positive, padding non-negative "
                         f"(kernel {kernel}, stride {stride}, padding {pad})", field=field)
    if size + 2 * pad < kernel:
        raise InputError(f"window {kernel} larger than padded input {size + 2 * pad}", field=field)
    return (size + 2 * pad - kernel) // stride + 1


def output_shape(layer: Layer, shape: Shape) -> Shape:
    """CHW shape of ``layer``'s output for a CHW input ``shape``."""
    c, h, w = shape
    if isinstance(layer, Conv2d):
        c_o, c_i, h_f, w_f = layer.weight.shape
        if c_i != c:
            raise InputError(f"conv expects {c_i} input channels, got {c}", field="weight")
        return (c_o, _window_out(h, h_f, layer.stride[0], layer.padding[0], "kernel"),
                _window_out(w, w_f, layer.stride[1], layer.padding[1], "kernel"))
    if isinstance(layer, Elementwise):
        return shape
    if isinstance(layer, MaxPool2d):
        (h_f, w_f), (s_h, s_w), (p_h, p_w) = layer.kernel, layer.stride, layer.padding
        if 2 * p_h > h_f or 2 * p_w > w_f:  # PyTorch's rule: every window sees a real element
            raise InputError("padding must be at most half the window", field="padding")
        return (c, _window_out(h, h_f, s_h, p_h, "kernel"), _window_out(w, w_f, s_w, p_w, "kernel"))
    if isinstance(layer, Linear):
        if layer.weight.shape[1] != c * h * w:
            raise InputError(f"linear expects {layer.weight.shape[1]} inputs, got {c * h * w}", field="weight")
        return (layer.weight.shape[0], 1, 1)
    raise TypeError(f"not a layer: {layer!r}")


def _windows(xp: np.ndarray, kh: int, kw: int, stride: tuple[int, int], out_hw: tuple[int, int]) -> np.ndarray:
    """The padded input seen by kernel offset (kh, kw) at every output position: (C, h_o, w_o)."""
    (s_h, s_w), (h_o, w_o) = stride, out_hw
    return xp[:, kh: kh + s_h * (h_o - 1) + 1: s_h, kw: kw + s_w * (w_o - 1) + 1: s_w]


def forward(layer: Layer, x: np.ndarray) -> np.ndarray:
    """One layer's output for one CHW sample ``x``."""
    out_shape = output_shape(layer, x.shape)
    if isinstance(layer, Conv2d):
        (p_h, p_w), (_, _, h_f, w_f) = layer.padding, layer.weight.shape
        xp = np.pad(x, ((0, 0), (p_h, p_h), (p_w, p_w)))
        out = np.zeros(out_shape)
        for kh in range(h_f):
            for kw in range(w_f):
                patch = _windows(xp, kh, kw, layer.stride, out_shape[1:])
                out += np.einsum("oc,chw->ohw", layer.weight[:, :, kh, kw], patch)
        return out
    if isinstance(layer, ReLU):
        return np.maximum(x, 0.0)
    if isinstance(layer, Sigmoid):
        return 0.5 * (1.0 + np.tanh(0.5 * x))  # σ(x) exactly, with no overflow of e^−x for a large negative x
    if isinstance(layer, Tanh):
        return np.tanh(x)
    if isinstance(layer, MaxPool2d):
        (p_h, p_w), (h_f, w_f) = layer.padding, layer.kernel
        xp = np.pad(x, ((0, 0), (p_h, p_h), (p_w, p_w)), constant_values=-np.inf)
        stack = [_windows(xp, kh, kw, layer.stride, out_shape[1:]) for kh in range(h_f) for kw in range(w_f)]
        return np.max(np.stack(stack), axis=0)
    return (layer.weight @ x.reshape(-1)).reshape(out_shape)


def forward_chain(layers: tuple[Layer, ...] | list[Layer], x0: np.ndarray) -> list[np.ndarray]:
    """All activations ``[x_0, x_1, …, x_n]`` of the chain (Eq. 1); ``x0`` is one CHW sample (a 3-D array)."""
    activations = [np.asarray(x0, dtype=float)]
    if activations[0].ndim != 3:
        raise InputError(f"expected one sample as a channels × height × width array, got shape "
                         f"{activations[0].shape}; a vector of n features is x.reshape(n, 1, 1)", field="x0")
    for layer in layers:
        activations.append(forward(layer, activations[-1]))
    return activations


def chain_gradient(layers, activations, grad_output) -> np.ndarray:
    """``grad_output`` (∇x_n l) as a flat float vector, once ``activations`` are the chain's (:func:`forward_chain`'s
    n + 1, or the n layers' inputs) and the gradient has x_n's size; anything else refused in one line (numpy's
    matmul or an index error, otherwise, deep in the scan). Read by the scan's input and by the reference BP."""
    n, given = len(layers), len(activations)
    if n == 0 or given not in (n, n + 1):
        raise InputError(f"expected forward_chain's {n + 1} activations (or the {n} layers' inputs) for {n} layers, "
                         f"got {given}", field="activations")
    x_n = output_shape(layers[-1], np.shape(activations[n - 1]))
    grad = np.asarray(grad_output, dtype=float).reshape(-1)
    if grad.size != int(np.prod(x_n)):
        raise InputError(f"expected the gradient of the last layer's output, {int(np.prod(x_n))} values (shape "
                         f"{x_n}), got {grad.size}", field="grad_output")
    return grad
