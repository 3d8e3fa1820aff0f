"""``archsim train``'s op rows: one micro-batch's ops and collectives through a model piece, each with its seconds
and, for a GEMM, the shape it runs on one GPU; the keys every row carries in train's JSON, its CSV and
``archsim.train``'s result alike (docs/formats.md, "train").

A row's shape is the GEMM its op runs, out[m×n] = A[m×k]·B[k×n], ``count`` of them (a batched GEMM's batch, a grouped
GEMM's local experts; summed over the ops a row merges), as the op list costs it on one GPU — after TP, SP, CP and EP
have split the work (:class:`~archsim.lowering.Gemm`, :func:`~archsim.training.op_work.gemm_ops`). So for a linear
layer Y = X·W, X tokens × d_in: F is (m, n, k) = (tokens, d_out, d_in); D, δX = δY·Wᵀ, is (tokens, d_in, d_out); G,
δW = Xᵀ·δY, is (d_in, d_out, tokens), its reduction over the tokens. A row that runs no GEMM (a memory-bound kernel, a
collective, ``recompute``, an iteration step) has no shape (None: JSON's null, CSV's empty cell), and so has a fused
kernel whose GEMMs differ in shape (MLA's FlashAttention, its value heads narrower than its query and key heads),
which no one shape states. The ops of one name and kind are one row when they run the same shapes (their seconds and
counts summed); ops of other shapes keep rows of their own (context parallelism's attention steps: the diagonal's
causal blocks and the whole ones), so no row states a shape that only some of its seconds ran.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from archsim.lowering import Gemm

if TYPE_CHECKING:
    from archsim.training.piece_cost import PieceCost

SHAPE_KEYS = ("m", "n", "k", "count")  # a GEMM row's shape; None on every other row
ROW_KEYS = ("piece", "name", "op", "seconds", *SHAPE_KEYS)  # every row's keys, in this order


def op_row(piece: str, name: str, op: str, seconds: float, gemm: Gemm | None = None) -> dict:
    """One row of train's output with every key of :data:`ROW_KEYS`; ``gemm``: the shape the row runs (None: none)."""
    shape = (None,) * len(SHAPE_KEYS) if gemm is None else (gemm.m, gemm.n, gemm.k, gemm.count)
    return {"piece": piece, "name": name, "op": op, "seconds": seconds, **dict(zip(SHAPE_KEYS, shape, strict=True))}


def one_shape(gemms: Iterable[Gemm]) -> Gemm | None:
    """``gemms`` as one shape with their counts summed, or None: no GEMM, or GEMMs of several shapes."""
    gemms = tuple(gemms)
    shapes = {(g.m, g.k, g.n) for g in gemms}
    if len(shapes) != 1:
        return None
    (m, k, n), = shapes
    return Gemm(m, k, n, sum(g.count for g in gemms))


def piece_rows(piece_name: str, piece: PieceCost) -> list[dict]:
    """The rows of one piece's ops and collectives (``piece.ops``, a name and kind in the order it first runs),
    those of one name, kind and set of GEMM shapes merged; then its recompute (op B) where it has one."""
    seconds: dict[tuple, float] = {}
    ran: dict[tuple, list[Gemm]] = {}
    for (name, kind, t), gemms in zip(piece.ops, piece.gemms or ((),) * len(piece.ops), strict=True):
        key = (name, kind, frozenset((g.m, g.k, g.n) for g in gemms))
        seconds[key] = seconds.get(key, 0.0) + t
        ran.setdefault(key, []).extend(gemms)
    rows = [op_row(piece_name, key[0], key[1], t, one_shape(ran[key])) for key, t in seconds.items()]
    if piece.recompute:
        rows.append(op_row(piece_name, "recompute", "B", piece.recompute))
    return rows


__all__ = ["ROW_KEYS", "SHAPE_KEYS", "one_shape", "op_row", "piece_rows"]
