"""The environment a benchmark's child interpreters run in: the caller's, less ``PYTHONDONTWRITEBYTECODE``.

A user's install reads and writes bytecode caches (pip compiles at install); with that variable set every
child would compile archsim's modules from source (about 0.12 s of CPU a start), so a figure would depend on
the caller's environment rather than on archsim. The first run writes the caches; best-of figures reuse them.
"""

from __future__ import annotations

import os


def user_environment(**extra: str) -> dict[str, str]:
    """``os.environ`` without ``PYTHONDONTWRITEBYTECODE``, with ``extra`` set (e.g. ``PYTHONWARNINGS``)."""
    return {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, **extra}
