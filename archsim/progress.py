"""Progress bars for work that can take seconds: on stderr, and only on a terminal (never in
pipes, logs, notebooks' captured output or tests)."""

from __future__ import annotations

from contextlib import contextmanager

_quiet = 0  # depth of `quiet()` blocks under way in this process


def progress(total: int, desc: str, unit: str, **options):
    """A tqdm bar counting ``unit``s that match what the caller reports; ``options`` go to tqdm
    (e.g. ``delay``: seconds before it is drawn, so quick runs never show one)."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, disable=True if _quiet else None, leave=False, **options)


@contextmanager
def quiet():
    """No bars inside: a sweep's worker processes share the terminal its parent draws the sweep's bar on."""
    global _quiet
    _quiet += 1
    try:
        yield
    finally:
        _quiet -= 1
