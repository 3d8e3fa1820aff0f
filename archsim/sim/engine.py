"""Event-driven, non-delay list scheduling over an op DAG with processors, streams and links.

Rules (DESIGN.md, "Simulator"):

* An op is ready when every dependency is met: its producer has ended and, for a dep with a
  link, the transfer has arrived.
* Whenever a processor has a free stream and ready ops, the op the policy ranks first starts
  there — the lowest ``policy.key(op)``, ties by the op's position in ``problem.ops``. Ranks are
  static: a policy is a key function, computed once per op, and keys are compared only among the
  ops of one processor. An unpinned op takes the lowest free
  stream that no ready pinned op is waiting for (else the lowest free stream); a pinned op waits
  for its own stream.
* A link is FIFO: it serves transfers in the order their producers ended, ties by the consumer's
  rank, then by the order they were queued. A transfer holds the link for latency + bytes/bandwidth.
* At one instant, every event (op or transfer end) is applied before anything starts, so ops that
  become ready together compete by rank. A zero-length op or transfer started at that instant ends
  at it too, and what it releases may start in a later round of the same instant.

Deterministic: no dict or set order and no clocks matter. The rules run in a numba kernel
(:mod:`archsim.sim.kernel`) over the problem's integer arrays; the original pure-Python engine is
kept in the tests as the reference every timeline must equal. Cost: O((ops + deps) log ops).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from archsim.errors import InputError
from archsim.sim.arrays import paused_gc
from archsim.sim.problem import Op, Problem
from archsim.sim.timeline import SlotTable, Timeline, TransferTable


@runtime_checkable
class Policy(Protocol):
    """What the simulator asks of a schedule policy: a name for reports and a sort key per op."""

    name: str

    def key(self, op: Op) -> Any: ...


class PriorityPolicy:
    """Rank by ``op.priority`` (tuples compare lexicographically): the default."""

    name = "priority"

    def key(self, op: Op) -> Any:
        return op.priority


@dataclass(frozen=True)
class KeyPolicy:
    """A policy from a plain key function, e.g. ``KeyPolicy("d-first", lambda op: ...)``."""

    name: str
    function: Callable[[Op], Hashable]

    def key(self, op: Op) -> Any:
        return self.function(op)


def simulate(problem: Problem, policy: Policy | None = None) -> Timeline:
    """Run ``problem`` under ``policy`` (default :class:`PriorityPolicy`) and return its Timeline."""
    from archsim.sim.kernel import run_arrays

    policy = policy if policy is not None else PriorityPolicy()
    with paused_gc():
        rank = ranks(problem, policy)
        blocking = np.array([link.blocking for link in problem.links], dtype=bool)
        slots, transfers = run_arrays(problem.arrays, rank, len(problem.links), blocking if blocking.any() else None)
    timeline = Timeline(SlotTable(problem, *slots), TransferTable(problem, *transfers), problem,
                        getattr(policy, "name", type(policy).__name__))
    check_makespan(timeline.makespan)
    return timeline


def check_makespan(makespan: float) -> None:
    """Refuse a timeline ending at 2⁵³ time units or later (:func:`~archsim.validate.check_exact`): its float start
    and end times no longer hold each op's duration (an op of 5,022,299 cycles lasted 5,022,300), so the validator
    failed with a traceback. A slow link is the usual cause: ``--link-bandwidth 1e-9`` bytes/cycle makes a hop of
    10⁶ bytes 10¹⁵ cycles."""
    from archsim.console import setting
    from archsim.validate import check_exact

    check_exact(makespan, "the simulated makespan",
                f"its ops and transfers (bytes ÷ a link's bytes per cycle) run past it: give a faster link "
                f"({setting('link-bandwidth')}), fewer micro-batches or a smaller job")


def ranks(problem: Problem, policy: Policy) -> np.ndarray:
    """Each op's place in the policy's order among its processor's ops (0 first), ties by position.

    Keys are compared only among ops of one processor — the only ops that ever compete, for a
    stream or (as consumers) for a link into that processor — so processors may use unlike keys.
    Public: with ``problem.arrays`` it is the kernel's input, which the kernels' tests feed it directly.
    """
    proc = problem.arrays.proc
    members_of = np.argsort(proc, kind="stable")
    bounds = np.searchsorted(proc[members_of], np.arange(len(problem.processors) + 1))
    keys = problem.priorities if type(policy) is PriorityPolicy else [policy.key(op) for op in problem.ops]
    rank = np.zeros(len(proc), dtype=np.int64)
    if keys is None:  # every priority 0: problem order within each processor
        rank[members_of] = np.arange(len(proc)) - bounds[proc[members_of]]
        return rank
    if isinstance(keys, np.ndarray):  # integer keys, a row per op compared as a tuple; ties by position
        columns = keys.reshape(len(proc), -1).T[::-1]
        order = np.lexsort((np.arange(len(proc)), *columns, proc))
        rank[order] = np.arange(len(proc)) - bounds[proc[order]]
        return rank
    present, first = np.unique(proc, return_index=True)
    for p in present[np.argsort(first)].tolist():  # processors in order of their first op, as errors name them
        members = members_of[bounds[p]:bounds[p + 1]].tolist()
        try:
            order = sorted(members, key=keys.__getitem__)  # stable: ties keep problem order
        except TypeError as error:
            raise InputError(f"policy {getattr(policy, 'name', policy)!r} gave keys on {problem.processors[p].name!r} "
                             f"that do not compare with each other ({error}); use all numbers or all tuples",
                             field="priority") from None
        rank[order] = np.arange(len(order))
    return rank
