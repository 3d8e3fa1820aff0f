"""A rank's peak memory reads its parameters and states once and its activations at the two in-flight counts.

:func:`peak_rank_memory` is, by its definition, the larger (by activations, the first on a tie) of the rank's
:func:`rank_memory` at the walk's ``peak`` without the working set and at ``back`` with it; since 2026-12-02 it
computes the parameters and states once and the rerun's activations alone (:func:`stage_activations`), and the
per-layer M_W, M_B and embedding mask of :func:`rank_held_fractions` and :func:`rank_held_gains` once per shape.
Brute force on a grid of tiny ranks checks both against those definitions, float for float (a planned search's
output must not move by a byte). Both pass on the code before that change: they guard the hoisting.
"""

import itertools

import pytest

from archsim.training.held_memory import rank_gains, rank_shares, weight_gradient_bytes
from archsim.training.layer_activations import layer_activation_bytes
from archsim.training.memory import embedding_mask_bytes
from archsim.training.parallel import Parallelism
from archsim.training.pipeline_memory import peak_rank_memory, rank_held_fractions, rank_held_gains, rank_memory
from archsim.workload.transformer import TransformerConfig

TINY = TransformerConfig("tiny", "gpt", 8, 8, 2, 128, 4, 32, 2, True, 4)  # dropout on: embedding masks count
RANKS = [[0, 3], [1, 2]]  # PP 2, two chunks a rank: rank 0 holds the first stage, rank 1 the last


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize("attention", ["standard", "flash"])
@pytest.mark.parametrize("hf", [False, True])
def test_peak_is_the_larger_rank_memory(recompute, attention, hf):
    """Every split of 0–3 layers over a rank's two chunks, peaks and backs of 0.5–5 chunk-forwards, with and
    without FSDP's unit, fp16 and fp32 activations: the same StageMemory as the two rank_memory figures' larger."""
    par = Parallelism(1, 2, 1, 8, 1, recompute, False, 2, "interleaved-1f1b", attention=attention)
    for stages, n0, n1, peak, back, unit, scale in itertools.product(RANKS, range(4), range(4), (0.5, 1, 3, 5),
                                                                     (0.5, 2, 5), (0.0, 2.0), (1.0, 2.0)):
        layers = [n0, n1]
        want = max((rank_memory(TINY, par, layers, stages, max(peak / 2, 1.0), True, 18.0, unit, scale, hf,
                                working=False),
                    rank_memory(TINY, par, layers, stages, max(back / 2, 1.0), True, 18.0, unit, scale, hf)),
                   key=lambda m: m.activations)
        assert peak_rank_memory(TINY, par, layers, stages, peak, back, True, 18.0, unit, scale, hf) == want


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize("micro_batch, tp, sp", [(1, 1, False), (2, 2, True), (4, 2, False)])
def test_held_shares_and_gains_per_probe(recompute, micro_batch, tp, sp):
    """The ranks' M_W / M_B shares and gains equal those worked out from the layer's own figures each time."""
    par = Parallelism(tp, 2, 1, 8, micro_batch, recompute, sp, 2, "interleaved-zb", attention="standard")
    held = weight_gradient_bytes(TINY, micro_batch, tp, sp)
    kept = layer_activation_bytes(TINY, micro_batch, tp, recompute, sp, "standard")
    mask = embedding_mask_bytes(TINY, micro_batch, tp, sp)
    for counts in itertools.product(range(3), repeat=4):
        assert rank_held_fractions(TINY, par, counts, RANKS) == rank_shares(held / kept, kept, mask, counts, RANKS)
        assert rank_held_gains(TINY, par, counts, RANKS) == rank_gains(held, kept, [mask, 0.0], counts, RANKS)
