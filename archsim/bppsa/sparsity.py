"""Closed-form nonzero counts of the transposed Jacobians, and Table 1's sparsity expressions (§3.3).

Sparsity is the fraction of *guaranteed* zeros: ``1 − nnz / (rows·cols)`` with rows = input size
and cols = output size of the layer (one sample, CHW).

Derivations (V_h = Σ_{kh} #{oh : 0 ≤ oh·s_h − p_h + kh < h_i}, the (output row, kernel row) pairs that
land inside the input; V_w likewise):

* **Convolution** ``c_o × c_i × h_f × w_f``: input (c, ih, iw) feeds output (o, oh, ow) through
  exactly one kernel tap (kh = ih − oh·s + p), present iff it lands in bounds, so
  ``nnz = c_i·c_o·V_h·V_w``. Away from the borders every output row sees h_f input rows,
  V_h ≈ h_f·h_o, hence sparsity ≈ ``1 − h_f·w_f·h_o·w_o / (h_i·w_i·h_o·w_o) = 1 − h_f w_f/(h_i w_i)``
  — Table 1's entry, marked as an approximation when h_i, w_i ≫ padding. (3×3, pad 1, stride 1:
  V_h = 3h_i − 2 exactly, the 94 = 3·32 − 2 behind Table 1's 0.99157 for VGG-11's first conv.)
* **ReLU** on c×h×w: only the diagonal can be nonzero, ``nnz = chw``, sparsity ``1 − 1/(chw)`` exactly.
* **Max-pooling** h_f × w_f: output (ch, oh, ow) can depend only on the in-bounds elements of its own
  window in its own channel, ``nnz = c·V_h·V_w``. With stride = window, no padding and h_i = h_f·h_o,
  V_h·V_w = h_i·w_i, so sparsity = ``1 − c h_i w_i/(c h_i w_i · c h_o w_o) = 1 − h_f w_f/(c_i h_i w_i)``,
  Table 1's entry exactly.
* **Linear** out × in: every weight links one input to one output, ``nnz = #nonzero weights`` (in·out dense).
"""

from __future__ import annotations


def _pairs(in_size: int, out_size: int, kernel: int, stride: int, pad: int) -> int:
    """V = Σ_k #{o < out_size : 0 ≤ o·stride − pad + k < in_size}."""
    return sum(1 for k in range(kernel) for o in range(out_size) if 0 <= o * stride - pad + k < in_size)


def conv_nnz(c_i: int, c_o: int, in_hw: tuple[int, int], out_hw: tuple[int, int], kernel: tuple[int, int],
             stride: tuple[int, int], padding: tuple[int, int]) -> int:
    """nnz of a dense-weight convolution's Jᵀ: c_i·c_o·V_h·V_w."""
    return (c_i * c_o * _pairs(in_hw[0], out_hw[0], kernel[0], stride[0], padding[0])
            * _pairs(in_hw[1], out_hw[1], kernel[1], stride[1], padding[1]))


def relu_nnz(c: int, h: int, w: int) -> int:
    """nnz of ReLU's Jᵀ: the diagonal, chw."""
    return c * h * w


def maxpool_nnz(c: int, in_hw: tuple[int, int], out_hw: tuple[int, int], kernel: tuple[int, int],
                stride: tuple[int, int], padding: tuple[int, int]) -> int:
    """nnz of max-pooling's Jᵀ pattern: c·V_h·V_w in-bounds window elements."""
    return (c * _pairs(in_hw[0], out_hw[0], kernel[0], stride[0], padding[0])
            * _pairs(in_hw[1], out_hw[1], kernel[1], stride[1], padding[1]))


def linear_nnz(n_in: int, n_out: int) -> int:
    """nnz of a dense linear layer's Jᵀ = Wᵀ."""
    return n_in * n_out


def sparsity(nnz: int, rows: int, cols: int) -> float:
    """Fraction of guaranteed zeros in a rows × cols matrix."""
    return 1.0 - nnz / (rows * cols)


def table1_conv(h_f: int, w_f: int, h_i: int, w_i: int) -> float:
    """Table 1, convolution: 1 − h_f w_f / (h_i w_i) (approximate: ignores the border)."""
    return 1.0 - (h_f * w_f) / (h_i * w_i)


def table1_relu(c: int, h: int, w: int) -> float:
    """Table 1, ReLU: 1 − 1/(chw)."""
    return 1.0 - 1.0 / (c * h * w)


def table1_maxpool(h_f: int, w_f: int, c_i: int, h_i: int, w_i: int) -> float:
    """Table 1, max-pooling: 1 − h_f w_f / (c_i h_i w_i)."""
    return 1.0 - (h_f * w_f) / (c_i * h_i * w_i)
