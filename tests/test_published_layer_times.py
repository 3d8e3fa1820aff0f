"""One transformer layer's time on A100s against a published measurement: Korthikanti et al. 2022,
Table 4 (the 22B model of their Table 3: 64 heads, hidden 6,144, sequence 2,048, TP 8, micro-batch 4;
one layer's forward and backward, ms, on Selene's A100 80GB). Nothing in archsim is fitted on it: the
kernel constants come from vTrain's one-node runs of hidden 1,024–2,048 (archsim/training/fitted.py), so
this checks them at three to six times that width, where GPT-3-class runs live."""

from __future__ import annotations

import pytest

from archsim.training.cluster_file import single_node
from archsim.training.iteration import model_pieces
from archsim.training.parallel import Parallelism
from archsim.workload.transformer import TransformerConfig

GPT_22B = TransformerConfig("gpt-22b", "gpt", layers=48, hidden=6144, heads=64, vocab=51200, seq=2048, ffn=4 * 6144,
                            kv_heads=64, tied_embeddings=True, positions=2048)
TABLE_4 = [  # (row, recompute, sequence parallel, forward ms, backward ms)
    ("baseline no recompute", "none", False, 7.7, 11.9),
    ("sequence parallelism", "none", True, 7.2, 11.8),
    ("baseline with recompute", "full", False, 7.7, 19.5),
    ("selective recompute", "selective", False, 7.7, 13.2),
    ("selective + sequence", "selective", True, 7.2, 13.1),
]


@pytest.mark.parametrize(("row", "recompute", "sp", "forward_ms", "backward_ms"), TABLE_4, ids=[r[0] for r in TABLE_4])
def test_one_layer_of_the_22b_model_within_8_percent_of_table_4(row, recompute, sp, forward_ms, backward_ms):
    """Forward: the layer's ops and its TP collectives; backward: δ and weight GEMMs, the recompute,
    the backward collectives. archsim is within 0.3% forward and 2–3% slow backward today, 1–1.5% fast with
    sequence parallelism, whose column-parallel inputs' backward all-gathers (0.46 ms each on this NVLink)
    are hidden under their δ GEMMs, as Megatron runs them (docs/training.md). 8% leaves room for the kernel
    model's refinements without letting a change that breaks wide layers pass."""
    par = Parallelism(8, 1, 1, 4, 4, recompute, sp, attention="standard")
    layer = model_pieces(GPT_22B, par, single_node("a100-80gb", 8).machine(par))["layer"]
    forward = (layer.forward + layer.tp_forward) * 1e3
    backward = (layer.backward_input + layer.backward_weight + layer.recompute + layer.tp_backward) * 1e3
    assert forward == pytest.approx(forward_ms, rel=0.08)
    assert backward == pytest.approx(backward_ms, rel=0.08)


def test_recompute_costs_what_table_4_says_it_costs():
    """The backward's growth from no recompute to full (7.6 ms measured: the forward again, with its
    all-reduces) and to selective (1.3 ms: the attention core) — differences, so a constant error in
    the backward's GEMMs cancels."""
    times = {}
    for recompute in ("none", "full", "selective"):
        par = Parallelism(8, 1, 1, 4, 4, recompute, False, attention="standard")
        layer = model_pieces(GPT_22B, par, single_node("a100-80gb", 8).machine(par))["layer"]
        times[recompute] = (layer.backward_input + layer.backward_weight + layer.recompute + layer.tp_backward) * 1e3
    assert times["full"] - times["none"] == pytest.approx(19.5 - 11.9, rel=0.08)
    assert times["selective"] - times["none"] == pytest.approx(13.2 - 11.9, rel=0.08)
