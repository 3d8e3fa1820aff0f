"""A sweep's worker processes live no longer than the sweep, and a Ctrl-C always ends it.

A ``kill -9`` of ``archsim sweep --workers N`` gives its pool workers no chance to be told: they
would live on as orphans, computing for nobody. So each worker asks the kernel to kill it when its
parent dies (Linux ``prctl(PR_SET_PDEATHSIG, SIGKILL)``), and elsewhere watches its parent's pid.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

PR_SET_PDEATHSIG = 1  # linux/prctl.h
POLL_SECONDS = 1.0  # how often a worker without prctl looks for its parent


def die_with_parent(parent: int) -> None:
    """A pool worker's initializer: exit when process ``parent`` (the sweep) is gone."""
    if not _parent_death_signal():
        threading.Thread(target=_watch, args=(parent,), daemon=True, name="archsim-watch-parent").start()
    if os.getppid() != parent:  # the sweep died before the signal was armed
        os._exit(1)


def _parent_death_signal() -> bool:
    """Arm SIGKILL on the parent's death; False where the OS has no prctl."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(POLL_SECONDS)
    os._exit(1)


@contextmanager
def ctrl_c_latched() -> Iterator[Callable[[], bool]]:
    """Within the block, whether a Ctrl-C was swallowed: a ``KeyboardInterrupt`` raised while Python runs a
    finalizer (a weakref callback, a ``__del__``, during a garbage collection) never reaches the sweep's
    loop; Python prints it as "Exception ignored" and runs on. The latch records it instead (and prints
    nothing), so the loop stops at its next unit as a Ctrl-C anywhere else stops it."""
    caught: list[bool] = []
    previous = sys.unraisablehook

    def hook(unraisable) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            caught.append(True)
        else:
            previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield lambda: bool(caught)
    finally:
        sys.unraisablehook = previous
