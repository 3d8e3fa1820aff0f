"""One model piece's per micro-batch seconds: what :mod:`archsim.training.iteration` prices and what the
pipeline, the all-to-all overlap (:mod:`archsim.training.moe_overlap`) and the stage times read."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from archsim.lowering import Gemm
from archsim.training.comm_sms import share_of
from archsim.training.compute_classes import ClassSeconds


@dataclass(frozen=True)
class PieceCost:
    """Per micro-batch seconds of one model piece: forward, δ, weight-gradient compute, recompute, and
    TP collectives in the forward and the backward (the EP all-to-alls apart, ``ep_*``); ``ops``: (name, kind, seconds) rows, each op's GPU
    time (before the host-issue floor) and each TP collective's, kind F/D/G (ops) or F/B (collectives); ``gemms``: the
    GEMMs each of those rows runs, as the op list costs them on one GPU (a collective's row none), one entry per row of
    ``ops`` (empty: not known, e.g. a piece built by hand), which train's op rows state (:mod:`archsim.training.op_rows`).
    ``host_forward``, ``host_backward``, ``host_recompute``: the seconds of ``forward``, ``backward_input`` and
    ``recompute`` that are the host's issue time beyond the GPU's work (0 where the pass is GPU-bound): already in those
    figures, kept apart so that the output can say how much of its compute rests on the host floor."""

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
    host_forward: float = 0.0  # of forward: the host floor's excess over its ops' GPU seconds (iteration.piece_cost)
    host_backward: float = 0.0  # of backward_input
    host_recompute: float = 0.0  # of recompute
    slowed: tuple[float, ...] = ()  # the first len(slowed) rows' (its ops') seconds beside a collective (comm_sms.py)
    # the GPU seconds of forward, backward_input, backward_weight and recompute by op class, host floor not in them
    # (compute_classes.py): what archsim train's compute_split_seconds sums
    classes: ClassSeconds = field(default_factory=ClassSeconds)
    recompute_communication: float = 0.0  # of recompute: the collectives (CP's exchange too) a full one runs again

    @property
    def stage_forward(self) -> float:
        """Seconds this piece adds to a stage's F per micro-batch: its forward and the TP, CP and EP collectives in it
        (:class:`~archsim.policies.stage_profile.StageProfile`'s ``forward``; its W is :attr:`backward_weight`)."""
        return self.forward + self.tp_forward + self.cp_forward + self.ep_forward

    @property
    def stage_backward_input(self) -> float:
        """Seconds this piece adds to a stage's I per micro-batch: δ, any recompute and the backward's TP, CP and EP
        collectives (:class:`~archsim.policies.stage_profile.StageProfile`'s ``backward_input``)."""
        return self.backward_input + self.recompute + self.tp_backward + self.cp_backward + self.ep_backward

    @property
    def host_bound(self) -> float:
        """Seconds of this piece's compute (forward, δ, weight gradients) that are host issue time beyond the GPU's."""
        return self.host_forward + self.host_backward

    def share(self, kinds: str, prefix: str | tuple[str, ...] = "") -> float:
        """The speed of this piece's ops of ``kinds`` (F, D, G), those named ``prefix``… if given, beside an
        overlapped collective, as a fraction of their own (1: none slowed, or no re-timing known)."""
        rows = [(t, s) for (name, kind, t), s in zip(self.ops, self.slowed) if kind in kinds and name.startswith(prefix)]
        return share_of(sum(t for t, _ in rows), sum(s for _, s in rows))

    @cached_property  # read per paired layer (moe_overlap.pair_hidden): computed once
    def forward_share(self) -> float:
        """The speed of the forward (its ops and its TP and CP collectives) beside an overlapped collective: its ops
        at :meth:`share`, its own collectives as they were (1: nothing slowed)."""
        whole = self.forward + self.tp_forward + self.cp_forward
        return share_of(whole, whole + self.forward * (1 / self.share("F") - 1))

    @cached_property
    def backward_share(self) -> float:
        """:attr:`forward_share` of the backward: δ and weight gradients and any recompute (as the backward's ops,
        :meth:`share` of D and G), beside its TP and CP collectives."""
        ops = self.backward_input + self.backward_weight + self.recompute
        whole = ops + self.tp_backward + self.cp_backward
        return share_of(whole, whole + ops * (1 / self.share("DG") - 1))

    def __post_init__(self) -> None:
        if self.gemms and len(self.gemms) != len(self.ops):  # a row's shape read from another row's op
            raise ValueError(f"{len(self.gemms)} rows of GEMMs for {len(self.ops)} op rows")


__all__ = ["PieceCost"]
