"""Training on a SCALE-Sim sparse layer: which of F, δ and G a weight-sparsity pattern speeds up.

A layer's three GEMMs (archsim's lowering, K = window words, N = filters, M = ofmap pixels × batch):
F out[M×N] = A[M×K]·W[K×N]; δ dA = dout·Wᵀ; G dW[K×N] = Aᵀ[K×M]·dout[M×N].

* **F** runs as SCALE-Sim runs it (:func:`~archsim.array.sparsity.sparse_layer_cost`): the N:M
  pattern runs down K, F's reduction dimension, so the array streams only the kept rows.
* **δ** uses Wᵀ, whose rows are the N filters: the N:M pattern, which runs down K (taps × input
  channels, channel fastest), no longer runs along the reduction, so nothing is compressed there.
  What it does give: an output that only pruned weights feed is zero and is not computed
  (``delta="transposed"``). For an fc layer (δ = dout·Wᵀ, M×N×K) that is each of the K columns whose
  weight row is pruned in every filter (layer-wise N:M: K − K'); for a conv, which archsim lowers
  as the transposed convolution (pixels × taps·N × C), each input channel all of whose taps are
  pruned in every filter — with layer-wise N:M that happens only when M divides into the channel
  count's pattern (e.g. C a multiple of M: C·(M − N)/M channels), so a conv's δ is often not sped
  up at all. ``delta="dense"`` computes every output.
* **G** produces every weight's gradient, a dense K×N dW, pruned positions included
  (``gradient="dense"``, K×M×N). ``gradient="masked"`` computes only the rows of dW that hold a
  kept weight in some filter — the pruned weights' gradients are masked to zero anyway when the
  mask is re-applied after the update, so only masked training may skip them.

Only the ws/os/is GEMM costs of :mod:`archsim.array.analytic` are used for δ and G: SCALE-Sim has no
backward pass, so these are archsim's reading of the pattern, not SCALE-Sim's numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from archsim.array.analytic import gemm_cycles
from archsim.array.sparsity import SparsityConfig, column_ratios, kept_rows
from archsim.choices.devices import DELTA_OPTIONS, GRADIENT_OPTIONS
from archsim.errors import InputError
from archsim.lowering import Gemm, LoweredLayer


@dataclass(frozen=True)
class SparseTraining:
    """How δ and G treat the weight pattern (named options; see the module docstring)."""

    delta: str = "transposed"
    gradient: str = "dense"

    def __post_init__(self) -> None:
        if self.delta not in DELTA_OPTIONS:
            raise InputError(f"unknown delta option {self.delta!r}; choose {', '.join(DELTA_OPTIONS)}", field="delta")
        if self.gradient not in GRADIENT_OPTIONS:
            raise InputError(f"unknown gradient option {self.gradient!r}; choose {', '.join(GRADIENT_OPTIONS)}",
                             field="gradient")


def weight_mask(k: int, filters: int, ratio: tuple[int, int], sparsity: SparsityConfig) -> np.ndarray:
    """SCALE-Sim's K×N keep pattern (``operand_matrix.sparse_filter_array``) as booleans: layer-wise,
    row j kept iff j mod M < N; row-wise, row j of filter f kept iff j mod B < n_f. K·N booleans: for
    checks and small layers (the costs use the closed forms below)."""
    rows = np.arange(k)[:, None]
    if not sparsity.optimized_mapping:
        return np.broadcast_to(rows % ratio[1] < ratio[0], (k, filters))
    return rows % sparsity.block_size < column_ratios(filters, sparsity.block_size, sparsity.seed)[None, :]


def pattern_period(filters: int, ratio: tuple[int, int], sparsity: SparsityConfig) -> tuple[int, int]:
    """(n, m): a row j of the K×N weights is kept in some filter iff j mod m < n — layer-wise the
    ratio itself, row-wise (max over filters of n_f, B)."""
    if not sparsity.optimized_mapping:
        return ratio
    return int(np.max(column_ratios(filters, sparsity.block_size, sparsity.seed))), sparsity.block_size


def live_channels(taps: int, channels: int, n: int, m: int) -> int:
    """Input channels c < C with a kept weight on some tap t, i.e. (t·C + c) mod m < n for some t < taps
    (SCALE-Sim's K rows run channel fastest). Each tap keeps a cyclic run of n residues of c mod m,
    starting at −t·C mod m; the runs repeat after m/gcd(C, m) taps. O(m) time."""
    distinct = min(taps, m // math.gcd(channels, m))
    starts = (-np.arange(distinct, dtype=np.int64) * (channels % m)) % m
    cover = np.zeros(m + 1, dtype=np.int64)
    ends = starts + n
    np.add.at(cover, starts, 1)
    np.add.at(cover, np.minimum(ends, m), -1)
    wrapped = ends > m
    np.add.at(cover, np.zeros(int(wrapped.sum()), dtype=np.int64), 1)
    np.add.at(cover, ends[wrapped] - m, -1)
    live = np.cumsum(cover[:m]) > 0
    full, rest = divmod(channels, m)
    return int(full * live.sum() + live[:rest].sum())


def backward_gemms(lowered: LoweredLayer, ratio: tuple[int, int], sparsity: SparsityConfig,
                   options: SparseTraining) -> dict[str, tuple[Gemm, ...]]:
    """The δ ("D") and G GEMMs of archsim's lowering of a conv/fc layer, shrunk as ``options`` say.

    G = (K, M, N): masked, only the K rows holding a kept weight. δ: archsim lowers a conv's δ as the
    transposed convolution, GEMMs (pixels, taps·N, C) whose output columns are input channels — a
    channel is skipped when every tap of every filter on it is pruned; an fc layer's δ (M, N, K) skips
    the K columns whose weight row is pruned in every filter.
    """
    (forward,) = lowered.required_op("F").gemms
    n, m = pattern_period(forward.n, ratio, sparsity)
    live_rows = kept_rows(forward.k, n, m)
    out: dict[str, tuple[Gemm, ...]] = {}
    for op in lowered.ops:
        if op.kind == "G":
            rows = live_rows if options.gradient == "masked" else None
            out["G"] = tuple(replace(g, m=rows) if rows is not None else g for g in op.gemms)
        elif op.kind == "D":
            gemms = []
            for g in op.gemms:
                if options.delta == "dense":
                    gemms.append(g)
                elif lowered.layer.kind == "conv":  # columns are the C input channels of one group
                    live = live_channels(forward.k // g.n, g.n, n, m)
                    gemms.append(replace(g, n=max(live, 1)))
                else:
                    gemms.append(replace(g, n=max(live_rows, 1)))
            out["D"] = tuple(gemms)
    return out


def gemms_cycles(gemms: tuple[Gemm, ...], rows: int, cols: int, dataflow: str) -> int:
    """Compute cycles of GEMMs run one after another (each ``count`` times)."""
    return sum(gemm_cycles(g.m, g.k, g.n, rows, cols, dataflow) * g.count for g in gemms)
