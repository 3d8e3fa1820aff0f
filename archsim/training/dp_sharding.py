"""What a rank's data-parallel group runs after its last backward, by how it holds the training states
(:attr:`~archsim.training.parallel.Parallelism.sharding`, one of
:data:`~archsim.choices.training.SHARDINGS`): one function per sharding, and :func:`dp_sync`, the one call
:func:`archsim.training.iteration.after_backward` makes.

* ``none``: every rank holds all the states and all-reduces its gradients (``dp_allreduce``, after the last
  backward or bucketed under it: :func:`archsim.training.dp_overlap.dp_allreduce_seconds`);
* ``distributed-optimizer``: Megatron-LM's ZeRO-1, the gradients reduce-scattered before the step
  (``dp_reduce_scatter``) and the updated parameters all-gathered after it (``dp_allgather``:
  :func:`archsim.training.dp_overlap.distributed_sync_seconds`);
* ``fsdp``: PyTorch FSDP's full sharding, the per-unit collectives the compute does not hide
  (``fsdp_exposed_communication``: :func:`archsim.training.fsdp.fsdp_sync`).

Each returns (before the optimizer step, after it): seconds by the name ``after_backward_seconds`` gives them.
The step itself, on the rank's 1/``par.optimizer_shards`` of its parameters, is the iteration's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from archsim.choices.devices import ELEMENT_BYTES
from archsim.training.dp_overlap import distributed_sync_seconds, dp_allreduce_seconds
from archsim.training.fp8_memory import gathered_parameter_bytes
from archsim.training.fsdp import fsdp_sync
from archsim.training.memory import gradient_bytes

if TYPE_CHECKING:
    from archsim.training.machine import Machine
    from archsim.training.parallel import Parallelism
    from archsim.workload.transformer import TransformerConfig

Sync = tuple[dict[str, float], dict[str, float]]  # (before the optimizer step, after it): seconds by name


def replicated_sync(c: TransformerConfig, par: Parallelism, machine: Machine, parameters: float, forward_s: float,
                    backward_s: float, rank: int = 0, share: float = 1.0) -> Sync:
    """The gradients' all-reduce at the gradient buffer's width (fp32 in bf16, as Megatron reduces it) over DP,
    ``par.dp_overlap``'s buckets under the last micro-batch's backward ``backward_s`` (seconds), which runs at
    ``share`` of its speed beside them (:mod:`archsim.training.comm_sms`)."""
    return {"dp_allreduce": dp_allreduce_seconds(parameters, gradient_bytes(machine.dtype), par.replicas, machine.links.dp,
                                                 par.dp_overlap, backward_s, share)}, {}


def distributed_optimizer_sync(c: TransformerConfig, par: Parallelism, machine: Machine, parameters: float,
                               forward_s: float, backward_s: float, rank: int = 0, fp8_parameters: float = 0.0,
                               share: float = 1.0) -> Sync:
    """The gradients' reduce-scatter before the step on 1/DP, the parameters' all-gather after it (``fp8_parameters``
    of them fp8 weights, 1 byte each: :func:`~archsim.training.fp8_memory.gathered_parameter_bytes`)."""
    width = gathered_parameter_bytes(parameters, fp8_parameters, ELEMENT_BYTES[machine.dtype])
    scatter, gather = distributed_sync_seconds(parameters, gradient_bytes(machine.dtype), width,
                                               par.replicas, machine.links.dp, par.dp_overlap, backward_s, share)
    return {"dp_reduce_scatter": scatter}, {"dp_allgather": gather}


SYNCS: dict[str, Callable[..., Sync]] = {"none": replicated_sync, "distributed-optimizer": distributed_optimizer_sync,
                                         "fsdp": fsdp_sync}


def dp_sync(c: TransformerConfig, par: Parallelism, machine: Machine, parameters: float, forward_s: float = 0.0,
            backward_s: float = 0.0, rank: int = 0, drains: Sequence[float] = (), fp8_parameters: float = 0.0,
            share: float = 1.0, forward_share: float = 1.0) -> Sync:
    """``par.sharding``'s seconds on pipeline rank ``rank`` holding ``parameters``: ``forward_s`` and ``backward_s``
    its one micro-batch's forward and backward (what bucketed all-reduces and FSDP's prefetch run under; FSDP's
    units are the rank's chunks' layers); ``drains``: FSDP's (:func:`archsim.training.fsdp.fsdp_sync`), per chunk
    the seconds from its last backward to the rank's last action; ``fp8_parameters``: the distributed optimizer's
    (:func:`distributed_optimizer_sync`), those of ``parameters`` it gathers in fp8; ``share`` and ``forward_share``:
    the backward's and the forward's speed beside an overlapped collective (:mod:`archsim.training.comm_sms`: the
    bucketed one's, FSDP's prefetched all-gathers' and reduce-scatters')."""
    if par.sharding == "fsdp":
        return fsdp_sync(c, par, machine, parameters, forward_s, backward_s, rank, drains, forward_share, share)
    if par.sharding == "distributed-optimizer":
        return distributed_optimizer_sync(c, par, machine, parameters, forward_s, backward_s, rank, fp8_parameters,
                                          share)
    return replicated_sync(c, par, machine, parameters, forward_s, backward_s, rank, share)


__all__ = ["SYNCS", "Sync", "distributed_optimizer_sync", "dp_sync", "replicated_sync"]
