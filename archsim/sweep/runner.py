"""Run a sweep: one cached result file per unit, computed in-process, in local processes, or on
a dask.distributed cluster, then assembled into one tidy table.

Each unit's rows land in ``DIR/cache/<digest>.json`` by atomic rename, so a run killed at any
moment (even SIGKILL) leaves only whole unit files; a re-run computes just the missing units and
assembles the same ``results.csv`` (sorted, so order of completion never shows). The digest hashes
the unit's every setting *and the content of its network* (its parsed layers), so editing a network
file recomputes its units, and two networks with the same file name never share a cache file; a file edited
while the sweep runs is never costed under the first one's hash (:func:`.networks.loaded_network`).
Temp files a killed writer left in ``DIR/cache`` are removed when the next run starts (one sweep
writes into a folder at a time).

For 10⁵-configuration sweeps: pools and clusters get units in chunks (tens of tasks, not
thousands: :mod:`.executors`), and each process loads a network and lowers it per batch once, for all
the array shapes and dataflows that share them (:mod:`.networks`).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pandas as pd

from archsim.errors import InputError
from archsim.json_text import dumps
from archsim.output_files import hold_until_written, output_set, write_output
from archsim.progress import progress as progress_bar
from archsim.split_axis import split_axes
from archsim.sweep.cache import cache_file, check_entries, remove_killed_temps
from archsim.sweep.device_spec import DevicePoint, DeviceSweepSpec
from archsim.sweep.executors import executor
from archsim.sweep.folder import check_owner, holding
from archsim.sweep.networks import network_digests
from archsim.sweep.pipedream_points import KEY as SKIPPED
from archsim.sweep.pipedream_points import unit_skipped
from archsim.sweep.results import cached_rows, results_frame
from archsim.sweep.spec import DEFAULT_BORROW, SweepSpec, Unit, check_size
from archsim.sweep.summary import summarize
from archsim.sweep.units import check_processor_counts
from archsim.validate import MAX_CONFIGS


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
        check_borrow(spec.borrow)
    if dask:
        from archsim.sweep.dask_address import check_dask_address

        check_dask_address(dask)
    check_entries(out)  # a symlink among the folder's own files: refused before anything is written
    if spec.source is None:  # the folder's owner is named by the spec file (spec.json, the lock)
        raise InputError("a sweep runs a spec read from its file (load_spec), which names the folder's owner",
                         field="spec")
    check_owner(out, spec.source, force=force)  # so a refused folder gets no lock file or cache/ (again when locked)
    try:
        (out / "cache").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot write results here ({exc.strerror or exc.__class__.__name__})",
                         file=str(out), field="out") from None
    with output_set():  # the lock is left once the results are in place (with the run's report, in the CLI)
        hold_until_written(holding(out, spec.source, spec.name))
        check_owner(out, spec.source, force=force)
        record = dumps({**_recorded(spec), "source_path": str(Path(spec.source).resolve()),
                        **({SKIPPED: skipped} if isinstance(spec, SweepSpec) else {})}, indent=2, default=list)
        write_output(out / "spec.json", record, at_once=True, within=out)  # the folder is this spec's from now on
        return _run_locked(spec, out, units, digests, workers, dask, progress, skipped)


def check_borrow(borrow: tuple[str, ...]) -> None:
    """Refuse a hand-built spec's ``borrow`` the spec file's key would refuse (none, one off ``--borrow``'s values,
    one twice) before anything is written, rather than in a worker once the folder is this spec's."""
    from archsim.choices.partitions import LAYERPIPE_BORROW

    bad = [b for b in borrow if b not in LAYERPIPE_BORROW]
    if not borrow or bad or len(set(borrow)) < len(borrow):
        said = f"unknown value {bad[0]!r}" if bad else "expected each value once" if borrow else "expected a value"
        raise InputError(f"{said}: borrow takes {' and '.join(LAYERPIPE_BORROW)}, each once", field="borrow")


def _recorded(spec: SweepSpec | DeviceSweepSpec) -> dict[str, object]:
    """``spec``'s fields as spec.json records them: ``borrow`` only where the spec runs other than the printed
    walk alone (a spec without the key records what it recorded before the key)."""
    fields = asdict(spec)
    if fields.get("borrow") == DEFAULT_BORROW:
        del fields["borrow"]
    for entry in fields.get("arrays", ()):  # a .cfg without [macs_per_pe]: its entry as recorded before the field
        if isinstance(entry, dict) and not entry.get("rates", True):
            del entry["rates"]
    if isinstance(spec, SweepSpec) and spec.designs:  # the words that ran: a .cfg's own, not the unused default 10
        from archsim.sweep.design import design_words

        for design, record in zip(spec.designs, fields["designs"]):  # analytic rows ran at none (empty cells)
            record["bandwidth"] = design_words(design, spec.arrays) if spec.engine == "cycle" else None
    return fields


def _run_locked(spec: SweepSpec | DeviceSweepSpec, out: Path, units, digests, workers: int, dask: str | None,
                progress: bool, skipped: list[dict[str, object]]) -> pd.DataFrame:
    remove_killed_temps(out)
    files = {unit: cache_file(out, unit, digests) for unit in units}
    todo = [unit for unit in units if not files[unit].is_file()]
    run = executor(workers, dask)

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
    rows = [row for unit in units for row in (computed[unit] if unit in computed else cached_rows(files[unit]))]
    if isinstance(spec, DeviceSweepSpec):
        from archsim.sweep.device_points import frame as device_frame
        from archsim.sweep.device_points import with_area

        frame = device_frame(with_area(list(units), rows))
        write_output(out / "results.csv", frame.to_csv(index=False), within=out)
        return frame
    frame = results_frame(rows)
    write_output(out / "results.csv", frame.to_csv(index=False), within=out)  # renamed together when run_sweep's set ends
    write_output(out / "summary.csv", summarize(frame, spec.networks).to_csv(index=False), within=out)
    return frame


__all__ = ["run_sweep"]
