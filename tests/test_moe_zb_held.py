"""Zero-bubble orders' M_W / M_B of a mixture-of-experts layer: M_B is the layer's activations as the memory counts
them at the run's ETP, M_W the router's and the experts' weight GEMMs' inputs and output gradients, by hand count of
the experts' rows against a dense layer of the same attention."""

from __future__ import annotations

import pytest

from archsim.training.held_memory import weight_gradient_bytes
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
    assert at_1[3] == at_tp[3]  # the embedding mask: as at ETP = TP
    assert at_1[2] == pytest.approx(at_1[0] / at_1[1], rel=1e-12)


@pytest.mark.parametrize("etp", [None, 1])
def test_m_b_is_the_layer_the_activations_keep(etp):
    # the share W holds is of the M_B the stage's activations count per layer and micro-batch (memory.stage_terms)
    figures = layer_held_figures(MOE, _par(etp))
    assert figures is not None
    assert figures[1] == pytest.approx(stage_terms(MOE, _par(etp), False, False, working=False).kept, rel=1e-12)


DENSE = TransformerConfig("small", "llama", 2, H, 4, 256, S, F, 2, False)  # the same attention, one MLP of width F


@pytest.mark.parametrize(("etp", "mlp"), [
    # TP 2 under SP, per token of the micro-batch. The dense MLP's W reads fc1's input (2h/2 = 64, sequence-split),
    # fc1's output gradient (2·2F/2 = 256), fc2's input (2·F/2 = 128) and fc2's output gradient (2h = 128, whole):
    # 576. The mixture's: the router's input and logits' gradient (2·(h + E)/2 = 68) and k·ETP/2 rows a token, each
    # fc1's input 2h = 128, its output gradient 2·2F/ETP, fc2's input 2·F/ETP and its output gradient 2h = 128.
    (None, 68 + 2 * (128 + 256 + 128 + 128)),  # ETP = TP 2: k rows of 640 bytes
    (1, 68 + 1 * (128 + 512 + 256 + 128)),  # ETP 1: k/2 = 1 row at full width, 1024 bytes
])
def test_m_w_holds_the_router_and_the_experts_rows(etp, mlp):
    dense = weight_gradient_bytes(DENSE, 1, 2, True)
    figures = layer_held_figures(MOE, _par(etp))
    assert figures is not None
    assert figures[0] == pytest.approx(dense + (mlp - 576) * S, rel=1e-12)
    assert figures[2] == pytest.approx(figures[0] / figures[1], rel=1e-12)


def test_one_expert_is_the_dense_mlp_beside_the_router():
    # E = k = 1 at TP 1: the one expert takes every token as the dense MLP does (fc1's input 2h, fc2's output
    # gradient 2h, 6F of SwiGLU); the router adds its input (2h) and its one logit's gradient (2) a token
    one = TransformerConfig("small", "llama", 2, H, 4, 256, S, F, 2, False, experts=1, experts_per_token=1,
                            expert_ffn=F)
    assert weight_gradient_bytes(one, 3, 1, False) == pytest.approx(
        weight_gradient_bytes(DENSE, 3, 1, False) + 3 * S * (2 * H + 2), rel=1e-12)
