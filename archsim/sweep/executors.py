"""Where a sweep's units are computed: in-process, in a pool of local processes, or on a dask.distributed
cluster; pools and clusters get units in chunks (tens of tasks for 10⁵ configurations, not thousands)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from archsim.errors import InputError
from archsim.sweep.spec import Unit
from archsim.sweep.units import compute_unit

CHUNK_UNITS = 64  # most units per task: few enough to balance workers, enough to amortize a task's overhead


def compute_units(units: tuple[Unit, ...]) -> list[list[dict[str, object]]]:
    """:func:`compute_unit` of each unit, in order: one task of a pool or cluster (whose processes
    draw no bars of their own: the parent shows the sweep's)."""
    from archsim.progress import quiet

    with quiet():
        return [compute_unit(unit) for unit in units]


def _chunks(units: list[Unit], workers: int) -> list[tuple[Unit, ...]]:
    """Consecutive units in at least four tasks per worker (when there are that many units), each
    at most CHUNK_UNITS: a 10⁵-configuration sweep sends tens of tasks, not thousands."""
    size = max(1, min(CHUNK_UNITS, -(-len(units) // (4 * max(workers, 1)))))
    return [tuple(units[start:start + size]) for start in range(0, len(units), size)]


def executor(workers: int, dask: str | None) -> Callable[[list[Unit]], Iterable[tuple[Unit, list]]]:
    if dask:
        return lambda units: _run_dask(units, dask, workers)
    if workers > 1:
        return lambda units: _run_processes(units, workers)
    return lambda units: ((unit, compute_unit(unit)) for unit in units)


def _run_processes(units: list[Unit], workers: int):
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from archsim.sweep.lifetime import die_with_parent

    with ProcessPoolExecutor(max_workers=workers, initializer=die_with_parent, initargs=(os.getpid(),)) as pool:
        futures = {pool.submit(compute_units, chunk): chunk for chunk in _chunks(units, workers)}
        for future in as_completed(futures):
            yield from zip(futures[future], future.result())


def _run_dask(units: list[Unit], address: str, workers: int):
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:  # pragma: no cover - the dask extra is part of the test install
        raise InputError("dask.distributed is not installed: pip install 'archsim[dask]'", field="dask") from None
    cluster = LocalCluster(n_workers=max(workers, 1), threads_per_worker=1, processes=True,
                           dashboard_address=None) if address == "local" else None
    try:
        try:
            client = Client(cluster if cluster is not None else address)
        except (OSError, TimeoutError) as exc:  # an unreachable scheduler: nothing computed, the folder resumes
            raise InputError(f"cannot reach the dask scheduler at {address} ({exc.__class__.__name__}); "
                             "nothing was computed", field="dask") from None
        with client:
            chunks = _chunks(units, sum(client.nthreads().values()) or workers)
            futures = {client.submit(compute_units, chunk, pure=False): chunk for chunk in chunks}
            for future in as_completed(futures):
                yield from zip(futures[future], future.result())
    finally:
        if cluster is not None:
            cluster.close()


__all__ = ["CHUNK_UNITS", "compute_units", "executor"]
