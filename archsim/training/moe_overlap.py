"""A mixture of experts' all-to-alls overlapped with compute, as Megatron-Core runs its two switches (Megatron-LM
commit d98e8a6; read, not copied):

* ``--overlap-moe-expert-parallel-comm`` (``ModelParallelConfig.overlap_moe_expert_parallel_comm``, the "1F1B A2A
  overlap"): in the steady state of the pipeline each step merges one micro-batch's forward with another's backward
  (``pipeline_parallel/combined_1f1b.py``; ``models/common/model_chunk_schedule_plan.py``,
  ``TransformerModelChunkSchedulePlan.run``: forward layer i beside backward layer n − 1 − i of the backward's chunk,
  for min(n_f, n_b) layers, the rest alone; ``TransformerLayerSchedulePlan.run``: the dispatch and combine run on a
  communication stream while the other pass's attention and MLP run on the compute stream). archsim prices one
  paired layer as its two all-to-alls each hidden under the partner pass's compute up to that compute's length:
  the forward's dispatch + combine (``ep_forward``) under the backward layer's compute (I, W, its TP and CP
  collectives, recompute) and the backward's (``ep_backward``) under the forward layer's compute, hidden
  min(a·C/C′, C) each, C′ the compute with its ops on the SMs NCCL's all-to-all leaves them
  (:mod:`archsim.training.comm_sms`; min(a, C) until 2026-12-04, the SMs free). A rank's unpaired passes keep
  their all-to-alls: Megatron's warm-up runs ``get_pp_rank_microbatches``' forwards alone, (PP − r − 1)·2 + (v − 1)·PP
  + 1 of them at VPP v (the +1 "to ensure the forward and backward computations are independent"; the group size
  ``microbatch_group_size_per_vp_stage`` at its default, PP), and the cool-down's backwards alone; without a pipeline
  (``combined_1f1b_schedule_for_no_pipelining``) the first forward and the last backward. Forward k after the
  warm-up pairs with backward k, each in archsim's published order of the rank, where backward k runs just before
  forward k + w. The overlap is simulated: each merged step's hidden seconds come off its forward action before
  train's event simulator runs the pipeline (:func:`paired_seconds`), so the pair ends b + f − h after it starts, as
  Megatron's merged step does (``TransformerModelChunkSchedulePlan.run`` calls ``post_forward`` and
  ``post_backward``, the P2P sends, after the last layer), a rank that hides seconds hands its tensors to its
  neighbours sooner, and the timeline's makespan is the iteration; they come off the rank's exposed EP time too
  (:func:`paired_hidden`). archsim's backward still sends its gradient at the end of its own action, before the
  forward beside it ends (Megatron sends it at the step's end). The search's closed forms take each rank's seconds
  off its own steady state, an estimate (:func:`archsim.training.search_cost.overlap_hidden`).
  ``transformer_config.py``'s ``__post_init__`` refuses it without EP (> 1), with a dispatcher other than alltoall/flex (archsim's is alltoall), with full recompute or any
  ``--recompute-method``, outside bf16 and fp16, beside ``--moe-shared-expert-overlap``, and at PP > 1 without a
  virtual pipeline (``virtual_pipeline_model_parallel_size``: archsim's ``--interleave`` > 1 on 1F1B): each
  refused in one line (:func:`overlap_problem`). Not modelled: the warm-up's extra forward in flight (one more
  micro-batch's activations held), NCCL's share of HBM bandwidth beside the compute.
* ``--moe-shared-expert-overlap`` (``TransformerConfig.moe_shared_expert_overlap``; ``moe/shared_experts.py``,
  ``SharedExpertMLP``: its fc1 and activation on a side stream while the dispatch all-to-all runs, its fc2 while the
  combine runs): the forward's dispatch hidden under the shared expert's fc1 + SwiGLU, its combine under fc2, each up
  to that compute's length, slowed on the SMs NCCL leaves (:func:`shared_overlap`). Megatron refuses it with a dispatcher other than alltoall/flex
  (never here) and beside the 1F1B overlap; without a shared expert it does nothing, so archsim refuses it
  there (:func:`shared_problem`; until 2026-12-05 it ran unchanged, unsaid, on dense and Mixtral-like models). The
  backward's all-to-alls stay exposed (the shared expert's backward is not scheduled against them).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from archsim.console import setting, switch_on
from archsim.errors import InputError
from archsim.policies.stage_orders import megatron_group
from archsim.training.comm_sms import hidden_seconds
from archsim.training.parallel import Parallelism, layers_per_stage, rank_of_stages
from archsim.workload.layer_kinds import layer_kinds
from archsim.workload.transformer import TransformerConfig

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from archsim.policies.actions import StageOrder
    from archsim.training.piece_cost import PieceCost

A2A_FLAG = "overlap-moe-expert-parallel-comm"
SHARED_FLAG = "moe-shared-expert-overlap"


def with_overlap(c: TransformerConfig, a2a: bool, shared: bool) -> TransformerConfig:
    """``c`` trained with ``--overlap-moe-expert-parallel-comm`` (``a2a``) and ``--moe-shared-expert-overlap``
    (``shared``); both off: ``c`` itself."""
    if not a2a and not shared:
        return c
    out = replace(c, overlap_moe_expert_parallel_comm=a2a, moe_shared_expert_overlap=shared)
    problem = shared_problem(out)
    if problem:  # said once, before any layout, run or sweep point is read (not at a runs file's first row)
        raise InputError(problem, field=SHARED_FLAG)
    return out


def shared_problem(c: TransformerConfig) -> str | None:
    """Why ``c``'s ``--moe-shared-expert-overlap`` would change no figure, or None: there is no shared expert to hide
    the all-to-alls under (a dense model, or a mixture whose experts are all routed, Mixtral's)."""
    if not c.moe_shared_expert_overlap or c.shared_expert_ffn:
        return None
    kind = "is dense" if not c.moe else "has no shared expert (its experts are all routed)"
    return (f"{switch_on(SHARED_FLAG)} hides the all-to-alls under a shared expert's compute; {c.name} {kind}, so it "
            "would change nothing: drop it")


def overlap_rule(c: TransformerConfig, ep: int, pp: int, schedule: str, recompute: str) -> tuple[str, str] | None:
    """(search's rejection code, the one-line reason) why Megatron-Core refuses ``c``'s 1F1B all-to-all overlap on a
    layout of EP ``ep``, PP ``pp``, published order ``schedule`` and ``recompute``, or None (off, or it runs)."""
    if not c.overlap_moe_expert_parallel_comm:
        return None
    flag = switch_on(A2A_FLAG)
    if not c.moe or ep == 1:
        return "a2a-overlap-needs-ep", (f"{flag} overlaps expert parallelism's all-to-alls: it needs EP > 1 "
                                        "(Megatron-Core asserts it)")
    if pp > 1 and schedule != "interleaved-1f1b":
        runs = "plain 1F1B" if schedule == "1f1b" else schedule
        return "a2a-overlap-needs-interleaving", (
            f"{flag} at PP > 1 runs in Megatron-Core's interleaved 1F1B only (it asserts a virtual pipeline size), "
            f"not {runs}: give {setting('interleave', placeholder='2')} or more on {setting('schedule', '1f1b')}")
    if recompute == "full":
        return "a2a-overlap-beside-full-recompute", (f"{flag} refuses full recomputation (Megatron-Core asserts it): "
                                                     f"{setting('recompute', 'none')} or selective")
    return None


def config_problem(c: TransformerConfig, dtype: str) -> tuple[str, str] | None:
    """(the flag, the one-line reason) Megatron-Core refuses ``c``'s switches in ``dtype`` whatever the layout: both
    together, or the 1F1B overlap outside bf16 and fp16; or None. The shared-expert overlap on a model without a
    shared expert (a dense one, or a mixture whose experts are all routed, Mixtral's) would change no figure: refused
    too, as the other expert flags are on a dense model, rather than run as if it were not given."""
    shared = shared_problem(c)
    if shared:
        return SHARED_FLAG, shared
    if not c.overlap_moe_expert_parallel_comm:
        return None
    flag = switch_on(A2A_FLAG)
    if c.moe_shared_expert_overlap:
        return SHARED_FLAG, f"{switch_on(SHARED_FLAG)} and {flag} exclude each other (Megatron-Core asserts it)"
    if dtype not in ("bf16", "fp16"):
        return A2A_FLAG, f"{flag} runs in bf16 or fp16 only (Megatron-Core asserts it), not {dtype}"
    return None


def overlap_problem(c: TransformerConfig, par: Parallelism, dtype: str) -> tuple[str, str] | None:
    """(the flag, the one-line reason) Megatron-Core refuses ``c``'s overlap switches on ``par`` in ``dtype``, or None
    (``transformer_config.py``'s ``__post_init__`` asserts, d98e8a6): :func:`config_problem`, then
    :func:`overlap_rule`."""
    rule = overlap_rule(c, par.ep, par.pp, par.schedule_name, par.recompute)
    return config_problem(c, dtype) or (rule and (A2A_FLAG, rule[1]))


def check_config(c: TransformerConfig, dtype: str) -> None:
    """:func:`config_problem` as an :class:`~archsim.errors.InputError` on its flag: a search's, once."""
    problem = config_problem(c, dtype)
    if problem:
        raise InputError(problem[1], field=problem[0])


def check_overlap(c: TransformerConfig, par: Parallelism, dtype: str) -> None:
    """:func:`overlap_problem` as an :class:`~archsim.errors.InputError` on its flag."""
    problem = overlap_problem(c, par, dtype)
    if problem:
        raise InputError(problem[1], field=problem[0])


def _rows(layer: PieceCost, prefix: str, kind: str) -> float:
    """Seconds of ``layer``'s rows of pass ``kind`` whose name starts with ``prefix``."""
    return sum(t for name, k, t in layer.ops if k == kind and name.startswith(prefix))


def shared_overlap(layer: PieceCost) -> PieceCost:
    """``layer`` with its forward's dispatch hidden under the shared expert's fc1 and SwiGLU and its combine under
    fc2, each up to that compute's seconds (``--moe-shared-expert-overlap``); unchanged without a shared expert."""
    fc1 = _rows(layer, "shared_expert.fc1", "F") + _rows(layer, "shared_expert.swiglu", "F")
    fc2 = _rows(layer, "shared_expert.fc2", "F")
    if not fc1 + fc2:
        return layer
    up = layer.share("F", ("shared_expert.fc1", "shared_expert.swiglu"))  # on the SMs NCCL leaves (comm_sms.py)
    down = layer.share("F", "shared_expert.fc2")
    hidden = (hidden_seconds(_rows(layer, "moe.dispatch (", "F"), fc1, up)
              + hidden_seconds(_rows(layer, "moe.combine (", "F"), fc2, down))
    return replace(layer, ep_forward=layer.ep_forward - hidden)


def pair_hidden(forward: PieceCost, backward: PieceCost) -> float:
    """Seconds of all-to-all one paired layer hides: ``forward``'s under ``backward``'s compute and ``backward``'s
    under ``forward``'s, each at most that compute's seconds, the compute's ops slowed on the SMs the all-to-all
    leaves them (:func:`~archsim.training.comm_sms.hidden_seconds`)."""
    fwd_compute = forward.forward + forward.tp_forward + forward.cp_forward
    bwd_compute = (backward.backward_input + backward.backward_weight + backward.recompute + backward.tp_backward
                   + backward.cp_backward)
    return (hidden_seconds(forward.ep_forward, bwd_compute, backward.backward_share)
            + hidden_seconds(backward.ep_backward, fwd_compute, forward.forward_share))


def warmup_forwards(par: Parallelism, rank: int) -> int:
    """The forwards rank ``rank`` runs alone before its first paired step: 1 without a pipeline, else Megatron's
    interleaved warm-up, (PP − r − 1)·2 + (v − 1)·N, plus the overlap's one (N: its group of micro-batches,
    :func:`~archsim.policies.stage_orders.megatron_group`, PP where PP divides m)."""
    if par.pp == 1:
        return 1
    return (par.pp - rank - 1) * 2 + (par.chunks - 1) * megatron_group(par.pp, par.microbatches) + 1


def paired_seconds(c: TransformerConfig, par: Parallelism, order: StageOrder,
                   pieces: Sequence[Mapping[str, PieceCost]]) -> np.ndarray | None:
    """Per action of ``order`` (its columns' order), the all-to-all seconds its merged step hides, on the paired
    forward (None with the switch off): forward k + w (w: :func:`warmup_forwards`) beside backward k in the rank's
    order, each paired layer :func:`pair_hidden` on the rank's pieces (``pieces[r]``, by layer kind). In archsim's
    published orders backward k runs just before forward k + w, so the pair ends b + f − h after it starts, as
    Megatron's merged step does (it sends both passes' tensors at its end); the backward's gradient leaves at the
    end of its own action, as every action's output does."""
    if not c.overlap_moe_expert_parallel_comm:
        return None
    chunks = par.pp * par.chunks
    counts = layers_per_stage(c.layers, chunks, par.stage_layers)
    kinds = layer_kinds(c)
    starts = [sum(counts[:j]) for j in range(chunks)]
    stage_layers = [kinds[s:s + n] for s, n in zip(starts, counts, strict=True)]
    cols = order.columns
    bounds = cols.bounds
    rank_of = rank_of_stages(par)
    out = np.zeros(len(cols.stage))
    for r in range(par.pp):
        lo, hi = int(bounds[r]), int(bounds[r + 1])
        forward = cols.kind[lo:hi] == 0  # F is code 0, B 3 (archsim.sim.builder.KINDS)
        forwards, backwards = lo + np.flatnonzero(forward), lo + np.flatnonzero(~forward)
        mine = pieces[r]
        for at, b in zip(forwards[warmup_forwards(par, r):].tolist(), backwards.tolist()):
            f_stage, b_stage = int(cols.stage[at]), int(cols.stage[b])
            assert rank_of[f_stage] == r and rank_of[b_stage] == r
            lf, lb = stage_layers[f_stage], stage_layers[b_stage]
            out[at] = sum(pair_hidden(mine[lf[i]], mine[lb[len(lb) - 1 - i]]) for i in range(min(len(lf), len(lb))))
    return out


def rank_hidden(order: StageOrder, seconds: np.ndarray | None) -> tuple[float, ...]:
    """Per rank of ``order``, the sum of its actions' hidden ``seconds`` (:func:`paired_seconds`; None: all 0)."""
    ranks = len(order.columns.lengths)
    if seconds is None:
        return (0.0,) * ranks
    return tuple(float(x) for x in np.bincount(order.columns.rank, weights=seconds, minlength=ranks))


def paired_hidden(c: TransformerConfig, par: Parallelism, order: StageOrder,
                  pieces: Sequence[Mapping[str, PieceCost]]) -> tuple[float, ...]:
    """Per pipeline rank, the all-to-all seconds its paired steps hide (all 0 with the switch off): its actions'
    :func:`paired_seconds` summed."""
    return rank_hidden(order, paired_seconds(c, par, order, pieces))


__all__ = ["A2A_FLAG", "SHARED_FLAG", "check_config", "check_overlap", "config_problem", "overlap_problem", "overlap_rule",
           "pair_hidden", "paired_hidden", "paired_seconds", "rank_hidden", "shared_overlap", "shared_problem",
           "warmup_forwards", "with_overlap"]
