"""Run a sweep: one cached result file per unit, computed in-process, in local processes, or on
a dask.distributed cluster, then assembled into one tidy table.

Each unit's rows land in ``DIR/cache/<digest>.json`` by atomic rename, so a run killed at any
moment (even SIGKILL) leaves only whole unit files; a re-run computes just the missing units and
assembles the same ``results.csv`` (sorted, so order of completion never shows). The digest hashes
the unit's every setting *and the content of its network* (its parsed layers), so editing a network
file recomputes its units, and two networks with the same file name never share a cache file; a file edited
while the sweep runs is never costed under the first one's hash (:func:`loaded_network`).
Temp files a killed writer left in ``DIR/cache`` are removed when the next run starts (one sweep
writes into a folder at a time).

For 10⁵-configuration sweeps: pools and clusters get units in chunks (tens of tasks, not
thousands), and each process loads a network and lowers it per batch once, for all the array
shapes and dataflows that share them.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Callable, Iterable
from dataclasses import asdict, replace
from functools import lru_cache
from pathlib import Path

import pandas as pd

from archsim.errors import InputError
from archsim.json_text import dumps
from archsim.lowering import SPLIT_AXES, LoweredLayer, Mode, lower_network, split_axes
from archsim.output_files import hold_until_written, output_set, write_output
from archsim.partition import build_profile
from archsim.partition.pipedream import layer_groups
from archsim.planners import partitions
from archsim.progress import progress as progress_bar
from archsim.sweep.cache import cache_file, check_entries, remove_killed_temps
from archsim.sweep.device_points import point_rows
from archsim.sweep.device_spec import DevicePoint, DeviceSweepSpec
from archsim.sweep.folder import check_owner, holding
from archsim.sweep.pipedream_points import KEY as SKIPPED
from archsim.sweep.pipedream_points import check_left, skipped_points, unit_skipped
from archsim.sweep.spec import SETTING_COLUMNS, SweepSpec, Unit, check_size, check_unchanged, network_sha256
from archsim.sweep.summary import summarize
from archsim.toml_errors import locate, parse_toml
from archsim.validate import MAX_CONFIGS, parse_json, read_text
from archsim.workload import load_network
from archsim.workload.layer import Network
from archsim.workload.shipped import file_batch_note, load_shipped

RESULT_COLUMNS = ["network", "only", "rows", "cols", "dataflow", "batch", "mode", "processors", "method",
                  "stages", "single_processor_cycles", "iteration_cycles", "speedup", "mandatory_comm_bytes",
                  "additional_comm_bytes"]
PROVENANCE_COLUMNS = ["network_path", "network_sha256"]  # the network a row costed: path or shipped name, hash
ARRAY_COLUMN = "array_path"  # the .cfg a row's array was read from: a column only where a spec names one
SORT_COLUMNS = ["network", "only", "rows", "cols", "dataflow", "batch", "mode", "processors", "method"]
# Columns results.csv (and its cached unit rows) named otherwise before every output took one name per
# quantity (docs/formats.md): old name → today's. Files written by older versions are read through it.
RENAMED_COLUMNS = {"single_cycles": "single_processor_cycles", "mandatory_bytes": "mandatory_comm_bytes",
                   "comm_overhead_bytes": "additional_comm_bytes", "cycles_per_iteration": "iteration_cycles",
                   "seconds_per_iteration": "iteration_seconds", "bandwidth": "bandwidth_words_per_cycle"}


def layerpipe_settings(method: str, alpha: float, axes: Iterable[str]) -> dict[str, object]:
    """A row's :data:`SETTING_COLUMNS`: ``alpha`` and the δ split ``axes`` where ``method`` is LayerPipe's, which
    reads them, else NaN (an empty cell): two folders run at two alphas give rows told apart."""
    if method != "layerpipe":
        return dict.fromkeys(SETTING_COLUMNS, math.nan)
    return {"alpha": float(alpha), "split_axes": "+".join(axes)}


def written_columns(columns: Iterable[str]) -> list[str]:
    """``columns`` with :data:`SETTING_COLUMNS` right after ``method``: their order in results.csv and summary.csv."""
    columns = [c for c in columns if c not in SETTING_COLUMNS]
    at = columns.index("method") + 1
    return columns[:at] + SETTING_COLUMNS + columns[at:]


def current_names(names: Iterable[str]) -> dict[str, str]:
    """The renaming that gives older results' columns today's names (none already present is renamed
    onto a column the file has)."""
    names = list(names)
    return {old: new for old, new in RENAMED_COLUMNS.items() if old in names and new not in names}


@lru_cache(maxsize=16)
def unit_network(path: str, sha256: str, only: tuple[str, ...]) -> Network:
    """A unit's network, loaded once per process (``sha256``, of a file's bytes, keys a changed file)."""
    network = loaded_network(path, sha256)
    return network.only(*only) if only else network


def network_notes(spec: SweepSpec) -> tuple[str, ...]:
    """What ``archsim cost`` notes of each of a spec's network files (a layer renamed, a conv row that is a
    flattening fc, a batch the file fixes that is none of the spec's ``batches``), once per file and named as the
    spec names it: ``archsim sweep`` says them on stderr and :func:`archsim.api.run_sweep` warns them (UserWarning)."""
    folder = Path(spec.source).parent.resolve() if spec.source else None
    lines = []
    for network in dict.fromkeys(spec.networks):
        if Path(network).is_absolute():
            shown = Path(network).relative_to(folder) if folder and Path(network).is_relative_to(folder) else network
            loaded = loaded_network(network, network_sha256(network))
            batch = file_batch_note(replace(loaded, source=str(shown)), spec.batches)  # names the file as the spec
            lines += [f"{shown}: {note}" for note in loaded.notes] + ([batch] if batch else [])
    return tuple(lines)


@lru_cache(maxsize=16)
def loaded_network(path: str, sha256: str) -> Network:
    """The whole network, read once per process for its digest and every ``only`` subset: a spec's
    file (an absolute path inside the spec's folder) or a shipped name, never a working-folder file.
    A file is checked to still be the one of SHA-256 ``sha256`` once parsed: a process that reads it after the
    sweep started (a dask worker, which inherits nothing of the sweep's process as a forked pool's worker does)
    would otherwise cost an edited file under the hash, and cache file, of the one the sweep started with."""
    if not Path(path).is_absolute():
        return load_shipped(path)
    network = load_network(path)
    check_unchanged(path, sha256, "after the sweep started")
    return network


@lru_cache(maxsize=64)
def unit_lowering(path: str, sha256: str, only: tuple[str, ...], batch: int, mode: Mode,
                  element_bytes: int) -> tuple[LoweredLayer, ...]:
    """The network lowered once per process for every array shape and dataflow that share it."""
    return lower_network(unit_network(path, sha256, only), batch, mode, element_bytes)


def compute_unit(unit: Unit | DevicePoint) -> list[dict[str, object]]:
    """All (processors, method) results of one configuration (a device sweep's point: its one row).
    Pure: safe on any worker."""
    if isinstance(unit, DevicePoint):
        return point_rows(unit)
    network = unit_network(unit.network, unit.network_sha256, unit.only)

    def base_row(processors: int, method: str, plan, single: float, cycles: float) -> dict[str, object]:
        return {
            "network": Path(unit.network).stem, "only": "+".join(unit.only) or "all", "rows": unit.rows,
            "cols": unit.cols, "dataflow": unit.dataflow, "batch": unit.batch, "mode": unit.mode,
            "processors": processors, "method": method, **layerpipe_settings(method, unit.alpha, unit.split_axes),
            "stages": len(plan.stages),
            "single_processor_cycles": single, "iteration_cycles": cycles,
            "speedup": single / cycles, "mandatory_comm_bytes": plan.mandatory_bytes,
            "additional_comm_bytes": plan.additional_bytes, "network_path": unit.network,
            "network_sha256": unit.network_sha256,
            **({ARRAY_COLUMN: unit.array_file.path} if unit.array_file is not None else {}),
        }

    if unit.design is not None:
        from archsim.sweep.design import design_rows

        return design_rows(unit, network, base_row)
    array = unit.array
    profile = build_profile(network, array, unit.batch, unit.mode, unit.engine,
                            lowered=unit_lowering(unit.network, unit.network_sha256, unit.only, unit.batch,
                                                  unit.mode, array.element_bytes))
    single = float(profile.total.sum())
    options = {method: {"alpha": unit.alpha, "axes": unit.split_axes} if method == "layerpipe" else {} for method in unit.methods}
    groups = layer_groups(profile) if "pipedream" in unit.methods else 0  # more processors: skipped (pipedream_points)
    counts = {m: tuple(p for p in unit.processors if m != "pipedream" or p <= groups) for m in unit.methods}
    plans = {m: dict(zip(counts[m], partitions(profile, counts[m], m, **options[m]) if counts[m] else [], strict=True))
             for m in unit.methods}
    return [base_row(processors, method, plan, single, plan.max_stage_cost) for processors in unit.processors
            for method in unit.methods if (plan := plans[method].get(processors)) is not None]


def network_digests(spec: SweepSpec | DeviceSweepSpec) -> dict[str, str]:
    """sha256 of each network's parsed layers (what its results depend on, not its file name)."""
    digests = {}
    for network in spec.networks:
        try:
            layers = loaded_network(network, network_sha256(network)).layers
        except InputError as exc:
            inner = str(exc) if exc.where.file else exc.message  # the network file's row and column, when known
            raise spec_key_error(f"network {network!r}: {inner}", spec.source, "networks") from None
        digests[network] = hashlib.sha256(repr(layers).encode()).hexdigest()
    return digests


def check_processor_counts(units: Iterable[Unit | DevicePoint], source: str | None) -> list[dict[str, object]]:
    """The points PipeDream's straight pipeline cannot take (more processors than a network has layer groups),
    skipped and recorded (:mod:`.pipedream_points`), found before any unit is computed; a spec none of whose points
    is left is refused, naming the network. The layer groups depend on the graph alone, so one profile per network
    (layer kinds kept: the spec's) decides, costed by the analytic model (never the cycle engine)."""
    plain = [unit for unit in units if isinstance(unit, Unit)]
    groups: dict[str, int] = {}
    for unit in plain:
        if "pipedream" in unit.methods and unit.network not in groups:
            lowered = unit_lowering(unit.network, unit.network_sha256, unit.only, unit.batch, unit.mode,
                                    unit.array.element_bytes)
            groups[unit.network] = layer_groups(build_profile(unit_network(unit.network, unit.network_sha256,
                                                unit.only), unit.array, unit.batch, unit.mode, "analytic", lowered=lowered))
    if not plain:
        return []
    try:
        check_left(groups, plain[0].processors, plain[0].methods)
    except InputError as exc:
        raise spec_key_error(exc.message, source, "processors") from None
    return skipped_points(groups, plain[0].processors)


def spec_key_error(message: str, source: str | None, field: str) -> InputError:
    """An error of a spec key found once the spec is read (a network that does not load, a processor count a
    network cannot take), at the key's line as the spec's own checks give it; without one where the file no
    longer reads as TOML (or is a SCALE-Sim .cfg)."""
    exc = InputError(message, file=source, field=field)
    if source is None or Path(source).suffix.lower() == ".cfg":
        return exc
    try:
        return locate(exc, parse_toml(read_text(Path(source), "sweep spec"), source), source)
    except InputError:
        return exc


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


def _executor(workers: int, dask: str | None) -> Callable[[list[Unit]], Iterable[tuple[Unit, list]]]:
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


def run_sweep(spec: SweepSpec | DeviceSweepSpec, out: str | Path, *, workers: int = 1, dask: str | None = None,
              progress: bool = True, force: bool = False, max_configs: int = MAX_CONFIGS) -> pd.DataFrame:
    """Compute the units not yet cached under ``out``, then write ``results.csv`` and
    ``summary.csv`` there (a device sweep: ``results.csv`` alone, its front marked) (together: one :func:`~archsim.output_files.output_set`, the caller's when
    one is open, as the CLI's is, so the run's report joins them) and return the results frame. The
    folder is locked until they are in place, and refused when another spec's results are in it
    unless ``force`` (:mod:`.folder`). A spec of more than ``max_configs`` configurations is refused first."""
    out = Path(out)
    check_size(spec.size, max_configs, spec.source)  # counted from the axes: a hand-built spec is never listed
    units = spec.units()
    digests = network_digests(spec)  # a missing network stops the run before anything is written
    skipped = check_processor_counts(units, spec.source)  # PipeDream's points a network is too short for
    if isinstance(spec, SweepSpec):  # a hand-built spec's split axes, read as the spec file's (none twice)
        split_axes(spec.split_axes)
    if dask:
        from archsim.sweep.dask_address import check_dask_address

        check_dask_address(dask)
    check_entries(out)  # a symlink among the folder's own files: refused before anything is written
    try:
        (out / "cache").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot write results here ({exc.strerror or exc.__class__.__name__})",
                         file=str(out), field="out") from None
    if spec.source is None:  # the folder's owner is named by the spec file (spec.json, the lock)
        raise InputError("a sweep runs a spec read from its file (load_spec), which names the folder's owner",
                         field="spec")
    with output_set():  # the lock is left once the results are in place (with the run's report, in the CLI)
        hold_until_written(holding(out, spec.source, spec.name))
        check_owner(out, spec.source, force=force)
        record = dumps({**asdict(spec), "source_path": str(Path(spec.source).resolve()),
                        **({SKIPPED: skipped} if isinstance(spec, SweepSpec) else {})}, indent=2, default=list)
        write_output(out / "spec.json", record, at_once=True, within=out)  # the folder is this spec's from now on
        return _run_locked(spec, out, units, digests, workers, dask, progress, skipped)


def _run_locked(spec: SweepSpec | DeviceSweepSpec, out: Path, units, digests, workers: int, dask: str | None,
                progress: bool, skipped: list[dict[str, object]]) -> pd.DataFrame:
    remove_killed_temps(out)
    files = {unit: cache_file(out, unit, digests) for unit in units}
    todo = [unit for unit in units if not files[unit].is_file()]
    run = _executor(workers, dask)

    def size(unit: Unit | DevicePoint) -> int:  # configurations: the rows of results.csv this unit gives
        if isinstance(unit, DevicePoint):
            return unit.configs
        clocks = len(unit.design.clocks_ghz) if unit.design is not None else 0
        return unit.configs - unit_skipped(skipped, unit.network, clocks)  # PipeDream's skipped points

    from archsim.sweep.lifetime import ctrl_c_latched

    with progress_bar(sum(map(size, units)), f"sweep {spec.name}", "config", enabled=progress,
                      initial=sum(map(size, units)) - sum(map(size, todo)), leave=True) as bar, \
            ctrl_c_latched() as swallowed:
        computed = {}  # rows of the units computed now: the frame needs not read their files back
        try:
            for unit, rows in run(todo):
                write_output(files[unit], dumps({"unit": asdict(unit), "rows": rows}), at_once=True, within=out)  # kept if stopped
                computed[unit] = rows
                bar.update(size(unit))
                if swallowed():  # a Ctrl-C a finalizer caught: stop here, as anywhere else
                    raise KeyboardInterrupt
        except KeyboardInterrupt as stop:  # Ctrl-C (or SIGTERM's Terminated): say what is kept (one CLI line)
            kind = "points" if isinstance(spec, DeviceSweepSpec) else "configurations"
            cached = sum(map(size, units)) - sum(map(size, todo)) + sum(map(size, computed))
            raise type(stop)(f"{cached} of {sum(map(size, units))} {kind} are cached in {out}; the same "
                                    "command resumes from them") from None
    rows = [row for unit in units for row in (computed[unit] if unit in computed else _cached_rows(files[unit]))]
    if isinstance(spec, DeviceSweepSpec):
        from archsim.sweep.device_points import frame as device_frame

        frame = device_frame(rows)
        write_output(out / "results.csv", frame.to_csv(index=False), within=out)
        return frame
    frame = _frame(rows)
    write_output(out / "results.csv", frame.to_csv(index=False), within=out)  # renamed together when run_sweep's set ends
    write_output(out / "summary.csv", summarize(frame).to_csv(index=False), within=out)
    return frame


def load_results(out: Path, files: list[Path] | None = None) -> pd.DataFrame:
    """Assemble cached unit files (all of them, or just ``files``) into one sorted frame."""
    files = files if files is not None else sorted((out / "cache").glob("*.json"))
    return _frame([row for file in files for row in _cached_rows(file)])


def _cached_rows(file: Path) -> list[dict[str, object]]:
    try:
        data = parse_json(read_text(file, "sweep cache file"), str(file))
    except InputError as exc:
        raise InputError(f"unreadable sweep cache file ({exc.__class__.__name__}); delete it to recompute",
                         file=str(file)) from None
    rows = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise InputError("unreadable sweep cache file (no rows); delete it to recompute", file=str(file))
    unit = data.get("unit") if isinstance(data, dict) else None
    return [_with_settings(_renamed(row), unit) if isinstance(row, dict) else row for row in rows]


def _with_settings(row: dict[str, object], unit: object) -> dict[str, object]:
    """An array sweep's cached row with :data:`SETTING_COLUMNS`: an entry written before they were columns takes
    them from the unit it records (its key's settings, so never another alpha's), not recomputed."""
    if "alpha" in row or "method" not in row or not isinstance(unit, dict) or "alpha" not in unit:
        return row  # today's row, or a device point's
    axes = unit.get("split_axes", SPLIT_AXES)  # an entry from before the axes were a setting: every axis
    return {**row, **layerpipe_settings(str(row["method"]), float(unit["alpha"]), axes)}


def _renamed(row: dict[str, object]) -> dict[str, object]:
    """A cached row with an older version's column names under today's, and its nulls as the NaN they
    were written from (no sweep column holds None; older files wrote ``NaN`` itself)."""
    names = current_names(row)
    return {names.get(key, key): math.nan if value is None else value for key, value in row.items()}


def _frame(rows: list[dict[str, object]]) -> pd.DataFrame:
    """Rows as results.csv orders them: sorted by configuration, design columns only when present."""
    from archsim.sweep.design import DESIGN_COLUMNS

    present = set().union(*rows)
    design = [c for c in DESIGN_COLUMNS if c in present]
    array = [ARRAY_COLUMN] if ARRAY_COLUMN in present else []  # two .cfg files of one shape are two arrays
    frame = pd.DataFrame(rows, columns=written_columns(RESULT_COLUMNS) + PROVENANCE_COLUMNS + array + design)
    return frame.sort_values(SORT_COLUMNS + array + design[:6], kind="stable").reset_index(drop=True)
