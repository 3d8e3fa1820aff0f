"""Why a TP, CP or EP degree cannot split a model as Megatron-LM and TransformerEngine split it: the layout checks
that :func:`archsim.training.parallel.check_fits`, the search's rejections and the error messages share. Each
returns '' (None: :func:`ep_layout_problem`) when the split runs, else the one-line reason with the degrees that would."""

from __future__ import annotations

from archsim.console import setting
from archsim.workload.transformer import TransformerConfig


def a2a_heads_problem(c: TransformerConfig, tp: int, cp: int, comm: str = "a2a") -> str:
    """Why the all-to-all cannot split ``c``'s heads over CP ('' when it can): each TP rank's query heads and
    K/V heads must both divide by CP (TransformerEngine's assertion in ``AttnFuncWithCPAndQKVOA2A.forward``);
    ``comm`` a2a+p2p: by its inner group's ``cp`` = A ranks (``flash_attn_a2a_communicate`` views the heads as A
    equal parts)."""
    heads, kv = c.heads // tp, c.kv_heads // tp
    if cp == 1 or (heads % cp == 0 and kv % cp == 0):
        return ""
    name, why = ("CP", "TransformerEngine asserts it") if comm == "a2a" else \
        ("A", "TransformerEngine splits them in A equal parts")
    fits = [n for n in range(2, kv + 1) if heads % n == 0 and kv % n == 0]
    named = [str(n) for n in fits]
    offer = f"{name} {' or '.join([', '.join(named[:-1]), named[-1]] if len(named) > 1 else named)} does, or " \
        if fits else ""
    where = f"CP {cp}" if comm == "a2a" else f"its all-to-all group of A = {cp} ranks ({setting('cp-hierarchy')} A P)"
    return (f"{setting('cp-comm', comm)} splits each TP rank's {heads} query and {kv} key/value heads over {where}: "
            f"{name} must divide both ({why}; it does not replicate K/V heads): {offer}"
            f"use {setting('cp-comm', 'p2p')} or all_gather")


def cp_problem(c: TransformerConfig, cp: int, attention: str, tp: int = 1, cp_comm: str = "p2p",
               hierarchy: tuple[int, int] | None = None) -> str:
    """Why context parallelism ``cp`` cannot run ``c`` ('' when it can): Megatron-LM's load-balanced causal
    split needs the sequence in 2·CP equal chunks; TransformerEngine runs CP only in its flash/fused attention
    (its unfused attention asserts it); a sliding window and Switch's encoder-decoder are not modelled;
    ``cp_comm`` a2a splits each TP rank's query and K/V heads over CP (:func:`a2a_heads_problem`), a2a+p2p over its inner group of A = ``hierarchy[0]`` ranks."""
    if cp == 1:
        return ""
    if c.seq % (2 * cp):
        fits = [n for n in range(2, min(c.seq // 2, 4 * cp) + 1) if c.seq % (2 * n) == 0]
        near = sorted(sorted(fits, key=lambda n: abs(n - cp))[:2])
        return (f"CP {cp} must split the sequence of {c.seq} tokens into 2 × CP = {2 * cp} equal chunks "
                f"(Megatron-LM's load-balanced causal split): " +
                (f"CP {or_list(near)} does" if near else f"no CP above 1 splits {c.seq} tokens so"))
    if attention != "flash":
        return (f"CP {cp} runs in TransformerEngine's flash attention only, not {setting('attention', attention)}: "
                f"give {setting('attention', 'flash')} (the default) or drop {setting('cp')}")
    if c.family == "switch" or c.sliding_window or c.family == "bert":
        return f"CP {cp} is modelled for causal decoders without a sliding window, not {c.name}"
    if cp_comm == "a2a+p2p" and hierarchy:
        return a2a_heads_problem(c, tp, hierarchy[0], cp_comm)
    return a2a_heads_problem(c, tp, cp) if cp_comm == "a2a" else ""


def tp_split_problem(c: TransformerConfig, tp: int) -> str:
    """Why TP ``tp`` cannot split ``c``'s layers as Megatron-LM splits them ('' when it can): the heads,
    the key/value heads (query groups: Megatron-Core's ``divide(num_query_groups, world_size)`` asserts that
    TP divides them, so Llama-3-8B's 8 KV heads take TP ≤ 8) and the FFN width each divide over TP."""
    if c.heads % tp or c.kv_heads % tp or c.ffn % tp:
        return (f"TP {tp} must divide the heads ({c.heads}), the key/value heads ({c.kv_heads}: Megatron-LM splits "
                f"the query groups over TP) and the FFN width ({c.ffn}): TP "
                f"{or_list(t for t in range(1, c.heads + 1) if not (c.heads % t or c.kv_heads % t or c.ffn % t))} "
                "divides all three")
    return ""


def or_list(values, conjunction: str = "or") -> str:
    """``1, 2, 4 or 8``: the counts an error offers as its fix (``3 and 5`` with ``conjunction`` "and": those it
    refuses)."""
    words = [str(v) for v in values]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} {conjunction} {words[-1]}"


def ep_layout_problem(dp: int, ep: int, cp: int = 1, fsdp: bool = False, tp: int = 1,
                      etp: int | None = None) -> str | None:
    """Why EP ``ep`` at ETP ``etp`` (None: TP) cannot be carved from a layout (one line), or None. Megatron-Core
    (``parallel_state.initialize_model_parallel``) carves the expert groups from each pipeline rank's TP·CP·DP
    GPUs as ETP × EP × expert-DP (its expert rank generator has no CP) and raises unless ETP·EP·PP divides the
    world: ETP·EP must divide TP·CP·DP (CP·DP alone at ETP = TP); FSDP beside EP or ETP ≠ TP is not modelled."""
    expert_tp = tp if etp is None else etp
    if ep == 1 and expert_tp == tp:
        return None
    if fsdp:
        return f"expert parallelism (EP, ETP) is not modelled with {setting('fsdp')}"
    if (tp * cp * dp) % (expert_tp * ep):
        return (f"Megatron-Core carves the expert groups from the TP × CP × DP GPUs: ETP × EP ({expert_tp} × {ep}) "
                f"must divide TP × CP × DP ({tp} × {cp} × {dp})")
    return None


def one_chunk_advice(schedule: str, chunks: int, reason: str) -> str:
    """What a refusal of interleaved 1F1B for fewer micro-batches than PP, or of interleaved ZB off its rounds of PP,
    adds at one model chunk a rank ('' else): Megatron-LM runs the first as plain 1F1B, which takes any m
    (``validate_args`` sets a virtual pipeline size of 1 to None, and ``get_forward_backward_func`` then runs
    ``forward_backward_pipelining_without_interleaving``, whose warm-up is min(PP − rank − 1, m)), the second runs
    ZB-H1's order (``layout_notes.ONE_CHUNK_RUNS``), which takes any m too, so the run the user meant is the plain
    schedule by its own name, as ``search`` asks (its ``--chunks 1`` refused: the plain schedules are searched by
    their names); the refusal, its reason and every run the rule allows stay as they were."""
    plain = {"interleaved-1f1b": ("interleave-needs-pp-microbatches", "1f1b", "at least PP micro-batches",
                                  "Megatron-LM runs plain 1F1B, which takes fewer micro-batches than PP"),
             "interleaved-zb": ("interleave-needs-microbatches-multiple-of-pp", "zb-h1", "a multiple of PP micro-batches",
                                "its order is ZB-H1's, which takes any number of micro-batches")}.get(schedule)
    if plain is None or chunks != 1 or reason != plain[0]:
        return ""
    return (f"; with one model chunk per rank ({setting('interleave', 1)}) {plain[3]}: give "
            f"{setting('schedule', plain[1])}, or {setting('interleave', placeholder='V')} of 2 or more with {plain[2]}")


__all__ = ["a2a_heads_problem", "cp_problem", "ep_layout_problem", "one_chunk_advice", "or_list", "tp_split_problem"]
