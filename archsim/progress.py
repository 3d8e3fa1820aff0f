"""Progress bars for work that can take seconds: on stderr, and only on a terminal (never in
pipes, logs, notebooks' captured output or tests)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar, copy_context
from typing import Any, Self, TypeVar

T = TypeVar("T")
# a run's phases: ``phases(desc, names)`` is entered once and yields ``step(name)``, called as each phase starts
Phases = Callable[[str, Sequence[str]], AbstractContextManager]

# Context variables, not module globals: a notebook's threads (a ThreadPoolExecutor of archsim.search calls, one
# with progress=True) each keep their own, so one's shown(True) draws no bars in another, nor outlives both
_quiet: ContextVar[int] = ContextVar("archsim_progress_quiet", default=0)  # depth of `quiet()` blocks under way
_shown: ContextVar[bool | None] = ContextVar("archsim_progress_shown", default=None)  # True: bars off a terminal too


def on_terminal(stream=None) -> bool:
    """Whether ``stream`` (default: stderr, where bars are drawn) is a terminal."""
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class _NoBar:
    """What :func:`progress` returns when nothing is drawn: the calls a bar takes, doing nothing
    (tqdm's import, about 0.05 s, is paid only where a bar shows)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def update(self, n: float = 1) -> None:
        return None

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        return None

    def close(self) -> None:
        return None


def progress(total: int, desc: str, unit: str, enabled: bool = True, **options):
    """A tqdm bar counting ``unit``s that match what the caller reports; ``options`` go to tqdm
    (e.g. ``delay``: seconds before it is drawn, so quick runs never show one). Drawn only when
    ``enabled``, outside :func:`quiet`, and when the stream it draws on is a terminal (or inside
    ``shown(True)``: then at once, as the caller asked for it, with no ``delay``)."""
    show = _shown.get()
    drawn = on_terminal(options.get("file")) if show is None else show
    if not (enabled and not _quiet.get() and drawn):
        return _NoBar()
    from tqdm import tqdm

    if show:
        options.pop("delay", None)
    options.setdefault("leave", False)
    if _no_width(options.get("file")):
        options.setdefault("ncols", NO_SIZE[0])
        options.setdefault("nrows", NO_SIZE[1])  # 0 rows: tqdm hides every bar below the screen's last row
    return tqdm(total=total, desc=desc, unit=unit, **options)


NO_SIZE = (80, 24)  # columns and rows a bar assumes on a terminal that reports no size


def _no_width(stream=None) -> bool:
    """Whether ``stream`` (default stderr) is a terminal whose size is unset, 0 columns (a fresh pty: ``script``
    run from a job, a container's): tqdm would draw its bars -1 columns wide below its 0 rows, that is not at all."""
    stream = sys.stderr if stream is None else stream
    try:
        return os.get_terminal_size(stream.fileno()).columns == 0
    except (AttributeError, ValueError, OSError):  # no descriptor, or not a terminal: tqdm's own width
        return False


def polled(work: Callable[[], T], counter: Any, bar: Any, every_s: float = 0.2) -> T:
    """``work()``'s result, its progress drawn as it runs: ``counter[0]`` (a numpy array ``work`` adds its units
    to, e.g. jobs finished) is read every ``every_s`` seconds and the bar advanced by what it gained. ``work``
    runs in a thread (a compiled kernel must release the GIL for the bar to move). A ``counter[1]``, where
    ``counter`` has one, is a stop flag ``work`` polls: on Ctrl-C it is set and the thread joined before the
    interrupt goes on, and ``work`` runs in the thread even with no bar drawn. Why: Ctrl-C landing in a
    compiled kernel on the main thread, or the interpreter ending while one runs in a thread, crashed the
    process (a segmentation fault, no message). Without a stop slot and a bar, ``work`` is a plain call."""
    stoppable = len(counter) > 1
    if isinstance(bar, _NoBar) and not stoppable:
        return work()
    import threading

    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["result"] = work()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread below
            outcome["error"] = exc

    thread = threading.Thread(target=copy_context().run, args=(target,), daemon=True)  # the caller's settings
    shown_units = int(counter[0])
    thread.start()
    try:
        while thread.is_alive():
            thread.join(every_s)
            now = int(counter[0])
            if now > shown_units:
                bar.update(now - shown_units)
                shown_units = now
    except KeyboardInterrupt:
        if stoppable:
            counter[1] = 1
            thread.join()
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


@contextmanager
def quiet_phases(desc: str, names: Sequence[str]):
    """No progress bar: each phase's step does nothing (a library run's default :data:`Phases`)."""
    yield lambda name: None


@contextmanager
def quiet():
    """No bars inside: a sweep's worker processes share the terminal its parent draws the sweep's bar on."""
    token = _quiet.set(_quiet.get() + 1)
    try:
        yield
    finally:
        _quiet.reset(token)


@contextmanager
def shown(show: bool | None):
    """Bars inside drawn as ``show`` says: True on stderr even off a terminal (a notebook's
    ``progress=True``), False never, None by the terminal rule (the CLI's); :func:`quiet` still wins."""
    token = _shown.set(show)
    try:
        yield
    finally:
        _shown.reset(token)
