"""Say once when a numba kernel is about to compile rather than load from its cache: a command's note on stderr,
a library call's UserWarning (the same text).

The kernels are compiled with ``cache=True``: the first run after an install (or an edit of the
kernel's module) compiles them — seconds to tens of seconds on a slow machine — and every later
run loads machine code from the cache next to the module. Without a word that first run looks
like a hang, so callers announce it.
"""

from __future__ import annotations

import os

from archsim import console

_ANNOUNCED: set[str] = set()


def will_compile(dispatcher) -> bool:
    """True when calling ``dispatcher`` in this process compiles it: nothing compiled yet in this
    process and no index of cached machine code on disk."""
    from archsim.numba_cache import LazyKernel, running_in_python

    if isinstance(dispatcher, LazyKernel):
        if running_in_python() and not dispatcher.loaded:
            return False  # this call runs uncompiled (a small input)
        dispatcher = dispatcher.compiled()
    if dispatcher.signatures:
        return False
    cache = getattr(dispatcher, "_cache", None)
    index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
    return index is None or not os.path.exists(index)


def announce_compile(dispatcher, what: str) -> None:
    """Say 'compiling …', once per process and ``what``, when the kernel must compile: a command's note line
    (:mod:`archsim.console`), a library call's UserWarning (no command speaking: Python's warnings, not stderr
    lines); on a terminal, a line under it counts the seconds until the kernel has compiled."""
    if what in _ANNOUNCED or not will_compile(dispatcher):
        return
    _ANNOUNCED.add(what)
    text = f"compiling {what} with numba (once per install; later runs load it from the cache)…"
    console.tell(text, stacklevel=3)
    from archsim.numba_cache import LazyKernel
    from archsim.progress import on_terminal

    if on_terminal():
        tick(dispatcher.compiled() if isinstance(dispatcher, LazyKernel) else dispatcher, what)


def tick(dispatcher, what: str, every: float = 1.0, stream=None):
    """A daemon thread drawing ``  compiling WHAT: N s`` over one stderr line (``stream``: another) every ``every``
    seconds until ``dispatcher`` has a compiled signature, then erasing it (:func:`archsim.console.status`: a note
    said meanwhile starts on a line of its own); returns the thread."""
    import threading
    import time

    start = time.monotonic()

    def run() -> None:
        while not dispatcher.signatures:
            time.sleep(every)
            if not dispatcher.signatures:
                console.status(f"  compiling {what}: {time.monotonic() - start:.0f} s", stream)
        console.status("", stream)

    thread = threading.Thread(target=run, name=f"compiling {what}", daemon=True)
    thread.start()
    return thread
