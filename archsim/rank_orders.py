"""GPipe's and 1F1B's per-rank orders, each written once, as runs of actions in plain Python.

Why here: the policies' orders (:mod:`archsim.policies.stage_orders`, numpy columns, 10⁶ actions in
milliseconds) and SPP's PE (:mod:`archsim.spp.pe_order`, kept free of numpy and the simulator so that
``plan --method pipedream`` stays light) both run these schedules, and neither package may import the
other (docs/architecture.md, Packages and layering). Each translates the runs into its own form: numpy
blocks, or PE's (block, micro-batch) visits. A run states a phase of a rank's order in O(1), so neither
pays for the other's form.

* :func:`fill_drain`: every forward, then every full backward — GPipe (torch's ``ScheduleGPipe``: one
  stage per rank, backwards oldest micro-batch first); ``newest_first`` as GPipe's paper draws the
  backwards (Huang et al. 2019, Fig. 2c: B3, B2, B1, B0); over several stages per rank (model chunks) with the
  backwards newest first it is torch's ``ScheduleLoopedBFS`` (breadth-first: every micro-batch of a chunk
  before the next chunk, the backwards from the last chunk).
* :func:`one_f_one_b`: rank r of p runs min(p − 1 − r, m) warm-up forwards, then one forward and one full
  backward per step (F(warm + i), B(i)), then the remaining backwards (Megatron-LM's default schedule,
  Narayanan et al., SC'21; torch's ``Schedule1F1B``).

Actions use torch's names (``F`` forward, ``B`` full backward) on 0-based (virtual) stages; micro-batches
are 0-based.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Run:
    """``steps`` steps on (virtual) ``stage``: step i runs ``kinds[j]`` on micro-batch
    ``microbatches[j][i]`` for each j in turn (1F1B's steady state: ("F", "B"), F(warm + i) then B(i))."""

    stage: int
    kinds: tuple[str, ...]
    microbatches: tuple[range, ...]

    @property
    def steps(self) -> int:
        return len(self.microbatches[0])

    def actions(self) -> list[tuple[int, str, int]]:
        """(stage, kind, micro-batch) of each action, in order."""
        stage = self.stage
        if len(self.kinds) == 1:
            kind = self.kinds[0]
            return [(stage, kind, m) for m in self.microbatches[0]]
        return [(stage, kind, m) for step in zip(*self.microbatches, strict=True)
                for kind, m in zip(self.kinds, step, strict=True)]


def actions(runs: Iterable[Run]) -> list[tuple[int, str, int]]:
    """A rank's runs as its (stage, kind, micro-batch) actions, in order."""
    return [action for run in runs for action in run.actions()]


def fill_drain(stages: Sequence[int], microbatches: int, newest_first: bool = False) -> list[Run]:
    """One rank's fill-drain over its ``stages``: each stage's forwards of every micro-batch, oldest first,
    stage by stage; then each stage's backwards, the last stage first, oldest micro-batch first or
    (``newest_first``) newest first. GPipe: ``stages`` = [r]; looped BFS: r, r + p, …, newest first."""
    backward = range(microbatches - 1, -1, -1) if newest_first else range(microbatches)
    return ([Run(s, ("F",), (range(microbatches),)) for s in stages]
            + [Run(s, ("B",), (backward,)) for s in reversed(stages)])


def one_f_one_b(p: int, r: int, microbatches: int) -> list[Run]:
    """Rank r of p (stage r): warm-up, steady state and cool-down of 1F1B (see the module docstring)."""
    warm = min(p - 1 - r, microbatches)
    steady = microbatches - warm
    return [Run(r, ("F",), (range(warm),)), Run(r, ("F", "B"), (range(warm, microbatches), range(steady))),
            Run(r, ("B",), (range(steady, microbatches),))]


__all__ = ["Run", "actions", "fill_drain", "one_f_one_b"]
