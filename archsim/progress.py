"""Progress bars for work that can take seconds: on stderr, and only on a terminal (never in
pipes, logs, notebooks' captured output or tests)."""

from __future__ import annotations

import sys
from contextlib import contextmanager

_quiet = 0  # depth of `quiet()` blocks under way in this process


def on_terminal(stream=None) -> bool:
    """Whether ``stream`` (default: stderr, where bars are drawn) is a terminal."""
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def progress(total: int, desc: str, unit: str, enabled: bool = True, **options):
    """A tqdm bar counting ``unit``s that match what the caller reports; ``options`` go to tqdm
    (e.g. ``delay``: seconds before it is drawn, so quick runs never show one). Drawn only when
    ``enabled``, outside :func:`quiet`, and when the stream it draws on is a terminal."""
    from tqdm import tqdm

    shown = enabled and not _quiet and on_terminal(options.get("file"))
    options.setdefault("leave", False)
    return tqdm(total=total, desc=desc, unit=unit, disable=not shown, **options)


@contextmanager
def quiet():
    """No bars inside: a sweep's worker processes share the terminal its parent draws the sweep's bar on."""
    global _quiet
    _quiet += 1
    try:
        yield
    finally:
        _quiet -= 1
