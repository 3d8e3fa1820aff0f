"""The pieces every op list is built of (Megatron's :mod:`~archsim.training.layer_ops`, the mixture of experts'
:mod:`~archsim.training.moe_ops`, the eager and Hugging Face lists): a collective a GPU takes part in, a model
piece's :class:`Work`, a matmul's three training ops and a memory-bound kernel's."""

from __future__ import annotations

from dataclasses import dataclass

from archsim.lowering import Gemm, TrainingOp


@dataclass(frozen=True)
class Collective:
    """One collective a GPU takes part in: ``kind`` all-reduce | all-gather | reduce-scatter | all-to-all | p2p,
    over ``group`` (tp, dp, pp, embedding; ep: a mixture of experts' dispatch), of ``bytes`` per GPU (the full buffer), in ``phase`` F or B.
    ``under``: the ``layer`` names of the backward δ ops it is issued asynchronously under (their
    GPU seconds hide it: :func:`archsim.training.iteration.exposed_collective_seconds`); empty: it runs
    in series with the compute."""

    name: str
    kind: str
    group: str
    bytes: float
    phase: str
    under: tuple[str, ...] = ()


@dataclass(frozen=True)
class Work:
    """Ops and collectives of one piece of the model for one micro-batch: forward and backward."""

    forward: tuple[TrainingOp, ...]
    backward: tuple[TrainingOp, ...]
    forward_collectives: tuple[Collective, ...] = ()
    backward_collectives: tuple[Collective, ...] = ()


def gemm_ops(name: str, m: int, k: int, n: int, count: int = 1, *, weights: bool = True) -> tuple[TrainingOp, ...]:
    """A matmul's three training ops, F (m×k · k×n), D and G (``weights`` False: B is an activation, so its
    gradient is δ work, ``.dB``), ``count`` alike, each ``out_bytes`` at 2 bytes an element: one definition for
    Megatron's, the eager and the Hugging Face op lists (:mod:`~archsim.training.eager_ops`,
    :mod:`~archsim.training.hf_ops`), so a matmul is costed alike in each."""
    f = TrainingOp(name, "F", (Gemm(m, k, n, count),), out_bytes=2 * m * n * count)
    d = TrainingOp(name, "D", (Gemm(m, n, k, count),), out_bytes=2 * m * k * count)
    if weights:
        g = TrainingOp(name, "G", (Gemm(k, m, n, count),), out_bytes=2 * k * n * count)
    else:  # activation × activation: ∂B is δ work too
        g = TrainingOp(name + ".dB", "D", (Gemm(k, m, n, count),), out_bytes=2 * k * n * count)
    return f, d, g


def vector_op(name: str, kind: str, elements: float) -> TrainingOp:
    """An elementwise kernel of op kind ``kind`` moving ``elements`` elements (rounded to a whole count), on no
    kernel model: the embedding and loss ops here and in :mod:`~archsim.training.eager_ops` are built alike."""
    return TrainingOp(name, kind, (), vector_elements=int(round(elements)))


def memory_op(name: str, forward: float, backward: float,
              kernel: tuple[str, int, int] | tuple[()] = ()) -> tuple[TrainingOp, TrainingOp]:
    """A memory-bound op each way; ``kernel``: its softmax or layer-norm kernel (:attr:`~archsim.lowering.TrainingOp.kernel`)."""
    return (TrainingOp(name, "F", (), vector_elements=int(round(forward)), kernel=kernel),
            TrainingOp(name, "D", (), vector_elements=int(round(backward)), kernel=kernel))


__all__ = ["Collective", "Work", "gemm_ops", "memory_op", "vector_op"]
