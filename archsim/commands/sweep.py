"""``archsim sweep`` and ``archsim report``: run a sweep spec; turn its results into HTML."""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path

from archsim.commands import Command
from archsim.commands.common import phases
from archsim.console import note, shell_word, warn
from archsim.errors import InputError
from archsim.output_files import note_written
from archsim.output_targets import check_target, folder_flag, output_flag
from archsim.validate import MAX_CONFIGS
from archsim.value_parsers import int_flag


def add_sweep_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", metavar="SPEC", help="sweep spec (TOML), e.g. configs/sweeps/layerpipe_paper.toml, or a device sweep's "
                        "(configs/sweeps/device_tpu_v4_like_gpt.toml)")
    parser.add_argument("--out", type=folder_flag, default=None, metavar="DIR", help="results folder (default results/<spec name>)")
    parser.add_argument("--workers", type=int_flag(1, 1024, "a worker count"), default=1, help="local worker processes (default 1)")
    parser.add_argument("--dask", default=None, metavar="local|ADDRESS",
                        help="run on a dask.distributed cluster: 'local' starts a LocalCluster")
    parser.add_argument("--report", nargs="?", type=output_flag, const="", default=None, metavar="OUT.html",
                        help="also write the HTML report (default reports/<spec name>.html)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--max-configs", type=int_flag(1, 2**53, "a configuration count"), default=MAX_CONFIGS, metavar="N",
                        help=f"refuse a spec of more configurations (rows of results.csv; default {MAX_CONFIGS:,})")
    parser.add_argument("--force", action="store_true",
                        help="take over a results folder that holds another spec's results (replacing them)")
    cache = parser.add_mutually_exclusive_group()
    cache.add_argument("--cache-info", action="store_true",
                       help="say what the results folder's cache holds and what SPEC uses of it, then exit (runs nothing)")
    cache.add_argument("--prune-cache", action="store_true",
                       help="delete the cache entries no configuration of SPEC uses, say how many and the bytes freed, "
                            "then exit (runs nothing)")


def run_sweep_command(args: argparse.Namespace) -> int:
    from archsim.output_targets import check_folder
    from archsim.sweep import load_spec, run_sweep
    from archsim.sweep.report import report_apart, write_report

    spec = load_spec(args.spec, max_configs=args.max_configs)
    out = Path(args.out or Path("results") / spec.name)
    target = args.report or str(Path("reports") / f"{spec.name}.html")
    if args.cache_info or args.prune_cache:
        return _cache_command(args, spec, out)
    check_folder(out)  # the defaults too, before anything is written: all of the run's files, or none
    if args.report is not None:
        check_target(target)
        report_apart(target, out, "--report")
    # a batch system's kill: what is cached said, as for Ctrl-C (archsim.cli runs every command so)
    frame = run_sweep(spec, out, workers=args.workers, dask=args.dask, progress=not args.quiet, force=args.force,
                      max_configs=args.max_configs)
    from archsim.sweep.device_spec import DeviceSweepSpec

    summary = "" if isinstance(spec, DeviceSweepSpec) else f"; summary in {out / 'summary.csv'}"  # a device sweep: none
    note_written(f"{len(frame)} results in {out / 'results.csv'}{summary}")
    if isinstance(spec, DeviceSweepSpec):  # as train warns: memory that does not fit, a figure whose unit slipped
        from archsim.sweep.device_points import spec_notes, spec_warnings, unfit_points_line

        for line in (unfit_points_line(frame), *spec_warnings(spec)):
            if line:
                warn(line)
        for line in spec_notes(spec):
            note(line)
    else:  # as cost --config notes it: a .cfg device of several arrays is swept as one of them
        from archsim.sweep.spec_arrays import array_file_notes, array_spec_warnings

        for line in array_spec_warnings(spec):
            warn(line)
        from archsim.sweep.networks import network_file_notes
        from archsim.sweep.pipedream_points import skipped_line
        from archsim.sweep.report import spec_record
        from archsim.sweep.superlinear_rows import superlinear_rows_line

        for line in (*array_file_notes(spec), *network_file_notes(spec), skipped_line(spec_record(out)),
                     superlinear_rows_line(frame)):
            if line:
                note(line)
    if args.report is not None:
        try:
            path = write_report(out, target, spec_command=f"archsim sweep {shell_word(args.spec)} --out {shell_word(out)}",
                                own_networks=spec.networks, phases=partial(phases, enabled=not args.quiet))
        except KeyboardInterrupt as stop:  # Ctrl-C or SIGTERM while the page is drawn: say what is kept, as run_sweep does
            kind = "points" if isinstance(spec, DeviceSweepSpec) else "configurations"
            raise type(stop)(f"all {len(frame)} {kind} are cached in {out}; the same command writes results.csv and "
                             "the report from them") from None
        note_written(f"wrote {path}")  # as every command announces a file
    return 0


def _cache_command(args: argparse.Namespace, spec, out: Path) -> int:
    """``--cache-info`` and ``--prune-cache``: the cache of ``out`` against ``spec``, on stdout; nothing is computed."""
    from archsim.sweep.cache import cache_use, prune_cache

    flag = "--cache-info" if args.cache_info else "--prune-cache"
    for given, other in ((args.report is not None, "--report"), (args.workers != 1, "--workers"),
                         (args.dask is not None, "--dask")):
        if given:
            raise InputError(f"{flag} runs no sweep: {other} has nothing to do beside it", field=flag[2:])
    if args.prune_cache:
        use = prune_cache(spec, out, force=args.force)
        if not use.folder.is_dir():
            print(f"no cache in {out}: nothing to prune")
            return 0
        print(f"pruned {len(use.unused):,} cache entries ({use.unused_bytes:,} bytes freed) in {use.folder}; "
              f"kept {use.used:,} ({use.used_bytes:,} bytes): {args.spec}'s cached units")
        return 0
    use = cache_use(spec, out)
    print(f"cache: {use.folder}: {use.entries:,} entries, {use.bytes:,} bytes")
    print(f"{args.spec}: {use.units:,} units, {use.used:,} cached ({use.used_bytes:,} bytes), "
          f"{use.units - use.used:,} to compute")
    print(f"unused by {args.spec}: {len(use.unused):,} entries, {use.unused_bytes:,} bytes"
          + (f" (archsim sweep {args.spec}{f' --out {args.out}' if args.out else ''} --prune-cache deletes them)"
             if use.unused else ""))
    return 0


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", metavar="RESULTS", help="a sweep's results folder (or its results.csv)")
    parser.add_argument("--out", type=output_flag, default=None, metavar="OUT.html", help="report path (default reports/<name>.html)")


def run_report_command(args: argparse.Namespace) -> int:
    from archsim.sweep.report import report_apart, results_folder, spec_command, write_report

    folder = results_folder(args.results)  # a linked entry refused before anything is read
    target = args.out or str(Path("reports") / f"{folder.name}.html")
    report_apart(target, folder, "--out")
    path = write_report(folder, target, spec_command=spec_command(folder), phases=phases)
    note_written(f"wrote {path}")  # as every command announces a file
    return 0


SWEEP = Command("sweep", "run a sweep spec (array × batch × processors × method, or a device file's fields) with caching",
                add_sweep_arguments, run_sweep_command)
REPORT = Command("report", "write the HTML report of a sweep's results", add_report_arguments, run_report_command)
