"""Run a sweep: one cached result file per unit, computed in-process, in local processes, or on
a dask.distributed cluster, then assembled into one tidy table.

Each unit's rows land in ``DIR/cache/<digest>.json`` by atomic rename, so a run killed at any
moment (even SIGKILL) leaves only whole unit files; a re-run computes just the missing units and
assembles the same ``results.csv`` (sorted, so order of completion never shows). The digest hashes
the unit's every setting *and the content of its network* (its parsed layers), so editing a network
file recomputes its units, and two networks with the same file name never share a cache file.
Temp files a killed writer left in ``DIR/cache`` are removed when the next run starts (one sweep
writes into a folder at a time).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import asdict
from pathlib import Path

import pandas as pd
from tqdm import tqdm

from archsim.array.config import ArrayConfig
from archsim.errors import InputError
from archsim.outputs import atomic_write_text
from archsim.partition import build_profile, partitions
from archsim.sweep.spec import SweepSpec, Unit
from archsim.sweep.summary import summarize
from archsim.workload import load_network

RESULT_COLUMNS = ["network", "only", "rows", "cols", "dataflow", "batch", "mode", "processors", "method",
                  "stages", "single_cycles", "cycles_per_iteration", "speedup", "mandatory_bytes",
                  "comm_overhead_bytes"]
PROVENANCE_COLUMNS = ["network_path", "network_sha256"]  # the network a row costed: path or shipped name, hash
SORT_COLUMNS = ["network", "only", "rows", "cols", "dataflow", "batch", "mode", "processors", "method"]


CACHE_FORMAT = 2  # bump when a unit's rows change meaning, so old cache files are not reused


def compute_unit(unit: Unit) -> list[dict[str, object]]:
    """All (processors, method) results of one configuration. Pure: safe on any worker."""
    network = load_network(unit.network)
    if unit.only:
        network = network.only(*unit.only)

    def base_row(processors: int, method: str, plan, single: float, cycles: float) -> dict[str, object]:
        return {
            "network": Path(unit.network).stem, "only": "+".join(unit.only) or "all", "rows": unit.rows,
            "cols": unit.cols, "dataflow": unit.dataflow, "batch": unit.batch, "mode": unit.mode,
            "processors": processors, "method": method, "stages": len(plan.stages),
            "single_cycles": single, "cycles_per_iteration": cycles,
            "speedup": single / cycles, "mandatory_bytes": plan.mandatory_bytes,
            "comm_overhead_bytes": plan.additional_bytes, "network_path": unit.network,
            "network_sha256": unit.network_sha256,
        }

    if unit.design is not None:
        from archsim.sweep.design import design_rows

        return design_rows(unit, network, base_row)
    array = ArrayConfig(rows=unit.rows, cols=unit.cols, dataflow=unit.dataflow)
    profile = build_profile(network, array, unit.batch, unit.mode, unit.engine)  # type: ignore[arg-type]
    single = float(profile.total.sum())
    options = {method: {"alpha": unit.alpha} if method == "layerpipe" else {} for method in unit.methods}
    plans = {method: partitions(profile, unit.processors, method, **options[method]) for method in unit.methods}
    rows = []
    for index, processors in enumerate(unit.processors):
        for method in unit.methods:
            plan = plans[method][index]
            rows.append(base_row(processors, method, plan, single, plan.max_stage_cycles))
    return rows


def network_digests(spec: SweepSpec) -> dict[str, str]:
    """sha256 of each network's parsed layers (what its results depend on, not its file name)."""
    digests = {}
    for network in spec.networks:
        try:
            layers = load_network(network).layers
        except InputError as exc:
            raise InputError(f"network {network!r}: {exc}", file=spec.source, field="networks") from None
        digests[network] = hashlib.sha256(repr(layers).encode()).hexdigest()
    return digests


def _cache_file(out: Path, unit: Unit, digests: dict[str, str]) -> Path:
    settings = json.dumps({"format": CACHE_FORMAT, "unit": asdict(unit), "network": digests[unit.network]},
                          sort_keys=True)
    return out / "cache" / f"{hashlib.sha256(settings.encode()).hexdigest()[:40]}.json"


def _remove_orphans(out: Path) -> None:
    """Delete temp files a killed writer left behind (``atomic_write_text`` names them ``.NAME.*.tmp``)."""
    for folder in (out, out / "cache"):
        if folder.is_dir():
            for orphan in folder.glob(".*.tmp"):
                orphan.unlink(missing_ok=True)


def _executor(workers: int, dask: str | None) -> Callable[[list[Unit]], Iterable[tuple[Unit, list]]]:
    if dask:
        return lambda units: _run_dask(units, dask, workers)
    if workers > 1:
        return lambda units: _run_processes(units, workers)
    return lambda units: ((unit, compute_unit(unit)) for unit in units)


def _run_processes(units: list[Unit], workers: int):
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(compute_unit, unit): unit for unit in units}
        for future in as_completed(futures):
            yield futures[future], future.result()


def _run_dask(units: list[Unit], address: str, workers: int):
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:  # pragma: no cover - the dask extra is part of the test install
        raise InputError("dask.distributed is not installed: pip install 'archsim[dask]'", field="dask") from None
    cluster = LocalCluster(n_workers=max(workers, 1), threads_per_worker=1, processes=True,
                           dashboard_address=None) if address == "local" else None
    try:
        with Client(cluster if cluster is not None else address) as client:
            futures = {client.submit(compute_unit, unit, pure=False): unit for unit in units}
            for future in as_completed(futures):
                yield futures[future], future.result()
    finally:
        if cluster is not None:
            cluster.close()


def run_sweep(spec: SweepSpec, out: str | Path, *, workers: int = 1, dask: str | None = None,
              progress: bool = True) -> pd.DataFrame:
    """Compute the units not yet cached under ``out``, then write ``results.csv`` and
    ``summary.csv`` there (atomically) and return the results frame."""
    out = Path(out)
    units = spec.units()
    digests = network_digests(spec)
    _remove_orphans(out)
    files = {unit: _cache_file(out, unit, digests) for unit in units}
    todo = [unit for unit in units if not files[unit].is_file()]
    run = _executor(workers, dask)

    def size(unit: Unit) -> int:  # configurations: the rows of results.csv this unit gives
        return len(unit.processors) * len(unit.methods)

    with tqdm(total=sum(map(size, units)), initial=sum(map(size, units)) - sum(map(size, todo)),
              desc=f"sweep {spec.name}", unit="config", disable=not progress) as bar:
        for unit, rows in run(todo):
            atomic_write_text(files[unit], json.dumps({"unit": asdict(unit), "rows": rows}))
            bar.update(size(unit))
    frame = load_results(out, [files[unit] for unit in units])
    atomic_write_text(out / "results.csv", frame.to_csv(index=False))
    atomic_write_text(out / "summary.csv", summarize(frame).to_csv(index=False))
    atomic_write_text(out / "spec.json", json.dumps({k: v for k, v in asdict(spec).items()}, indent=2, default=list))
    return frame


def load_results(out: Path, files: list[Path] | None = None) -> pd.DataFrame:
    """Assemble cached unit files (all of them, or just ``files``) into one sorted frame."""
    files = files if files is not None else sorted((out / "cache").glob("*.json"))
    rows: list[dict[str, object]] = []
    for file in files:
        try:
            rows.extend(json.loads(file.read_text(encoding="utf-8"))["rows"])
        except (OSError, ValueError, KeyError) as exc:
            raise InputError(f"unreadable sweep cache file ({exc.__class__.__name__}); delete it to recompute",
                             file=str(file)) from None
    from archsim.sweep.design import DESIGN_COLUMNS

    design = [c for c in DESIGN_COLUMNS if any(c in row for row in rows)]
    frame = pd.DataFrame(rows, columns=RESULT_COLUMNS + PROVENANCE_COLUMNS + design)
    return frame.sort_values(SORT_COLUMNS + design[:6], kind="stable").reset_index(drop=True)
