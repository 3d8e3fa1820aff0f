"""A split order's walk read off its step fronts, and the per-layer byte counts kept per shape, against brute force
and hand counts.

The planner sizes each rank many times over: :func:`~archsim.training.held_memory.published_walk_peaks` reads the
walk's few undominated (M_B, M_W-only) pairs instead of every step, and the per-layer figures are kept per
(model, shapes). Both must give the very floats the step-by-step walk and a fresh count give."""

import pytest

from archsim.policies.stage_orders import published_order
from archsim.sim.builder import KINDS
from archsim.training.held_memory import order_walk_peaks, published_walk_peaks, step_front
from archsim.training.layer_activations import layer_activation_bytes, layer_mask_bytes
from archsim.workload.transformer import TransformerConfig

# a tiny GPT (h 8, 2 heads, s 4, ffn 32): s·b·h = 32 at micro-batch 1
TINY = TransformerConfig("tiny", "gpt", 2, 8, 2, 128, 4, 32, 2, True, 4, hidden_dropout=0.0, attention_dropout=0.0)
DROPPING = TransformerConfig("tiny", "gpt", 2, 8, 2, 128, 4, 32, 2, True, 4, hidden_dropout=0.1, attention_dropout=0.0)


def _walked(actions: list[str], held: float, gain: float) -> tuple[float, float]:
    """Brute force, action by action: F adds a micro-batch's M_B, I trades it for M_W (``held`` of it), W frees
    that, B frees M_B; the most held between actions, and the most held as an I (plus ``gain``) or a B starts."""
    full = partial = 0
    peak = back = 0.0
    for kind in actions:
        if kind == "I":
            back = max(back, full + held * partial + gain)
        elif kind == "B":
            back = max(back, full + held * partial)
        full += {"F": 1, "I": -1, "B": -1}.get(kind, 0)
        partial += {"I": 1, "W": -1}.get(kind, 0)
        peak = max(peak, full + held * partial)
    return peak, back


@pytest.mark.parametrize("schedule, v", [("zb-h1", 1), ("zb-h2", 1), ("interleaved-zb", 2), ("zb-v", 2),
                                         ("dualpipev", 2)])
@pytest.mark.parametrize("p", [2, 3, 4])
def test_fronts_give_every_step_walked(schedule, p, v):
    """Every rank of the published order at m = 2p and 3p (the search's reading, min(m, 3p)), M_W below M_B and
    above it (16 M_B: full recompute at t = 1), with and without a working-set gain: the same floats, == not ≈."""
    for m in (2 * p, 3 * p):
        order = published_order(schedule, p, m, v)
        c, bounds = order.columns, order.columns.bounds.tolist()
        ranks = [[KINDS[k] for k in c.kind[bounds[r]:bounds[r + 1]]] for r in range(p)]
        for held in (0.0, 1 / 3, 0.75, 1.0, 16.0):
            for gain in (0.0, 0.4, 3.0):
                walked = [_walked(actions, held, gain) for actions in ranks]
                assert published_walk_peaks(schedule, p, m, v, [held] * p, [gain] * p) == walked, (m, held, gain)
                assert order_walk_peaks(order, [held] * p, [gain] * p) == walked, (m, held, gain)


def test_step_front_by_hand():
    """Steps (M_B, M_W-only) = (1, 0), (2, 0), (1, 1), (2, 1), (0, 2), (1, 1): (2, 1) holds at least as much of
    both as every step but (0, 2), which holds the most M_W alone; the rest never peak for any M_W / M_B ≥ 0."""
    import numpy as np

    assert step_front(np.array([1, 2, 1, 2, 0, 1]), np.array([0, 0, 1, 1, 2, 1])) == ((2, 1), (0, 2))
    assert step_front(np.array([], dtype=int), np.array([], dtype=int)) == ()


def test_kept_layer_bytes_tell_models_apart():
    """Two models alike but for hidden dropout, asked in turn: s·b·h = 32, selective recompute keeps
    8·s·b·h = 256 unsplit and 24·h = 192 bytes a token of the split tensors (768), 1024 bytes; the dropping one
    adds its two residual masks, 2·s·b·h = 64 (1088, 64 of them masks). A key that missed the dropout would
    hand the second the first's figure."""
    for _ in range(2):
        assert layer_activation_bytes(TINY, 1, 1, "selective", False) == 1024
        assert layer_activation_bytes(DROPPING, 1, 1, "selective", False) == 1088
        assert layer_mask_bytes(TINY, 1, 1, "selective", False) == 0
        assert layer_mask_bytes(DROPPING, 1, 1, "selective", False) == 64
