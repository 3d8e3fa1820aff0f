"""A mixture of experts' MLP on one rank, as Megatron-Core trains it with ``--num-experts E``,
``--moe-router-topk k``, ``--expert-model-parallel-size EP``, ``--moe-token-dispatcher-type alltoall``,
``--moe-grouped-gemm``, dropless unless ``--moe-expert-capacity-factor C`` (below). Read from Megatron-LM (commit d98e8a6):
``megatron/core/transformer/moe/moe_layer.py`` (``MoELayer.forward``: route, dispatch, experts, combine),
``router.py`` (``TopKRouter``: the gating GEMM, softmax top-k, the load-balancing loss), ``token_dispatcher.py``
(``MoEAlltoAllTokenDispatcher``: ``dispatch_preprocess`` permutes, ``token_dispatch`` all-to-alls over the EP
group, ``dispatch_postprocess`` all-gathers over the expert-TP group when it is > 1 and sorts the chunks by local
expert when a rank holds more than one; ``combine_preprocess``, ``token_combine``, ``combine_postprocess`` the
same in reverse) and ``experts.py`` (``TEGroupedMLP``: each local expert's linear_fc1 h → 2f/ETP, SwiGLU,
linear_fc2 f/ETP → h, one grouped GEMM each).

Per micro-batch a rank routes its ``local`` tokens (T/TP under sequence parallelism, which Megatron-Core
requires for MoE with TP > 1: ``MoELayer.forward`` raises otherwise), so it permutes R = local·k rows. Under
uniform routing each rank sends (EP − 1)/EP of its R·h elements to the other EP ranks and receives as many, the
all-to-all priced by :func:`archsim.collectives.collective_seconds` on the EP group's link (CP's all-to-all's
pricing, :mod:`~archsim.training.context_parallel_a2a`); with ETP > 1 (``--expert-tensor-parallel-size``, TP by
default) the received rows are all-gathered over the ETP group, so the E/EP local experts take ETP·R rows (T·k at
ETP = TP), n = ETP·R·EP/E each (rounded up where it does not divide), and the combine reduce-scatters them back.
Backward runs the same four collectives.

A real router is uneven, even under the load-balancing loss, and the all-to-all and the layers after it wait for
the busiest EP rank. ``--moe-load-imbalance`` ρ (the busiest rank's rows over the mean, from the router's per-expert
token counts) prices every rank as that one (:func:`routed_rows`): its experts take ⌈ρ·R⌉ rows (never more than
every rank's tokens can send it, EP·local·min(k, E/EP): at EP 1 there is no other rank, ρ changes nothing), spread
evenly over its E/EP experts; the dispatch all-to-all ends when it has received them and the combine when it has sent
them back, so each is priced as an all-to-all of ⌈ρ·R⌉ rows a rank; its ETP gathers, its sort by expert, SwiGLU,
grouped GEMMs (forward, data and weight gradient) and the rows its backward keeps take them too. Its permute and
unpermute handle the rank's own tokens, the mean R: every rank routes local tokens, only where they go is uneven.

A capacity factor C (:func:`expert_capacity`) caps each expert at c = ⌈(local·k/E)·C⌉ rows from each rank; with
``--moe-pad-expert-input-to-capacity`` every expert takes exactly c from each, so the rank sends c·E rows (R's place)
and a local expert takes n = c·ETP·EP, whatever ρ; without padding the busiest rank takes min(⌈ρ·R⌉, c·E) (under
uniform routing the cap binds only at C < 1, and ρ beyond about C is dropped). The activations kept for the backward
and the zero-bubble split's M_W count the same rows (:func:`routed_rows`, one count for time and memory): padded at
C = 1.25 about 1.25 × the dropless expert rows, dropped at C < 1 fewer, ρ × them on the busiest rank. The
probabilities' all-to-all beside the tokens' (T·k values against T·k·h) and the token counts' gather are left out.

A shared expert (``--moe-shared-expert-intermediate-size f_s --moe-shared-expert-gate``; ``shared_experts.py``,
``SharedExpertMLP``: Qwen2-MoE's) is Megatron-Core's dense ``MLP`` of width f_s, split over TP as the dense MLP is
(its linear_fc1 h → 2f_s/TP on the T all-gathered tokens, SwiGLU, linear_fc2 f_s/TP → h, reduce-scattered: the
layer keeps the dense MLP's TP collectives for it), run on every token after the routed experts
(``MoELayer.forward`` adds it; ``--moe-shared-expert-overlap``: :mod:`~archsim.training.moe_overlap`); its gate is an h → 1 GEMM on the rank's local
tokens (``gate_weight`` (1, h), replicated), a sigmoid, and the output times it; DeepSeek's shared experts
(``shared_expert_gate`` False) run without the gate.

Memory-bound ops, elements each way (forward; backward):

==========================  ====================================  ==========================================
router softmax + top-k      read logits, write probs, read them   read probs, dprobs, write dlogits: 3·local·E
                            for top-k, write the routing map and
                            the dense probs: 4·local·E
load-balancing loss         read probs and map: 2·local·E         write dprobs: local·E
permute                     gather each token k times: 2·R·h      scatter-add the rows' gradient: 2·R·h
sort / unsort by expert     a copy of the ETP·ρR rows each        the same
(E/EP > 1)                  (T·k at ETP = TP, ρ 1): 2·ETP·ρR·h
SwiGLU                      as the dense MLP's: 3·ETP·ρR·f/ETP    5·ETP·ρR·f/ETP
unpermute (weighted sum)    read R·h rows, R probs, write         read dy, the rows (for dprobs), write
                            local·h: R·h + R + local·h            their gradient: local·h + 2·R·h
shared expert's SwiGLU      3·T·f_s/TP                            5·T·f_s/TP
shared expert's gate        sigmoid 2·local; × gate (read the     × gate's gradients (read dy twice, the
(sigmoid, ×, + routed)      output and gate, write) 2·local·h +   output, the gate, write both)
                            local; + routed 3·local·h             4·local·h + 2·local; sigmoid's 3·local
==========================  ====================================  ==========================================
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

from archsim.console import setting, switch_on
from archsim.errors import InputError
from archsim.lowering.gemm_arrays import check_ops_exact
from archsim.training.op_work import Collective, Work, gemm_ops, vector_op
from archsim.training.parallel import Parallelism, layers_per_stage, rank_of_stages
from archsim.validate import check_exact
from archsim.workload.layer_kinds import held_kinds
from archsim.workload.transformer import TransformerConfig


def expert_rows(c: TransformerConfig, rows: int, ep: int) -> tuple[int, int]:
    """(local experts, rows each takes) on one rank whose experts take ``rows`` in all (:func:`routed_rows` × ETP):
    E/EP experts, ⌈rows·EP/E⌉ each (uniform and dropless, ⌈T·k·EP/E⌉ for the micro-batch's T tokens at ETP = TP)."""
    local = c.experts // ep
    return local, -(-rows // local)


def expert_capacity(c: TransformerConfig, local: int) -> int | None:
    """Rows each expert takes at most from a rank routing ``local`` tokens, or None (dropless). Megatron-Core's
    ``moe_utils.get_capacity``: ⌈(local·k/E)·C⌉ (``apply_router_token_dropping`` caps the router's map with it;
    ``MoEAlltoAllTokenDispatcher.preprocess`` under ``drop_and_pad`` sends exactly that many to every expert)."""
    factor = c.moe_expert_capacity_factor
    if factor is None:
        return None
    rows = local * c.experts_per_token / c.experts * factor  # inf past a float: refused, not an OverflowError
    if not c.moe_pad_expert_input_to_capacity and rows >= local:  # a token takes an expert once: binds nothing
        return None
    check_exact(rows, "each expert's rows from a rank", _capacity_hint(c, local, rows), "moe-expert-capacity-factor")
    return math.ceil(rows)


def _capacity_hint(c: TransformerConfig, local: int, rows: float) -> str:
    """What to change when a capacity's rows (``rows`` an expert from a rank routing ``local`` tokens) reach 2⁵³
    in a count: the capacity factor, named as the caller spells it (not the array commands' advice)."""
    return (f"give a smaller {setting('moe-expert-capacity-factor')}: {c.moe_expert_capacity_factor:g} pads each "
            f"expert to ⌈(T·k/E)·C⌉ = {rows:.3g} rows from each rank (T = {local:,} tokens, k = {c.experts_per_token}, "
            f"E = {c.experts})")


def routed_rows(c: TransformerConfig, local: int, ep: int | None = None, sent: bool = False) -> int:
    """Rows the experts of the busiest EP rank take when every rank routes ``local`` tokens of a micro-batch (before
    the expert-TP all-gather), or (``sent``) the rows a rank's own tokens send. Dropless and uniform both are
    local·k; under a load imbalance ρ (``c.moe_load_imbalance``) the busiest rank takes ⌈ρ·local·k⌉ (ρ read as the
    decimal written: 1.1 × 10 rows is 11), at most the EP·local·min(k, E/EP) rows every rank's tokens can send its
    experts (``ep`` None: not bounded). A capacity c (:func:`expert_capacity`) caps each expert at c rows from each
    rank: exactly c·E padded, else min(c·E, rows). The one count the op list (:func:`moe_work`) and the memory
    (:func:`mlp_activation_bytes`, :func:`expert_weight_gradient_bytes`, fp8's) read."""
    k = c.experts_per_token
    routed = local * k
    if c.moe_load_imbalance is not None and not sent:
        routed = math.ceil(Fraction(str(c.moe_load_imbalance)) * routed)
        if ep is not None:
            routed = min(routed, ep * local * min(k, c.experts // ep))
    cap = expert_capacity(c, local)
    if cap is None:
        return routed
    return cap * c.experts if c.moe_pad_expert_input_to_capacity else min(cap * c.experts, routed)


def routing_tokens(c: TransformerConfig, micro_batch: int, tp: int, sequence_parallel: bool) -> int:
    """Tokens one rank routes in a micro-batch of ``micro_batch`` sequences: s·b, /TP under sequence parallelism
    (``c`` a CP rank's, s/CP: :func:`~archsim.training.context_parallel.rank_config`), the ``local`` that
    :func:`~archsim.training.layer_ops.block_work` hands :func:`moe_work`."""
    tokens = c.seq * micro_batch
    return tokens // tp if sequence_parallel else tokens


def _row_share(c: TransformerConfig, local: int, ep: int | None = None, sent: bool = False) -> float:
    """:func:`routed_rows` over the dropless local·k: what the capacity and the load imbalance multiply every per-row
    byte by (1 dropless and uniform)."""
    routed = local * c.experts_per_token
    return routed_rows(c, local, ep, sent) / routed if routed else 1.0


def with_capacity(c: TransformerConfig, factor: float | None, pad: bool) -> TransformerConfig:
    """``c`` trained with ``--moe-expert-capacity-factor`` ``factor`` (None: as ``c`` states) and
    ``--moe-pad-expert-input-to-capacity`` (``pad``; TransformerConfig refuses a factor ≤ 0, padding without one,
    either on a dense model)."""
    if factor is None and not pad:
        return c
    return replace(c, moe_expert_capacity_factor=c.moe_expert_capacity_factor if factor is None else factor,
                   moe_pad_expert_input_to_capacity=pad or c.moe_pad_expert_input_to_capacity)


def with_load_imbalance(c: TransformerConfig, imbalance: float | None) -> TransformerConfig:
    """``c`` trained with ``--moe-load-imbalance`` ``imbalance`` (None: as ``c`` states; TransformerConfig refuses a
    ratio below 1, or one on a dense model)."""
    return c if imbalance is None else replace(c, moe_load_imbalance=imbalance)


def padding_note(c: TransformerConfig) -> str:
    """The note that padding pads each expert beyond every token a rank routes ('' otherwise): at C·k/E > 1 the
    capacity ⌈(local·k/E)·C⌉ exceeds the rank's ``local`` tokens, more rows than any routing can send one expert
    (a token takes an expert once; C = E/k already keeps every token), so the experts take C × the routed rows, most
    of them padding. Megatron-Core runs it and archsim prices it; ``train`` prints it, ``archsim.train`` warns it."""
    factor = c.moe_expert_capacity_factor
    if factor is None or not c.moe_pad_expert_input_to_capacity or factor * c.experts_per_token <= c.experts:
        return ""
    k, e = c.experts_per_token, c.experts
    return (f"{setting('moe-expert-capacity-factor', placeholder=f'{factor:g}')} with "
            f"{switch_on('moe-pad-expert-input-to-capacity')} pads each expert to C·k/E = {factor:g}·{k}/{e} = "
            f"{factor * k / e:.3g} × the tokens a rank routes, more rows than any routing sends it (C = E/k = {e / k:g} "
            f"already keeps every token): the experts take {factor:g} × the routed rows, priced as Megatron-Core runs them")


def moe_work(c: TransformerConfig, tokens: int, local: int, tp: int, ep: int, dtype: str = "fp16",
             etp: int | None = None) -> Work:
    """The MoE MLP's ops on one rank for a micro-batch of ``tokens`` tokens (a CP rank's s·b/CP) of which it routes ``local``
    (T/TP under sequence parallelism), in forward order both ways (the caller reverses the backward), and the
    dispatcher's collectives: the all-to-alls over ``ep`` (group ``ep``, none at EP 1) and, at ETP > 1, the
    all-gather and reduce-scatter of the ETP·local·k rows over the expert-TP group (``etp``, None: TP; group
    ``tp`` at ETP = TP, else ``etp``): ``token_dispatcher.py``'s ``tp_group`` is ``pg_collection.expt_tp``. Under a
    load imbalance, the busiest EP rank's (module docstring: :func:`routed_rows`)."""
    h, e = c.hidden, c.experts
    e_tp = tp if etp is None else etp
    routed = routed_rows(c, local, ep)  # the busiest rank's experts' rows (padded: c·E, each expert c from each rank)
    sent = routed_rows(c, local, ep, sent=True)  # the rank's own tokens' rows: its permute and unpermute
    rows = routed * e_tp  # T·k rows at ETP = TP, dropless and uniform
    experts, n = expert_rows(c, rows, ep)
    f = c.expert_ffn // e_tp
    forward: list = []
    backward: list = []

    def mem(name: str, fwd: float, bwd: float) -> None:
        forward.append(vector_op(name, "F", fwd))
        backward.append(vector_op(name, "D", bwd))

    def gemm(name: str, *shape: int) -> None:
        fw, d, g = gemm_ops(name, *shape)
        forward.append(fw)
        backward.extend((d, g))

    gemm("router", local, h, e)
    mem("router_topk", 4 * local * e, 3 * local * e)
    mem("aux_loss", 2 * local * e, local * e)
    mem("permute", 2 * sent * h, 2 * sent * h)
    if experts > 1:
        mem("sort_chunks", 2 * rows * h, 2 * rows * h)
    gemm("experts.fc1", n, h, 2 * f, experts)
    mem("experts.swiglu", 3 * n * experts * f, 5 * n * experts * f)
    gemm("experts.fc2", n, f, h, experts)
    if experts > 1:
        mem("unsort_chunks", 2 * rows * h, 2 * rows * h)
    mem("unpermute", sent * h + sent + local * h, local * h + 2 * sent * h)
    if c.shared_expert_ffn:  # SharedExpertMLP on every token: the dense MLP's GEMMs over TP (Qwen2-MoE: × sigmoid(x·gate))
        fs = c.shared_expert_ffn // tp
        gemm("shared_expert.fc1", tokens, h, 2 * fs)
        mem("shared_expert.swiglu", 3 * tokens * fs, 5 * tokens * fs)
        gemm("shared_expert.fc2", tokens, fs, h)
    if c.shared_expert_ffn and c.shared_expert_gate:  # DeepSeek's shared experts are added ungated
        gemm("shared_expert.gate", local, h, 1)
        mem("shared_expert.gate_mul", 5 * local * h + 3 * local, 4 * local * h + 5 * local)
    a2a = routed * h * 2  # each all-to-all's buffer, 2 bytes an element: (EP − 1)/EP reaches (leaves) the rank
    gathered = rows * h * 2
    fwd: list[Collective] = []
    bwd: list[Collective] = []
    if ep > 1:
        fwd.append(Collective("moe.dispatch", "all-to-all", "ep", a2a, "F"))
        bwd.append(Collective("moe.combine", "all-to-all", "ep", a2a, "B"))
    group = "tp" if e_tp == tp else "etp"
    if e_tp > 1:
        fwd += [Collective("moe.all-gather", "all-gather", group, gathered, "F"),
                Collective("moe.reduce-scatter", "reduce-scatter", group, gathered, "F")]
        bwd += [Collective("moe.all-gather", "all-gather", group, gathered, "B"),
                Collective("moe.reduce-scatter", "reduce-scatter", group, gathered, "B")]
    if ep > 1:
        fwd.append(Collective("moe.combine", "all-to-all", "ep", a2a, "F"))
        bwd.append(Collective("moe.dispatch", "all-to-all", "ep", a2a, "B"))
    cap = expert_capacity(c, local)
    if cap is not None:  # the capacity's rows × h or f past 2⁵³: its flag named, before the cost source's check
        check_ops_exact((*forward, *backward), _capacity_hint(c, local, cap))
    return Work(tuple(forward), tuple(backward), tuple(fwd), tuple(bwd))


def moe_rule(c: TransformerConfig, tp: int, ep: int, sequence_parallel: bool,
             implementation: str = "megatron", etp: int | None = None) -> tuple[str, str] | None:
    """(search's rejection code, one-line reason) why a layout cannot train ``c`` with expert parallelism as
    Megatron-Core runs it, or None: EP on a dense model, experts EP does not divide (Megatron's
    ``num_experts % expert_model_parallel_size`` assert), MoE with TP > 1 but no sequence parallelism
    (``MoELayer.forward`` raises), a mixture of experts on another implementation's op list (archsim's eager
    and Hugging Face lists are dense); ETP (``etp``, None: TP) other than TP on a dense model; an expert FFN width ETP
    does not divide (or a shared expert's TP does not)."""
    if not c.moe:  # a config.json of another model_type (llama, mistral) states experts archsim does not read
        if etp is not None and etp != tp:
            return "etp-needs-experts", dense_refusal(c, f"ETP {etp}")
        return ("ep-needs-experts", dense_refusal(c, f"EP {ep}")) if ep > 1 else None
    if c.experts % ep:
        return "ep-divides-experts", f"EP {ep} does not divide the {c.experts} experts (Megatron-Core asserts it)"
    e_tp = tp if etp is None else etp
    if c.expert_ffn % e_tp or c.shared_expert_ffn % tp:  # Megatron-Core's divide() asserts each width over its group
        widths = f"the experts' FFN width ({c.expert_ffn}) over {'ETP' if etp is not None else 'TP'} {e_tp}" + (
            f" and the shared expert's ({c.shared_expert_ffn}) over TP {tp}" if c.shared_expert_ffn else "")
        return "etp-divides-expert-ffn", f"{widths} must divide (Megatron-Core splits each expert's fc1 and fc2 there)"
    if tp > 1 and not sequence_parallel:
        return "moe-needs-sequence-parallel", ("Megatron-Core trains a mixture of experts at TP > 1 only with "
                                               f"sequence parallelism: add {switch_on('sequence-parallel')}")
    if implementation != "megatron":
        return ("moe-needs-megatron",
                f"a mixture of experts is modelled on Megatron-Core's op list only, not {implementation}'s")
    return None


def dense_refusal(c: TransformerConfig, degree: str) -> str:
    """The line refusing an expert layout (``degree``: ``"EP 2"``, ``"ETP 1"``) on the dense model ``c``."""
    from archsim.workload.hf_config import MOE_READ

    kinds = [*MOE_READ, "deepseek_v2", "deepseek_v3"]  # hf_deepseek.py reads DeepSeek's experts
    return (f"{degree} needs a mixture-of-experts model; {c.name} is dense (experts are read from a config.json of "
            f"model_type {', '.join(kinds[:-1])} or {kinds[-1]} only)")


def moe_problem(c: TransformerConfig, par: Parallelism, implementation: str = "megatron") -> str | None:
    """:func:`moe_rule`'s reason for ``par``'s layout, or None."""
    rule = moe_rule(c, par.tp, par.ep, par.sequence_parallel, implementation, par.etp)
    return rule[1] if rule else None


def check_moe(c: TransformerConfig, par: Parallelism, implementation: str = "megatron") -> None:
    """:func:`moe_problem` as an :class:`~archsim.errors.InputError` on the setting to change (:func:`moe_field`)."""
    rule = moe_rule(c, par.tp, par.ep, par.sequence_parallel, implementation, par.etp)
    if rule:
        raise InputError(rule[1], field=moe_field(rule[0], par.etp))


def moe_field(code: str, etp: int | None) -> str:
    """The flag a :func:`moe_rule` refusal (its ``code``) names: the setting given or to give, so a runs file's row
    names its column (until 2026-12-05 every refusal but an ETP on a dense model named ``ep``)."""
    return {"etp-needs-experts": "etp", "moe-needs-sequence-parallel": "sequence-parallel", "moe-needs-megatron":
            "implementation", "etp-divides-expert-ffn": "tp" if etp is None else "etp"}.get(code, "ep")


def mlp_activation_bytes(c: TransformerConfig, tp: int, local: int, etp: int | None = None,
                         ep: int | None = None) -> float:
    """Bytes per token of the micro-batch the MLP keeps for its backward on one of ``tp`` ranks (2 a value): a GELU
    MLP's activation and fc2 inputs (2·2·ffn/t), a gated one's gate and up outputs and their product (2·3·ffn/t);
    a mixture of experts' k routed rows as its experts take them (the fc1 input 2·h, its gate and up output
    2·2f/t, SwiGLU's product 2·f/t; at ETP ≠ TP a rank takes ETP/TP of them, each f/ETP wide), the k permuted
    rows of the T/t tokens it routes, which unpermute keeps (2·k·h/t), and the router's fp32 probabilities (4·E/t);
    a shared expert's gate and up outputs and product (2·3·f_s/t, as a dense MLP's) and, gated (Qwen2-MoE's, not
    DeepSeek's), its output and sigmoid's, which the gate's multiply keeps (2·(h + 1)/t). Under a capacity or a load imbalance the rows are :func:`routed_rows`
    of the ``local`` tokens the rank routes (:func:`routing_tokens`; at EP ``ep``), not local·k: k becomes
    k·rows/(local·k) — the busiest rank's rows for its experts', the rank's own for the permuted rows."""
    if not c.moe:
        return 2 * (3 if c.family == "llama" else 2) * (c.ffn // tp)
    e_tp = tp if etp is None else etp
    k, f = c.experts_per_token, c.expert_ffn // e_tp
    taken, sent = k * _row_share(c, local, ep), k * _row_share(c, local, sent=True)
    gate = 2 * (c.hidden + 1) / tp if c.shared_expert_gate else 0.0
    shared = 6 * (c.shared_expert_ffn // tp) + gate if c.shared_expert_ffn else 0.0
    return taken * (2 * c.hidden + 6 * f) * e_tp / tp + (2 * sent * c.hidden + 4 * c.experts) / tp + shared


def expert_weight_gradient_bytes(c: TransformerConfig, tp: int, sequence_parallel: bool, local: int,
                                 etp: int | None = None, ep: int | None = None) -> float:
    """M_W of a mixture's MLP, bytes per token of the micro-batch on one rank (2 an element): each weight GEMM's input
    and output gradient, as the zero-bubble split holds them from I to W. The router's input (the norm output, h) and
    its logits' gradient (E), for the rank's tokens (1/TP of them under sequence parallelism); the experts' rows as
    the grouped GEMMs' W reads them (TE's ``GroupedLinear`` keeps each GEMM's input and output gradient): per row
    fc1's input (the permuted row, h) and output gradient (SwiGLU's input's, 2f/ETP), fc2's input (SwiGLU's output,
    f/ETP) and output gradient (h), on the k·ETP rows a token's share takes (/TP under SP; k at ETP = TP; under a
    capacity or a load imbalance k·rows/(local·k), :func:`routed_rows` of the ``local`` tokens routed, at EP ``ep``);
    a shared expert's as a dense SwiGLU MLP's, and its gate's output gradient where it has a gate."""
    e_tp = tp if etp is None else etp
    split = tp if sequence_parallel else 1
    router = 2 * (c.hidden + c.experts) / split
    rows = c.experts_per_token * _row_share(c, local, ep) * e_tp / split
    # a shared expert: its fc1's output gradient and fc2's input (2·3f_s/TP), fc2's output gradient (2h, whole as the
    # dense MLP's) and its gate's (2, on local tokens); fc1's and the gate's input is the router's, counted above
    gate = 2 / split if c.shared_expert_gate else 0.0
    shared = 6 * (c.shared_expert_ffn // tp) + 2 * c.hidden + gate if c.shared_expert_ffn else 0.0
    return router + rows * 2 * (2 * c.hidden + 3 * (c.expert_ffn // e_tp)) + shared


def etp_kept(c: TransformerConfig, par: Parallelism, kept: float, unscaled: float,
             working: tuple[float, float] | None) -> tuple[float, float, tuple[float, float] | None]:
    """A layer's kept activations, their unscaled part and its working set
    (:func:`~archsim.training.layer_activations.layer_kept`, counted at ETP = TP and a load imbalance not bounded by
    EP) at ``par``'s ETP and EP: the experts' rows' bytes change by s·b·(:func:`mlp_activation_bytes` at ETP and EP −
    at TP); under full recompute they are the rerun layer's (the working set), else kept."""
    if not c.moe or (par.expert_tp == par.tp and c.moe_load_imbalance is None):
        return kept, unscaled, working
    local = routing_tokens(c, par.micro_batch, par.tp, par.sequence_parallel)
    delta = c.seq * par.micro_batch * (mlp_activation_bytes(c, par.tp, local, par.expert_tp, par.ep)
                                       - mlp_activation_bytes(c, par.tp, local))
    if par.recompute != "full":
        return kept + delta, unscaled, working
    return kept, unscaled, None if working is None else (working[0] + delta, working[1])


def expert_parameters(c: TransformerConfig, par: Parallelism) -> int:
    """A rank's expert parameters per layer: its E/EP experts' gate, up and down, each split over ETP
    (3·h·f/ETP); 0 for a dense model. Their gradients are reduced over :attr:`Parallelism.expert_replicas`."""
    return c.experts // par.ep * 3 * c.hidden * (c.expert_ffn // par.expert_tp) if c.moe else 0


def rank_expert_parameters(c: TransformerConfig, par: Parallelism, rank: int) -> int:
    """Expert parameters pipeline rank ``rank`` holds: :func:`expert_parameters` times the layers of its stages."""
    if not c.moe:
        return 0
    counts = layers_per_stage(c.layers, par.pp * par.chunks, par.stage_layers)
    return expert_parameters(c, par) * held_kinds(c, counts, rank_of_stages(par), (rank,))[0]  # LAYER: its MoE ones


def expert_shards(par: Parallelism) -> int:
    """The ranks the distributed optimizer shards the experts' states over: their expert-DP group (TP·CP·DP/(ETP·EP); 1 without)."""
    return par.expert_replicas if par.distributed_optimizer else 1


__all__ = [
    "check_moe",
    "dense_refusal",
    "etp_kept",
    "expert_capacity",
    "expert_parameters",
    "expert_rows",
    "expert_shards",
    "expert_weight_gradient_bytes",
    "mlp_activation_bytes",
    "moe_field",
    "moe_problem",
    "moe_rule",
    "moe_work",
    "padding_note",
    "rank_expert_parameters",
    "routed_rows",
    "routing_tokens",
    "with_capacity",
    "with_load_imbalance",
]
