"""numba's ``njit`` with its on-disk cache in a user cache folder, never inside the installed package.

numba's default ``cache=True`` writes next to the source (``archsim/*/__pycache__``): an installed
package is often read-only, and with no writable home numba refuses at import ("no locator
available"). archsim picks the folder itself, in this order:

1. ``NUMBA_CACHE_DIR``, when the user set it;
2. ``$XDG_CACHE_HOME/archsim/numba`` (``~/.cache/archsim/numba``);
3. ``<temp>/archsim-numba-<uid>``;

the first that can be created and written, chosen when the first kernel compiles (not at import:
a run that compiles nothing touches no folder). If none can, kernels are compiled on every run
(correct, a second or two slower) and :data:`CACHE_NOTE` says why, once a process, when the cache is set up: a
command's note on stderr, a library call's UserWarning (:func:`archsim.console.tell`).

Importing numba and loading a cached kernel costs about half a second of CPU, more than a small
problem's whole answer. So :func:`njit` returns a :class:`LazyKernel`: numba is imported and the
kernel compiled (or loaded from the cache) on its first compiled call, not when its module is
imported, and :func:`small_in_python` runs a call on a small input as the very same Python function,
uncompiled (``tests/test_lazy_kernels.py`` checks both paths give equal results on many inputs).
"""

from __future__ import annotations

import os
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CACHE_NOTE = ""


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK | os.X_OK)


def cache_dir() -> Path | None:
    """The first writable folder of the module docstring's list, or None."""
    candidates = []
    if os.environ.get("NUMBA_CACHE_DIR"):
        candidates.append(Path(os.environ["NUMBA_CACHE_DIR"]))
    base = os.environ.get("XDG_CACHE_HOME") or (str(Path.home() / ".cache") if "HOME" in os.environ else "")
    if base:
        candidates.append(Path(base) / "archsim" / "numba")
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    import tempfile

    candidates.append(Path(tempfile.gettempdir()) / f"archsim-numba-{uid}")
    return next((folder for folder in candidates if _writable(folder)), None)


def _configure() -> bool:
    global CACHE_NOTE
    folder = cache_dir()
    if folder is None:
        CACHE_NOTE = ("no writable folder for numba's cache (NUMBA_CACHE_DIR, ~/.cache, temp): kernels compile on "
                      "each run; set NUMBA_CACHE_DIR to a writable folder to keep them")
        from archsim import console

        console.tell(CACHE_NOTE)
        return False
    os.environ["NUMBA_CACHE_DIR"] = str(folder)  # numba reads it when it is imported
    config: Any = sys.modules.get("numba.core.config")  # numba's settings module (untyped)
    if config is not None:
        config.CACHE_DIR = str(folder)  # numba was imported (and read its environment) before us
    return True


CACHING: bool | None = None  # whether kernels cache on disk; decided by the first compile (caching())


def caching() -> bool:
    """Pick the cache folder once (see the module docstring); False when none is writable."""
    global CACHING
    if CACHING is None:
        CACHING = _configure()
    return CACHING

_LOCAL = threading.local()  # .python: calls in this thread run uncompiled (inside small_in_python)


class LazyKernel:
    """A kernel whose ``numba.njit`` happens on its first compiled call (see the module docstring).

    Calling it runs the compiled kernel, except inside :func:`small_in_python` while it is not compiled
    yet. Once compiled, the module's global of that name becomes numba's dispatcher, so kernels calling
    kernels compile together; other attributes (``signatures``, ``py_func`` …) are the dispatcher's."""

    def __init__(self, function, options: dict) -> None:
        self.py_func = function
        self._options = options
        self._dispatcher = None
        self.__name__ = function.__name__
        self.__doc__ = function.__doc__

    def compiled(self):
        """numba's dispatcher of this kernel (importing numba on the first call)."""
        if self._dispatcher is None:
            options = dict(self._options)
            if options.get("cache") and not caching():
                options["cache"] = False
            from numba import njit as numba_njit

            names = self.py_func.__globals__
            for name in self.py_func.__code__.co_names:  # kernels this one calls: numba must see dispatchers
                if isinstance(names.get(name), LazyKernel):
                    names[name] = names[name].compiled()
            self._dispatcher = numba_njit(**options)(self.py_func)
            if names.get(self.__name__) is self:
                names[self.__name__] = self._dispatcher
        return self._dispatcher

    @property
    def loaded(self) -> bool:
        return self._dispatcher is not None

    def __call__(self, *args):
        if self._dispatcher is None and getattr(_LOCAL, "python", False):
            return self.py_func(*args)
        return self.compiled()(*args)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.compiled(), name)


def njit(*args, **kwargs):
    """``numba.njit``, deferred (:class:`LazyKernel`); ``cache=True`` caches in :func:`cache_dir` (or is
    dropped when there is none)."""
    if args and callable(args[0]):  # bare @njit
        return LazyKernel(args[0], kwargs)
    return lambda function: LazyKernel(function, kwargs)


def loaded(kernel) -> bool:
    """True when ``kernel`` is compiled (or loaded from the cache) in this process already."""
    return not isinstance(kernel, LazyKernel) or kernel.loaded


def running_in_python() -> bool:
    """True inside a :func:`small_in_python` block that chose plain Python."""
    return getattr(_LOCAL, "python", False)


@contextmanager
def small_in_python(kernel, work: int, limit: int):
    """Within the block, ``kernel`` (and the kernels it calls) run as plain Python when ``work``
    (the caller's count of its inner steps) is at most ``limit`` and ``kernel`` is not compiled in this
    process yet: for a small input that is cheaper than importing numba and loading the kernel."""
    python = work <= limit and not loaded(kernel)
    before = getattr(_LOCAL, "python", False)
    _LOCAL.python = before or python
    try:
        yield python
    finally:
        _LOCAL.python = before
