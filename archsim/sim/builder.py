"""The one builder: a schedule's actions, per rank, become the simulator's problem.

Every schedule in archsim is an action-order generator: it names, for every rank (a processor, a
channel or a network modelled as one), the actions it runs — their kind from the one vocabulary
(:data:`VOCABULARY`: torch.distributed.pipelining's kinds and archsim's named actions;
docs/glossary.md has the same table), cost, memory and data dependencies — and *how* the rank
picks the next one. Two modes, which a schedule may mix:

* **sequence** (torch's schedules, SPP's U_s, data parallel's backward): the rank runs the listed
  actions exactly in that order; the builder chains each one after the previous one;
* **priority** (the list schedules: LayerPipe's δ-first, the OOO policies, the ``list-…`` zero
  bubble variants, PE's visit order): a priority column, lower first, and the simulator's list
  rule — among a rank's ready actions the one of lowest priority runs (ties: problem order).

The builder checks the vocabulary (one clear error naming the first unknown kind), adds the
sequence chains after the data flow, and hands the columns to ``sim.Problem.from_arrays`` — the
one place that turns actions into the simulator's problem. Times are in the caller's unit, bytes
are bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from archsim.errors import InputError
from archsim.sim.columns import DepColumns, OpColumns
from archsim.sim.problem import Link, Problem, Processor

KINDS = ("F", "I", "W", "B")
CODE = {kind: code for code, kind in enumerate(KINDS)}  # F 0, I 1, W 2, B 3
NAMED = {"G": "archsim's name for W in the layer-wise schedules (a layer's weight gradient)",
         "D": "archsim's name for I in the layer-wise schedules (a layer's input gradient, δ)",
         "D1": "δ′: first half of a split input gradient (LayerPipe)",
         "D2": "δ″: second half of a split input gradient, on another processor (LayerPipe)",
         "FB": "forward and backward of SPP's last stage, merged",
         "A": "all-reduce of a replicated stage's weight gradients",
         "S": "data-parallel synchronization of one layer's weight gradient",
         "cf": "SPP's transfer of a stage's activations to the next stage, on their channel",
         "cb": "SPP's transfer of the gradient back from the next stage, on their channel"}
COMMUNICATION = ("SEND_F", "RECV_F", "SEND_B", "RECV_B")
VOCABULARY = (*KINDS, *COMMUNICATION, *NAMED)  # every action kind a schedule may name (docs/glossary.md)

_KNOWN = frozenset(VOCABULARY)


def build(ranks: Sequence[Processor], actions: OpColumns, flow: DepColumns, links: Sequence[Link] = (), *,
          sequences: Sequence[np.ndarray] = ()) -> Problem:
    """The problem of ``actions`` (op columns; their ``kind`` tag must name vocabulary kinds, None
    only for a zero-length barrier) on ``ranks`` with data dependencies ``flow`` over ``links``;
    each array of ``sequences`` lists action indices one rank runs strictly in that order."""
    check_kinds(actions)
    if len(sequences):
        chains = [np.asarray(s, dtype=np.int64) for s in sequences]
        flow = then_order(flow, np.concatenate([c[:-1] for c in chains]), np.concatenate([c[1:] for c in chains]))
    return Problem.from_arrays(tuple(ranks), tuple(links), actions, flow)


def sub_problem(problem: Problem, keep) -> Problem:
    """The problem of ``problem``'s actions where the boolean mask ``keep`` is true (in problem order) and the
    dependencies between two of them, on the same ranks and links: a phase of a flushed schedule cut out to be
    solved on its own. Each kept action keeps its rank, duration, stream, bytes, priority and tags."""
    keep = np.asarray(keep, dtype=bool)
    a = problem.arrays
    if keep.shape != (len(a.ids),):
        raise InputError(f"sub_problem needs one keep flag per action ({len(a.ids)}), got {keep.shape}", field="keep")
    index = np.flatnonzero(keep)
    position = np.full(len(keep), -1, dtype=np.int64)
    position[index] = np.arange(len(index))
    picked = index.tolist()
    priority = problem.priorities
    if priority is not None:
        priority = priority[index] if isinstance(priority, np.ndarray) else [priority[i] for i in picked]
    keys = dict.fromkeys(pair[0] for op in problem.ops for pair in op.tags)
    columns = {key: problem.tag_values(key) for key in keys}
    tags = tuple((key, [column[i] for i in picked]) for key, column in columns.items())
    ops = OpColumns([a.ids[i] for i in picked], a.proc[index], a.duration[index], pin=a.pin[index],
                    alloc=a.alloc[index], free=a.free[index], priority=priority, tags=tags)
    inside = keep[a.dep_src] & keep[a.dep_dst]
    flow = DepColumns(position[a.dep_src[inside]], position[a.dep_dst[inside]], a.dep_bytes[inside],
                      a.dep_link[inside])
    return build(problem.processors, ops, flow, problem.links)


def then_order(flow: DepColumns, src: np.ndarray, dst: np.ndarray) -> DepColumns:
    """``flow``, then dependencies ``src[k]`` → ``dst[k]`` that only order ops (no bytes, no link)."""
    return DepColumns(_joined(flow.src, src, np.int64), _joined(flow.dst, dst, np.int64),
                      None if flow.bytes is None else _joined(flow.bytes, 0, flow.bytes.dtype, len(src)),
                      None if flow.link is None else _joined(flow.link, -1, np.int64, len(src)))


def _joined(head: np.ndarray, tail, dtype, extra: int = 0) -> np.ndarray:
    """``head`` then ``tail`` (an array, or a value repeated ``extra`` times) in one new array."""
    tail_length = extra if np.isscalar(tail) else len(tail)
    out = np.empty(len(head) + tail_length, dtype=dtype)
    out[:len(head)] = head
    out[len(head):] = tail
    return out


def repeat_flow(template: DepColumns, offset: np.ndarray, size: int, microbatches: int) -> DepColumns:
    """The data flow of ``microbatches`` copies of a ``size``-action template (copy b's actions are
    b·size … b·size + size − 1): template dependency d runs, in copy b, from action ``src[d]`` of
    copy b + ``offset[d]`` to action ``dst[d]`` of copy b, and exists only where that copy does
    (admission windows, alternation, a fused backward's W before the next I). Copy by copy, each in
    template order — the list schedules' micro-batches."""
    batch = np.arange(microbatches, dtype=np.int64)[:, None]
    offset = np.asarray(offset, dtype=np.int64)
    source = batch + offset
    keep = (source >= 0) & (source < microbatches)
    src = (source * size + template.src)[keep]
    dst = np.broadcast_to(batch * size + template.dst, keep.shape)[keep]
    size_ = None if template.bytes is None else np.broadcast_to(template.bytes, keep.shape)[keep]
    link = None if template.link is None else np.broadcast_to(template.link, keep.shape)[keep]
    return DepColumns(src.astype(np.int64), dst.astype(np.int64), size_, link)


_FIRST_FROM = np.array([-4, -1, -1, -3], dtype=np.int64)  # per kind F I W B: its first source's key offset / top


@dataclass(frozen=True, eq=False)
class StageFlow:
    """The data flow of a per-stage action order: dependency d runs from action ``src[d]`` to action
    ``dst[d]`` (positions in the order), ``grad[d]`` 1 for the gradient from the next stage, 0 for
    the action's own input; ``cross[d]`` where the two stages' ranks differ (a transfer). Per action:
    ``missing_first`` (its input is absent) and ``missing`` (some source is absent)."""

    src: np.ndarray
    dst: np.ndarray
    grad: np.ndarray
    cross: np.ndarray
    missing_first: np.ndarray
    missing: np.ndarray


def stage_flow(stage: np.ndarray, code: np.ndarray, microbatch: np.ndarray, rank_of_stage: np.ndarray,
               last: int) -> StageFlow:
    """The stage chain's data dependencies of actions (``stage``, kind ``code`` of :data:`KINDS`,
    ``microbatch``), in action order, each action's input first: F(s, m) after F(s − 1, m); I and
    B after F(s, m); W after I(s, m); then, for I and B below stage ``last``, the gradient of
    s + 1 (its B, else its I). ``rank_of_stage``: the rank of stages 0 … S (S: one past the
    highest stage; −1 where none runs it). No per-action Python: one table of (stage, kind,
    micro-batch) positions and gathers from it."""
    n = len(stage)
    stages = len(rank_of_stage) - 1
    top = int(microbatch.max()) + 1 if n else 1
    key = (stage * 4 + code) * top + microbatch  # action i sits at where[key[i]]; the last stage row stays empty
    where = np.full((stages + 1) * 4 * top, -1, dtype=np.int64)
    where[key] = np.arange(n)
    first = where[key + _FIRST_FROM[code] * top]  # stage 0's F reads the empty row (and has no input)
    upstream = key + (4 - code) * top  # F of s + 1
    full = where[upstream + 3 * top]
    second = np.where(full >= 0, full, where[upstream + top])
    del upstream, full, key
    is_forward = code == 0
    has_first = ~is_forward | (stage > 0)
    has_second = ((code == 1) | (code == 3)) & (stage != last)
    missing_first = has_first & (first < 0)
    missing = missing_first | (has_second & (second < 0))
    rank_here = rank_of_stage[stage]
    cross_first = is_forward & (stage > 0) & (rank_of_stage[stage - 1] != rank_here)
    cross_second = has_second & (rank_of_stage[np.minimum(stage + 1, stages)] != rank_here)
    linked = np.flatnonzero(np.column_stack((has_first, has_second)).ravel())
    return StageFlow(np.column_stack((first, second)).ravel()[linked], linked >> 1, linked & 1,
                     np.column_stack((cross_first, cross_second)).ravel()[linked], missing_first, missing)


def check_kinds(actions: OpColumns) -> None:
    """Every action's ``kind`` tag is a vocabulary name (None: a zero-length barrier)."""
    kinds = next((column for key, column in actions.tags if key == "kind"), None)
    if kinds is None:
        raise InputError("every action needs a kind from the schedule vocabulary", field="kind")
    found = _distinct_strings(kinds) if isinstance(kinds, np.ndarray) and kinds.dtype.kind == "U" else set(kinds)
    unknown = sorted(str(k) for k in found - _KNOWN - {None})
    if unknown:
        raise InputError(f"unknown action kind {unknown[0]!r}; the vocabulary is {', '.join(VOCABULARY)}",
                         field="kind")
    if None in found:
        barrier = np.array([k is None for k in kinds], dtype=bool)
        if np.any(np.asarray(actions.duration)[barrier] != 0):
            raise InputError("an action without a kind must be a zero-length barrier", field="kind")


def _distinct_strings(column: np.ndarray) -> set[str]:
    """The different strings of a numpy string column; one-letter kinds (F, I, W, B) counted by code
    point, not sorted."""
    if column.dtype.itemsize == 4 and column.size:
        return {chr(c) if c else "" for c in np.flatnonzero(np.bincount(column.view(np.uint32))).tolist()}
    return set(np.unique(column).tolist())


def from_rows(ops, deps) -> tuple[OpColumns, DepColumns]:
    """Columns of a small schedule written as rows: ``ops`` (id, rank index, duration, priority,
    tags) and ``deps`` (source index, target index), for generators that list a few hundred actions."""
    ids, rank, duration, priority, tags = zip(*ops) if ops else ((),) * 5
    keys = list(dict.fromkeys(key for row in tags for key, _ in row))
    columns = tuple((key, [dict(row).get(key) for row in tags]) for key in keys)
    src, dst = (np.array(c, dtype=np.int64) for c in zip(*deps)) if deps else (np.zeros(0, np.int64),) * 2
    return (OpColumns(list(ids), np.array(rank, dtype=np.int64), np.array(duration, dtype=np.float64),
                      priority=list(priority), tags=columns), DepColumns(src, dst))


__all__ = ["CODE", "COMMUNICATION", "KINDS", "NAMED", "VOCABULARY", "StageFlow", "build", "check_kinds", "from_rows", "repeat_flow", "stage_flow",
           "sub_problem", "then_order"]
