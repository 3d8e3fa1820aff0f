"""The fuzz runs' shared harness: a 20 s alarm per case (paused while the tests' own checks run) and the tally of outcomes the acceptance
criteria are checked on (no traceback, hang, accepted invalid input, negative or NaN number). Used by
tests/test_fuzz_readers.py, tests/test_fuzz_cli.py and the slow tier's tests/test_fuzz_acceptance.py.
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from contextlib import contextmanager

from archsim.workload import torch_file


class Hang(BaseException):
    """A case ran past the 20 s limit (BaseException: no handler in the code under test swallows it)."""


def time_limit(seconds: float):
    """Raise :class:`Hang` in the block after ``seconds`` (the loader's own SIGALRM limit)."""
    return torch_file.time_limit(seconds, Hang)


@contextmanager
def alarm_paused():
    """Stop a running ``time_limit`` clock for the block, then restart it with the time it had left.

    The tests' own checks run inside a case (tests/conftest.py validates every simulated timeline and
    replays small ones on the pure-Python reference engine, which triples a search's time); the 20 s
    limit is on archsim's time, so those checks run with the clock paused.
    """
    left, _ = signal.setitimer(signal.ITIMER_REAL, 0)
    began = time.perf_counter()
    try:
        yield
    finally:
        PAUSED_S[0] += time.perf_counter() - began
        if left > 0:
            signal.setitimer(signal.ITIMER_REAL, left)


PAUSED_S = [0.0]  # seconds spent in alarm_paused blocks so far: a case's own time is its wall time less these


LIMIT_S = 20.0  # issue 39: nothing in the fuzz set runs past 20 s of archsim's own time


class Tally:
    """Outcomes per (format, outcome), the slowest case, and the first few failures with their input."""

    def __init__(self):
        self.counts: Counter = Counter()
        self.failures: list[str] = []
        self.slowest = 0.0

    def fail(self, kind: str, outcome: str, detail: str) -> None:
        self.counts[(kind, outcome)] += 1
        if len(self.failures) < 10:
            self.failures.append(f"{kind} {outcome}: {detail}")

    def total(self, outcome: str | None = None) -> int:
        return sum(n for (_, what), n in self.counts.items() if outcome in (None, what))

    def formats(self) -> set[str]:
        return {kind for kind, _ in self.counts}

    def report(self, title: str) -> str:
        lines = [f"{title}: {self.total()} cases, slowest {self.slowest:.1f} s"]
        for kind in sorted(self.formats()):
            parts = ", ".join(f"{what} {n}" for (k, what), n in sorted(self.counts.items()) if k == kind)
            lines.append(f"  {kind}: {parts}")
        return "\n".join(lines + self.failures)

    def check(self) -> None:
        """The acceptance criteria: no traceback, hang, accepted invalid input, negative or NaN output."""
        bad = {what: self.total(what) for what in ("traceback", "hang", "invalid accepted", "negative or nan")}
        assert not any(bad.values()), (bad, self.failures)
