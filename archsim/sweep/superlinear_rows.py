"""Sweep rows whose speedup is above their processor count, counted in one line (``archsim sweep`` on stderr,
:func:`archsim.run_sweep` as a UserWarning): a single plan's cause is
:func:`archsim.partition.superlinear.superlinear_note`'s, which ``archsim pipeline`` prints with the cycles."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


def superlinear_rows_line(results: pd.DataFrame) -> str | None:
    """The line ``archsim sweep`` (stderr) and :func:`archsim.run_sweep` (a UserWarning) say when rows of a sweep's
    ``results`` have a speedup above their processor count, with the largest; None where none has."""
    if results.empty or not {"speedup", "processors", "method"} <= set(results.columns):
        return None
    from archsim.partition.superlinear import above_processors

    above = results[above_processors(results["speedup"], results["processors"])]
    if above.empty:
        return None
    top = above.loc[above["speedup"].idxmax()]
    methods = sorted(map(str, above["method"].unique()))
    cause = ("their split δ parts cost less than the whole δs they replace, which one processor's cycles count, so "
             "part of the speedup is the split's, not the pipeline's" if set(methods) == {"layerpipe"} else
             "their plans' ops cost less than one processor's")
    verb = "has" if len(above) == 1 else "have"
    return (f"{len(above)} of {len(results)} configurations {verb} a speedup above their processor count "
            f"({', '.join(methods)}; at most {float(top['speedup']):.4g} on {int(top['processors'])} processors): "
            f"{cause} (archsim pipeline with a row's settings says how much)")


__all__ = ["superlinear_rows_line"]
