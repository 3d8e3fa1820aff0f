"""The fuzz runs' shared harness: a 20 s alarm per case and the tally of outcomes the acceptance
criteria are checked on (no traceback, hang, accepted invalid input, negative or NaN number). Used by
tests/test_fuzz_readers.py, tests/test_fuzz_cli.py and the slow tier's tests/test_fuzz_acceptance.py.
"""

from __future__ import annotations

import signal
from collections import Counter
from contextlib import contextmanager


class Hang(BaseException):
    """A case ran past the 20 s limit (BaseException: no handler in the code under test swallows it)."""


@contextmanager
def time_limit(seconds: float):
    def expire(*_):
        raise Hang

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


LIMIT_S = 20.0  # issue 39: nothing in the fuzz set runs past 20 s


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
