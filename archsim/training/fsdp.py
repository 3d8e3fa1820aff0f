"""PyTorch FSDP's full sharding (ZeRO-3, ``FULL_SHARD``): the collectives each FSDP unit adds per micro-batch
and how much of them its neighbours' compute hides.

Units, as torchtitan and llm-foundry wrap a transformer: each layer is one unit, and the rest of the rank's
parameters (the embedding, final norm and LM head: with PP > 1 those its stages hold) the root unit, first in the
forward and last in the backward. Each pipeline rank shards its own stages' parameters over its DP × CP group
(``par.replicas``). Per micro-batch each layer's parameters are all-gathered in the compute dtype before its
forward; with ``par.fsdp_reshard`` ``after-forward`` (PyTorch's ``FULL_SHARD``) they are resharded after it and
all-gathered again before its backward (the recompute and the backward), with ``none`` (Llama 3's, Dubey et al.
2024 §3.3.2: "for model shards we do not reshard after forward computation to avoid an extra all-gather
communication during backward passes") kept from the forward to the backward. Either way its gradients are
reduce-scattered in the reduce width (:func:`archsim.training.memory.gradient_bytes`: fp32 in bf16, as the paper's
"reduce-scatter gradients in FP32") after its backward, into the sharded fp32 gradient the micro-batches accumulate
in; the root is gathered once, before the forward (FSDP does not reshard the root after the forward), and
reduce-scattered after the backward. Each collective is priced by :func:`archsim.collectives.collective_seconds`
over the DP group's link, on the full unit's bytes.

Held per GPU (:func:`held_state_bytes`): the 16 bytes of sharded states per parameter over the shards, plus with
``after-forward`` the largest unit in flight (:func:`archsim.training.memory.fsdp_unit_bytes`), with ``none`` every
parameter of the rank unsharded in the compute dtype (at the end of a forward all its units are gathered) and one
unit's unsharded gradient before its reduce-scatter.

Overlap (FSDP's forward and backward prefetch; one unit's collectives on the wire at a time, the next one
issued when a unit's compute starts), per model chunk of the rank (each its own sequence of units, the root
leading the rank's first):

* forward, units u_0 … u_{n−1} in order: u_0's all-gather is exposed; u_i's, prefetched while u_{i−1}
  computes f_{i−1}, exposes max(0, g_i − f_{i−1});
* backward, units v_0 … v_{n−1} in reverse order: v_0's all-gather is exposed (none with ``none``); while v_k
  computes b_k the wire carries v_{k+1}'s prefetched all-gather (none with ``none``) and v_{k−1}'s
  reduce-scatter, exposing max(0, g_{k+1} + r_{k−1} − b_k); v_{n−1}'s reduce-scatter is exposed after it.

The rank's forward (and backward with its recompute) of one micro-batch is split evenly over its layers; the
root hides nothing (its embedding lookup and LM head are counted in the layers' share). While a prefetched
collective is on the wire NCCL's kernels hold some of the SMs (NVIDIA/nccl issues #181, #689), so the unit's
compute beside it runs at the layer's ``forward_share`` / ``backward_share`` of its speed and each max(0, a − c)
above is a − :func:`~archsim.training.comm_sms.hidden_seconds` (a, c, share): the one rule of
:mod:`archsim.training.comm_sms` (at share 1 the same figure, to the bit). Not modelled: FSDP's rate limiter, and
the exposed collectives' place in the pipeline's timeline (they are added after the rank's last backward, as the
distributed optimizer's are).

``par.fsdp_grad_sync`` ``step`` (with ``fsdp_reshard`` ``none``) is PyTorch's pipeline runtime
(``torch.distributed.pipelining``: each stage's backward runs with ``set_requires_gradient_sync(False)`` and
``set_reshard_after_backward(False)``, its ``REDUCE_GRAD`` action after the stage's last backward), with
torchtitan's ``reshard_after_forward = not pp_enabled`` (its Llama ``apply_fsdp``): each unit all-gathered once a
step, before the first micro-batch's forward (exposed by the forward rule above, once), its gradients accumulated
unsharded at the reduce width (FSDP2 upcasts them to its ``reduce_dtype``) and reduce-scattered once, after the
stage's last backward, the rank's stages' reduce-scatters one after another on the wire, each issued when its
stage's last backward ends (``drains``: the seconds from there to the rank's last action, what the rank's other
chunks' backwards hide; the other ranks' pipeline drain is the iteration's maximum over ranks). Held per GPU: the
sharded states, every parameter of the rank unsharded in the compute dtype and its gradient at the reduce width
for the whole step, and one unit's reduce-scatter input. Not credited: a rank's fill bubble before its first
forward, under which the runtime's ``UNSHARD`` prefetch could hide the step's first all-gathers. Not slowed: the
compute under the once-a-step reduce-scatters' ``drains``, which hold pipeline bubbles as well as other chunks'
backwards in proportions this sum does not split.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

from archsim.choices.devices import ELEMENT_BYTES
from archsim.collective_units import message_mib
from archsim.collectives import LinkClass, Spanning, collective_seconds
from archsim.training.comm_sms import hidden_seconds
from archsim.training.memory import fsdp_unit_bytes, gradient_bytes, layer_parameters_per_gpu, state_bytes
from archsim.training.moe_ops import expert_shards
from archsim.training.op_rows import op_row
from archsim.training.parallel import layers_per_stage, rank_of_stages

if TYPE_CHECKING:
    from archsim.training.machine import Machine
    from archsim.training.parallel import Parallelism
    from archsim.workload.transformer import TransformerConfig


@dataclass(frozen=True)
class Unit:
    """One FSDP unit for one micro-batch, in seconds: its all-gather, reduce-scatter, forward and backward
    compute; ``gathers_backward``: whether it is all-gathered again before its backward (False: the root);
    ``gathered`` and ``scattered``: the bytes of its all-gather's and its reduce-scatter's buffer (the whole unit's,
    on one GPU), what those seconds are priced on and link energy counts (:func:`sent_unit_bytes`)."""

    all_gather: float
    reduce_scatter: float
    forward: float
    backward: float
    gathers_backward: bool = True
    gathered: float = 0.0
    scattered: float = 0.0


def exposed_seconds(units: Sequence[Unit], forward_share: float = 1.0,
                    backward_share: float = 1.0) -> tuple[float, float]:
    """(forward, backward) seconds of one micro-batch's FSDP collectives that no compute hides, ``units`` in
    forward order (module docstring's rule), the compute beside a collective at ``forward_share`` /
    ``backward_share`` of its speed (:func:`~archsim.training.comm_sms.hidden_seconds`; 1: the SMs free)."""
    if not units:
        return 0.0, 0.0
    forward = units[0].all_gather + sum(u.all_gather - hidden_seconds(u.all_gather, prev.forward, forward_share)
                                        for prev, u in pairwise(units))
    order = list(reversed(units))
    backward = order[0].all_gather if order[0].gathers_backward else 0.0
    for k, unit in enumerate(order):
        ahead = order[k + 1].all_gather if k + 1 < len(order) and order[k + 1].gathers_backward else 0.0
        behind = order[k - 1].reduce_scatter if k > 0 else 0.0
        backward += ahead + behind - hidden_seconds(ahead + behind, unit.backward, backward_share)
    return forward, backward + order[-1].reduce_scatter


def rank_units(layers: int, layer_parameters: float, root_parameters: float, forward_s: float, backward_s: float,
               parameter_bytes: float, gradient_bytes: float, dp: int, link: LinkClass | Spanning,
               reshard: str = "after-forward") -> list[Unit]:
    """A rank's units in forward order: the root (``root_parameters``, no compute of its own) then ``layers``
    layers of ``layer_parameters`` each, sharing ``forward_s`` and ``backward_s`` (one micro-batch's, seconds)
    evenly; ``parameter_bytes`` (the compute dtype's) and ``gradient_bytes`` per parameter over ``dp`` GPUs;
    ``reshard``: ``Parallelism.fsdp_reshard`` (``none``: no layer gathered again for its backward)."""

    def unit(parameters: float, forward: float, backward: float, again: bool) -> Unit:
        gathered, scattered = parameters * parameter_bytes, parameters * gradient_bytes
        return Unit(float(collective_seconds("all-gather", gathered, dp, link)),
                    float(collective_seconds("reduce-scatter", scattered, dp, link)),
                    forward, backward, again, gathered, scattered)

    root = [unit(root_parameters, 0.0, 0.0, False)] if root_parameters > 0 else []
    each = unit(layer_parameters, forward_s / layers, backward_s / layers, reshard == "after-forward") \
        if layers else None
    return root + [each] * layers if each else root


def chunk_layers(c: TransformerConfig, par: Parallelism, rank: int) -> list[int]:
    """The transformer layers of each model chunk pipeline rank ``rank`` holds, in pipeline order (PP 1: one
    chunk of all ``c.layers``)."""
    counts = layers_per_stage(c.layers, par.pp * par.chunks, par.stage_layers)
    return [counts[j] for j, owner in enumerate(rank_of_stages(par)) if owner == rank]


def machine_units(c: TransformerConfig, par: Parallelism, machine: Machine, parameters: float, forward_s: float = 0.0,
                  backward_s: float = 0.0, rank: int = 0) -> list[list[Unit]]:
    """:func:`rank_units` of each model chunk of pipeline rank ``rank`` holding ``parameters`` on ``machine``: its
    chunks' layers of TP-sharded parameters each and the rest the root, leading the first chunk, gathered in the
    compute dtype and reduce-scattered at the reduce width over the DP group's link (``par.replicas`` GPUs);
    ``forward_s`` / ``backward_s``: the rank's one micro-batch's (seconds), split over its layers."""
    per_layer = layer_parameters_per_gpu(c, par.tp)
    chunks = chunk_layers(c, par, rank)
    layers = sum(chunks)
    root = parameters - layers * per_layer
    return [rank_units(n, per_layer, root if k == 0 else 0.0, forward_s * n / layers if layers else 0.0,
                       backward_s * n / layers if layers else 0.0, ELEMENT_BYTES[machine.dtype],
                       gradient_bytes(machine.dtype), par.replicas, machine.links.dp, par.fsdp_reshard)
            for k, n in enumerate(chunks)]


def sent_unit_bytes(chunks: Sequence[Sequence[Unit]], par: Parallelism, link: LinkClass | Spanning) -> float:
    """Bytes one GPU sends on ``link`` for one iteration of FSDP's collectives over ``par.replicas`` GPUs, the
    units' ``chunks`` (:func:`machine_units`) as timed (:func:`fsdp_sync`): per micro-batch each unit's all-gather,
    again before its backward where it ``gathers_backward``, and its reduce-scatter; ``step`` grad sync: each once a
    step (:func:`~archsim.collective_bytes.sent_bytes` each)."""
    from archsim.collective_bytes import sent_bytes

    n = par.replicas
    units = [u for chunk in chunks for u in chunk]
    gather = [sent_bytes("all-gather", u.gathered, n, link) for u in units]
    scatter = sum(sent_bytes("reduce-scatter", u.scattered, n, link) for u in units)
    if par.fsdp_grad_sync == "step":
        return sum(gather) + scatter
    again = sum(g for g, u in zip(gather, units, strict=True) if u.gathers_backward)
    return par.microbatches * (sum(gather) + again + scatter)


def step_exposed_seconds(chunks: Sequence[Sequence[Unit]], drains: Sequence[float] = (),
                         forward_share: float = 1.0) -> float:
    """``step`` mode's exposed seconds of a rank's chunks (each its units in forward order): each chunk's
    all-gathers once, by the forward rule (the forward at ``forward_share`` of its speed beside them), and the
    reduce-scatters' end past the rank's last action, chunk k's (its units' one after another) issued ``drains[k]``
    seconds before that action ends (none given: 0) once the wire is free."""
    gathers = sum(exposed_seconds(units, forward_share)[0] for units in chunks)
    ready = sorted(zip([-d for d in drains] or [0.0] * len(chunks), chunks, strict=True), key=lambda p: p[0])
    wire = -float("inf")
    for start, units in ready:
        wire = max(wire, start) + sum(u.reduce_scatter for u in units)
    return gathers + max(0.0, wire)


def fsdp_sync(c: TransformerConfig, par: Parallelism, machine: Machine, parameters: float, forward_s: float,
              backward_s: float, rank: int = 0, drains: Sequence[float] = (), forward_share: float = 1.0,
              backward_share: float = 1.0) -> tuple[dict[str, float], dict[str, float]]:
    """FSDP's part of pipeline rank ``rank``'s iteration after its last backward
    (:func:`archsim.training.dp_sharding.dp_sync`): the collectives of its ``par.microbatches`` micro-batches that
    the compute does not hide (``fsdp_exposed_communication``, seconds; the module docstring's rule, the forward and
    backward at ``forward_share`` / ``backward_share`` of their speed beside a collective), before the step; nothing
    after it. ``step`` mode: :func:`step_exposed_seconds` with ``drains`` (seconds, per chunk)."""
    chunks = machine_units(c, par, machine, parameters, forward_s, backward_s, rank)
    if par.fsdp_grad_sync == "step":
        return {"fsdp_exposed_communication": step_exposed_seconds(chunks, drains, forward_share)}, {}
    return {"fsdp_exposed_communication": par.microbatches * sum(sum(exposed_seconds(u, forward_share, backward_share))
                                                                 for u in chunks)}, {}


def held_state_bytes(dtype: str, implementation: str, par: Parallelism) -> tuple[float, float]:
    """(bytes per parameter of the rank, bytes per parameter of its largest unit) the model states hold per GPU,
    the ``states`` and ``unit`` of :func:`archsim.training.memory.stage_terms`: without FSDP
    :func:`~archsim.training.memory.state_bytes` and none; with it :data:`~archsim.training.memory.FSDP_STATE_BYTES` over ``par.replicas``,
    plus ``after-forward``'s units in flight (:func:`~archsim.training.memory.fsdp_unit_bytes`) or ``none``'s
    every parameter unsharded in ``dtype`` and one unit's gradient at the reduce width; ``step`` grad sync adds
    every parameter's unsharded gradient at the reduce width, held for the step."""
    states = state_bytes(dtype, implementation, par.optimizer_shards, par.fsdp)
    if not par.fsdp:
        return states, 0.0
    if par.fsdp_grad_sync == "step":
        return states + ELEMENT_BYTES[dtype] + gradient_bytes(dtype), float(gradient_bytes(dtype))
    if par.fsdp_reshard == "none":
        return states + ELEMENT_BYTES[dtype], float(gradient_bytes(dtype))
    return states, float(fsdp_unit_bytes(dtype))


def expert_state_bytes(dtype: str, implementation: str, par: Parallelism) -> float | None:
    """Model-state bytes per expert parameter where they differ from :func:`held_state_bytes`' ``states``: a
    mixture's experts laid out apart (EP > 1 or ETP ≠ TP) under the distributed optimizer, which shards their
    states over their expert-DP group (:func:`~archsim.training.moe_ops.expert_shards`), not DP; None otherwise."""
    if not (par.experts_apart and par.distributed_optimizer):
        return None
    return state_bytes(dtype, implementation, expert_shards(par))


def unit_rows(c: TransformerConfig, par: Parallelism, machine: Machine, parameters: float, rank: int = 0) -> list[dict]:
    """``archsim train``'s rows of one micro-batch's FSDP collectives on pipeline rank ``rank`` holding ``parameters``,
    in the order they run: the root's all-gather (``piece`` ``root``), a layer's all-gather before its forward (op F),
    with ``after-forward`` again before its backward (B), and its reduce-scatter (B) (``piece`` ``layer``: one
    layer's, as the layer's ops are), the root's reduce-scatter (B). Seconds: each collective whole, as
    :func:`machine_units` prices it; what the compute does not hide of them is the iteration's
    ``fsdp_exposed_communication``. ``step`` grad sync: the same collectives, each once a step (named so)."""
    per_layer = layer_parameters_per_gpu(c, par.tp)
    layers = sum(chunk_layers(c, par, rank))
    root = parameters - layers * per_layer
    width, grad = ELEMENT_BYTES[machine.dtype], gradient_bytes(machine.dtype)
    units = [u for chunk in machine_units(c, par, machine, parameters, rank=rank) for u in chunk]

    once = ", once a step" if par.fsdp_grad_sync == "step" else ""

    def row(piece: str, kind: str, op: str, nbytes: float, seconds: float) -> dict:
        return op_row(piece, f"fsdp.{kind} ({kind}, {message_mib(nbytes)}{once})", op, seconds)

    again = par.fsdp_reshard == "after-forward"
    layer = [row("layer", "all-gather", "F", per_layer * width, units[-1].all_gather),
             *([row("layer", "all-gather", "B", per_layer * width, units[-1].all_gather)] if again else []),
             row("layer", "reduce-scatter", "B", per_layer * grad, units[-1].reduce_scatter)] if layers else []
    if root <= 0:  # no root unit (rank_units leaves it out)
        return layer
    return [row("root", "all-gather", "F", root * width, units[0].all_gather), *layer,
            row("root", "reduce-scatter", "B", root * grad, units[0].reduce_scatter)]


__all__ = ["Unit", "chunk_layers", "expert_state_bytes", "exposed_seconds", "fsdp_sync", "held_state_bytes", "machine_units", "rank_units",
           "sent_unit_bytes", "step_exposed_seconds", "unit_rows"]
