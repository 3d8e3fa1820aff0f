"""``train(...)``: one iteration's time, memory per GPU, breakdown and timeline (what ``archsim train`` prints)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from archsim.training.compute_classes import SPLIT_PARTS, ClassSeconds
from archsim.training.context_parallel import rank_config, received_bytes
from archsim.training.eager_ops import eager_flash_output_bytes
from archsim.training.fp8_scaling import scaling_seconds
from archsim.training.fsdp import expert_state_bytes, held_state_bytes
from archsim.training.grad_accumulation import accumulation, per_microbatch_seconds
from archsim.training.iteration import after_backward, model_pieces
from archsim.training.machine import Machine
from archsim.training.memory import StageMemory
from archsim.training.moe_overlap import paired_seconds, rank_hidden
from archsim.training.op_rows import op_row, piece_rows
from archsim.training.parallel import Parallelism, check_fits, layers_per_stage
from archsim.training.piece_cost import PieceCost
from archsim.training.pipeline_memory import memories
from archsim.training.stages import host_bound_seconds, piece_runs, rank_compute_seconds
from archsim.units import GIB
from archsim.workload.layer_kinds import DENSE, stage_kinds
from archsim.workload.transformer import TransformerConfig

if TYPE_CHECKING:
    import pandas as pd

    from archsim.policies.stage_run import StageRun
    from archsim.sim.timeline import Timeline


@dataclass(frozen=True)
class TrainResult:
    """iteration_seconds; memory per pipeline rank; ``breakdown``: seconds of the iteration by category on
    the rank that ends it (the last to finish: on a mixed cluster possibly a faster GPU's rank, which waits for
    a slower one in its bubble); ``ops``: per op/collective rows; ``run``: the pipeline's StageRun;
    ``forward_seconds`` / ``backward_seconds``: that rank's forward and backward compute (its
    F; its I + W with recompute and TP collectives) over the iteration's micro-batches;
    ``parallelism``: the one it ran; ``capacities``: each rank's GPU memory (bytes);
    ``energy_j`` / ``energy_source``: the iteration's joules and how they were priced, set by
    :func:`archsim.training.energy.priced` (``archsim train`` and ``archsim.train``; None and "" on
    :func:`train`'s own result, which has no cluster to price it on); ``energy_static_j`` / ``energy_dynamic_j``: the
    parts of ``energy_j`` an array device's stated static power adds and the energy model's (None where it
    states none); ``energy_breakdown_j``: ``energy_j`` by part (J) on array devices alone, else None;
    ``host_bound_seconds``: the seconds of ``breakdown``'s compute and recompute that are the host issuing ops beyond
    the GPU's work (0 when no pass is host-bound); ``compute_split_seconds``: ``breakdown``'s compute and recompute by
    what they are (:func:`compute_split`)."""

    iteration_seconds: float
    memory: tuple[StageMemory, ...]
    breakdown: dict[str, float]
    # per micro-batch: each op and TP collective of a layer / embedding / head; per iteration: the rest. Left out of
    # the repr with the run and its post-processing, as a notebook shows a cell's value by it (to_dict's rows)
    ops: list[dict] = field(repr=False)
    run: StageRun = field(repr=False)
    post: tuple[dict[str, float], ...] = field(repr=False)
    forward_seconds: float = 0.0
    backward_seconds: float = 0.0
    energy_j: float | None = None
    energy_source: str = ""
    energy_static_j: float | None = None
    energy_dynamic_j: float | None = None
    energy_breakdown_j: dict[str, float] | None = None  # energy_j by part on array devices (training/energy.py)
    parallelism: Parallelism | None = None  # what ran: a planned split's stage_layers, the resolved grad_accumulation
    capacities: tuple[float, ...] = ()  # bytes of memory of each pipeline rank's GPU
    finishing_rank: int = 0  # the pipeline rank whose breakdown, rows and forward/backward seconds these are
    # seconds of that rank's compute and recompute that are the host's issue time beyond the GPU's work (0: no pass
    # host-bound): a part of the breakdown's compute and recompute, not a category of its own (_breakdown)
    host_bound_seconds: float = 0.0
    # those seconds of compute and recompute by what they are (compute_split): GPU classes, host floor, the rest
    compute_split_seconds: dict[str, float] = field(default_factory=dict)
    # archsim train --format json's document, set by archsim.train (train_json.train_document): what
    # to_dict returns; not compared, as it only restates the fields above
    document: dict | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        """Its dicts and lists (the breakdown, the ops' rows, the per-rank post-processing, the splits, the document)
        frozen all the way down (:mod:`archsim.read_only`): editing a result is a ``TypeError``, not a result whose
        figures no longer say what ran; ``to_dict()`` is an editable copy."""
        from archsim.read_only import read_only

        for name in ("breakdown", "ops", "post", "compute_split_seconds", "energy_breakdown_j", "document"):
            object.__setattr__(self, name, read_only(getattr(self, name)))

    def __repr__(self) -> str:
        """One line, not every rank's memory, the breakdown and the parallelism's fields (a notebook shows a cell's
        value by its repr): seconds, GiB per GPU (the fullest rank) and joules, as ``archsim train`` prints them."""
        par = self.parallelism
        cp = "" if par is None or par.cp == 1 else f"cp {par.cp} × "  # GPUs = TP × CP × PP × DP
        comm = "" if par is None or par.cp == 1 else f", cp-comm {par.cp_comm}" + (
            f" {par.cp_hierarchy[0]} × {par.cp_hierarchy[1]}" if par.cp_hierarchy else "")
        # the order that ran, as the meta's schedule and search's front name it: 1f1b at interleave 5 is
        # interleaved-1f1b v5 (a V schedule's two chunks are its name's: zb-v v2)
        order = "" if par is None else par.schedule_name + (f" v{par.chunks}" if par.chunks > 1 else "")
        split = "" if par is None else (f"tp {par.tp} × {cp}pp {par.pp} × dp {par.dp}{comm}, micro-batch "
                                        f"{par.micro_batch}, {order}, recompute {par.recompute}; ")
        energy = "" if self.energy_j is None else f", {self.energy_j:.4g} J"
        return (f"TrainResult({split}{self.iteration_seconds:.4g} s per iteration, peak memory "
                f"{self.peak_memory_gib:.4g} GiB per GPU{energy}; {len(self.ops)} op rows)")

    def to_dict(self) -> dict:
        """The JSON document ``archsim train --format json`` prints for this iteration (``meta`` and the
        ops' ``rows``; NaN where the CLI prints null): a copy, JSON-safe and editable, of a result of ``archsim.train``."""
        from archsim.read_only import plain

        if self.document is None:
            from archsim.errors import InputError

            raise InputError("only archsim.train's result knows its model and cluster to make archsim train's "
                             "JSON; this one came from archsim.training.run.train", field="to_dict")
        return plain(self.document)

    def to_frame(self) -> pd.DataFrame:
        """The rows ``archsim train --format csv`` prints for this iteration, as a DataFrame: the ops' rows
        (seconds per micro-batch or per iteration, as the ``rows`` of :meth:`to_dict`; a GEMM's shape float64, NaN
        on the other rows, as pandas reads the CSV), then the meta's single values as columns (the breakdown and the
        network as the CSV's one line each) (imports pandas)."""
        from archsim.outputs import csv_frame
        from archsim.rows import Rows
        from archsim.training.table_lines import text_meta

        document = self.to_dict()  # the one source: the meta's breakdown, not the field a caller may have edited
        meta = document["meta"]
        return csv_frame(Rows.of(document["rows"]), text_meta(meta, meta["breakdown_seconds"], repr))

    @property
    def timeline(self) -> Timeline:
        """The pipeline run's timeline (seconds: its ``unit``, so its frames' ``attrs["unit"]`` say so)."""
        from archsim.sim.timeline import Timeline

        timeline = self.run.timeline
        assert isinstance(timeline, Timeline)
        return timeline if timeline.unit else replace(timeline, unit="seconds")

    @property
    def peak_memory_gib(self) -> float:
        return max(m.total for m in self.memory) / GIB

    @property
    def memory_capacity_gib(self) -> float:
        """GiB of the GPU the fullest rank runs on, fullest by share of its own GPU's memory: on GPUs of several
        sizes the rank nearest not fitting (a 40 GB rank can be fuller than an 80 GB one holding more)."""
        fullest = max(range(len(self.memory)), key=lambda r: self.memory[r].total / self.capacities[r])
        return self.capacities[fullest] / GIB

    @property
    def fits(self) -> tuple[bool, ...]:
        """Whether each pipeline rank's memory fits its GPU's (``archsim train``'s ``fits`` per rank)."""
        return tuple(m.total <= capacity for m, capacity in zip(self.memory, self.capacities, strict=True))


def train(c: TransformerConfig, par: Parallelism, machine: Machine,
          machines: tuple[Machine, ...] | None = None) -> TrainResult:
    """One iteration on ``machine``, or with each pipeline rank on its own of ``machines`` (mixed GPUs)."""
    from archsim.policies.stage_orders import training_order
    from archsim.policies.stage_run import run_order
    from archsim.sim.timeline import SlotTable, Timeline
    from archsim.training.stages import rank_stage_times

    check_fits(c, par)
    machines = machines or (machine,) * par.pp
    own = {id(m): model_pieces(c, par, m) for m in {id(m): m for m in machines}.values()}
    times = rank_stage_times(c, par, machines, [own[id(m)] for m in machines])
    order = training_order(par.schedule_name, par.pp, par.microbatches, par.chunks)
    shortened = paired_seconds(c, par, order, [own[id(m)] for m in machines])  # 1F1B's merged steps (moe_overlap)
    run = run_order(order, times, shortened, blocking=par.p2p_blocking)
    states, unit = held_state_bytes(machine.dtype, machine.implementation, par)
    hf = machine.implementation == "pytorch-eager" and machine.dtype == "fp32"  # Hugging Face's modules' own
    mem = memories(rank_config(c, par.cp), par, order, machine.scale, states, unit, hf=hf,  # a CP rank's s/CP tokens
                   expert_states=expert_state_bytes(machine.dtype, machine.implementation, par))
    if par.cp > 1:  # and the K/V it receives while a layer's attention runs
        mem = [replace(m, activations=m.activations + received_bytes(c, par, machine.scale)) for m in mem]
    if machine.implementation == "pytorch-eager" and not hf:  # SDPA's output beside its copy (one GPU: PP 1)
        mem = [replace(m, activations=m.activations + eager_flash_output_bytes(c, par, machine.dtype)) for m in mem]
    timeline = run.timeline
    assert isinstance(timeline, Timeline) and isinstance(timeline.slots, SlotTable)  # the engine's arrays
    slots = timeline.slots
    ends = np.full(par.pp, 0.0)
    np.maximum.at(ends, slots.processor, slots.end)
    hidden = rank_hidden(order, shortened)  # each rank's all-to-all seconds its merged steps hid
    rank_of = order.rank_of_stage()
    tied_ranks = (rank_of[0], rank_of[order.stages - 1])
    last_backward = [0.0] * par.pp  # each rank's backward of one micro-batch: what bucketed DP runs under
    one_forward = [0.0] * par.pp  # and its forward: what FSDP's prefetched all-gathers run under
    for j in range(order.stages):
        last_backward[rank_of[j]] += times.backward_input[j] + times.backward_weight[j]
        one_forward[rank_of[j]] += times.forward[j]
    drains = _drains(order, slots, ends, rank_of) if par.fsdp_grad_sync == "step" else [()] * par.pp
    post = tuple(after_backward(c, par, machines[r], r, mem[r].parameters, tied_ranks, last_backward[r],
                                one_forward[r], drains[r]) for r in range(par.pp))
    finish = [ends[r] + sum(post[r].values()) for r in range(par.pp)]
    slowest = int(np.argmax(finish))
    pieces = own[id(machines[slowest])]
    mine = [j for j in range(order.stages) if rank_of[j] == slowest]
    forward = par.microbatches * sum(times.forward[j] for j in mine)
    backward = par.microbatches * sum(times.backward_input[j] + times.backward_weight[j] for j in mine)
    breakdown = _breakdown(c, par, machines[slowest], pieces, order.rank_of_stage(), run, slowest, post[slowest],
                           hidden[slowest])
    host_bound = host_bound_seconds(c, par, pieces, mine)  # the sum the search's rows take too
    split = compute_split(c, par, pieces, mine, breakdown["compute"] + breakdown["recompute"], host_bound)
    return TrainResult(float(max(finish)), tuple(mem), breakdown,
                       _op_rows(pieces) + _sharding_rows(c, par, machines[slowest], mem[slowest].parameters, slowest)
                       + _iteration_rows(post[slowest]), run, post,
                       float(forward), float(backward),
                       parallelism=replace(par, grad_accumulation=accumulation(par, machines[0])),  # what ran
                       capacities=tuple(float(m.capacity) for m in machines), finishing_rank=slowest,
                       host_bound_seconds=host_bound, compute_split_seconds=split)


def compute_split(c, par, pieces, stages, whole: float, host: float) -> dict[str, float]:
    """``whole`` seconds (a rank's compute and recompute over the iteration, ``_breakdown``'s) by what they are, its
    ``stages``' pieces run as ``_breakdown`` runs them (:func:`~archsim.training.stages.piece_runs`): their ops' GPU
    seconds by class (:mod:`archsim.training.compute_classes`: ``gemm``, ``memory_bound``, ``kernel_gaps`` — the
    training fit's ``launch_s`` per kernel), ``host_floor`` (``host``: the host issuing ops beyond the GPU's work),
    ``recompute_communication`` (the TP/EP collectives and CP's exchange a full recompute runs again with the forward)
    and ``other``, what none of those holds: a split-K reduction kernel's launch (which the op classes do not count:
    none in train's op lists, so 0 within round-off)."""
    runs, m = piece_runs(c, par, stages), par.microbatches
    classes = sum((pieces[name].classes.times(k) for name, k in runs.items()), ClassSeconds()).times(m)
    again = m * sum(k * pieces[name].recompute_communication for name, k in runs.items())
    other = whole - classes.gemm - classes.memory - classes.launch - host - again
    seconds = (classes.gemm, classes.memory, classes.launch, host, again, other if abs(other) > 1e-12 * whole else 0.0)
    return {part.key: value for part, value in zip(SPLIT_PARTS, seconds, strict=True)}  # keyed by SPLIT_PARTS alone


def _drains(order, slots, ends, rank_of) -> list[tuple[float, ...]]:
    """Per rank, per stage it runs (in stage order): seconds from the stage's last backward action (I, W or B)
    ending to the rank's last action ending, what FSDP's once-a-step reduce-scatter of that stage runs under."""
    stage, kind = order.columns.stage[slots.op], order.columns.kind[slots.op]
    backward = kind != 0  # F is code 0 (archsim.sim.builder.KINDS)
    last = np.full(order.stages, 0.0)
    np.maximum.at(last, stage[backward], slots.end[backward])
    return [tuple(float(ends[r] - last[j]) for j in range(order.stages) if rank_of[j] == r) for r in range(len(ends))]


def _breakdown(c, par, machine, pieces, rank_of, run, rank, post, hidden=0.0) -> dict[str, float]:
    """The slowest rank's iteration by category (seconds): its compute, recompute, TP collectives, CP's
    exchange and the EP all-to-alls (each only where that axis is > 1), the
    unfused gradient accumulation's passes (its m − 1, :mod:`archsim.training.grad_accumulation`), fp8's amax
    reductions and scale updates and its weights' cast (with ``par.fp8``, :mod:`archsim.training.fp8_scaling`),
    pipeline wait (bubbles and hops: the rest of its pipeline span), DP communication (the all-reduce, or the
    distributed optimizer's reduce-scatter and all-gather), FSDP's exposed collectives (with ``par.fsdp``),
    embedding all-reduce, optimizer. ``hidden``: the EP all-to-all seconds the rank's paired steps hide
    (:func:`~archsim.training.moe_overlap.paired_hidden`, already off its actions in the timeline), off its EP
    time, so that the categories add up to the timeline's makespan."""
    m = par.microbatches
    chunks = par.pp * par.chunks
    counts = layers_per_stage(c.layers, chunks, par.stage_layers)
    stages = [j for j in range(chunks) if rank_of[j] == rank]
    tp = cp = ep = accumulate = scaling = 0.0
    kinds = stage_kinds(c, counts)
    for j in stages:
        accumulate += per_microbatch_seconds(c, par, machine, counts[j], j == 0, j == chunks - 1,
                                             dict(kinds[j]).get(DENSE, 0))
        scaling += sum(scaling_seconds(c, par, machine, counts[j]))
    # each piece as often as it runs on the rank (its layers, the first stage's embedding, the last's head: the head's
    # MTP modules, mtp.py, recompute and run all-to-alls as the layers do) — the multiplicities the host floor's and
    # the compute split's sums take too; compute and recompute by the sum the search's closed-form rows take
    compute, recompute = rank_compute_seconds(c, par, pieces, stages)
    for name, runs in piece_runs(c, par, stages).items():
        piece = pieces[name]
        tp += runs * (piece.tp_forward + piece.tp_backward)
        cp += runs * (piece.cp_forward + piece.cp_backward)
        ep += runs * (piece.ep_forward + piece.ep_backward)
    tp, cp, ep, accumulate = tp * m, cp * m, ep * m, accumulate * m
    scaling = scaling * m
    ep -= hidden
    span = float(run.timeline.makespan)
    wait = span - compute - recompute - tp - cp - ep - accumulate - scaling
    return {"compute": compute, "recompute": recompute, "tp_communication": tp,
            **({"cp_communication": cp} if par.cp > 1 else {}),
            **({"ep_communication": ep} if par.ep > 1 else {}), "grad_accumulation": accumulate,
            **({"fp8_scaling": scaling} if par.fp8 else {}),
            "pipeline_bubble_and_p2p": wait if wait > 1e-9 * span else 0.0,  # below: the sums' round-off
            "dp_communication": sum(s for name, s in post.items() if name.startswith("dp_")),  # the distributed
            # optimizer's reduce-scatter and all-gather, or the all-reduce
            **({"fsdp_exposed_communication": post["fsdp_exposed_communication"]} if par.fsdp else {}),
            "embedding_allreduce": post["embedding_allreduce"],
            "optimizer": post["optimizer"], **({"fp8_weight_cast": post["fp8_weight_cast"]} if par.fp8 else {})}


def _op_rows(pieces: dict[str, PieceCost]) -> list[dict]:
    """Per op (and TP collective) of one micro-batch through one layer / the embedding / the head: its
    ``name`` and ``op`` (F, D, G; B: the recompute), as every output names an op (docs/formats.md), and a GEMM's
    shape on one GPU (:func:`archsim.training.op_rows.piece_rows`)."""
    return [row for piece_name, piece in pieces.items() for row in piece_rows(piece_name, piece)]


def _sharding_rows(c, par, machine, parameters, rank) -> list[dict]:
    """Per micro-batch, with ``par.fsdp``: FSDP's all-gathers and reduce-scatters, each whole
    (:func:`archsim.training.fsdp.unit_rows`); none otherwise (the DP group's other collectives are iteration rows)."""
    from archsim.training.fsdp import unit_rows

    return unit_rows(c, par, machine, parameters, rank) if par.fsdp else []


def _iteration_rows(post: dict[str, float]) -> list[dict]:
    """Once per iteration, on the slowest rank: gradient all-reduces and the optimizer step."""
    return [op_row("iteration", name, "-", seconds) for name, seconds in post.items()]


__all__ = ["TrainResult", "compute_split", "train"]
