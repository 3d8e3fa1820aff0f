"""A tried, not-adopted variant of the host's issue time (issue 37): a backward pass's host calls are
its autograd nodes, not its kernels, and a checkpointed layer adds the host seconds its checkpoint spends.

Not the model: ``archsim.training.iteration.piece_cost`` charges every backward kernel a host call and
no checkpoint time. :func:`host_issue` swaps this variant in for ``benchmarks/bench_e2e_variants.py
--variant host-issue``, which refits the four A100 constants for it (docs/accuracy.md, "What changed,
and what did not help", says why it was not adopted).

PyTorch issues kernels asynchronously: between synchronization points the GPU runs what the host has
queued, so a pass costs max(GPU time, host issue time), not their sum. Checkpointing a layer does not
synchronize the device — ``torch.utils.checkpoint``'s RNG stash and restore copy the CPU generator's
state and the CUDA generator's seed and offset, both host-side, and Megatron's ``CheckpointFunction``
does the same with its RNG tracker — so it stays a max; but it adds host work that the op list does
not show:

* **non-reentrant** (``use_reentrant=False``, what plain PyTorch runs: the ``pytorch-eager`` list): a
  pack hook per saved tensor in the forward, a second per tensor while the recomputation records a new
  autograd graph, an unpack hook per tensor in the backward, the recomputed tensors checked;
* **reentrant** (Megatron's ``CheckpointFunction``, the ``megatron`` list): the forward under
  ``no_grad``, then in the backward the recomputation and a nested autograd call.

That work launches no kernel, so it is seconds per checkpointed layer, measured on a CPU by
``benchmarks/bench_checkpoint_host.py`` (``benchmarks/results/checkpoint_host_cpu.md``): one host's
Python time, no GPU data; a slower host spends longer.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, replace

from archsim.training import iteration
from benchmarks.model_swap import swapped


@dataclass(frozen=True)
class CheckpointHost:
    """Extra host seconds of one checkpointed layer: ``forward`` in its first forward, ``backward`` in its
    backward beyond the recomputed forward."""

    forward: float
    backward: float


NO_CHECKPOINT = CheckpointHost(0.0, 0.0)
# benchmarks/results/checkpoint_host_cpu.md (torch 2.13, one CPU thread, fastest of 9 rounds), µs per layer:
# reentrant (Megatron's structure) 13.5 and 155.3, torch.utils.checkpoint(use_reentrant=False) 184.2 and 377.0
CHECKPOINT_HOST = {"megatron": CheckpointHost(13.5e-6, 155.3e-6), "pytorch-eager": CheckpointHost(184.2e-6, 377.0e-6)}

# backward kernels issued inside another op's autograd node (one host call launches them all), or by the
# engine's own gradient accumulation in C++: no host call of their own (the softmax backward's dY ∘ Y product and
# baddbmm's dQ, dK scaling run inside SoftmaxBackward0 and BaddbmmBackward0)
SAME_NODE_SUFFIXES = (".bias_grad", ".dgamma", ".dB", ".grad_mul", ".q_grad_scale", ".k_grad_scale")
ENGINE_ACCUMULATION = ("residual_grad_add", "tied_grad_add")


def host_calls(ops) -> int:
    """How many of a backward pass's ``ops`` the host issues one by one: autograd runs one node per
    forward op and a node launches all its kernels — a GEMM's two gradients (a linear's δ and weight
    gradient, a batched GEMM's two operands), a linear's bias gradient, a LayerNorm's γ/β gradient — so
    only the first kernel of each costs a host call; the gradient sums the engine does itself (two
    gradients reaching one tensor) cost none."""
    return sum(1 for op in ops if not (op.layer.endswith(SAME_NODE_SUFFIXES) or op.layer.startswith(ENGINE_ACCUMULATION)
                                       or (op.kind == "G" and op.gemms)))


def checkpoint_host(implementation: str, recompute: str) -> CheckpointHost:
    """The host seconds ``implementation``'s checkpoint adds per layer under ``recompute = "full"`` (what
    was measured: a whole layer checkpointed); none otherwise — ``selective`` checkpoints the attention
    core alone, fewer saved tensors than measured, so its figure is not known."""
    return CHECKPOINT_HOST[implementation] if recompute == "full" else NO_CHECKPOINT


def host_issue_cost(cost: iteration.PieceCost, work, host_s: float, implementation: str,
                    recompute: str) -> iteration.PieceCost:
    """``cost`` (the model's piece cost, seconds per micro-batch) with its passes' host floors redone
    for the variant: the forward and a full recompute take max(GPU time, host calls × ``host_s`` + the
    checkpoint's host seconds), the backward's host calls are its autograd nodes. The GPU times are the
    model's own (``cost.ops``); a selective recompute is left as the model has it."""
    nf = len(work.forward)
    extra = checkpoint_host(implementation, recompute if host_s > 0 else "none")
    gpu_forward = sum(t for _, _, t in cost.ops[:nf])
    gpu_delta = sum(t for _, kind, t in cost.ops[nf:nf + len(work.backward)] if kind != "G")
    issue = host_s * (nf + len(work.forward_collectives))
    forward = max(gpu_forward, issue + extra.forward - cost.tp_forward)
    calls = host_calls(work.backward) + len(work.backward_collectives)
    delta = max(gpu_delta, host_s * calls - cost.tp_backward - cost.backward_weight)
    redo = (max(gpu_forward, issue + extra.backward - cost.tp_forward) + cost.tp_forward if recompute == "full"
            else cost.recompute)
    return replace(cost, forward=forward, backward_input=delta, recompute=redo)


@contextmanager
def host_issue():
    """The model with this variant's piece costs in force (and its piece cache cleared on the way in
    and out)."""
    original = iteration.piece_cost

    def piece_cost(work, par, machine, recompute, counted=None):
        cost = original(work, par, machine, recompute, counted)
        return host_issue_cost(cost, work, machine.efficiency.host_s, machine.implementation, recompute)

    with swapped((iteration,), "piece_cost", piece_cost):
        yield
