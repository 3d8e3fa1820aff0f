"""A stand-in for :func:`archsim.progress.progress` that records each bar it is asked for: what progress tests
count against their hand counts, without a terminal."""

from __future__ import annotations

from typing import Self


class RecordingBar:
    """One bar: its total, description, unit, whether it was enabled, its other options, and what it was told."""

    def __init__(self, total: int, desc: str = "", unit: str = "", enabled: bool = True, options: dict | None = None):
        self.total, self.desc, self.unit, self.enabled, self.options = total, desc, unit, enabled, options or {}
        self.updates: list[float] = []
        self.postfixes: list[str] = []

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def update(self, n: float = 1) -> None:
        self.updates.append(n)

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        self.postfixes.append(text)

    def close(self) -> None:
        return None


def record_bars(monkeypatch) -> list[RecordingBar]:
    """Replace :func:`archsim.progress.progress` for this test; the bars it makes, in order."""
    made: list[RecordingBar] = []

    def progress(total: int, desc: str, unit: str, enabled: bool = True, **options) -> RecordingBar:
        made.append(RecordingBar(total, desc, unit, enabled, options))
        return made[-1]

    monkeypatch.setattr("archsim.progress.progress", progress)
    return made
