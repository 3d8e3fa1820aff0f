"""Published pipeline schedules as generators of per-rank action orders (:mod:`archsim.policies.actions`).

An order fixes, for every rank (device), the sequence of its actions; it says nothing about time.
:func:`archsim.policies.stage_run.order_problem` turns an order plus stage costs into the
simulator's problem through the one builder (:mod:`archsim.sim.builder`). ``gpipe`` and ``one_f_one_b`` are the only GPipe and 1F1B orders in
archsim (the partition schedules of :mod:`archsim.policies.pipeline` run them too): both, and
``looped_bfs``, build as numpy columns the runs :mod:`archsim.rank_orders` states once (SPP's PE reads
GPipe's there too); torch CSVs are read and written by :mod:`archsim.policies.torch_csv` (imported
from there).

Actions use torch's vocabulary (``torch/distributed/pipelining/schedules.py``, ``_Action``):
``F`` forward, ``I`` backward of the input (zero-bubble B, archsim's δ/D), ``W`` backward of the
weights (archsim's G), ``B`` full backward (I and W fused, sent upstream only when both are done).
Stage ids are 0-based (virtual) stages; with v looped chunks per rank, stage j lives on rank
j mod p (V-shaped schedules put stages r and 2p − 1 − r on rank r).

Orders, each as its authors build it:

* ``gpipe``: all forwards, then all full backwards in micro-batch order (torch ``ScheduleGPipe``).
* ``1f1b``: rank r runs p − 1 − r warm-up forwards, then one forward and one full backward per
  step, then the remaining backwards (Megatron-LM; torch ``Schedule1F1B``; the zero-bubble paper's
  1F1B baseline, whose backward sends its gradient only after W).
* ``zb-h1`` / ``zb-h2`` (Qi et al., ICLR'24, §2.2, Fig. 3; ``get_hand_schedule`` in the authors'
  ``efficiency.py``, sail-sg/zero-bubble-pipeline-parallelism branch ``arxiv``, which made Table 5):
  rank r runs k(p − 1 − r) warm-up forwards (k = 1 for H1, 2 for H2), then per step F, I and —
  once the rank has deferred k·r weight gradients — the oldest pending W; the deferred Ws fill the
  tail. H1 keeps 1F1B's memory, H2 holds 2p − 1 micro-batches on the first rank.
* ``interleaved-1f1b``: Megatron's interleaved schedule (Narayanan et al., SC'21) with torch's
  round rule (``ScheduleInterleaved1F1B``): rounds of ``m // max(1, m // p)`` micro-batches, rank r
  warms up with (v − 1)·round + 2(p − 1 − r) chunk-forwards, depth-first over its v chunks. (The
  zero-bubble authors timed the same order for Table 5's 1F1B-I, but their evaluator waits for the
  previous chunk on the ring only for the first micro-batch of each group of p, so their rates are
  up to 0.0035 lower than archsim's, which waits for every input.) ``train`` and ``search`` run
  Megatron-LM's grouping instead (:func:`megatron_interleaved_1f1b`, :func:`training_order`): the same order
  where p divides m, groups of N ≥ p micro-batches (the last holding the rest) where it does not.
* ``interleaved-zb``: torch's ``ScheduleInterleavedZeroBubble``: the interleaved order with one
  warm-up step per hop, I/W split and rank r deferring r weight gradients (ZB-H1 when v = 1).
* ``looped-bfs``: torch's ``ScheduleLoopedBFS``: every micro-batch of a chunk before the next chunk.
* ``zb-v``, ``dualpipev``: V-shaped, two chunks per rank (:mod:`archsim.policies.stage_orders_v`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from archsim.choices.schedules import TRAINING_SCHEDULES
from archsim.errors import InputError
from archsim.policies.actions import Action, StageOrder, from_runs
from archsim.policies.stage_orders_v import dualpipe_v, zb_v
from archsim.rank_orders import fill_drain
from archsim.rank_orders import one_f_one_b as rank_one_f_one_b
from archsim.validate import did_you_mean


def _order(name: str, ranks: list[list[Action]], stages: int, m: int) -> StageOrder:
    return StageOrder(name, tuple(tuple(r) for r in ranks), stages, m)


def gpipe(p: int, m: int) -> StageOrder:
    """Every forward, then every full backward, oldest micro-batch first (torch's ``ScheduleGPipe``):
    :func:`archsim.rank_orders.fill_drain` on each rank's one stage."""
    return from_runs("gpipe", [fill_drain([r], m) for r in range(p)], p, m)


def one_f_one_b(p: int, m: int) -> StageOrder:
    """Rank r: p − 1 − r warm-up forwards, then F(warm + i), B(i) pairs, then the last backwards
    (torch's ``Schedule1F1B``; :func:`archsim.rank_orders.one_f_one_b`); numpy blocks, 10⁶ actions in
    milliseconds."""
    return from_runs("1f1b", [rank_one_f_one_b(p, r, m) for r in range(p)], p, m)


def zb_handcrafted(p: int, m: int, k: int) -> StageOrder:
    """ZB-H1 (k = 1) or ZB-H2 (k = 2): see the module docstring."""
    ranks = []
    for r in range(p):
        warm = min(k * (p - 1 - r), m)
        actions = [Action(r, "F", i) for i in range(warm)]
        weights = 0
        for i in range(m):
            if warm + i < m:
                actions.append(Action(r, "F", warm + i))
            actions.append(Action(r, "I", i))
            if warm + i >= k * (p - 1):  # this rank has deferred k·r weight gradients by now
                actions.append(Action(r, "W", weights))
                weights += 1
        actions += [Action(r, "W", i) for i in range(weights, m)]
        ranks.append(actions)
    return _order(f"zb-h{k}", ranks, p, m)


def _rounds(p: int, m: int) -> int:
    """Micro-batches per round of the interleaved family on p ranks, by torch's rule
    (``ScheduleInterleaved1F1B`` and ``ScheduleInterleavedZeroBubble``, torch 2.13: rounds = max(1, m // p),
    m a multiple of rounds; "relaxing the requirement of num_microbatch % pp_size == 0"). This is the order
    ``archsim schedule`` builds, so it runs m = 3 or 10 on 4 ranks as torch does. ``train`` and ``search``
    model Megatron-LM's interleaved 1F1B instead (:func:`megatron_interleaved_1f1b`: groups of N ≥ p
    micro-batches, any m ≥ p): where PP divides m both run rounds of PP micro-batches (Megatron-LM's
    default group size). Two schedules, two rules."""
    rounds = max(1, m // p)
    if m % rounds:
        raise InputError(f"interleaved schedules need micro-batches ({m}) to be a multiple of the rounds "
                         f"({rounds} = max(1, {m} // {p}))", field="microbatches")
    return m // rounds


def _take(counter: dict[int, int], stage: int, kind: str) -> Action:
    """The next micro-batch of ``kind`` on ``stage`` (per-stage counters)."""
    counter[stage] += 1
    return Action(stage, kind, counter[stage] - 1)


def _interleaved_rank(p: int, v: int, chunk_of: list[int], warm: int, r: int, split: bool) -> list[Action]:
    """Rank r's actions in the interleaved family (torch's ``_get_1f1b_rank_ops``, Megatron-LM's schedule table):
    forward k runs chunk ``chunk_of[k]``, backward k chunk v − 1 − ``chunk_of[k]``, each chunk's micro-batches
    in order; ``warm`` forwards before the first backward, then one forward and one backward a step."""
    total = len(chunk_of)
    f_next: dict[int, int] = defaultdict(int)
    b_next: dict[int, int] = defaultdict(int)
    w_next: dict[int, int] = defaultdict(int)
    pending: list[int] = []  # stages of backward-input actions whose W is still to run
    actions = [_take(f_next, chunk_of[k] * p + r, "F") for k in range(warm)]
    weights = 0
    for step in range(warm, warm + total):
        if step < total:
            actions.append(_take(f_next, chunk_of[step] * p + r, "F"))
        stage = (v - 1 - chunk_of[step - warm]) * p + r
        actions.append(_take(b_next, stage, "I" if split else "B"))
        pending.append(stage)
        if split and step - warm >= r:  # defer r weight gradients (num_1f1b_microbatches = rank)
            actions.append(_take(w_next, pending[weights], "W"))
            weights += 1
    if split:
        actions += [_take(w_next, stage, "W") for stage in pending[weights:]]
    return actions


def _group_chunks(groups: list[int], v: int) -> list[int]:
    """The chunk of each forward when groups of micro-batches (sizes ``groups``, in order) each run through
    chunks 0 … v − 1 in turn: a group of g gives g forwards of chunk 0, then g of chunk 1, …"""
    return [c for g in groups for c in range(v) for _ in range(g)]


def _interleaved(p: int, m: int, v: int, hop_warmup: int, split: bool, name: str,
                 groups: list[int] | None = None) -> StageOrder:
    """Interleaved 1F1B family on p ranks with v chunks each; hop_warmup warm-up steps per hop; ``groups``:
    the micro-batch groups (None: torch's equal rounds, :func:`_rounds`). Rank r warms up with
    (v − 1)·(the first group) + hop_warmup·(p − 1 − r) forwards, capped at m·v."""
    if groups is None:
        per_round = _rounds(p, m)
        groups = [per_round] * (m // per_round)
    chunk_of = _group_chunks(groups, v)
    total = m * v
    ranks = [_interleaved_rank(p, v, chunk_of, min((v - 1) * groups[0] + hop_warmup * (p - 1 - r), total), r, split)
             for r in range(p)]
    return _order(name, ranks, p * v, m)


def megatron_group(p: int, m: int) -> int:
    """Micro-batches per model chunk in one group of Megatron-LM's interleaved 1F1B
    (``microbatch_group_size_per_vp_stage``, N) as archsim runs it: the smallest N Megatron-LM accepts — N in
    [p, m] and m mod N either 0 or ≥ p (``forward_backward_pipelining_with_interleaving``,
    ``megatron/core/pipeline_parallel/schedules.py``, since 4295be1a, 2024-11-01; as at d98e8a64). That is p,
    Megatron-LM's default, wherever p divides m, and never above m once m ≥ p (N = m qualifies); p where m < p,
    which no N serves (:func:`archsim.training.parallel.schedule_rejection` refuses it)."""
    return next((n for n in range(p, m + 1) if m % n == 0 or m % n >= p), p)


def megatron_groups(p: int, m: int) -> list[int]:
    """The sizes of Megatron-LM's micro-batch groups, in order: m // N groups of N (:func:`megatron_group`), and
    the remainder m mod N (≥ p) as one last group where N does not divide m."""
    n = megatron_group(p, m)
    return [n] * (m // n) + ([m % n] if m % n else [])


def megatron_interleaved_1f1b(p: int, m: int, v: int = 2) -> StageOrder:
    """Megatron-LM's interleaved 1F1B on p ranks, v chunks each, at any m ≥ p: the micro-batches in
    :func:`megatron_groups`, each group run through chunks 0 … v − 1 (its schedule table), rank r warming up
    with (v − 1)·N + 2(p − 1 − r) forwards (``get_pp_rank_microbatches``). Where p divides m it is
    :func:`interleaved_1f1b` (both run groups of p); ``train`` and ``search`` run this one."""
    if m < p:
        raise InputError(f"Megatron-LM's interleaved 1F1B needs at least {p} micro-batches (one a rank), got {m}",
                         field="microbatches")
    return _interleaved(p, m, v, 2, False, "interleaved-1f1b", megatron_groups(p, m))


def interleaved_1f1b(p: int, m: int, v: int = 2) -> StageOrder:
    return _interleaved(p, m, v, 2, False, "interleaved-1f1b")


def interleaved_zb(p: int, m: int, v: int = 2) -> StageOrder:
    return _interleaved(p, m, v, 1, True, "interleaved-zb")


def looped_bfs(p: int, m: int, v: int = 2) -> StageOrder:
    """GPipe's fill-drain over rank r's v chunks r, r + p, …, backwards newest first
    (:func:`archsim.rank_orders.fill_drain`; torch's ``ScheduleLoopedBFS``)."""
    return from_runs("looped-bfs", [fill_drain(range(r, p * v, p), m, newest_first=True) for r in range(p)], p * v, m)


# torch class name → (archsim order name, builder(p, m, v))
TORCH_SCHEDULES: dict[str, tuple[str, Callable[[int, int, int], StageOrder]]] = {
    "ScheduleGPipe": ("gpipe", lambda p, m, v: gpipe(p, m)),
    "Schedule1F1B": ("1f1b", lambda p, m, v: one_f_one_b(p, m)),
    "ScheduleInterleaved1F1B": ("interleaved-1f1b", interleaved_1f1b),
    "ScheduleInterleavedZeroBubble": ("interleaved-zb", interleaved_zb),
    "ScheduleLoopedBFS": ("looped-bfs", looped_bfs),
    "ScheduleZBVZeroBubble": ("zb-v", lambda p, m, v: _v_order("zb-v", p, m)),
    "ScheduleDualPipeV": ("dualpipev", lambda p, m, v: _v_order("dualpipev", p, m)),
}


def torch_schedule_name(name: str) -> str:
    """torch's class name for ``name``, given as the class (``ScheduleZBVZeroBubble``) or as torch's
    ``get_schedule_class`` spells it (``ZBVZeroBubble``, any case)."""
    wanted = name.lower().removeprefix("schedule")
    for cls in TORCH_SCHEDULES:
        if cls.lower().removeprefix("schedule") == wanted:
            return cls
    raise InputError(f"unknown torch schedule {name!r}; choose one of {', '.join(TORCH_SCHEDULES)}",
                     field="torch-schedule")


def _v_order(name: str, p: int, m: int) -> StageOrder:
    return zb_v(p, m) if name == "zb-v" else dualpipe_v(p, m)


def check_schedule(name: object) -> None:
    """Refuse a schedule that is neither an archsim order (``ORDERS``) nor a torch class name, before any
    rule about the layout it would run on is checked (a misspelt name is not a layout's fault)."""
    if name not in ORDERS and name not in TORCH_SCHEDULES:
        names = [*ORDERS, *TORCH_SCHEDULES]
        hint = did_you_mean(name, names) if isinstance(name, str) else ""  # dualpipe: 'dualpipev'
        raise InputError(f"unknown schedule {name!r}{hint}; choose one of {', '.join(names)}", field="schedule")


def published_order(name: str, p: int, m: int, chunks: int = 2) -> StageOrder:
    """The order of a published schedule by archsim name (see ``ORDERS``) or torch class name."""
    if name in TORCH_SCHEDULES:
        return TORCH_SCHEDULES[name][1](p, m, chunks)
    builders: dict[str, Callable[[], StageOrder]] = {
        "gpipe": lambda: gpipe(p, m), "1f1b": lambda: one_f_one_b(p, m),
        "zb-h1": lambda: zb_handcrafted(p, m, 1), "zb-h2": lambda: zb_handcrafted(p, m, 2),
        "interleaved-1f1b": lambda: interleaved_1f1b(p, m, chunks),
        "interleaved-zb": lambda: interleaved_zb(p, m, chunks), "looped-bfs": lambda: looped_bfs(p, m, chunks),
        "zb-v": lambda: _v_order("zb-v", p, m), "dualpipev": lambda: _v_order("dualpipev", p, m)}
    check_schedule(name)
    if p <= 0 or m <= 0 or chunks <= 0:
        raise InputError(f"stages, micro-batches and chunks must be positive, got {p}, {m}, {chunks}",
                         field="schedule")
    return builders[name]()


def training_order(name: str, p: int, m: int, chunks: int = 2) -> StageOrder:
    """The order ``train`` and ``search`` run for ``name`` (a :attr:`~archsim.training.parallel.Parallelism.
    schedule_name`): Megatron-LM's interleaved 1F1B (:func:`megatron_interleaved_1f1b`, the software of the runs
    they model) for ``interleaved-1f1b``, else :func:`published_order`. The two differ only where p does not
    divide m, where ``archsim schedule`` keeps torch's rounds."""
    if name == "interleaved-1f1b" and p > 0 and m > 0 and chunks > 0:
        return megatron_interleaved_1f1b(p, m, chunks)
    return published_order(name, p, m, chunks)


ORDERS = TRAINING_SCHEDULES  # the published orders by archsim name (archsim/choices/schedules.py, train's)

__all__ = ["ORDERS",
    "TORCH_SCHEDULES",
    "check_schedule",
    "gpipe",
    "interleaved_1f1b",
    "interleaved_zb",
    "looped_bfs",
    "megatron_group",
    "megatron_groups",
    "megatron_interleaved_1f1b",
    "one_f_one_b",
    "published_order",
    "torch_schedule_name",
    "training_order",
    "zb_handcrafted",
]
