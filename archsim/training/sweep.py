"""Sweeping ``archsim train`` over axes: ``--sweep micro_batch=1,2,4 --sweep tp=1,2`` → one row per point.

A point whose settings are invalid (a batch that does not split, TP not dividing the heads, more GPUs
than the cluster) is kept as a row with its reason, not dropped: the row says why it cannot run."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import asdict, fields

from archsim.errors import InputError
from archsim.training.parallel import Parallelism
from archsim.training.throughput import Throughput, throughput

AXES: dict[str, Callable[[str], object]] = {"tp": int, "pp": int, "dp": int, "global_batch": int, "micro_batch": int, "interleave": int,
        "recompute": str, "schedule": str, "sequence_parallel": lambda v: v.lower() in ("1", "true", "yes", "on"),
        "attention": str, "dp_overlap": str}


def parse_axis(text: str) -> tuple[str, tuple]:
    """``KEY=V1,V2,…`` → (key, values); KEY one of :data:`AXES` (dashes allowed)."""
    key, sep, values = text.partition("=")
    key = key.strip().replace("-", "_")
    if not sep or key not in AXES or not values.strip():
        raise InputError(f"expected KEY=V1,V2,… with KEY one of {', '.join(AXES)}, got {text!r}", field="sweep")
    try:
        parsed = tuple(AXES[key](v.strip()) for v in values.split(",") if v.strip())
    except ValueError:
        raise InputError(f"{key} takes integers, got {values!r}", field="sweep") from None
    if any(isinstance(v, int) and not isinstance(v, bool) and v <= 0 for v in parsed):
        raise InputError(f"{key} values must be positive, got {values!r}", field="sweep")
    return key, parsed


def points(base: dict, axes: list[tuple[str, tuple]]):
    """Every combination of the axes' values over ``base`` (Parallelism's keyword arguments)."""
    names = [name for name, _ in axes]
    for combo in itertools.product(*(values for _, values in axes)):
        yield {**base, **dict(zip(names, combo))}


RATES = tuple(field.name for field in fields(Throughput))  # mfu, TFLOP/s per GPU, tokens/s


def sweep(config, cluster, base: dict, axes: list[tuple[str, tuple]]) -> list[dict]:
    """One row per point: its settings, iteration seconds, MFU, TFLOP/s per GPU and tokens/s
    (:mod:`archsim.training.throughput`), peak memory (GiB) and whether it fits, or the reason it
    cannot run."""
    from archsim.progress import progress
    from archsim.training.run import train

    rows = []
    grid = list(points(base, axes))
    with progress(len(grid), "train --sweep", "point", delay=2.0) as bar:  # drawn on a terminal after 2 s
        for settings in grid:
            rows.append(_point(config, cluster, settings, train))
            bar.update(1)
    return rows


def _point(config, cluster, settings: dict, train) -> dict:
    """One point's row (its settings and result, or why it cannot run)."""
    row = dict(settings)
    try:
        par = Parallelism(**settings)
        machines = cluster.laid_out(par)  # each pipeline rank's GPU (mixed clusters); refused as train does
        result = train(config, par, machines[0], machines)
        fits = all(m.total <= mc.gpu.memory_bytes for m, mc in zip(result.memory, machines))
        peak = sum(m.gpu.peak(m.dtype) for m in machines) / len(machines)
        rates = throughput(config, par.global_batch, par.recompute, result.iteration_seconds, par.gpus, peak,
                           par.attention)
        row.update(iteration_seconds=result.iteration_seconds, **asdict(rates), peak_memory_gib=result.peak_memory_gib,
                   fits_memory=fits, error="")
    except InputError as exc:
        row.update(iteration_seconds=None, **dict.fromkeys(RATES), peak_memory_gib=None, fits_memory=None,
                   error=exc.message)
    return row


__all__ = ["AXES", "parse_axis", "points", "sweep"]
