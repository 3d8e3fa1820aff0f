"""One model piece's per micro-batch seconds: what :mod:`archsim.training.iteration` prices and what the
pipeline, the all-to-all overlap (:mod:`archsim.training.moe_overlap`) and the stage times read."""

from __future__ import annotations

from dataclasses import dataclass

from archsim.lowering import Gemm


@dataclass(frozen=True)
class PieceCost:
    """Per micro-batch seconds of one model piece: forward, δ, weight-gradient compute, recompute, and
    TP collectives in the forward and the backward (the EP all-to-alls apart, ``ep_*``); ``ops``: (name, kind, seconds) rows, each op's GPU
    time (before the host-issue floor) and each TP collective's, kind F/D/G (ops) or F/B (collectives); ``gemms``: the
    GEMMs each of those rows runs, as the op list costs them on one GPU (a collective's row none), one entry per row of
    ``ops`` (empty: not known, e.g. a piece built by hand), which train's op rows state (:mod:`archsim.training.op_rows`)."""

    forward: float
    backward_input: float
    backward_weight: float
    recompute: float
    tp_forward: float
    tp_backward: float
    ops: tuple[tuple[str, str, float], ...]
    cp_forward: float = 0.0  # context parallelism's K/V exchange beyond the attention it overlaps (context_parallel.py)
    cp_backward: float = 0.0
    ep_forward: float = 0.0  # a mixture of experts' all-to-alls over its EP group (moe_ops.py), out of tp_*
    ep_backward: float = 0.0
    gemms: tuple[tuple[Gemm, ...], ...] = ()

    def __post_init__(self) -> None:
        if self.gemms and len(self.gemms) != len(self.ops):  # a row's shape read from another row's op
            raise ValueError(f"{len(self.gemms)} rows of GEMMs for {len(self.ops)} op rows")


__all__ = ["PieceCost"]
