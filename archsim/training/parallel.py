"""How one training iteration is parallelized: TP × PP × DP, micro-batching, recomputation."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from archsim.choices.training import (
    ATTENTIONS,
    CP_COMMS,
    DEFAULT_P2P,
    DP_OVERLAPS,
    FP8_RECIPES,
    FSDP_GRAD_SYNCS,
    FSDP_RESHARDS,
    GRAD_ACCUMULATIONS,
    P2P_MODES,
    RECOMPUTE,
)
from archsim.console import setting, switch_on
from archsim.errors import InputError
from archsim.policies.stage_orders import TORCH_SCHEDULES, check_schedule
from archsim.training.context_parallel_hierarchy import effective_comm, hierarchy_problem
from archsim.training.layout_problems import cp_problem, ep_layout_problem, or_list, tp_split_problem
from archsim.value_parsers import not_a_choice
from archsim.workload.transformer import TransformerConfig

V_SCHEDULES = ("zb-v", "dualpipev")  # two chunks per rank, V-shaped
CHUNKED_SCHEDULES = ("1f1b", "interleaved-1f1b", "interleaved-zb", "looped-bfs")  # take --interleave
# Why a schedule cannot run on a layout, by the reason ``archsim search`` counts in ``meta.rejected``;
# ``train`` (one run, --runs, --sweep, archsim.train) refuses with the same words (issue #40).
SCHEDULE_RULES = {
    "schedule-needs-pp": "with one pipeline stage every schedule runs as 1F1B: {schedule} needs {pp_flag} > 1",
    "interleave-needs-pp-microbatches": "{schedule} needs at least PP = {pp} micro-batches per pipeline (global "
    "batch / (micro-batch × DP) = {m}), as Megatron-LM's interleaved schedule does (its groups of micro-batches per "
    "model chunk hold PP to m)",
    "interleave-needs-microbatches-multiple-of-pp": "{schedule} needs the micro-batches per pipeline (global batch "
    "/ (micro-batch × DP) = {m}) to be a multiple of PP = {pp} (rounds of PP micro-batches)",
    "dualpipev-needs-2p-microbatches": "{schedule} needs at least 2 × PP micro-batches per pipeline (PP = {pp}), "
    "got {m}",
}


def schedule_name(schedule: str, interleave: int) -> str:
    """The published order to build: plain 1F1B with ``interleave`` > 1 is Megatron's interleaved 1F1B."""
    return "interleaved-1f1b" if schedule == "1f1b" and interleave > 1 else schedule


def chunks_run(schedule: str, interleave: int) -> int:
    """Model chunks per pipeline rank ``schedule`` runs: 2 on the V-shaped ones (:data:`V_SCHEDULES`, two by their
    shape, whatever ``interleave`` says), else ``interleave``. What the outputs' ``interleave`` shows."""
    return 2 if schedule in V_SCHEDULES else interleave


def interleave_flag(schedule: str, chunks: int) -> int:
    """The ``--interleave`` an output row's ``interleave`` (:func:`chunks_run`) stands for: 1 on a V-shaped schedule,
    which takes no ``--interleave`` (its name runs its two chunks), else the chunks."""
    return 1 if schedule in V_SCHEDULES else chunks


def schedule_rejection(schedule: str, pp: int, microbatches: int) -> str | None:
    """The first :data:`SCHEDULE_RULES` reason the order ``schedule`` (a :func:`schedule_name`) breaks on
    ``pp`` pipeline ranks with ``microbatches`` micro-batches per pipeline, or None: the one rule
    ``train`` and ``search`` both apply. Interleaved 1F1B follows Megatron-LM, the software of the runs they
    model: any m ≥ PP (:func:`archsim.policies.stage_orders.megatron_interleaved_1f1b`); interleaved ZB keeps
    rounds of PP micro-batches (m a multiple of PP). ``archsim schedule`` builds torch's interleaved order, whose
    round rule (m a multiple of max(1, m // PP) rounds) is another schedule where PP does not divide m
    (``archsim.policies.stage_orders._rounds``); where it does, all run rounds of PP micro-batches."""
    if schedule != "1f1b" and pp == 1:
        return "schedule-needs-pp"
    # Megatron-LM, megatron/core/pipeline_parallel/schedules.py, forward_backward_pipelining_with_interleaving
    # (commit d98e8a64ddf34856e74b24714e3bedb2f5a39553, Megatron-Core 0.20.0): micro-batches run in groups of
    # microbatch_group_size_per_vp_stage = N per model chunk; N must lie in [PP, m] (ValueError) and m mod N must
    # be 0 or ≥ PP (RuntimeError). N defaults to PP (ModelParallelConfig.__post_init__), which leaves m a multiple
    # of PP, the rule before N existed (tag core_v0.7.0 raised "number of microbatches (m) is not divisible by
    # pipeline-model-parallel-size"); --microbatch-group-size-per-virtual-pipeline-stage (since 4295be1a,
    # 2024-11-01) sets another, and N = m always qualifies, so any m ≥ PP runs. archsim runs the smallest N
    # accepted (stage_orders.megatron_group): PP, the default, wherever PP divides m.
    if schedule == "interleaved-1f1b" and microbatches < pp:
        return "interleave-needs-pp-microbatches"
    if schedule == "interleaved-zb" and microbatches % pp:
        return "interleave-needs-microbatches-multiple-of-pp"
    if schedule == "dualpipev" and microbatches < 2 * pp:  # its eight phases (archsim.policies.stage_orders_v)
        return "dualpipev-needs-2p-microbatches"
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


def tp_straddles(tp: int, gpus: int, server_gpus: int) -> bool:
    """Whether a TP group of ``tp`` consecutive GPUs (Megatron's order), over ``gpus`` GPUs of servers of
    ``server_gpus`` each, holds part of one server and part of another: TP neither divides a server's GPUs
    nor is a multiple of them, and the GPUs pass one server (inside one server every group is part of it)."""
    return gpus > server_gpus and server_gpus % tp != 0 and tp % server_gpus != 0


@dataclass(frozen=True)
class Parallelism:
    """tp, pp, dp: tensor-, pipeline- and data-parallel degrees (GPUs = tp·pp·dp);
    global_batch and micro_batch in samples; recompute: none | selective (attention's core, Korthikanti
    et al. 2022 §4.2) | full (each layer's forward rerun in its backward, from its input);
    sequence_parallel: Megatron's sequence parallelism in the TP group; interleave: model chunks per
    pipeline rank (1: plain 1F1B); stage_layers: transformer layers of each pipeline (virtual) stage —
    model chunk — in pipeline order, PP × chunks counts (interleaved: chunk c of rank r is virtual stage
    c·PP + r; V-shaped: rank r holds stages r and 2·PP − 1 − r); None: Megatron's even split;
    attention: ``standard`` (scores, softmax, dropout, context as separate kernels with the s² tensors
    in HBM: the Megatron-DeepSpeed of the measured runs) or ``flash`` (FlashAttention-2, Dao 2023: one
    fused kernel each way, no s² tensor in HBM or kept for the backward, which recomputes QKᵀ);
    dp_overlap: the DP gradient all-reduce after the last backward (``none``, vTrain's runs) or in
    buckets overlapped with it (``bucketed``, Megatron-LM's ``--overlap-grad-reduce``:
    :mod:`archsim.training.dp_overlap`); grad_accumulation: how each micro-batch's weight gradients join
    the held ones — ``fused`` into the weight-gradient GEMM, ``unfused`` by a separate pass, None: the
    implementation's own (:func:`archsim.training.grad_accumulation.accumulation`); distributed_optimizer:
    Megatron-LM's ``--use-distributed-optimizer`` (ZeRO-1): the fp32 main weights, Adam's moments and the fp32
    gradient copy sharded over the DP group (:func:`archsim.training.memory.state_bytes`), the gradients
    reduce-scattered and the parameters all-gathered in place of the all-reduce, each DP rank stepping its 1/DP
    (:mod:`archsim.training.dp_overlap`); fsdp: PyTorch FSDP's ``FULL_SHARD`` (ZeRO-3): parameters, gradients
    and optimizer states all sharded over DP, each layer's parameters all-gathered before its forward and its
    backward and its gradients reduce-scattered (:mod:`archsim.training.fsdp`), on every pipeline stage's own
    parameters; not beside the distributed optimizer (one sharding per run), nor with bucketed DP overlap (FSDP
    overlaps its own); fsdp_reshard: ``after-forward`` (``FULL_SHARD``) or ``none`` (Llama 3's: the gathered
    parameters kept from the forward to the backward, one all-gather a micro-batch), FSDP's only; fsdp_grad_sync:
    ``micro-batch`` (each backward's gradients reduce-scattered) or ``step`` (PyTorch's pipeline runtime: the
    gradients held unsharded to one reduce-scatter per stage after its last backward, the parameters gathered once
    a step; with ``fsdp_reshard`` ``none``), FSDP's only;
    cp: context-parallel degree (Megatron-LM's ``--context-parallel-size``: each rank holds 2 of the sequence's
    2·CP chunks, :mod:`archsim.training.context_parallel`), its K/V exchanged by ``cp_comm`` ``p2p`` (a ring
    overlapped with attention), ``all_gather`` (Llama 3's) or ``a2a`` (DeepSpeed-Ulysses: Q, K, V and the
    output all-to-all'd to head sharding and back) or ``a2a+p2p`` (an all-to-all inside groups of A ranks, p2p's
    ring over P of them: ``cp_hierarchy`` (A, P), A·P = CP, :mod:`archsim.training.context_parallel_hierarchy`);
    GPUs = tp·cp·pp·dp; ep: expert-parallel degree (Megatron-Core's ``--expert-model-parallel-size``, a mixture
    of experts' E/EP experts a rank, :mod:`archsim.training.moe_ops`): EP ranks carved out of the TP·CP·DP GPUs, the
    experts' gradients reduced over the ranks that hold the same experts (:attr:`expert_replicas`); fp8: Transformer
    Engine's recipe for the linear layers (``hybrid`` or ``e4m3``, :mod:`archsim.training.fp8_ops`), None: off;
    fp8_param_gather: Megatron-LM's ``--fp8-param-gather`` (:mod:`archsim.training.fp8_memory`); p2p: whether a
    pipeline rank's next pass waits for its hop's send (``blocking``) or runs beside it (``overlapped``), or as
    Megatron-LM runs the schedule (``megatron``, :attr:`p2p_blocking`)."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    global_batch: int = 1
    micro_batch: int = 1
    recompute: str = "full"
    sequence_parallel: bool = False
    interleave: int = 1
    schedule: str = "1f1b"
    stage_layers: tuple[int, ...] | None = None
    attention: str = "standard"
    dp_overlap: str = "none"
    grad_accumulation: str | None = None
    distributed_optimizer: bool = False
    fsdp: bool = False
    cp: int = 1
    cp_comm: str = "p2p"
    fsdp_reshard: str = "after-forward"
    fsdp_grad_sync: str = "micro-batch"
    cp_hierarchy: tuple[int, int] | None = None
    ep: int = 1
    etp: int | None = None  # None: TP, Megatron-LM's default --expert-tensor-parallel-size
    fp8: str | None = None  # None: no fp8 (FP8_RECIPES)
    fp8_param_gather: bool = False  # fp8 weights, gathered in fp8 (fp8_memory.py; with fp8 and the distributed optimizer)
    p2p: str = DEFAULT_P2P  # P2P_MODES: whether a rank's next pass waits for its pipeline sends (p2p_blocking)

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "dp", "global_batch", "micro_batch", "interleave", "cp", "ep", "etp"):
            value = getattr(self, name)
            if name == "etp" and value is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise InputError(f"must be a positive integer, got {value!r}", field=name.replace("_", "-"))  # the flag's spelling
        for name in ("sequence_parallel", "distributed_optimizer", "fsdp", "fp8_param_gather"):  # switches: the
            if not isinstance(getattr(self, name), bool):  # text "false" is true
                raise InputError(f"expected True or False, got {getattr(self, name)!r}", field=name.replace("_", "-"))
        if self.fsdp and self.distributed_optimizer:  # one notion of state sharding: FSDP shards all of it
            raise InputError(f"{setting('fsdp')} shards the optimizer states already: not with "
                             f"{setting('distributed-optimizer')}", field="fsdp")
        for flag, value, choices, what in (("fsdp-reshard", self.fsdp_reshard, FSDP_RESHARDS, "frees its gathered parameters"),
                                           ("fsdp-grad-sync", self.fsdp_grad_sync, FSDP_GRAD_SYNCS,
                                            "reduce-scatters its gradients")):  # FSDP's two modes, default first
            if value not in choices:
                raise InputError(not_a_choice(value, choices), field=flag)
            if value != choices[0] and not self.fsdp:
                raise InputError(f"{setting(flag, value)} says when FSDP {what}: give {switch_on('fsdp')} too", field=flag)
        if self.fsdp_grad_sync == "step" and self.fsdp_reshard != "none":  # torchtitan's with PP: never resharded
            raise InputError(f"{setting('fsdp-grad-sync', 'step')} keeps the gathered parameters for the whole step: "
                             f"give {setting('fsdp-reshard', 'none')}", field="fsdp-grad-sync")
        if self.fsdp and self.dp_overlap != "none":
            raise InputError(f"{setting('fsdp')} overlaps its own collectives: not with "
                             f"{setting('dp-overlap', self.dp_overlap)}", field="fsdp")
        if self.recompute not in RECOMPUTE:
            raise InputError(not_a_choice(self.recompute, RECOMPUTE), field="recompute")
        if self.fp8 is not None and self.fp8 not in FP8_RECIPES:
            raise InputError(not_a_choice(self.fp8, FP8_RECIPES), field="fp8")
        if self.attention not in ATTENTIONS:
            raise InputError(not_a_choice(self.attention, ATTENTIONS), field="attention")
        if self.cp_comm not in CP_COMMS:
            raise InputError(not_a_choice(self.cp_comm, CP_COMMS), field="cp-comm")
        if isinstance(self.cp_hierarchy, list):  # the library's keyword as a list: kept as the frozen pair
            object.__setattr__(self, "cp_hierarchy", tuple(self.cp_hierarchy))
        problem = hierarchy_problem(self.cp, self.cp_comm, self.cp_hierarchy)
        if problem:
            raise InputError(problem, field="cp-comm" if self.cp_hierarchy is None else "cp-hierarchy")
        if self.p2p not in P2P_MODES:
            raise InputError(not_a_choice(self.p2p, P2P_MODES), field="p2p")
        if self.dp_overlap not in DP_OVERLAPS:
            raise InputError(not_a_choice(self.dp_overlap, DP_OVERLAPS), field="dp-overlap")
        if self.grad_accumulation is not None and self.grad_accumulation not in GRAD_ACCUMULATIONS:
            raise InputError(not_a_choice(self.grad_accumulation, GRAD_ACCUMULATIONS),
                             field="grad-accumulation")
        check_schedule(self.schedule)  # a misspelt name is refused as such, not as a rule of the layout
        if self.schedule in TORCH_SCHEDULES:  # torch's class name runs as the order it builds: its chunks, its rules
            object.__setattr__(self, "schedule", TORCH_SCHEDULES[self.schedule][0])
        if self.global_batch % (self.micro_batch * self.dp):
            raise InputError(f"global batch {self.global_batch} is not a multiple of micro-batch × DP "
                             f"({self.micro_batch} × {self.dp})", field="global-batch")
        if self.schedule not in CHUNKED_SCHEDULES and self.interleave not in (1, own := chunks_run(self.schedule, 1)):
            raise InputError(f"{self.schedule} runs {own} model chunks a rank by its V shape, not {self.interleave}: "
                             f"drop {setting('interleave')} (or give {setting('interleave', own)}, which restates it)"
                             if own > 1 else f"{setting('interleave')} takes one of the schedules "
                             f"{', '.join(CHUNKED_SCHEDULES)}, not {self.schedule!r}", field="interleave")
        if self.sequence_parallel and self.tp == 1:
            raise InputError(f"sequence parallelism needs {setting('tp')} > 1", field="sequence-parallel")
        ep_problem = ep_layout_problem(self.dp, self.ep, self.cp, self.fsdp, self.tp, self.etp)
        if ep_problem:  # at EP 1 only an ETP other than TP can break it: the flag to change is --etp
            raise InputError(ep_problem, field="ep" if self.ep > 1 else "etp")
        named = schedule_name(self.schedule, self.interleave)  # the rules of the schedule named, one chunk or not
        reason = schedule_rejection(named, self.pp, self.microbatches)
        if reason is not None:
            rule = SCHEDULE_RULES[reason].format(schedule=named, pp=self.pp, m=self.microbatches,
                                                 pp_flag=setting("pp"))
            if named != self.schedule:  # 1F1B made interleaved by --interleave alone: name that flag
                raise InputError(f"{setting('interleave', self.interleave)} runs {self.schedule} as "
                                 f"{named}: {rule} ({reason})", field="interleave")
            raise InputError(f"{rule}{one_chunk_advice(named, self.chunks, reason)} ({reason})", field="schedule")
        if self.stage_layers is not None and len(self.stage_layers) != self.pp * self.chunks:
            need = f"PP × chunks = {self.pp} × {self.chunks} = {self.pp * self.chunks}" if self.chunks > 1 \
                else f"PP = {self.pp}"
            raise InputError(f"takes one layer count per model chunk in pipeline order, {need} counts, got "
                             f"{len(self.stage_layers)}", field="stage-layers")

    @property
    def p2p_blocking(self) -> bool:
        """Whether a pipeline rank's next pass waits for its sends to end (:func:`archsim.policies.stage_run.
        order_problem`): ``p2p`` ``blocking`` or ``overlapped``; ``megatron``: as Megatron-LM runs the schedule —
        blocking on the non-interleaved 1F1B (``forward_backward_pipelining_without_interleaving``: every p2p call
        ``_communicate(..., wait_on_reqs=True)``, ``overlap_p2p_comm`` refused), overlapped on the others (the
        interleaved schedule's ``overlap_p2p_comm``; the schedules Megatron-LM lacks as ``overlapped``). Interleaved
        1F1B of one chunk a rank blocks too: it runs as ``1f1b`` (:attr:`schedule_name`)."""
        return self.p2p == "blocking" or (self.p2p == "megatron" and self.schedule_name == "1f1b")

    @cached_property  # kept in the instance: a planned search's rank sizing reads it millions of times
    def chunks(self) -> int:
        """Model chunks per pipeline rank the schedule runs: ``interleave``, or 2 for the V-shaped ones."""
        return chunks_run(self.schedule, self.interleave)

    @cached_property  # as chunks (the fields it reads are frozen; __post_init__ sets schedule before reading it)
    def schedule_name(self) -> str:
        """The published order to build: plain 1F1B with ``interleave`` > 1 is Megatron's interleaved 1F1B, and
        interleaved 1F1B of one chunk a rank is plain 1F1B, in time, memory and p2p waits, as Megatron-LM runs it:
        ``validate_args`` (``megatron/training/arguments.py``, NVIDIA/Megatron-LM 000c4ac2) sets a virtual pipeline
        size of 1 to None (and ``overlap_p2p_comm`` False), and ``get_forward_backward_func``
        (``megatron/core/pipeline_parallel/schedules.py``, 00611e6e) then runs
        ``forward_backward_pipelining_without_interleaving`` (until 2026-12-05 the interleaved warm-up, up to
        2·PP − 1 micro-batches in flight on rank 0). The schedule's rules (:func:`schedule_rejection`) and
        ``train``'s one-chunk note stay those of the schedule named."""
        named = schedule_name(self.schedule, self.interleave)
        return "1f1b" if named == "interleaved-1f1b" and self.chunks == 1 else named

    @property
    def optimizer_shards(self) -> int:
        """The ranks each parameter's optimizer states are sharded over: DP with the distributed optimizer
        (Megatron-LM shards over the data-parallel group) or FSDP (all the states), 1 without."""
        return self.replicas if self.distributed_optimizer or self.fsdp else 1

    @property
    def replicas(self) -> int:
        """The ranks holding the same weights, over which gradients are reduced: DP × CP (CP ranks hold
        every weight, each for its own tokens: Megatron-LM's data-parallel group with context parallelism)."""
        return self.dp * self.cp

    @property
    def expert_replicas(self) -> int:
        """The ranks holding the same experts, over which the experts' gradients are reduced: Megatron-Core's
        expert-data-parallel group, world / (ETP · EP · PP) = TP·CP·DP/(ETP·EP) (CP·DP/EP at ETP = TP)."""
        return self.tp * self.cp * self.dp // (self.expert_tp * self.ep)

    @property
    def expert_tp(self) -> int:
        """The experts' tensor-parallel degree, ETP: ``etp``, or TP where not given (Megatron-LM's default)."""
        return self.tp if self.etp is None else self.etp

    @property
    def experts_apart(self) -> bool:
        """Whether the experts are laid out apart from the dense weights (EP > 1 or ETP ≠ TP): their own
        expert-DP group, gradient reduction and optimizer shards."""
        return self.ep > 1 or self.expert_tp != self.tp

    @property
    def cp_exchange(self) -> str:
        """The K/V exchange run: ``cp_comm``, but a2a+p2p with A = 1 is p2p and with P = 1 a2a (as TE swaps it)."""
        return effective_comm(self.cp_comm, self.cp_hierarchy)

    @property
    def cp_a2a(self) -> int:
        """The ranks each all-to-all of CP's exchange spans: CP (a2a), A (a2a+p2p), 1 (no all-to-all)."""
        comm = self.cp_exchange
        return self.cp if comm == "a2a" else self.cp_hierarchy[0] if comm == "a2a+p2p" and self.cp_hierarchy else 1

    @property
    def sharding(self) -> str:
        """How the DP group holds the states, one of :data:`~archsim.choices.training.SHARDINGS`: ``fsdp``,
        ``distributed-optimizer`` or ``none`` (replicated, the gradients all-reduced)."""
        return "fsdp" if self.fsdp else "distributed-optimizer" if self.distributed_optimizer else "none"

    @property
    def gpus(self) -> int:
        return self.tp * self.cp * self.pp * self.dp

    @property
    def microbatches(self) -> int:
        """Micro-batches each pipeline runs per iteration."""
        return self.global_batch // (self.micro_batch * self.dp)

    @property
    def schedule_actions(self) -> int:
        """An upper bound on the actions the pipeline schedule simulates: F, I and W per model chunk,
        micro-batch and pipeline rank (what ``--max-ops`` bounds before any is built)."""
        return 3 * self.pp * self.chunks * self.microbatches


def padded_vocab(vocab: int, tp: int, multiple: int = 128) -> int:
    """Megatron-LM pads the vocabulary to a multiple of ``multiple`` × TP (``make_vocab_size_divisible_by``)."""
    step = multiple * tp
    return -(-vocab // step) * step


def layers_per_stage(layers: int, stages: int, split: tuple[int, ...] | None = None) -> tuple[int, ...]:
    """Transformer layers of each pipeline stage: ``split`` when given (checked against the model),
    else Megatron's even split (the embedding joins the first stage, the final norm and LM head the last)."""
    if split is not None:
        if len(split) != stages or sum(split) != layers or min(split) < 1:
            raise InputError(f"stage layers {','.join(map(str, split))} must be {stages} counts ≥ 1 adding up to "
                             f"the model's {layers} layers", field="stage-layers")
        return tuple(split)
    if layers % stages:
        raise InputError(f"{layers} layers do not split evenly over {stages} pipeline stages", field="pp")
    return (layers // stages,) * stages


def rank_stages(schedule: str, pp: int, chunks: int, rank: int) -> list[int]:
    """The virtual stages (model chunks) pipeline rank ``rank`` of ``pp`` runs, in pipeline order: r, r + PP, … over
    ``chunks`` chunks a rank (one chunk per rank, interleaved), or the V-shaped schedules' r and 2·PP − 1 − r
    (:data:`V_SCHEDULES`, whatever ``chunks`` says). The one rule; :func:`rank_of_stages` is its inverse."""
    return [rank, 2 * pp - 1 - rank] if schedule in V_SCHEDULES else list(range(rank, pp * chunks, pp))


def rank_of_stages(par: Parallelism) -> list[int]:
    """The pipeline rank of each virtual stage (model chunk), in pipeline order (:func:`rank_stages` read back)."""
    ranks = [0] * (par.pp * par.chunks)
    for rank in range(par.pp):
        for stage in rank_stages(par.schedule, par.pp, par.chunks, rank):
            ranks[stage] = rank
    return ranks


def check_tp_split(c: TransformerConfig, tp: int) -> None:
    """Refuse a TP that does not split ``c``'s heads, KV heads and FFN width (named before the cluster's refusals)."""
    problem = tp_split_problem(c, tp)
    if problem:
        raise InputError(problem, field="tp")


def check_fits(c: TransformerConfig, par: Parallelism, uneven: bool = True) -> None:
    """Refuse ``par`` on ``c``, naming the setting to change; ``uneven`` False: the caller has no per-stage
    layer counts to offer (a runs file's row: no ``stage_layers`` column)."""
    if c.family == "switch" and (par.pp > 1 or par.tp > 1 or par.chunks > 1):
        raise InputError("Switch Transformers (encoder then decoder, blocks of both) train on one GPU per "
                         f"replica only: TP 1 and PP 1, got TP {par.tp}, PP {par.pp}", field="pp")
    if par.stage_layers is not None:
        layers_per_stage(c.layers, par.pp * par.chunks, par.stage_layers)
    elif c.layers % (par.pp * par.chunks):
        # the flag that breaks the split: PP alone, else the chunks per rank (--interleave, or a V schedule's two)
        culprit = "pp" if c.layers % par.pp else "schedule" if par.schedule in V_SCHEDULES else "interleave"
        chunks = [v for v in range(2, c.layers + 1) if c.layers % (par.pp * v) == 0]
        pps = [p for p in range(1, c.layers + 1) if c.layers % (p * par.chunks) == 0]
        fix = (f"{setting('interleave', placeholder=or_list(chunks))} splits them evenly; " if culprit == "interleave"
               and chunks else f"PP {or_list(pps)} splits them evenly; " if pps else "")
        own = f"{setting('stage-layers', placeholder='N1,N2,…')} gives each stage its own count" if uneven else ""
        raise InputError(f"{c.layers} layers do not split into {par.pp} stages × {par.chunks} chunks: "
                         f"{(fix + own).removesuffix('; ') or 'no PP splits them evenly'}", field=culprit)
    check_tp_split(c, par.tp)
    problem = cp_problem(c, par.cp, par.attention, par.tp, par.cp_comm, par.cp_hierarchy)
    if problem:
        heads = par.cp_comm == "a2a+p2p" and not cp_problem(c, par.cp, par.attention, par.tp)  # A's heads split
        raise InputError(problem, field="cp-hierarchy" if heads else "cp")


__all__ = ["SCHEDULE_RULES", "Parallelism", "check_fits", "check_tp_split", "layers_per_stage", "one_chunk_advice",
           "padded_vocab", "rank_of_stages", "rank_stages", "schedule_name", "schedule_rejection", "tp_straddles"]
