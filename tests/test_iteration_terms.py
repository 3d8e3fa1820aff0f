"""Each term of the training iteration (archsim/training/iteration.py) against a closed form counted by
hand on a tiny GPT, so that dropping any one term fails a test (the measured-runs test, at 10% mean and
30% max, does not notice one TP all-reduce per layer going missing).

The GPU's and the network's cost functions are replaced by trivial ones, each with its own rate, so
that every term's seconds are a hand-countable quantity over a rate: a GEMM costs its FLOPs (2·m·k·n)
over R, a collective its bytes over a rate per kind (zero on a group of one), the optimizer's memory
pass its bytes over M. A test switches on only the rate of the term it checks (the others are free) and
compares the iteration with the count below, derived from the model's shapes, not from archsim:

tiny GPT: L = 2 layers, h = 64, a = 4 heads, FFN f = 4h, s = 32 tokens, vocab 1000 (Megatron pads it to a
multiple of 128·t: 1024), micro-batch b = 1, tied embeddings, learned positions. T = b·s tokens.

* per layer and micro-batch, on one of t TP ranks: weighted GEMMs QKV (h → 3h), projection (h → h), FC1
  (h → 4h), FC2 (4h → h): W = 2·T·12h² / t FLOPs forward; attention scores and context:
  A = 2 · 2·b·s²·h / t. Forward F = W + A; input gradient (δ) I = W + 2A (both operands of the
  attention GEMMs are activations); weight gradient G = W.
* LM head (last stage): 2·T·h·V/t each of F, δ and weight gradient; the embedding has no GEMM.
* TP collectives (Megatron, Shoeybi et al. 2019 §3), of T·h·2 bytes unless said: per layer 2 all-reduces
  forward and 2 backward (4 all-gathers and 4 reduce-scatters in all with sequence parallelism,
  Korthikanti et al. 2022, plus 2 backward all-gathers: each column-parallel GEMM gathers its input again
  for its weight gradient); the embedding 1 all-reduce forward; the head 1 backward and the
  vocabulary-parallel cross-entropy 3 all-reduces of T·4 bytes (fp32 per token) forward. With sequence
  parallelism (Megatron-LM's ``LanguageModelEmbedding`` and ``ColumnParallelLinear``): the embedding, which
  has learned positions, keeps its all-reduce and all-gathers its output's gradient backward; the head
  all-gathers its input forward, again backward, and reduce-scatters its gradient backward instead of the
  all-reduce.
* parameters P (t = 1): 12h² + 13h per layer, the final norm's 2h, the padded token table 1024·h and s·h
  positions.
* DP: one all-reduce of the fp16 gradients, 2P bytes; optimizer: 32 bytes per parameter through memory.
* host: a pass issues one op per kernel and collective: per layer 13 forward ops (2 norms, 6 GEMMs, fused
  softmax, attention dropout, bias-GeLU, 2 residual adds) and 19 backward (a δ per op, a weight gradient
  per weighted GEMM, a second δ per attention GEMM); embedding 2 + 2, head 3 + 4.
* 1F1B on two stages with the last the slowest and hops short enough that the round trip
  hop + B₀ + F₀ + hop (stage 1's backward j to its forward j + 2) fits in F₁ + B₁, so the last stage
  never waits after its first forward: F₀ + hop + m·(F₁ + B₁) + hop + B₀ (the bubble is the first
  stage's forward and backward and two hops); each hop T·h·2/t bytes point to point.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from archsim.training import dp_overlap, iteration, stages
from archsim.training.cluster_file import single_node
from archsim.training.parallel import Parallelism
from archsim.training.run import train
from archsim.workload.transformer import TransformerConfig

L, H, HEADS, S, VOCAB, PADDED = 2, 64, 4, 32, 1000, 1024
C = TransformerConfig("tiny", "gpt", L, H, HEADS, VOCAB, S, 4 * H, HEADS, True, S)
RATES = {"flops": 1e12, "all-reduce": 1e9, "all-gather": 3e9, "reduce-scatter": 7e9, "p2p": 1e9, "memory": 2e11}


@pytest.fixture
def priced(monkeypatch):
    """Install the trivial cost functions; returns a setter of which rates are on (the rest cost 0)."""
    on: set[str] = set()

    def rate(name: str) -> float:
        return RATES[name] if name in on else np.inf

    def op_seconds(ops, gpu, efficiency, *args, **kwargs):
        return np.array([sum(2.0 * g.m * g.k * g.n * g.count for g in op.gemms) / rate("flops") for op in ops])

    def collective_seconds(kind, size, ranks, link):
        return 0.0 if ranks <= 1 else size / rate(kind)

    def stream_seconds(nbytes, hbm_bytes_per_s, constants, fraction=None, kernels=1):
        return np.asarray(nbytes, dtype=np.float64) / rate("memory")

    monkeypatch.setattr(iteration, "op_seconds", op_seconds)
    monkeypatch.setattr(iteration, "collective_seconds", collective_seconds)
    monkeypatch.setattr(stages, "collective_seconds", collective_seconds)  # the pipeline hops
    monkeypatch.setattr(dp_overlap, "collective_seconds", collective_seconds)  # the DP all-reduce's own module
    monkeypatch.setattr(iteration, "stream_seconds", stream_seconds)
    iteration.clear_model_cache()  # per-layer costs are kept across calls: none priced the real way

    def switch(*names: str) -> None:
        on.clear()
        on.update(names)
        iteration.clear_model_cache()

    yield switch
    iteration.clear_model_cache()


def seconds(par: Parallelism, host_s: float = 0.0) -> float:
    machine = single_node().machine(par)
    machine = replace(machine, efficiency=replace(machine.efficiency, host_s=host_s))
    return train(C, par, machine).iteration_seconds


T = S  # tokens per micro-batch (b = 1)


def layer_flops(t: int = 1) -> tuple[float, float, float]:
    """(F, I, G) FLOPs of one layer per micro-batch on one of t TP ranks."""
    weighted = 2 * T * (3 * H * H + H * H + 4 * H * H + 4 * H * H) / t
    attention = 2 * (2 * S * S * H) / t
    return weighted + attention, weighted + 2 * attention, weighted


def head_flops(t: int = 1) -> float:
    return 2 * T * H * PADDED / t


def parameters() -> int:
    return L * (12 * H * H + 13 * H) + 2 * H + PADDED * H + S * H  # layers, final norm, tokens, positions


@pytest.mark.parametrize("tp", [1, 2])
def test_forward_input_and_weight_gradient_flops(priced, tp):
    priced("flops")
    m = 4
    f, i, g = layer_flops(tp)
    per_microbatch = L * (f + i + g) + 3 * head_flops(tp)
    assert seconds(Parallelism(tp=tp, global_batch=m, recompute="none")) == \
        pytest.approx(m * per_microbatch / RATES["flops"], rel=1e-12)


@pytest.mark.parametrize("recompute, extra", [("selective", 2 * (2 * S * S * H)), ("full", None)])
def test_recomputation_adds_the_forward_it_reruns(priced, recompute, extra):
    priced("flops")
    m = 4
    f, i, g = layer_flops()
    rerun = f if extra is None else extra  # full: the whole layer's forward; selective: the attention core
    per_microbatch = L * (f + i + g + rerun) + 3 * head_flops()
    assert seconds(Parallelism(global_batch=m, recompute=recompute)) == \
        pytest.approx(m * per_microbatch / RATES["flops"], rel=1e-12)


def test_tensor_parallel_all_reduces(priced):
    priced("all-reduce")
    m, activation = 4, T * H * 2
    per_microbatch = (L * 4 + 1 + 1) * activation + 3 * T * 4  # layers, embedding, head δ; cross-entropy
    assert seconds(Parallelism(tp=2, global_batch=m, recompute="none")) == \
        pytest.approx(m * per_microbatch / RATES["all-reduce"], rel=1e-12)


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_sequence_parallel_gathers_and_scatters(priced, recompute):
    """Per layer 2 all-gathers and 2 reduce-scatters forward; backward 2 all-gathers, 2 re-gathers of the
    column-parallel inputs for the weight gradients and 2 reduce-scatters; a full recompute reruns the
    forward's 2 + 2 and nothing of the backward's (selective: no collective)."""
    priced("all-gather", "reduce-scatter")
    m, activation = 4, T * H * 2
    rerun = 2 if recompute == "full" else 0
    # the re-gathers run under their δ GEMMs, which cost 0 here (FLOPs are free): every all-gather shows whole
    gathers, scatters = 2 + 4 + rerun, 2 + 2 + rerun
    layers = L * activation * (gathers / RATES["all-gather"] + scatters / RATES["reduce-scatter"])
    # embedding δ; head F, its re-gather and its δ's reduce-scatter
    ends = 3 * activation / RATES["all-gather"] + activation / RATES["reduce-scatter"]
    assert seconds(Parallelism(tp=2, global_batch=m, recompute=recompute, sequence_parallel=True)) == \
        pytest.approx(m * (layers + ends), rel=1e-12)


def test_sequence_parallel_keeps_the_embedding_and_cross_entropy_all_reduces(priced):
    priced("all-reduce")
    m, activation = 4, T * H * 2
    per_microbatch = activation + 3 * T * 4  # the embedding (learned positions) forward; cross-entropy
    assert seconds(Parallelism(tp=2, global_batch=m, recompute="none", sequence_parallel=True)) == \
        pytest.approx(m * per_microbatch / RATES["all-reduce"], rel=1e-12)


def test_full_recompute_reruns_the_forward_all_reduces(priced):
    priced("all-reduce")
    m, activation = 4, T * H * 2
    per_microbatch = (L * (4 + 2) + 1 + 1) * activation + 3 * T * 4
    assert seconds(Parallelism(tp=2, global_batch=m, recompute="full")) == \
        pytest.approx(m * per_microbatch / RATES["all-reduce"], rel=1e-12)


def test_data_parallel_gradient_all_reduce(priced):
    priced("all-reduce")
    assert seconds(Parallelism(dp=2, global_batch=8, recompute="none")) == \
        pytest.approx(2 * parameters() / RATES["all-reduce"], rel=1e-12)


def test_optimizer_step_moves_32_bytes_per_parameter(priced):
    priced("memory")
    assert seconds(Parallelism(global_batch=4, recompute="none")) == \
        pytest.approx(32 * parameters() / RATES["memory"], rel=1e-12)


def test_host_issue_time_bounds_each_pass(priced):
    priced()  # the GPU is free: every pass is host-bound
    m, host = 4, 1e-3
    ops = L * (13 + 19) + (2 + 2) + (3 + 4)
    assert seconds(Parallelism(global_batch=m, recompute="none"), host_s=host) == pytest.approx(m * ops * host,
                                                                                                rel=1e-12)


def test_one_f_one_b_bubble_and_hops_on_two_stages(priced):
    priced("flops", "p2p")
    m = 4
    f, i, g = layer_flops()
    f0, b0 = f, i + g  # stage 0: one layer (the embedding has no GEMM)
    f1, b1 = f + head_flops(), i + g + 2 * head_flops()  # stage 1: one layer and the LM head
    hop = T * H * 2 / RATES["p2p"]
    assert 2 * hop + (f0 + b0) / RATES["flops"] <= (f1 + b1) / RATES["flops"]  # the closed form's condition
    expected = (f0 + m * (f1 + b1) + b0) / RATES["flops"] + 2 * hop  # the closed form's: overlapped sends
    assert seconds(Parallelism(pp=2, global_batch=m, recompute="none", p2p="overlapped")) == \
        pytest.approx(expected, rel=1e-12)


def test_tied_embedding_gradient_all_reduce_across_the_pipeline(priced):
    priced("all-reduce")
    # the first and last stage each hold a copy of the token table: one all-reduce of its fp16 gradient
    assert seconds(Parallelism(pp=2, global_batch=4, recompute="none")) == \
        pytest.approx(PADDED * H * 2 / RATES["all-reduce"], rel=1e-12)
