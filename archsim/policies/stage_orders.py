"""Published pipeline schedules as per-rank action orders, in torch.distributed.pipelining's terms.

An order fixes, for every rank (device), the sequence of its actions; it says nothing about time.
:mod:`archsim.policies.stage_run` turns an order plus stage costs into a timed simulation.

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
  up to 0.0035 lower than archsim's, which waits for every input.)
* ``interleaved-zb``: torch's ``ScheduleInterleavedZeroBubble``: the interleaved order with one
  warm-up step per hop, I/W split and rank r deferring r weight gradients (ZB-H1 when v = 1).
* ``looped-bfs``: torch's ``ScheduleLoopedBFS``: every micro-batch of a chunk before the next chunk.
* ``zb-v``, ``dualpipev``: V-shaped, two chunks per rank (:mod:`archsim.policies.stage_orders_v`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import NamedTuple

from archsim.errors import InputError

KINDS = ("F", "I", "W", "B")


class Action(NamedTuple):
    """One compute action: ``kind`` of (virtual) ``stage`` on ``microbatch`` (torch's ``_Action``).

    A named tuple (immutable, hashed in C): orders of 10⁵ actions are built and looked up often."""

    stage: int
    kind: str
    microbatch: int

    def __str__(self) -> str:
        return f"{self.stage}{self.kind}{self.microbatch}"

    __repr__ = __str__


@dataclass(frozen=True)
class StageOrder:
    """Per-rank action sequences of one schedule over ``stages`` virtual stages."""

    name: str
    ranks: tuple[tuple[Action, ...], ...]
    stages: int
    microbatches: int
    pairs: tuple[tuple[int, ...], ...] = ()  # per rank: where an overlapped F/B pair starts (OVERLAP_F_B)

    def rank_of_stage(self) -> dict[int, int]:
        found: dict[int, int] = {}
        for rank, actions in enumerate(self.ranks):
            for stage in dict.fromkeys(map(itemgetter(0), actions)):  # the rank's stages, in order of first use
                if found.setdefault(stage, rank) != rank:
                    raise InputError(f"stage {stage} runs on ranks {found[stage]} and {rank}", field="schedule")
        return found


def _order(name: str, ranks: list[list[Action]], stages: int, m: int) -> StageOrder:
    return StageOrder(name, tuple(tuple(r) for r in ranks), stages, m)


def gpipe(p: int, m: int) -> StageOrder:
    ranks = [[Action(r, "F", i) for i in range(m)] + [Action(r, "B", i) for i in range(m)] for r in range(p)]
    return _order("gpipe", ranks, p, m)


def one_f_one_b(p: int, m: int) -> StageOrder:
    ranks = []
    for r in range(p):
        warm = min(p - 1 - r, m)
        actions = [Action(r, "F", i) for i in range(warm)]
        for i in range(m):
            if warm + i < m:
                actions.append(Action(r, "F", warm + i))
            actions.append(Action(r, "B", i))
        ranks.append(actions)
    return _order("1f1b", ranks, p, m)


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
    rounds = max(1, m // p)
    if m % rounds:
        raise InputError(f"interleaved schedules need micro-batches ({m}) to be a multiple of the rounds "
                         f"({rounds} = max(1, {m} // {p}))", field="microbatches")
    return m // rounds


def _take(counter: dict[int, int], stage: int, kind: str) -> Action:
    """The next micro-batch of ``kind`` on ``stage`` (per-stage counters)."""
    counter[stage] += 1
    return Action(stage, kind, counter[stage] - 1)


def _interleaved_rank(p: int, v: int, per_round: int, total: int, warm: int, r: int, split: bool) -> list[Action]:
    """Rank r's actions in the interleaved family (torch's ``_get_1f1b_rank_ops``)."""
    f_next: dict[int, int] = defaultdict(int)
    b_next: dict[int, int] = defaultdict(int)
    w_next: dict[int, int] = defaultdict(int)
    pending: list[int] = []  # stages of backward-input actions whose W is still to run
    forward_stage = [(k // per_round) % v * p + r for k in range(total)]
    actions = [_take(f_next, forward_stage[k], "F") for k in range(warm)]
    weights = 0
    for step in range(warm, warm + total):
        if step < total:
            actions.append(_take(f_next, forward_stage[step], "F"))
        stage = (v - 1 - ((step - warm) // per_round) % v) * p + r
        actions.append(_take(b_next, stage, "I" if split else "B"))
        pending.append(stage)
        if split and step - warm >= r:  # defer r weight gradients (num_1f1b_microbatches = rank)
            actions.append(_take(w_next, pending[weights], "W"))
            weights += 1
    if split:
        actions += [_take(w_next, stage, "W") for stage in pending[weights:]]
    return actions


def _interleaved(p: int, m: int, v: int, hop_warmup: int, split: bool, name: str) -> StageOrder:
    """Interleaved 1F1B family on p ranks with v chunks each; hop_warmup warm-up steps per hop."""
    per_round = _rounds(p, m)
    total = m * v
    ranks = [_interleaved_rank(p, v, per_round, total, min((v - 1) * per_round + hop_warmup * (p - 1 - r), total),
                               r, split) for r in range(p)]
    return _order(name, ranks, p * v, m)


def interleaved_1f1b(p: int, m: int, v: int = 2) -> StageOrder:
    return _interleaved(p, m, v, 2, False, "interleaved-1f1b")


def interleaved_zb(p: int, m: int, v: int = 2) -> StageOrder:
    return _interleaved(p, m, v, 1, True, "interleaved-zb")


def looped_bfs(p: int, m: int, v: int = 2) -> StageOrder:
    ranks = []
    for r in range(p):
        stages = range(r, p * v, p)
        actions = [Action(s, "F", i) for s in stages for i in range(m)]
        actions += [Action(s, "B", i) for s in reversed(stages) for i in reversed(range(m))]
        ranks.append(actions)
    return _order("looped-bfs", ranks, p * v, m)


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
    from archsim.policies.stage_orders_v import dualpipe_v, zb_v

    return zb_v(p, m) if name == "zb-v" else dualpipe_v(p, m)


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
    if name not in builders:
        raise InputError(f"unknown schedule {name!r}; choose one of {', '.join([*builders, *TORCH_SCHEDULES])}",
                         field="schedule")
    if p <= 0 or m <= 0 or chunks <= 0:
        raise InputError(f"stages, micro-batches and chunks must be positive, got {p}, {m}, {chunks}",
                         field="schedule")
    return builders[name]()


ORDERS = ("gpipe", "1f1b", "zb-h1", "zb-h2", "interleaved-1f1b", "interleaved-zb", "looped-bfs", "zb-v", "dualpipev")

# --- torch's CSV layout: one row per rank, one cell per action ("0F0", "1I3", "2W0", "1B2") ---

_CELL = re.compile(r"(\d{1,9})(F|I|W|B)(\d{1,9})")  # stage, micro-batch < 10⁹: no 5,000-digit int()
_OVERLAP = re.compile(r"\(([^;()]+);([^;()]+)\)OVERLAP_F_B")
_TORCH_OTHER = re.compile(r"\d*(UNSHARD|RESHARD|REDUCE_GRAD|SEND_F|RECV_F|SEND_B|RECV_B)\d*")


def order_csv(order: StageOrder) -> str:
    """The order as torch's ``_dump_csv`` writes a compute-only schedule (pairs as ``(0F1;5B0)OVERLAP_F_B``)."""
    lines = []
    for rank, actions in enumerate(order.ranks):
        starts = set(order.pairs[rank]) if order.pairs else set()
        cells, k = [], 0
        while k < len(actions):
            if k in starts:
                cells.append(f"({actions[k]};{actions[k + 1]})OVERLAP_F_B")
                k += 2
            else:
                cells.append(str(actions[k]))
                k += 1
        lines.append(",".join(cells) + "\n")
    return "".join(lines)


def parse_order_csv(text: str, source: str = "schedule csv", name: str = "csv") -> StageOrder:
    """Read torch's compute-only CSV (``_load_csv``); communication and resharding cells are skipped.

    Raises InputError naming the line and cell on anything else, on a repeated action, and on a
    schedule whose stages or micro-batches do not cover every (stage, micro-batch) pair.
    """
    ranks: list[list[Action]] = []
    pairs: list[tuple[int, ...]] = []
    seen: set[Action] = set()
    from archsim.validate import csv_rows

    for line, row in csv_rows(text, source):  # an over-long field or a NUL: one error at its line
        actions: list[Action] = []
        starts = []
        for column, cell in enumerate(row, start=1):
            cell = cell.strip()
            if not cell or _TORCH_OTHER.fullmatch(cell):
                continue
            overlap = _OVERLAP.fullmatch(cell)
            parts = [overlap[1], overlap[2]] if overlap else [cell]
            if overlap:
                starts.append(len(actions))
            for part in parts:
                match = _CELL.fullmatch(part.strip())
                if match is None:
                    raise InputError(f"cell {column}: {cell!r} is not an action like 0F0, 1I2, 2W0, 1B3 or "
                                     "(0F1;3B0)OVERLAP_F_B", file=source, line=line, field="action")
                action = Action(int(match[1]), match[2], int(match[3]))
                if action in seen:
                    raise InputError(f"cell {column}: action {part} appears twice", file=source, line=line,
                                     field="action")
                seen.add(action)
                actions.append(action)
        ranks.append(actions)
        pairs.append(tuple(starts))
    while ranks and not ranks[-1]:
        ranks.pop()
    if not ranks:
        raise InputError("no actions", file=source, field="action")
    stages = 1 + max(a.stage for a in seen)
    m = 1 + max(a.microbatch for a in seen)
    order = StageOrder(name, tuple(tuple(r) for r in ranks), stages, m,
                       tuple(pairs[:len(ranks)]) if any(pairs) else ())
    order.rank_of_stage()
    for s in range(stages):
        for i in range(m):
            if Action(s, "F", i) not in seen:
                raise InputError(f"stage {s} has no forward of micro-batch {i}", file=source, field="action")
            full, split = Action(s, "B", i) in seen, (Action(s, "I", i) in seen, Action(s, "W", i) in seen)
            if full == any(split) or (not full and not all(split)):
                raise InputError(f"stage {s}, micro-batch {i} needs one B or one I and one W", file=source,
                                 field="action")
    return order


def read_order_csv(path: str | Path) -> StageOrder:
    from archsim.validate import read_text

    text = read_text(path, "schedule CSV")
    return parse_order_csv(text, str(path), Path(path).stem)


__all__ = [
    "KINDS",
    "ORDERS",
    "TORCH_SCHEDULES",
    "Action",
    "StageOrder",
    "gpipe",
    "interleaved_1f1b",
    "interleaved_zb",
    "looped_bfs",
    "one_f_one_b",
    "order_csv",
    "parse_order_csv",
    "published_order",
    "read_order_csv",
    "torch_schedule_name",
    "zb_handcrafted",
]
