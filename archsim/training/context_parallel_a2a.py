"""Context parallelism's all-to-all exchange (``--cp-comm a2a``): DeepSpeed-Ulysses (Jacobs et al. 2023) as
TransformerEngine runs it for Megatron-LM's ``--cp-comm-type a2a`` (``AttnFuncWithCPAndQKVOA2A`` and
``flash_attn_a2a_communicate`` in ``transformer_engine/pytorch/attention/dot_product_attention/
context_parallel.py``, commit d0067d0d).

Forward: one all-to-all each of Q, K and V over the CP group turns them from sequence-sharded (the rank's s/CP
tokens, every head of its TP rank) to head-sharded (all s tokens, 1/CP of those heads); the chunks come back in
sequence order (``reorder_seq_chunks_for_a2a_before_attn`` undoes Megatron's load-balanced split), so attention
is one causal FlashAttention call over the whole sequence at heads/(TP·CP) (:func:`a2a_flash_step`); an all-to-all
of the output returns it to sequence-sharded. Backward: an all-to-all of dO, the attention backward, one each of
dQ, dK and dV. TransformerEngine issues the three of Q, K, V (or dQ, dK, dV) asynchronously and overlaps only
their local reorder copies with the next one's transfer; attention waits for all of them, so every all-to-all
is priced in series, none under compute (:func:`a2a_exchange`).

TransformerEngine asserts ``num_heads % cp_size == 0`` for Q and for K/V alike and does not replicate K/V
heads (``layout_problems.a2a_heads_problem``, with the other layout checks): grouped-query attention with fewer K/V
heads per TP rank than CP is refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from archsim.collective_units import message_mib
from archsim.collectives import collective_seconds
from archsim.workload.transformer import TransformerConfig, layer_widths

if TYPE_CHECKING:
    from archsim.training.machine import Machine
    from archsim.training.parallel import Parallelism


def a2a_flash_step(s: int, heads: int, kv_heads: int) -> tuple[int, int, int, bool]:
    """The one FlashAttention kernel a rank runs each way after the all-to-all: all ``s`` tokens, causal, at
    1/CP of its TP rank's ``heads`` and ``kv_heads`` (already divided by the caller's CP)."""
    return s, heads, kv_heads, True


def a2a_messages(c: TransformerConfig, par: Parallelism, scale: float = 1.0) -> tuple[tuple[str, float], ...]:
    """Each all-to-all's buffer on one GPU, per micro-batch (bytes; 2 per element, × ``scale``: 2 in fp32): Q and
    O are the rank's s/CP tokens × query heads per TP rank × head dim, K and V the same at the K/V heads; the
    backward's dO, dQ, dK, dV are the same sizes. Forward then backward, in TransformerEngine's order."""
    w = layer_widths(c, par.tp)
    per_head = par.micro_batch * c.seq // par.cp * w.head_dim * 2 * scale
    q, kv = per_head * w.heads, per_head * w.kv_heads
    return ("q", q), ("k", kv), ("v", kv), ("o", q), ("do", q), ("dq", q), ("dk", kv), ("dv", kv)


def a2a_exchange(c: TransformerConfig, par: Parallelism,
                 machine: Machine) -> tuple[float, float, list[tuple[str, str, float]]]:
    """Seconds the all-to-alls add to a layer's forward (Q, K, V, O) and backward (dO, dQ, dK, dV): each the
    all-to-all collective over the CP group's link (a2a+p2p: its inner group of A ranks, whose link ``links.cp``
    is there), in series with attention; and their rows (name, F/B, s)."""
    link = machine.links.cp
    assert link is not None  # a rank machine of a CP group has its links
    messages = a2a_messages(c, par, machine.scale)
    seconds = [float(collective_seconds("all-to-all", nbytes, par.cp_a2a, link)) for _, nbytes in messages]
    f, b = sum(seconds[:4]), sum(seconds[4:])
    q, kv = message_mib(messages[0][1]), message_mib(messages[1][1])
    over = "a2a" if par.cp_a2a == par.cp else f"a2a over {par.cp_a2a}"  # a2a+p2p's inner group
    return f, b, [(f"cp.q,k,v,o all-to-all ({over}: {q}, 2 × {kv}, {q})", "F", f),
                  (f"cp.do,dq,dk,dv all-to-all ({over}: 2 × {q}, 2 × {kv})", "B", b)]


def a2a_buffer_bytes(c: TransformerConfig, par: Parallelism, scale: float = 1.0) -> float:
    """Bytes a rank holds beyond its own activations while a layer's all-to-alls run: for each of dQ, dK, dV (or
    Q, K, V forward, the same sizes) the contiguous head-major send copy ``flash_attn_a2a_communicate`` makes and
    its ``empty_like`` receive buffer, all three issued before the first is waited on: 2 × (Q + K + V)."""
    q, k, v = (nbytes for _, nbytes in a2a_messages(c, par, scale)[:3])
    return 2 * (q + k + v)


__all__ = ["a2a_buffer_bytes", "a2a_exchange", "a2a_flash_step", "a2a_messages"]
