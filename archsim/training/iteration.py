"""One training iteration on a GPU cluster: per-stage op times → pipeline schedule → DP all-reduce
and optimizer step.

1. Each pipeline (virtual) stage's forward F, input-backward I and weight-backward W per micro-batch
   are the sums of its ops' times on the GPU (:func:`archsim.devices.gpu_cost.op_seconds`) and of
   its tensor-parallel collectives (they run on the compute stream, between the GEMMs, as Megatron
   issues them). A pass is host-bound when its ops are issued slower than the GPU runs them:
   each pass (forward, recompute, backward) takes max(GPU time, ops × ``efficiency.host_s``).
   Recomputation adds the forward again to I: all of a layer's forward (``full``) or
   its attention core (``selective``).
2. The stages' action order is the published schedule's (:func:`archsim.policies.stage_orders.published_order`:
   1F1B, interleaved with v chunks, zero-bubble…), timed in archsim's event simulator
   (:func:`archsim.policies.stage_run.run_order`) with a pipeline hop of s·b·h·2/t bytes (Megatron
   scatters the activation over the TP ranks) on the pipeline link.
3. After its last backward each stage all-reduces its gradients over DP (``dp_overlap = "none"``, as
   vTrain's runs; ``"bucketed"``: Megatron's buckets under the last micro-batch's backward,
   :mod:`archsim.training.dp_overlap`), the first and last stage all-reduce the tied embedding's gradient, and
   the optimizer step reads and writes 32 bytes per parameter (fp16 gradient; fp32 master weight,
   momentum and variance read and written; fp16 weight written; the overflow check and norm read
   the gradient twice more; in fp32, 28: weight, gradient, momentum and variance read, all but the
   gradient written). The iteration ends when the slowest stage has stepped.

In fp32 (``Machine.dtype``) every fp16 byte count of the op lists, messages and activations doubles,
and on a catalog GPU each op is timed by the fp32 kernel model (:func:`machine_op_seconds`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from archsim.collectives import LinkClass, collective_seconds
from archsim.devices.catalog import chip_of
from archsim.devices.device import DTYPES, ELEMENT_BYTES, Device
from archsim.devices.gpu_cost import Efficiency, memory_seconds, op_seconds
from archsim.devices.kernel_ops import op_kernel_seconds, stream_seconds
from archsim.devices.kernels import FITTED, KernelConstants
from archsim.errors import InputError
from archsim.lowering import TrainingOp
from archsim.training.dp_overlap import dp_allreduce_seconds
from archsim.training.eager_ops import (
    EAGER_ACCUMULATE_BYTES_PER_PARAMETER,
    EAGER_OPTIMIZER_BYTES_PER_PARAMETER,
    GPT_LAYER_TENSORS,
    IMPLEMENTATIONS,
    check_eager,
    eager_block_work,
    eager_embedding_work,
    eager_head_work,
)
from archsim.training.hf_ops import check_hf, hf_block_work, hf_embedding_work, hf_head_work
from archsim.training.layer_ops import Collective, Work, block_work, embedding_work, head_work
from archsim.training.memory import StageMemory, stage_memory
from archsim.training.parallel import Parallelism, layers_per_stage, padded_vocab
from archsim.workload.transformer import TransformerConfig

OPTIMIZER_BYTES_PER_PARAMETER = 32
FP32_OPTIMIZER_BYTES_PER_PARAMETER = 28  # fp32 Adam: weight, gradient, momentum, variance read; three written
ATTENTION_CORE = ("scores", "softmax", "attn_dropout", "context", "softmax.to_fp32", "softmax.scale", "softmax.mask",
                  "softmax.to_fp16", "mask_fill")


@dataclass(frozen=True)
class Links:
    """The link class each parallel group communicates over; ``pp`` the pipeline's slowest hop,
    ``pp_hops`` (when known) each hop's: rank r to rank r + 1, the last rank's to rank 0 (an
    interleaved pipeline's wrap) — NVLink where both ranks' GPUs share a server."""

    tp: LinkClass
    pp: LinkClass
    dp: LinkClass
    pp_hops: tuple = ()


@dataclass(frozen=True)
class Machine:
    """A device (a catalog GPU or a device file, :mod:`archsim.devices.device`), its kernel constants,
    its links, the training implementation whose op list it runs — ``megatron``
    (:mod:`archsim.training.layer_ops`, the default) or ``pytorch-eager``
    (:mod:`archsim.training.eager_ops`: plain PyTorch's AMP GPT on one GPU; in fp32 Hugging Face's GPT-2
    and BERT, :mod:`archsim.training.hf_ops`) — and the ``dtype`` it trains in:
    fp16/bf16 (mixed precision, the default) or fp32 (GEMMs on a GPU's FP32 lanes, every tensor and
    message at 4 bytes per element; :data:`archsim.devices.device.DTYPES`). ``kernel_constants``: the fp32
    kernel model's constants fp32 ops on a catalog GPU are timed with (default the fitted ones;
    a benchmark passes a leave-one-GPU-out fit)."""

    gpu: Device
    efficiency: Efficiency
    links: Links
    implementation: str = "megatron"
    dtype: str = "fp16"
    kernel_constants: KernelConstants = FITTED

    @property
    def scale(self) -> float:
        """Bytes per element over fp16's 2: what the op lists' fp16 byte counts are multiplied by."""
        return ELEMENT_BYTES[self.dtype] / 2

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise InputError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}", field="dtype")
        if self.implementation not in IMPLEMENTATIONS:
            raise InputError(f"implementation must be one of {', '.join(IMPLEMENTATIONS)}, got {self.implementation!r}",
                             field="implementation")


@dataclass(frozen=True)
class PieceCost:
    """Per micro-batch seconds of one model piece: forward, δ, weight-gradient compute, recompute, and
    TP collectives in the forward and the backward; ``ops``: (name, kind, seconds) rows, each op's GPU
    time (before the host-issue floor) and each TP collective's, kind F/D/G (ops) or F/B (collectives)."""

    forward: float
    backward_input: float
    backward_weight: float
    recompute: float
    tp_forward: float
    tp_backward: float
    ops: tuple[tuple[str, str, float], ...]


def _coll_seconds(colls: tuple[Collective, ...], par: Parallelism, links: Links, scale: float = 1.0) -> float:
    return float(sum(collective_seconds(c.kind, c.bytes * scale, par.tp, links.tp) for c in colls))


def machine_op_seconds(ops: list[TrainingOp], machine: Machine) -> np.ndarray:
    """Each op's GPU seconds on ``machine``: in fp32 on a catalog GPU by the fp32 kernel model fitted on
    NeuSight's kernels (:func:`archsim.devices.kernel_ops.op_kernel_seconds`: SIMT sgemm and PyTorch's
    memory-bound kernels); fp16/bf16, and any dtype on a device file, by :func:`archsim.devices.gpu_cost.op_seconds`."""
    chip = chip_of(machine.gpu) if machine.dtype == "fp32" else None
    if chip is not None:
        return op_kernel_seconds(ops, chip, machine.dtype, machine.kernel_constants)
    return op_seconds(ops, machine.gpu, machine.efficiency, ELEMENT_BYTES[machine.dtype], machine.dtype)


def piece_cost(work: Work, par: Parallelism, machine: Machine, recompute: str) -> PieceCost:
    ops: list[TrainingOp] = [*work.forward, *work.backward]
    scale = machine.scale
    seconds = machine_op_seconds(ops, machine)
    rows = tuple((op.layer, op.kind, float(t)) for op, t in zip(ops, seconds))
    rows += tuple((f"{c.name} ({c.kind}, {c.bytes * scale / 2**20:.3g} MiB)", c.phase,
                   float(collective_seconds(c.kind, c.bytes * scale, par.tp, machine.links.tp)))
                  for c in (*work.forward_collectives, *work.backward_collectives))
    nf = len(work.forward)
    host = machine.efficiency.host_s
    tp_f = _coll_seconds(work.forward_collectives, par, machine.links, scale)
    tp_b = _coll_seconds(work.backward_collectives, par, machine.links, scale)
    # a pass takes max(GPU time, host issue time); the host-bound excess is charged to its compute
    forward = float(seconds[:nf].sum())
    forward = max(forward, host * (nf + len(work.forward_collectives)) - tp_f)
    back = [(op, float(t)) for op, t in zip(work.backward, seconds[nf:])]
    weight = sum(t for op, t in back if op.kind == "G")
    delta = sum(t for _, t in back) - weight
    delta = max(delta, host * (len(work.backward) + len(work.backward_collectives)) - tp_b - weight)
    if recompute == "full":
        redo = forward + tp_f
    elif recompute == "selective":
        core = [t for op, t in zip(work.forward, seconds[:nf]) if op.layer in ATTENTION_CORE]
        redo = max(float(sum(core)), host * len(core))
    else:
        redo = 0.0
    return PieceCost(forward, delta, weight, redo, tp_f, tp_b, rows)


@dataclass(frozen=True)
class StageTimes:
    """Per virtual stage, per micro-batch: F, I, W seconds (collectives and recompute included)."""

    forward: tuple[float, ...]
    backward_input: tuple[float, ...]
    backward_weight: tuple[float, ...]
    hop: float  # the slowest hop's seconds
    hops: tuple[float, ...] = ()  # each boundary's, virtual stage j to j + 1 (empty: every hop ``hop``)

    def path(self, p: int) -> float:
        """Seconds of the hops from the first rank to the last (boundaries 0 … p − 2): what a
        micro-batch's way down, or a gradient's way up, crosses."""
        return float(sum(self.hops[:p - 1])) if self.hops else (p - 1) * self.hop


def boundary_hops(par: Parallelism, links: Links, nbytes: float) -> tuple[float, ...]:
    """Seconds of each virtual-stage boundary's hop of ``nbytes`` (virtual stage j on rank
    :func:`~archsim.training.stage_split.rank_of_stages`): 0 where both stages sit on one rank, else
    the link between the two ranks (:attr:`Links.pp_hops`); empty without per-hop links."""
    if not links.pp_hops or par.pp == 1:
        return ()
    from archsim.training.stage_split import rank_of_stages

    rank = rank_of_stages(par)
    out = []
    for j in range(par.pp * par.chunks - 1):
        a, b = rank[j], rank[j + 1]
        link = None if a == b else links.pp_hops[a] if b == (a + 1) % par.pp else links.pp_hops[b]
        out.append(0.0 if link is None else float(collective_seconds("p2p", nbytes, 2, link)))
    return tuple(out)


def model_pieces(c: TransformerConfig, par: Parallelism, machine: Machine) -> dict[str, PieceCost]:
    """Per micro-batch costs of one transformer layer, the embedding and the head on ``machine``. They do
    not depend on PP, DP, the global batch, the schedule or the stage split, so they are computed once
    per distinct rest (``par`` with those reset) and shared: a runs file or a sweep repeats them often."""
    same = replace(par, pp=1, dp=1, global_batch=par.micro_batch, interleave=1, schedule="1f1b", stage_layers=None,
                   dp_overlap="none")
    return dict(_model_pieces(c, same, machine))


@lru_cache(maxsize=4096)
def _model_pieces(c: TransformerConfig, par: Parallelism, machine: Machine) -> dict[str, PieceCost]:
    b, t, sp = par.micro_batch, par.tp, par.sequence_parallel
    if machine.implementation == "pytorch-eager" and machine.dtype == "fp32":  # Hugging Face's modules, no AMP
        check_hf(c, t, sp, par.attention)
        return {"layer": piece_cost(hf_block_work(c, b), par, machine, par.recompute),
                "embedding": piece_cost(hf_embedding_work(c, b), par, machine, "none"),
                "head": piece_cost(hf_head_work(c, b), par, machine, "none")}
    if machine.implementation == "pytorch-eager":
        check_eager(c, t, sp)
        if par.attention != "standard":
            raise InputError("the pytorch-eager op list runs standard attention only", field="attention")
        return {"layer": piece_cost(eager_block_work(c, b), par, machine, par.recompute),
                "embedding": piece_cost(eager_embedding_work(c, b), par, machine, "none"),
                "head": piece_cost(eager_head_work(c, b), par, machine, "none")}
    return {"layer": piece_cost(block_work(c, b, t, sp, par.attention), par, machine, par.recompute),
            "embedding": piece_cost(embedding_work(c, b, t), par, machine, "none"),
            "head": piece_cost(head_work(c, b, t), par, machine, "none")}


def stage_times(c: TransformerConfig, par: Parallelism, machine: Machine,
                pieces: dict[str, PieceCost]) -> StageTimes:
    chunks = par.pp * par.chunks
    counts = layers_per_stage(c.layers, chunks, par.stage_layers)
    layer, emb, head = pieces["layer"], pieces["embedding"], pieces["head"]
    fwd, bin_, bw = [], [], []
    for j, n in enumerate(counts):
        f = n * (layer.forward + layer.tp_forward)
        i = n * (layer.backward_input + layer.recompute + layer.tp_backward)
        w = n * layer.backward_weight
        for piece, on in ((emb, j == 0), (head, j == chunks - 1)):
            if on:
                f += piece.forward + piece.tp_forward
                i += piece.backward_input + piece.tp_backward
                w += piece.backward_weight
        fwd.append(f)
        bin_.append(i)
        bw.append(w)
    hop = float(collective_seconds("p2p", hop_bytes(c, par) * machine.scale, 2, machine.links.pp)) \
        if par.pp > 1 else 0.0
    return StageTimes(tuple(fwd), tuple(bin_), tuple(bw), hop,
                      boundary_hops(par, machine.links, hop_bytes(c, par) * machine.scale))


def hop_bytes(c: TransformerConfig, par: Parallelism) -> float:
    """Bytes one pipeline hop sends per micro-batch and TP rank: the s·b·h fp16 activation over TP."""
    return c.seq * par.micro_batch * c.hidden * 2 / par.tp


def after_backward(c: TransformerConfig, par: Parallelism, machine: Machine, rank: int,
                   parameters: float, tied_ranks: tuple[int, int] | None = None,
                   backward_s: float = 0.0) -> dict[str, float]:
    """Seconds each rank spends after its last backward: DP and embedding all-reduces, optimizer.
    ``tied_ranks``: the ranks of the first and last stage (default 0 and PP − 1); when they differ and
    embeddings are tied, both all-reduce the token table's gradient. ``backward_s``: the rank's last
    micro-batch backward, under which ``par.dp_overlap = "bucketed"`` runs the DP buckets."""
    scale = machine.scale
    dp = dp_allreduce_seconds(parameters, 2 * scale, par.dp, machine.links.dp, par.dp_overlap, backward_s)
    tied = 0.0
    ends = (0, par.pp - 1) if tied_ranks is None else tied_ranks
    if ends[0] != ends[1] and c.tied_embeddings and rank in ends:
        table = padded_vocab(c.vocab, par.tp) // par.tp * c.hidden * 2
        tied = float(collective_seconds("all-reduce", table * scale, 2, machine.links.pp))
    chip = chip_of(machine.gpu) if machine.dtype == "fp32" else None
    if machine.implementation == "pytorch-eager" and machine.dtype == "fp32":  # fp32 Adam, gradients summed
        moved = (FP32_OPTIMIZER_BYTES_PER_PARAMETER + 12 * (par.microbatches - 1)) * parameters
        optimizer = (stream_seconds(moved, chip, kernels=4, constants=machine.kernel_constants) if chip is not None else
                     float(memory_seconds(moved / 4, machine.gpu, machine.efficiency, 4, kernels=4)))
    elif machine.implementation == "pytorch-eager":  # its step, and the gradients summed over micro-batches
        moved = (EAGER_OPTIMIZER_BYTES_PER_PARAMETER
                 + EAGER_ACCUMULATE_BYTES_PER_PARAMETER * (par.microbatches - 1)) * parameters
        kernels = GPT_LAYER_TENSORS * c.layers + 4 + 4  # a copy per tensor, then four multi-tensor kernels
        optimizer = float(memory_seconds(moved / 2, machine.gpu, machine.efficiency, kernels=kernels))
    else:
        per_parameter = OPTIMIZER_BYTES_PER_PARAMETER if machine.dtype != "fp32" else FP32_OPTIMIZER_BYTES_PER_PARAMETER
        optimizer = float(memory_seconds(parameters * per_parameter / 2, machine.gpu,
                                         machine.efficiency, kernels=4))
    return {"dp_allreduce": dp, "embedding_allreduce": tied, "optimizer": optimizer}


def in_flight(order) -> list[int]:
    """Per rank: the most micro-batch chunks run forward and not yet backward (B or I) at once."""
    peaks = []
    for actions in order.ranks:
        live = peak = 0
        for action in actions:
            live += 1 if action.kind == "F" else -1 if action.kind in ("B", "I") else 0
            peak = max(peak, live)
        peaks.append(peak)
    return peaks


def check_fits(c: TransformerConfig, par: Parallelism) -> None:
    if par.stage_layers is not None:
        layers_per_stage(c.layers, par.pp * par.chunks, par.stage_layers)
    elif c.layers % (par.pp * par.chunks):
        raise InputError(f"{c.layers} layers do not split into {par.pp} stages × {par.chunks} chunks",
                         field="pp")
    if c.heads % par.tp or c.ffn % par.tp:
        raise InputError(f"TP {par.tp} must divide the heads ({c.heads}) and the FFN width ({c.ffn})", field="tp")


def memories(c: TransformerConfig, par: Parallelism, order=None, scale: float = 1.0) -> list[StageMemory]:
    """Memory of one GPU of each pipeline rank (chunks of a rank summed). Without ``order``, plain 1F1B's
    in-flight counts min(p − r, m) — no schedule built, for searches over many configurations. ``scale``:
    bytes per element over fp16's (2 in fp32: the activations double; fp32 Adam's 16 bytes per
    parameter equal mixed precision's)."""
    chunks = par.pp * par.chunks
    counts = layers_per_stage(c.layers, chunks, par.stage_layers)
    if order is None:
        if par.schedule_name != "1f1b":
            raise InputError("memory without a schedule's order is 1F1B's only", field="schedule")
        peaks = [min(par.pp - r, par.microbatches) for r in range(par.pp)]
        rank_of = {j: j for j in range(par.pp)}
    else:
        peaks = in_flight(order)
        rank_of = order.rank_of_stage()
    apart = rank_of[0] != rank_of[chunks - 1]
    out = []
    for rank in range(par.pp):
        mine = [j for j in range(chunks) if rank_of[j] == rank]
        parts = [stage_memory(c, par, counts[j], max(peaks[rank] // par.chunks, 1), j == 0, j == chunks - 1, apart)
                 for j in mine]
        out.append(StageMemory(sum(p.parameters for p in parts), sum(p.states for p in parts),
                               sum(p.activations for p in parts) * scale))
    return out


def one_f_one_b_seconds(times: StageTimes, microbatches: int) -> float:
    """A closed form of 1F1B's pipeline span (one chunk per rank): the first micro-batch's forward
    through every stage, m − 1 steady steps of the slowest stage's F + B, the last backward back
    through every stage, and a hop each way between stages. Used to fit constants quickly; the
    benchmark reports how far it is from the event simulator."""
    f, b = np.asarray(times.forward), np.asarray(times.backward_input) + np.asarray(times.backward_weight)
    p = len(f)
    return float(f.sum() + b.sum() + (microbatches - 1) * (f + b).max() + 2 * times.path(p))


def stage_profile(times: StageTimes):
    from archsim.policies.stage_profile import StageProfile

    return StageProfile(times.forward, times.backward_input, times.backward_weight, times.hop,
                        boundary_comm=times.hops)


__all__ = [
    "ATTENTION_CORE",
    "FP32_OPTIMIZER_BYTES_PER_PARAMETER",
    "OPTIMIZER_BYTES_PER_PARAMETER",
    "Links",
    "Machine",
    "PieceCost",
    "StageTimes",
    "after_backward",
    "check_fits",
    "hop_bytes",
    "in_flight",
    "machine_op_seconds",
    "memories",
    "model_pieces",
    "one_f_one_b_seconds",
    "piece_cost",
    "stage_profile",
    "stage_times",
]
