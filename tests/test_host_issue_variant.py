"""The host-issue variant (benchmarks/host_issue.py, tried and not adopted) against hand counts on tiny cases.

Every GPU and network cost is made free, so every pass is host-bound and the iteration is a count of host
calls × ``host_s`` plus the checkpoint's host seconds. The counts, from the op lists' shapes (the tiny GPT
of tests/test_iteration_terms.py: L = 2 layers, tied embeddings, learned positions, one GPU):

* Megatron's list: per layer 13 forward calls (2 norms, 6 GEMMs, fused softmax, attention dropout,
  bias-GeLU, 2 residual adds) and 13 backward nodes (19 kernels less the 4 weight gradients and the 2
  attention GEMMs' second operands, which ride in their δ's node); embedding 2 + 2 (lookup and dropout;
  the table's gradient is a node of its own), head 3 + 3 (the LM head's weight gradient rides in its δ's).
* plain PyTorch's list (``pytorch-eager``): per layer 17 forward calls (2 norms, QKV, scores, mask fill,
  softmax, attention dropout, context, its copy to [s, b, h], projection, 2 dropouts, 2 residual adds, FC1,
  GeLU, FC2) and 15 backward nodes (32 kernels less 4 weight gradients, 2 attention second operands, 4 bias
  gradients, 2 LayerNorm γ/β gradients, the softmax backward's product and the scores' two 1/√d scalings (in
  SoftmaxBackward0's and BaddbmmBackward0's nodes) and the 2 residual-stream gradient sums autograd's engine
  adds itself); embedding 5 + 4, head 5 + 5.
* A checkpointed layer (full recompute): its forward, the checkpoint's forward seconds e_f, the forward
  again with e_b, then the backward; nothing synchronizes, so nothing of the GPU's is added.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from benchmark_scripts import load_benchmark
from hypothesis import given
from hypothesis import strategies as st

from archsim.lowering import Gemm, TrainingOp
from archsim.training import dp_overlap, grad_accumulation, iteration
from archsim.training.cluster_file import single_node
from archsim.training.parallel import Parallelism
from archsim.training.run import train
from archsim.workload.transformer import TransformerConfig

host_issue = load_benchmark("host_issue")

L = 2
C = TransformerConfig("tiny", "gpt", L, 64, 4, 1000, 32, 256, 4, True, 32)
HOST = 1e-3
M = 4  # micro-batches


@pytest.fixture
def free_gpu(monkeypatch):
    """Every op, collective and memory pass costs 0 seconds: only the host's issue time is left."""
    monkeypatch.setattr(iteration, "op_seconds", lambda ops, *args, **kwargs: np.zeros(len(ops)))
    monkeypatch.setattr(iteration, "collective_seconds", lambda *args, **kwargs: 0.0)
    monkeypatch.setattr(dp_overlap, "collective_seconds", lambda *args, **kwargs: 0.0)
    def free_stream(nbytes, *args, **kwargs):
        return np.zeros_like(np.asarray(nbytes, dtype=np.float64))

    monkeypatch.setattr(iteration, "stream_seconds", free_stream)
    monkeypatch.setattr(grad_accumulation, "stream_seconds", free_stream)  # plain PyTorch's gradient sums
    iteration.clear_model_cache()
    yield
    iteration.clear_model_cache()


def iteration_seconds(recompute: str, implementation: str = "megatron", host_s: float = HOST) -> float:
    par = Parallelism(global_batch=M, recompute=recompute)
    machine = single_node().machine(par)
    machine = replace(machine, implementation=implementation, efficiency=replace(machine.efficiency, host_s=host_s))
    return train(C, par, machine).iteration_seconds


def test_one_host_call_per_autograd_node():
    """A linear's backward node: δ (the first kernel, a call), weight gradient and bias gradient (same
    node); a batched GEMM's second operand (same node); a LayerNorm's γ/β (same node); the residual
    stream's gradient sum (the engine's); an embedding's table gradient without a GEMM (its own node)."""
    gemm = (Gemm(8, 8, 8),)
    ops = [TrainingOp("fc1", "D", gemm), TrainingOp("fc1", "G", gemm), TrainingOp("fc1.bias_grad", "D", (), 64),
           TrainingOp("scores", "D", gemm), TrainingOp("scores.dB", "D", gemm), TrainingOp("norm1", "D", (), 64),
           TrainingOp("norm1.dgamma", "D", (), 64), TrainingOp("residual_grad_add1", "D", (), 64),
           TrainingOp("embedding", "G", (), 64)]
    assert host_issue.host_calls(ops) == 4  # fc1, scores, norm1, embedding


def test_checkpoint_seconds_only_where_a_checkpoint_runs():
    none = host_issue.NO_CHECKPOINT
    assert host_issue.checkpoint_host("pytorch-eager", "none") == host_issue.checkpoint_host("megatron", "selective") \
        == none
    assert host_issue.checkpoint_host("pytorch-eager", "full") == host_issue.CHECKPOINT_HOST["pytorch-eager"]
    # benchmarks/results/checkpoint_host_cpu.md: non-reentrant hooks cost more than the reentrant structure
    eager, megatron = host_issue.CHECKPOINT_HOST["pytorch-eager"], host_issue.CHECKPOINT_HOST["megatron"]
    assert eager.forward > megatron.forward > 0 and eager.backward > megatron.backward > 0


def test_the_model_itself_charges_every_backward_kernel(free_gpu):
    """Outside the variant the model is main's: 13 + 19 calls per layer, embedding 2 + 2, head 3 + 4, and no
    checkpoint seconds (full recompute adds the 13 forward calls again)."""
    assert iteration_seconds("none") == pytest.approx(M * (L * (13 + 19) + (2 + 2) + (3 + 4)) * HOST, rel=1e-12)
    assert iteration_seconds("full") == pytest.approx(M * (L * (2 * 13 + 19) + (2 + 2) + (3 + 4)) * HOST, rel=1e-12)


@pytest.mark.parametrize("implementation, forward, backward, ends", [("megatron", 13, 13, (2 + 2) + (3 + 3)),
                                                                     ("pytorch-eager", 17, 15, (5 + 4) + (5 + 5))])
def test_host_bound_iteration_by_hand_count(free_gpu, implementation, forward, backward, ends):
    extra = host_issue.CHECKPOINT_HOST[implementation]
    with host_issue.host_issue():
        none = iteration_seconds("none", implementation)
        full = iteration_seconds("full", implementation)
    assert none == pytest.approx(M * (L * (forward + backward) + ends) * HOST, rel=1e-12)
    per_layer = (2 * forward + backward) * HOST + extra.forward + extra.backward
    assert full == pytest.approx(M * (L * per_layer + ends * HOST), rel=1e-12)


def test_no_host_no_checkpoint_seconds(free_gpu):
    """Where the host is not modelled (host_s = 0) the checkpoint adds nothing either: a free iteration."""
    with host_issue.host_issue():
        assert iteration_seconds("full", "pytorch-eager", host_s=0.0) == 0.0


@pytest.mark.long
@given(hidden=st.sampled_from([64, 128, 256]), layers=st.integers(1, 4), micro=st.sampled_from([1, 2, 4]),
       host_us=st.floats(0.0, 200.0), implementation=st.sampled_from(["megatron", "pytorch-eager"]))
def test_checkpointing_or_a_slower_host_never_makes_an_iteration_faster(hidden, layers, micro, host_us,
                                                                         implementation):
    c = TransformerConfig("p", "gpt", layers, hidden, 4, 1000, 64, 4 * hidden, 4, True, 64)

    def seconds(recompute: str, host_s: float) -> float:
        par = Parallelism(global_batch=2 * micro, micro_batch=micro, recompute=recompute)
        machine = single_node().machine(par)
        machine = replace(machine, implementation=implementation,
                          efficiency=replace(machine.efficiency, host_s=host_s))
        return train(c, par, machine).iteration_seconds

    host = host_us * 1e-6
    with host_issue.host_issue():
        assert seconds("full", host) >= seconds("none", host)
        assert seconds("full", host + 1e-5) >= seconds("full", host)
        assert seconds("none", host + 1e-5) >= seconds("none", host)
