"""Zero-bubble orders' M_W / M_B of a mixture-of-experts layer at ``--etp`` ≠ TP: M_B is the layer's activations
as the memory counts them at that ETP, by hand count of the experts' rows (W's inputs, M_W, left as they were)."""

from __future__ import annotations

import pytest

from archsim.training.memory import stage_terms
from archsim.training.parallel import Parallelism
from archsim.training.pipeline_memory import layer_held_figures
from archsim.workload.transformer import TransformerConfig

H, F, E, K, S = 64, 128, 4, 2, 32
MOE = TransformerConfig("small", "llama", 2, H, 4, 256, S, F, 2, False, experts=E, experts_per_token=K,
                        expert_ffn=F)


def _par(etp: int | None) -> Parallelism:
    return Parallelism(2, 2, 2, 8, 1, "none", True, schedule="zb-h1", ep=2, etp=etp)


def test_m_b_at_etp_1_holds_the_experts_rows_a_rank_takes():
    # TP 2 under SP: a token's k rows, each kept as the fc1 input (2·h) and SwiGLU's gate, up and product
    # (2·3·f/ETP). At ETP = TP = 2 a rank takes all T·k rows at f/2: k·(2h + 3f) = 1024 bytes a token; at ETP 1
    # half of them at f: k·(2h + 6f)/2 = 896. 128 bytes a token less, over s·b = 32 tokens
    at_tp, at_1 = layer_held_figures(MOE, _par(None)), layer_held_figures(MOE, _par(1))
    assert at_tp is not None and at_1 is not None
    assert K * (2 * H + 3 * F) - K * (2 * H + 6 * F) / 2 == 128
    assert at_1[1] == pytest.approx(at_tp[1] - 128 * S, rel=1e-12)
    assert at_1[0] == at_tp[0] and at_1[3] == at_tp[3]  # M_W and the embedding mask: as at ETP = TP
    assert at_1[2] == pytest.approx(at_1[0] / at_1[1], rel=1e-12)


@pytest.mark.parametrize("etp", [None, 1])
def test_m_b_is_the_layer_the_activations_keep(etp):
    # the share W holds is of the M_B the stage's activations count per layer and micro-batch (memory.stage_terms)
    figures = layer_held_figures(MOE, _par(etp))
    assert figures is not None
    assert figures[1] == pytest.approx(stage_terms(MOE, _par(etp), False, False, working=False).kept, rel=1e-12)
