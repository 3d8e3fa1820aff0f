"""numba's ``njit`` with its on-disk cache in a user cache folder, never inside the installed package.

numba's default ``cache=True`` writes next to the source (``archsim/*/__pycache__``): an installed
package is often read-only, and with no writable home numba refuses at import ("no locator
available"). archsim picks the folder itself, in this order:

1. ``NUMBA_CACHE_DIR``, when the user set it;
2. ``$XDG_CACHE_HOME/archsim/numba`` (``~/.cache/archsim/numba``);
3. ``<temp>/archsim-numba-<uid>``;

the first that can be created and written. If none can, kernels are compiled on every run
(correct, a second or two slower) and :data:`CACHE_NOTE` says why.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

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
    candidates.append(Path(tempfile.gettempdir()) / f"archsim-numba-{uid}")
    return next((folder for folder in candidates if _writable(folder)), None)


def _configure() -> bool:
    global CACHE_NOTE
    folder = cache_dir()
    if folder is None:
        CACHE_NOTE = "no writable cache folder (NUMBA_CACHE_DIR, ~/.cache, temp): kernels compile on each run"
        return False
    os.environ["NUMBA_CACHE_DIR"] = str(folder)
    from numba.core import config

    config.CACHE_DIR = str(folder)  # in case numba was imported (and read its environment) before us
    return True


CACHING = _configure()


def njit(*args, **kwargs):
    """``numba.njit``; ``cache=True`` caches in :func:`cache_dir` (or is dropped when there is none)."""
    from numba import njit as numba_njit

    if kwargs.get("cache") and not CACHING:
        kwargs["cache"] = False
    return numba_njit(*args, **kwargs)
