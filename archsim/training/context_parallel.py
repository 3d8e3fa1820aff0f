"""Context parallelism (CP): the sequence split over CP GPUs, as Megatron-LM (``--context-parallel-size``) runs
it through TransformerEngine's attention (``transformer_engine/pytorch/attention/dot_product_attention/
context_parallel.py``, commit d0067d0d).

Megatron's load-balanced causal split cuts the sequence into 2·CP equal chunks; rank i holds chunks i and
2·CP − 1 − i (:func:`rank_chunks`), so every rank has the same 1/CP of the causal (q, k ≤ q) pairs
(:func:`rank_causal_pairs`). Every token-wise op (GEMMs, norms, elementwise, LM head, loss) runs on the
rank's s/CP tokens; attention runs its queries against every earlier key.

``p2p`` (``cp_comm_type="p2p"``, ``AttnFuncWithCPAndKVP2P``): CP steps; step 0 is the rank's own K/V (a causal
attention over its s/CP tokens: the two chunks' causal mask is the concatenation's), each later step another
rank's K/V: queries of 2L = s/CP tokens against that rank's first chunk of L keys, or the second query chunk
(L) against both of its chunks (2L) — 2L² pairs, no mask either way (:func:`flash_steps` runs it as two L × L
blocks). While step i computes, the K/V of s/CP tokens for step i + 1 goes to the next rank (CP − 1 sends, each
step the longer of its compute and its send). The backward runs the ring again: step 0 sends K/V, steps
1 … CP − 2 K/V and the dK/dV accumulated so far in one buffer (``p2p_comm_buffers`` of shape (2, *kv.shape)), step
CP − 1 dK/dV alone: 2·(CP − 1) K/V volumes, each step under that step's compute. TE issues each step's
``isend``/``irecv`` (``flash_attn_p2p_communicate``) before that step's attention kernel and waits on it before the
next step (``AttnFuncWithCPAndKVP2P.forward`` and ``.backward`` at d0067d0d), so the send runs beside the attention
as NCCL kernels holding SMs of their own (NVIDIA/nccl issues #181, #689): the step's attention runs on the SMs left
while its send is on the wire and the send hides only :func:`~archsim.training.comm_sms.hidden_seconds` of itself
(:func:`ring_exposed`, the one rule of :mod:`archsim.training.comm_sms`).
``all_gather`` (``AttnFuncWithCPAndKVAllGather``; Llama 3's, Dubey et al. 2024 §3.3.2): the forward
all-gathers K and V (``gather_along_first_dim``); the backward all-gathers them again and reduce-scatters dK and
dV (``reduce_scatter_along_first_dim``), each blocking on the compute stream before or after the attention steps,
none overlapped (so no SMs taken from compute either). The attention work per rank is the same pairs
(its two query chunks against the keys before them); it is priced as p2p's steps.

``a2a`` (``AttnFuncWithCPAndQKVOA2A``, DeepSpeed-Ulysses): Q, K, V and the output all-to-all'd between sequence
and head sharding, attention one causal kernel over the whole sequence at 1/CP of the heads
(:mod:`archsim.training.context_parallel_a2a`).

``a2a+p2p`` (hierarchical, ``--cp-hierarchy A P``): a2a's all-to-alls inside groups of A ranks, then p2p's ring over
P of them at heads/A (:mod:`archsim.training.context_parallel_hierarchy`).

Not modelled: FP8 attention's buffers, and the exchange's share of HBM bandwidth beside the attention it overlaps.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from archsim.collective_units import message_mib
from archsim.collectives import collective_seconds
from archsim.training.comm_sms import hidden_seconds, share_of
from archsim.training.context_parallel_a2a import a2a_buffer_bytes, a2a_exchange, a2a_flash_step, a2a_messages
from archsim.training.context_parallel_hierarchy import effective_comm
from archsim.workload.transformer import TransformerConfig, layer_widths

if TYPE_CHECKING:
    from archsim.training.machine import Machine
    from archsim.training.parallel import Parallelism
    from archsim.training.piece_cost import PieceCost


def rank_chunks(s: int, cp: int, rank: int) -> tuple[range, range]:
    """The token positions CP rank ``rank`` holds of a sequence of ``s``: chunks ``rank`` and 2·CP − 1 − rank
    of 2·CP equal ones (Megatron-LM's ``get_batch_on_this_cp_rank``)."""
    n = s // (2 * cp)
    return range(rank * n, (rank + 1) * n), range((2 * cp - 1 - rank) * n, (2 * cp - rank) * n)


def rank_causal_pairs(s: int, cp: int, rank: int) -> int:
    """Causal (query, key ≤ query) pairs of CP rank ``rank``'s queries: Σ (q + 1) over its two chunks."""
    return sum((r.start + r.stop + 1) * len(r) // 2 for r in rank_chunks(s, cp, rank))


def flash_steps(s: int, heads: int, kv_heads: int, cp: int, causal: bool, cp_comm: str = "p2p",
                hierarchy: tuple[int, int] | None = None) -> tuple[tuple[int, int, int, bool], ...]:
    """FlashAttention kernels one rank runs each way for ``s`` tokens: (tokens, query heads, K/V heads, causal)
    each. CP 1: one over the whole sequence. CP > 1 (p2p's steps): a causal one over the rank's s/CP tokens, then
    CP − 1 unmasked steps of 2L × L pairs (L = s/(2·CP)), each as two L × L blocks: L tokens at twice the heads;
    ``cp_comm`` a2a: one causal kernel over all ``s`` tokens at 1/CP of the heads; a2a+p2p (``hierarchy`` (A, P)):
    p2p's steps for a ring of P at 1/A of the heads."""
    comm = effective_comm(cp_comm, hierarchy)
    if cp == 1:
        return ((s, heads, kv_heads, causal),)
    if comm == "a2a":
        return (a2a_flash_step(s, heads // cp, kv_heads // cp),)
    if comm == "a2a+p2p" and hierarchy is not None:
        return flash_steps(s, heads // hierarchy[0], kv_heads // hierarchy[0], hierarchy[1], causal)
    half = s // (2 * cp)
    return ((s // cp, heads, kv_heads, True), *((half, 2 * heads, 2 * kv_heads, False),) * (cp - 1))


def kv_bytes(c: TransformerConfig, micro_batch: int, tp: int, tokens: int, scale: float = 1.0) -> float:
    """Bytes of one GPU's K and V for ``tokens`` tokens: kv heads per TP rank × head dim × 2 tensors × 2 bytes
    (× ``scale``: 2 in fp32)."""
    w = layer_widths(c, tp)
    return micro_batch * tokens * w.kv_heads * w.head_dim * 2 * 2 * scale


def ring_sends(c: TransformerConfig, par: Parallelism, scale: float = 1.0) -> tuple[list[float], list[float]]:
    """p2p's bytes sent at each step, forward (one step per ring rank, the last sends nothing) and backward (K/V;
    K/V and dK/dV; …; dK/dV alone), per GPU and micro-batch. The ring: CP ranks (p2p), or P (a2a+p2p, whose
    K/V of s/P tokens at K/V heads/A are the bytes of s/CP tokens at all of them)."""
    one = kv_bytes(c, par.micro_batch, par.tp, c.seq // par.cp, scale)
    ring = par.cp // par.cp_a2a
    forward = [one] * (ring - 1) + [0.0]
    backward = [one] + [2 * one] * (ring - 2) + [one]
    return forward, backward


def ring_exposed(sends: list[float], steps: list[float], slowed: list[float] | None = None) -> float:
    """Seconds a ring's sends (``sends``, each step's) add beyond the attention steps they run beside (``steps``, GPU
    seconds on every SM; ``slowed``: the same on the SMs a send leaves, None: as ``steps``): each send less what
    its step hides of it (:func:`~archsim.training.comm_sms.hidden_seconds`; max(0, send − step) with the SMs
    free)."""
    slow = steps if slowed is None else slowed
    return sum(t - hidden_seconds(t, s, share_of(s, s_slow)) for t, s, s_slow in zip(sends, steps, slow, strict=True))


def gathered_bytes(c: TransformerConfig, par: Parallelism, scale: float = 1.0) -> float:
    """all_gather's buffer: K or V of the whole sequence on one GPU (bytes, per micro-batch), each of its forward's
    two all-gathers, its backward's two all-gathers and two reduce-scatters (of dK, dV)."""
    return kv_bytes(c, par.micro_batch, par.tp, c.seq, scale) / 2


def exchange_sent_bytes(c: TransformerConfig, par: Parallelism, machine: Machine) -> tuple[float, float]:
    """(forward, backward) bytes one GPU sends on its links for one layer's K/V exchange of one micro-batch (link
    energy, :mod:`archsim.training.link_energy`): the same sends :func:`exchange` times, each by
    :func:`~archsim.collective_bytes.sent_bytes` on its group — p2p's ring (:func:`ring_sends`, GPU to GPU), a2a's
    all-to-alls (:func:`~archsim.training.context_parallel_a2a.a2a_messages`, over ``cp_a2a`` ranks), a2a+p2p's
    both, all_gather's all-gathers and reduce-scatters (:func:`gathered_bytes`, over CP)."""
    from archsim.collective_bytes import sent_bytes

    links, comm, scale = machine.links, par.cp_exchange, machine.scale
    forward = backward = 0.0
    if comm in ("a2a", "a2a+p2p"):
        assert links.cp is not None  # a rank machine of a CP group has its links
        sent = [sent_bytes("all-to-all", nbytes, par.cp_a2a, links.cp) for _, nbytes in a2a_messages(c, par, scale)]
        forward, backward = sum(sent[:4]), sum(sent[4:])
    if comm in ("p2p", "a2a+p2p"):
        assert links.cp_hop is not None
        sends_f, sends_b = ring_sends(c, par, scale)
        forward += sum(sent_bytes("p2p", b, 2, links.cp_hop) for b in sends_f)
        backward += sum(sent_bytes("p2p", b, 2, links.cp_hop) for b in sends_b)
    if comm == "all_gather":
        assert links.cp is not None
        whole = gathered_bytes(c, par, scale)
        gather = sent_bytes("all-gather", whole, par.cp, links.cp)
        forward, backward = 2 * gather, 2 * (gather + sent_bytes("reduce-scatter", whole, par.cp, links.cp))
    return forward, backward


def exchange(c: TransformerConfig, par: Parallelism, machine: Machine, steps_f: list[float], steps_b: list[float],
             slowed_f: list[float] | None = None,
             slowed_b: list[float] | None = None) -> tuple[float, float, list[tuple[str, str, float]]]:
    """Seconds CP's K/V exchange adds to a layer's forward and backward beyond its attention steps'
    ``steps_f``/``steps_b`` compute (GPU seconds per step; ``slowed_f``/``slowed_b`` the same on the SMs a ring's
    send leaves, None: as they are), and its rows (name, F/B, seconds)."""
    link, hop, cp, scale, comm = machine.links.cp, machine.links.cp_hop, par.cp, machine.scale, par.cp_exchange
    if comm == "a2a":  # not under attention: before and after it
        return a2a_exchange(c, par, machine)
    assert link is not None and hop is not None  # a rank machine of a CP group has its links
    if comm in ("p2p", "a2a+p2p"):  # each step GPU to GPU: where the ring crosses servers, one GPU's NIC (cp_hop)
        sends_f, sends_b = ring_sends(c, par, scale)
        t_f = [float(collective_seconds("p2p", b, 2, hop)) if b else 0.0 for b in sends_f]
        t_b = [float(collective_seconds("p2p", b, 2, hop)) for b in sends_b]
        f, b = ring_exposed(t_f, steps_f, slowed_f), ring_exposed(t_b, steps_b, slowed_b)
        ring = [(f"cp.kv-ring (p2p, {len(sends_f) - 1} × {message_mib(sends_f[0])}, exposed beyond attention)", "F", f),
                (f"cp.kv-dkv-ring (p2p, {len(sends_b)} steps, exposed beyond attention)", "B", b)]
        if comm == "p2p":
            return f, b, ring
        a2a_f, a2a_b, rows = a2a_exchange(c, par, machine)  # the inner group's, before and after the ring
        return a2a_f + f, a2a_b + b, [*rows, *ring]
    whole = gathered_bytes(c, par, scale)
    gather = float(collective_seconds("all-gather", whole, cp, link))
    scatter = float(collective_seconds("reduce-scatter", whole, cp, link))
    return 2 * gather, 2 * (gather + scatter), [
        (f"cp.k,v all-gather (2 × {message_mib(whole)})", "F", 2 * gather),
        (f"cp.k,v all-gather + dk,dv reduce-scatter (4 × {message_mib(whole)})", "B", 2 * (gather + scatter))]


def with_exchange(layer: PieceCost, c: TransformerConfig, par: Parallelism, machine: Machine) -> PieceCost:
    """``layer`` with CP's exchange (:func:`exchange`) on its attention steps (its ``flash_attention`` rows, in step
    order; their re-timing beside a collective, ``layer.slowed``, where known); a full recompute reruns the
    forward's exchange too. Every layer kind runs attention over the CP-split sequence, so each exchanges K/V alike (a
    mixture's dense layers as its MoE ones); at CP 1, ``layer`` itself."""
    if par.cp <= 1:
        return layer
    own = [t for *_, t in layer.ops]
    slow = list(layer.slowed) or own

    def steps(kind: str, times: list[float]) -> list[float]:
        mine = [t for (name, k, _), t in zip(layer.ops, times) if name == "flash_attention" and k == kind]
        return mine if kind == "F" else mine[::-1]  # the backward's steps run in reverse

    f, b, rows = exchange(c, par, machine, steps("F", own), steps("D", own), steps("F", slow), steps("D", slow))
    again = f if par.recompute == "full" else 0.0
    return replace(layer, cp_forward=f, cp_backward=b, recompute=layer.recompute + again,
                   recompute_communication=layer.recompute_communication + again, ops=(*layer.ops, *rows),
                   gemms=(*layer.gemms, *((),) * len(rows)) if layer.gemms else ())


def rank_config(c: TransformerConfig, cp: int) -> TransformerConfig:
    """``c`` with the s/CP tokens one CP rank holds: what its token-wise work, activations and pipeline hops see."""
    return c if cp == 1 else replace(c, seq=c.seq // cp)


def received_bytes(c: TransformerConfig, par: Parallelism, scale: float = 1.0) -> float:
    """Bytes of K/V a CP rank holds beyond its own while a layer's attention runs: p2p's two receive buffers of
    s/CP tokens (forward) or of K/V and dK/dV (backward: ``p2p_comm_buffers``, 2 × (2, *kv.shape)) — the larger,
    the backward's; all_gather's K and V of the whole sequence, less its own; a2a's all-to-all buffers
    (:func:`~archsim.training.context_parallel_a2a.a2a_buffer_bytes`); a2a+p2p's the larger of those and, while
    its ring runs, the Q, K, V its all-to-alls brought with p2p's buffers (4 × the rank's K/V bytes)."""
    if par.cp == 1:
        return 0.0
    comm = par.cp_exchange
    if comm == "a2a":
        return a2a_buffer_bytes(c, par, scale)
    own = kv_bytes(c, par.micro_batch, par.tp, c.seq // par.cp, scale)
    if comm == "a2a+p2p":  # the all-to-alls' buffers, or the ring's over the Q, K, V they brought (its inputs)
        return max(a2a_buffer_bytes(c, par, scale), sum(b for _, b in a2a_messages(c, par, scale)[:3]) + 4 * own)
    return 4 * own if comm == "p2p" else (par.cp - 1) * own


__all__ = ["exchange", "exchange_sent_bytes", "flash_steps", "gathered_bytes", "kv_bytes", "rank_causal_pairs", "rank_chunks", "rank_config",
           "received_bytes", "ring_exposed", "ring_sends", "with_exchange"]
