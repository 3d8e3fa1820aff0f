"""Progress bars for work that can take seconds: on stderr, and only on a terminal (never in
pipes, logs, notebooks' captured output or tests)."""

from __future__ import annotations


def progress(total: int, desc: str, unit: str, **options):
    """A tqdm bar counting ``unit``s that match what the caller reports; ``options`` go to tqdm
    (e.g. ``delay``: seconds before it is drawn, so quick runs never show one)."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, disable=None, leave=False, **options)
