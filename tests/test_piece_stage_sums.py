"""What a model piece adds to its pipeline stage (archsim.training.piece_cost.PieceCost.stage_forward and
stage_backward_input): every collective the piece runs, TP, CP and EP alike, and its recompute, counted once in the
stage's F or I, for the layers and the embedding and head alike. Checked on hand-built pieces whose figures are
distinct powers of two, so that each sum is exact and a figure left out (or counted twice) shows."""

from __future__ import annotations

from archsim.training.cluster_file import single_node
from archsim.training.parallel import Parallelism
from archsim.training.piece_cost import PieceCost
from archsim.training.stages import stage_times
from archsim.workload.transformer import TransformerConfig

U = 2.0 ** -20  # seconds: a unit small enough for a stage time, each figure a power of two times it


def _piece(scale: float) -> PieceCost:
    """F parts 1, 2, 4, 8; I parts 16 … 256; W 512 (× ``scale`` × U)."""
    u = U * scale
    return PieceCost(forward=1 * u, backward_input=16 * u, backward_weight=512 * u, recompute=32 * u,
                     tp_forward=2 * u, tp_backward=64 * u, ops=(), cp_forward=4 * u, cp_backward=128 * u,
                     ep_forward=8 * u, ep_backward=256 * u)


def test_a_pieces_stage_forward_and_input_gradient_count_each_part_once():
    piece = _piece(1.0)
    assert piece.stage_forward == (1 + 2 + 4 + 8) * U  # forward, TP, CP, EP
    assert piece.stage_backward_input == (16 + 32 + 64 + 128 + 256) * U  # δ, recompute, TP, CP, EP


def test_each_stage_sums_its_pieces_every_collective_included():
    """PP 2 over a two-layer model: stage 0 is one layer and the embedding, stage 1 one layer and the head; the
    embedding's and head's figures 2¹⁰ and 2²⁰ × the layer's, so each piece's share of a sum is apart."""
    tiny = TransformerConfig("tiny", "gpt", layers=2, hidden=64, heads=4, vocab=128, seq=16, ffn=256, kv_heads=4,
                             tied_embeddings=True, positions=16)
    par = Parallelism(pp=2, global_batch=4, micro_batch=1)
    machine = single_node("a100-80gb", 2).machine(par)
    pieces = {"layer": _piece(1.0), "embedding": _piece(2.0 ** 10), "head": _piece(2.0 ** 20)}
    times = stage_times(tiny, par, machine, pieces)
    assert times.forward == (15 * U * (1 + 2 ** 10), 15 * U * (1 + 2 ** 20))
    assert times.backward_input == (496 * U * (1 + 2 ** 10), 496 * U * (1 + 2 ** 20))
    assert times.backward_weight == (512 * U * (1 + 2 ** 10), 512 * U * (1 + 2 ** 20))
