"""The library face's sweep jobs: ``run_sweep``, ``sweep_cache`` and ``write_report``, as ``archsim sweep`` (its
``--cache-info`` and ``--prune-cache``) and ``archsim report`` take them (re-exported by :mod:`archsim.api`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from archsim.api_keywords import check_path, check_switch, check_text, positive_int, speaks_keywords
from archsim.validate import MAX_CONFIGS

if TYPE_CHECKING:
    from archsim.api_types import SweepSpecs
    from archsim.count_types import Count
    from archsim.sweep.cache import CacheUse


@speaks_keywords
def run_sweep(spec: SweepSpecs, *, out: str | Path | None = None, workers: Count = 1, dask: str | None = None,
              progress: bool = False, max_configs: Count = MAX_CONFIGS, force: bool = False) -> pd.DataFrame:
    """Run a sweep spec (a TOML path, a :class:`SweepSpec` or a device sweep's
    :class:`~archsim.sweep.device_spec.DeviceSweepSpec`) into ``out`` (default ``results/<spec name>``),
    computing only configurations not cached there; returns the results. ``workers``: local processes,
    1 … 1024 as ``--workers``; ``progress``: True or False (``--quiet``'s opposite; True draws the bar on stderr
    even off a terminal, in a notebook, as :func:`archsim.search`'s ``progress=True`` does); ``max_configs``:
    ``--max-configs``,
    a spec of more configurations refused before any work; ``force``: True or False, ``--force``: take over a
    folder that holds another spec's results (replacing them), refused otherwise. A device sweep warns (UserWarning)
    the lines ``archsim sweep`` prints on stderr: how many points do not fit memory (their rows'
    ``fits_memory`` False), each ``array_sides`` side leaving PEs unused, each implausible device figure; a
    plain sweep warns of each ``.cfg`` array that is a device of several arrays (swept as one), and counts the
    (network, processors, pipedream) points skipped as PipeDream's straight pipeline cannot take them (more
    processors than the network has layer groups; results hold only what ran)."""
    from archsim.output_targets import check_folder
    from archsim.sweep import run_sweep as _run
    from archsim.sweep.device_spec import DeviceSweepSpec

    workers = positive_int(workers, "workers", high=1024, what="a worker count")  # --workers' range; 0 ran as one worker
    check_switch(progress, "progress")
    check_switch(force, "force")
    if dask is not None:
        check_text(dask, "dask", "'local', a scheduler address (str) or None")
    loaded, folder, max_configs = _spec_and_folder(spec, out, max_configs)
    check_folder(folder)  # archsim sweep's check of its --out, so a file in the way is said alike
    from archsim.progress import shown

    with shown(progress):  # True draws the bar off a terminal too, as search(progress=True) does: a notebook's stderr
        frame = _run(loaded, folder, workers=workers, dask=dask, progress=progress, force=force, max_configs=max_configs)
    if isinstance(loaded, DeviceSweepSpec):  # the lines archsim sweep prints on stderr: points over memory, unused
        from archsim.console import library_note  # PEs, a slipped unit
        from archsim.sweep.device_points import spec_notes, spec_warnings, unfit_points_line

        for line in (unfit_points_line(frame), *spec_warnings(loaded), *spec_notes(loaded)):
            if line:
                library_note(line, stacklevel=3)
    else:  # what archsim sweep notes on stderr: a .cfg device of several arrays is swept as one of them
        from archsim.console import library_note
        from archsim.sweep.networks import network_file_notes
        from archsim.sweep.pipedream_points import skipped_line
        from archsim.sweep.report import spec_record
        from archsim.sweep.spec_arrays import array_file_notes, array_spec_warnings

        skipped = skipped_line(spec_record(folder))  # PipeDream's points a network is too short for
        from archsim.sweep.superlinear_rows import superlinear_rows_line

        for note in (*array_spec_warnings(loaded), *array_file_notes(loaded), *network_file_notes(loaded), skipped,
                     superlinear_rows_line(frame)):
            if note:
                library_note(note, stacklevel=3)
    return frame


@speaks_keywords
def sweep_cache(spec: SweepSpecs, *, out: str | Path | None = None, prune: bool = False, force: bool = False,
                max_configs: Count = MAX_CONFIGS) -> CacheUse:
    """``archsim sweep SPEC --cache-info`` (``prune=False``) or ``--prune-cache`` (``prune=True``): what ``spec`` (a
    TOML path or the spec :func:`~archsim.sweep.spec.load_spec` returns) uses of the cache in ``out`` (default
    ``results/<spec name>``), or that cache with the entries no configuration of ``spec`` uses deleted (``force``:
    ``--force``, in a folder of another spec's results). Runs no sweep. Returns the
    :class:`~archsim.sweep.cache.CacheUse` the command prints: ``entries`` and ``bytes`` in all, the spec's ``units``,
    how many are cached (``used``, ``used_bytes``) and the entries it does not use (``unused``, ``unused_bytes``;
    after a prune, those deleted)."""
    from archsim.sweep.cache import cache_use, prune_cache

    check_switch(prune, "prune")
    check_switch(force, "force")
    loaded, folder, _ = _spec_and_folder(spec, out, max_configs)
    return prune_cache(loaded, folder, force=force) if prune else cache_use(loaded, folder)


def check_spec_path(spec: object) -> None:
    """``spec`` as ``archsim sweep``'s SPEC: a path (str or Path). A TOML document given as the text itself (a
    newline, ``=`` or ``[`` in a string that names no file) is refused as text, not looked up as a file name that
    printed the whole document before ": sweep spec not found"; a spec's files are found beside it, so text, which
    has no folder, is not read."""
    from archsim.errors import InputError

    if isinstance(spec, str) and any(mark in spec for mark in "\n=[") and not Path(spec).exists():
        first = next((line.strip() for line in spec.splitlines() if line.strip()), "")
        shown = first if len(first) <= 40 else first[:37] + "..."
        raise InputError(f"expects a path to a sweep spec TOML, got text (starting {shown!r}): write it to a .toml "
                         "file and give its path (a spec's network and device files are found beside it)", field="spec")
    check_path(spec, "spec", "a sweep spec path, a SweepSpec or a DeviceSweepSpec")


def _spec_and_folder(spec, out, max_configs) -> tuple[Any, Path, int]:
    """``spec`` read (a TOML path, or a spec as it is), its results folder (``out``, default ``results/<spec name>``)
    and the configuration cap, checked as ``archsim sweep`` checks SPEC, ``--out`` and ``--max-configs``: one reading
    for :func:`run_sweep` and :func:`sweep_cache`."""
    from archsim.sweep import SweepSpec, load_spec
    from archsim.sweep.device_spec import DeviceSweepSpec

    if out is not None:
        check_path(out, "out", "a folder path or None")
    if not isinstance(spec, (SweepSpec, DeviceSweepSpec)):
        check_spec_path(spec)
    max_configs = positive_int(max_configs, "max-configs", high=2**53, what="a configuration count")
    spec = spec if isinstance(spec, (SweepSpec, DeviceSweepSpec)) else load_spec(spec, max_configs=max_configs)
    return spec, Path(out) if out is not None else Path("results") / spec.name, max_configs


@speaks_keywords
def write_report(results: str | Path, *, out: str | Path | None = None, spec: SweepSpecs | None = None) -> Path:
    """Write the self-contained HTML report of a sweep's results folder to ``out`` (default, as ``archsim report``'s:
    ``reports/<results folder's name>.html``); returns its path.
    Network files are read only inside the folder, or those of ``spec`` (a TOML path or a
    :class:`SweepSpec` you ran): without it, a network file elsewhere leaves out the per-layer
    and Gantt sections (docs/security.md)."""
    from archsim.sweep import SweepSpec, load_spec
    from archsim.sweep.device_spec import DeviceSweepSpec
    from archsim.sweep.report import report_apart, results_folder, spec_command
    from archsim.sweep.report import write_report as _write

    if out is not None:
        check_path(out, "out", "a report path (str or Path)")
    check_path(results, "results", "a sweep's results folder (str or Path)")
    if spec is not None and not isinstance(spec, (SweepSpec, DeviceSweepSpec)):
        check_spec_path(spec)
    folder = results_folder(results)  # archsim report's: a linked entry refused before anything is read
    out = Path("reports") / f"{folder.name}.html" if out is None else out  # archsim report's default
    report_apart(out, folder, "out")  # archsim report --out's check: not over the results it is drawn from
    own = () if spec is None else (spec if isinstance(spec, (SweepSpec, DeviceSweepSpec)) else load_spec(spec)).networks
    return _write(folder, out, spec_command=spec_command(folder), own_networks=own)
