"""Sequence parallelism's second all-gather: each column-parallel GEMM re-gathers its input in the backward.

Megatron-LM (Megatron-Core 0.20.0, commit d98e8a6), ``megatron/core/tensor_parallel/layers.py``,
``LinearWithGradAccumulationAndAsyncCommunication``: with sequence parallelism the forward all-gathers the
rank's T/t tokens of the input into a shared buffer and saves only the local input (``save_for_backward(input,
weight)``); the backward all-gathers it again (async, under the δ GEMM) to compute the weight gradient, then
reduce-scatters the input gradient. A GPT layer has two column-parallel linears (QKV and the MLP's first;
a gated MLP's gate and up are one ``linear_fc1`` of twice the width, so still one input), the model one more
(the LM head: tests/test_embedding_head_collectives.py). Every gathered buffer is T·h fp16 elements, T = s·b tokens per micro-batch.

Expected per layer and micro-batch, with sequence parallelism (Korthikanti et al. 2022 §4.2.2 for the
conjugate pairs): forward 2 all-gathers (g before each column-parallel GEMM) and 2 reduce-scatters (ḡ after
each row-parallel one); backward 2 all-gathers (ḡ's conjugate, the row-parallel output gradients), 2 more
(the column-parallel inputs again) and 2 reduce-scatters (g's conjugate). Without it: only all-reduces.

Megatron issues each re-gather asynchronously and runs the same GEMM's δ (input-gradient) GEMM before waiting
on it (``handle = all_gather(..., async_op=True)``; ``grad_input = grad_output.matmul(weight)``;
``handle.wait()``), so the re-gather adds to the backward only max(0, t_all-gather − t_δ GEMM): the QKV GEMM's
δ for the attention's, the MLP's first GEMM's (a gated MLP's gate and up together) for the MLP's, the LM
head's for the head's. Every other TP collective is counted in series, as before.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from archsim.collectives import collective_seconds
from archsim.training.cluster_file import single_node
from archsim.training.iteration import machine_op_seconds, piece_cost
from archsim.training.layer_ops import SP_REGATHER, block_work, head_work
from archsim.training.parallel import Parallelism
from archsim.workload.transformer import TransformerConfig

TP, BATCH = 4, 2
GPT = TransformerConfig("gpt-s", "gpt", layers=2, hidden=64, heads=4, vocab=1000, seq=32, ffn=256, kv_heads=4,
                        tied_embeddings=True, positions=32)
LLAMA = TransformerConfig("llama-s", "llama", layers=2, hidden=64, heads=4, vocab=1000, seq=32, ffn=176, kv_heads=2,
                          tied_embeddings=False)
COLUMN_PARALLEL_INPUTS = 2  # QKV, the MLP's first linear


def _of(collectives, kind: str) -> list[float]:
    return [c.bytes for c in collectives if c.kind == kind]


@pytest.mark.parametrize("c", [GPT, LLAMA], ids=["gpt", "gated"])
def test_sequence_parallel_backward_gathers_each_column_parallel_input_again(c):
    activation = c.seq * BATCH * c.hidden * 2  # s·b·h fp16 elements
    work = block_work(c, BATCH, TP, sequence_parallel=True)
    assert _of(work.forward_collectives, "all-gather") == [activation] * COLUMN_PARALLEL_INPUTS
    # the row-parallel outputs' gradients (2), then each column-parallel input again for its weight gradient (2)
    assert _of(work.backward_collectives, "all-gather") == [activation] * (2 + COLUMN_PARALLEL_INPUTS)
    assert _of(work.backward_collectives, "reduce-scatter") == [activation] * COLUMN_PARALLEL_INPUTS


@pytest.mark.parametrize("c", [GPT, LLAMA], ids=["gpt", "gated"])
def test_without_sequence_parallelism_nothing_is_gathered(c):
    activation = c.seq * BATCH * c.hidden * 2
    work = block_work(c, BATCH, TP, sequence_parallel=False)
    assert _of(work.backward_collectives, "all-gather") == []
    assert _of(work.backward_collectives, "all-reduce") == [activation] * COLUMN_PARALLEL_INPUTS
    assert block_work(c, BATCH, 1, sequence_parallel=True).backward_collectives == ()  # one rank: no group



# each re-gather and the backward δ op(s) of the GEMM whose input it gathers
HIDDEN_UNDER = {("gpt", "layer"): {f"attn.{SP_REGATHER}": ("qkv",), f"mlp.{SP_REGATHER}": ("fc1",)},
                ("gated", "layer"): {f"attn.{SP_REGATHER}": ("qkv",), f"mlp.{SP_REGATHER}": ("gate", "up")},
                ("gpt", "head"): {f"lm_head.{SP_REGATHER}": ("lm_head",)},
                ("gated", "head"): {f"lm_head.{SP_REGATHER}": ("lm_head",)}}
PIECES = {"layer": block_work, "head": head_work}
MODELS = {"gpt": GPT, "gated": LLAMA}


def _machine(link_speedup: float, sp: bool):
    """An A100 server's machine for TP 4, no host floor, its TP link's bandwidth × ``link_speedup``
    (and, sped up, no latency): the one knob that decides whether the δ GEMM outlasts the re-gather."""
    par = Parallelism(TP, 1, 1, BATCH, BATCH, "none", sp, attention="standard")
    machine = single_node("a100-80gb", 8).machine(par)
    tp = machine.links.tp
    fast = replace(tp, bandwidth=tp.bandwidth * link_speedup,
                   **({"alpha_s": 0.0, "launch_s": 0.0} if link_speedup > 1 else {}))
    return par, replace(machine, links=replace(machine.links, tp=fast),
                        efficiency=replace(machine.efficiency, host_s=0.0))


def _priced(model: str, piece: str, link_speedup: float, sp: bool = True):
    """The piece's cost, and each backward collective's and each backward δ op's seconds by the code's
    own timing functions (collective by name; δ summed by layer)."""
    par, machine = _machine(link_speedup, sp)
    work = PIECES[piece](MODELS[model], BATCH, TP, sp)
    cost = piece_cost(work, par, machine, "none")
    link = machine.links.tp
    collectives = {c.name: float(collective_seconds(c.kind, c.bytes * machine.scale, TP, link))
                   for c in work.backward_collectives}
    deltas: dict[str, float] = {}
    for op, t in zip(work.backward, machine_op_seconds(list(work.backward), machine)):
        if op.kind == "D":
            deltas[op.layer] = deltas.get(op.layer, 0.0) + float(t)
    return work, cost, collectives, deltas


@pytest.mark.parametrize("piece", ["layer", "head"])
@pytest.mark.parametrize("model", ["gpt", "gated"])
def test_each_regather_names_the_delta_gemm_it_runs_under(model, piece):
    work = PIECES[piece](MODELS[model], BATCH, TP, True)
    assert {c.name: c.under for c in work.backward_collectives if c.under} == HIDDEN_UNDER[(model, piece)]
    assert all(not c.under for c in work.forward_collectives)


@pytest.mark.parametrize("piece", ["layer", "head"])
@pytest.mark.parametrize("model", ["gpt", "gated"])
def test_a_regather_shorter_than_its_delta_gemm_adds_nothing(model, piece):
    _, cost, collectives, deltas = _priced(model, piece, 1e6)
    under = HIDDEN_UNDER[(model, piece)]
    for name, ops in under.items():
        assert sum(deltas[op] for op in ops) > collectives[name] > 0  # the δ GEMM is the longer
    in_series = sum(t for name, t in collectives.items() if name not in under)
    assert in_series > 0
    assert cost.tp_backward == pytest.approx(in_series, rel=1e-12)
    assert cost.backward_input == pytest.approx(sum(deltas.values()), rel=1e-12)  # the δ ops keep their time


@pytest.mark.parametrize("piece", ["layer", "head"])
@pytest.mark.parametrize("model", ["gpt", "gated"])
def test_a_regather_longer_than_its_delta_gemm_adds_the_difference(model, piece):
    work, cost, collectives, deltas = _priced(model, piece, 1e-3)
    under = HIDDEN_UNDER[(model, piece)]
    exposed = 0.0
    for name, ops in under.items():
        hidden = sum(deltas[op] for op in ops)
        assert collectives[name] > hidden > 0  # the all-gather is the longer
        exposed += collectives[name] - hidden
    in_series = sum(t for name, t in collectives.items() if name not in under)
    assert cost.tp_backward == pytest.approx(in_series + exposed, rel=1e-12)
    # the rows name the same exposed time: the backward collectives' rows sum to the backward's TP time
    rows = cost.ops[-len(work.backward_collectives):]
    assert [kind for _, kind, _ in rows] == ["B"] * len(rows)
    assert sum(t for _, _, t in rows) == pytest.approx(cost.tp_backward, rel=1e-12)


@pytest.mark.parametrize("link_speedup", [1e6, 1e-3])
@pytest.mark.parametrize("piece", ["layer", "head"])
@pytest.mark.parametrize("model", ["gpt", "gated"])
def test_without_sequence_parallelism_every_backward_collective_is_in_series(model, piece, link_speedup):
    work, cost, collectives, _ = _priced(model, piece, link_speedup, sp=False)
    assert all(not c.under for c in work.backward_collectives)
    assert cost.tp_backward == pytest.approx(sum(collectives.values()), rel=1e-12)
