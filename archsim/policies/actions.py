"""A schedule as per-rank action orders, in torch.distributed.pipelining's vocabulary.

An order fixes, for every rank (device), the sequence of its actions; it says nothing about time.
:func:`archsim.policies.stage_run.order_problem` turns an order plus per-stage costs and link
costs into columns for the one builder, :mod:`archsim.sim.builder`, which makes the simulator's problem.

The vocabulary (torch's ``_ComputationType`` names; docs/glossary.md has the same table):

======  ===============================================  ====================================
kind    meaning                                          also called
======  ===============================================  ====================================
F       forward of a stage                               archsim F
I       backward of the input (the gradient sent up)     archsim D / δ, the zero-bubble
                                                         paper's B, torch BACKWARD_INPUT
W       backward of the weights                          archsim G, torch BACKWARD_WEIGHT
B       full backward: I and W fused, the gradient sent  torch FULL_BACKWARD
        upstream only when both are done
======  ===============================================  ====================================

archsim's named actions beyond torch's (used by the layer-wise schedules and reports, see
``NAMED``): ``G``/``D`` (the layer-wise schedules' names of W and I), ``D1``/``D2`` (δ′/δ″, the two
halves of a δ split by LayerPipe), ``FB`` (SPP's last stage, forward and backward merged), ``A`` (a
replicated stage's all-reduce), ``S`` (a data-parallel gradient synchronization), ``cf``/``cb``
(SPP's transfers between stages, ops on their channel); torch's communication actions
``SEND_F``/``RECV_F``/``SEND_B``/``RECV_B`` are read by :mod:`archsim.policies.torch_csv` and timed
by :mod:`archsim.policies.torch_steps`. ``VOCABULARY`` is all of them; the table is kept in
:mod:`archsim.sim.builder` (the one builder, which rejects any other kind; SPP's PE, below the
policies, builds through it too) and read here.

Orders are stored as columns (stage, kind code, micro-batch per action, ranks one after another)
so that generators of 10⁶ actions (1F1B over 62,500 micro-batches) build them with numpy; the
per-rank tuples of :class:`Action` are made on first use.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from typing import NamedTuple

import numpy as np

from archsim.errors import InputError
from archsim.rank_orders import Run
from archsim.read_only import read_only_array
from archsim.sim.builder import CODE, KINDS  # the one table, kept by the builder


class Action(NamedTuple):
    """One compute action: ``kind`` of (virtual) ``stage`` on ``microbatch`` (torch's ``_Action``)."""

    stage: int
    kind: str
    microbatch: int

    def __str__(self) -> str:
        return f"{self.stage}{self.kind}{self.microbatch}"

    def __repr__(self) -> str:  # torch's action string, as in its schedule CSVs
        return self.__str__()


@dataclass(frozen=True, eq=False)
class OrderColumns:
    """Action j of the order: ``kind[j]`` (a code of ``KINDS``) of ``stage[j]`` on ``microbatch[j]``;
    rank r owns the ``lengths[r]`` actions after those of ranks 0 … r − 1, in its order."""

    lengths: np.ndarray
    stage: np.ndarray
    kind: np.ndarray
    microbatch: np.ndarray

    def __post_init__(self) -> None:
        """Each column a read-only view (:mod:`archsim.read_only`'s rule): a training run's order keeps saying what
        ran, the caller's arrays staying theirs."""
        for name in ("lengths", "stage", "kind", "microbatch"):
            object.__setattr__(self, name, read_only_array(getattr(self, name)))

    def __reduce__(self) -> tuple:
        """Copied and pickled through the constructor: read-only again (numpy unpickles an array writeable)."""
        return OrderColumns, (self.lengths, self.stage, self.kind, self.microbatch)

    @property
    def rank(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.lengths), dtype=np.int64), self.lengths)

    @property
    def bounds(self) -> np.ndarray:
        """Rank r's actions are ``bounds[r]:bounds[r + 1]``."""
        return np.concatenate([[0], np.cumsum(self.lengths)]).astype(np.int64)


class StageOrder:
    """Per-rank action sequences of one schedule over ``stages`` virtual stages (immutable).

    ``StageOrder(name, ranks, stages, microbatches, pairs)`` from tuples of :class:`Action` per rank,
    or :meth:`from_columns`; ``pairs``: per rank, where an overlapped F/B pair (torch's
    ``OVERLAP_F_B``) starts."""

    __slots__ = ("_columns", "_ranks", "microbatches", "name", "pairs", "stages")
    name: str
    stages: int
    microbatches: int
    pairs: tuple[tuple[int, ...], ...]
    _ranks: tuple[tuple[Action, ...], ...] | None  # one of these two is set; the other is made on first use
    _columns: OrderColumns | None

    def __init__(self, name: str, ranks: Iterable[Iterable[Action]], stages: int, microbatches: int, pairs: tuple[tuple[int, ...], ...] = ()):
        for key, value in (("name", name), ("stages", stages), ("microbatches", microbatches),
                           ("pairs", tuple(tuple(p) for p in pairs)),
                           ("_ranks", tuple(tuple(r) for r in ranks)), ("_columns", None)):
            object.__setattr__(self, key, value)

    @classmethod
    def from_columns(cls, name: str, columns: OrderColumns, stages: int, microbatches: int,
                     pairs: tuple[tuple[int, ...], ...] = ()) -> StageOrder:
        self = cls.__new__(cls)
        for key, value in (("name", name), ("stages", stages), ("microbatches", microbatches),
                           ("pairs", tuple(tuple(p) for p in pairs)), ("_ranks", None), ("_columns", columns)):
            object.__setattr__(self, key, value)
        return self

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"StageOrder is immutable; cannot set {name!r}")

    def __reduce__(self) -> tuple:
        """Pickled and copied through :meth:`from_columns`: the default would set its slots one by one,
        which ``__setattr__`` refuses (a training result could not be deep-copied or sent to a worker)."""
        return StageOrder.from_columns, (self.name, self.columns, self.stages, self.microbatches, self.pairs)

    @property
    def ranks(self) -> tuple[tuple[Action, ...], ...]:
        ranks = self._ranks
        if ranks is None:
            c = self.columns
            letters = [KINDS[k] for k in c.kind.tolist()]
            actions = list(map(Action, c.stage.tolist(), letters, c.microbatch.tolist()))
            ranks = tuple(tuple(actions[x:y]) for x, y in pairwise(c.bounds.tolist()))
            object.__setattr__(self, "_ranks", ranks)
        return ranks

    @property
    def columns(self) -> OrderColumns:
        columns = self._columns
        if columns is None:
            columns = _columns_of(self.ranks)
            object.__setattr__(self, "_columns", columns)
        return columns

    def rank_of_stage(self) -> dict[int, int]:
        """Stage → the rank that runs it, ranks in order and each rank's stages in order of first use."""
        c = self.columns
        if not len(c.stage):
            return {}
        top = int(c.stage.max()) + 1
        pairs, first = np.unique(c.rank * top + c.stage, return_index=True)
        pairs = pairs[np.argsort(first, kind="stable")]
        rank, stage = (pairs // top).tolist(), (pairs % top).tolist()
        found: dict[int, int] = {}
        for s, r in sorted(zip(stage, rank), key=lambda x: x[1]):
            if found.setdefault(s, r) != r:
                raise InputError(f"stage {s} runs on ranks {found[s]} and {r}", field="schedule")
        return found

    def _key(self) -> tuple:
        return self.name, self.ranks, self.stages, self.microbatches, self.pairs

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StageOrder):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"StageOrder({self.name!r}, {len(self.columns.lengths)} ranks, {self.stages} stages, "
                f"{self.microbatches} micro-batches)")


def _columns_of(ranks: tuple[tuple[Action, ...], ...]) -> OrderColumns:
    stage: list[int] = []
    kinds: list[str] = []
    microbatch: list[int] = []
    for actions in ranks:
        if actions:
            s, k, i = zip(*actions)
            stage += s
            kinds += k
            microbatch += i
    try:
        code = [CODE[k] for k in kinds]
    except KeyError as error:
        raise InputError(f"unknown action kind {error.args[0]!r}; an order holds {', '.join(KINDS)}",
                         field="action") from None
    return OrderColumns(np.array([len(r) for r in ranks], dtype=np.int64), np.array(stage, dtype=np.int64),
                        np.array(code, dtype=np.int64), np.array(microbatch, dtype=np.int64))


def from_blocks(name: str, ranks, stages: int, microbatches: int) -> StageOrder:
    """An order from numpy blocks: per rank, a list of (stage, kind, micro-batches) — ``micro-batches``
    an integer array, ``stage`` and ``kind`` (a letter or code) one value or an array of its length."""
    lengths: list[int] = []
    columns: tuple[list, list, list] = ([], [], [])
    for blocks in ranks:
        count = 0
        for stage, kind, microbatch in blocks:
            microbatch = np.asarray(microbatch, dtype=np.int64)
            code = CODE[kind] if isinstance(kind, str) else kind
            columns[0].append(np.broadcast_to(np.asarray(stage, dtype=np.int64), microbatch.shape))
            columns[1].append(np.broadcast_to(np.asarray(code, dtype=np.int64), microbatch.shape))
            columns[2].append(microbatch)
            count += len(microbatch)
        lengths.append(count)
    stage, kind, microbatch = (np.concatenate(c) if c else np.zeros(0, dtype=np.int64) for c in columns)
    return StageOrder.from_columns(name, OrderColumns(np.array(lengths, dtype=np.int64), stage, kind, microbatch),
                                   stages, microbatches)


def from_runs(name: str, ranks: Iterable[Iterable[Run]], stages: int, microbatches: int) -> StageOrder:
    """An order from :mod:`archsim.rank_orders`' runs (per rank, its runs in order), one numpy block a run."""
    return from_blocks(name, [[_block(run) for run in runs] for runs in ranks], stages, microbatches)


def _block(run: Run) -> tuple[int, object, np.ndarray]:
    """A run as one block of :func:`from_blocks`: its micro-batches step by step, its kinds cycled."""
    columns = [np.arange(x.start, x.stop, x.step, dtype=np.int64) for x in run.microbatches]
    if len(columns) == 1:
        return run.stage, run.kinds[0], columns[0]
    codes = np.array([CODE[kind] for kind in run.kinds], dtype=np.int64)
    return run.stage, np.tile(codes, run.steps), np.column_stack(columns).ravel()


__all__ = ["Action", "OrderColumns", "StageOrder", "from_blocks", "from_runs"]
