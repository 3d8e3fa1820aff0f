"""A sweep's results folder as an HTML report: the results read back and checked, per-layer costs,
a LayerPipe schedule and, for design sweeps, the Pareto front (``archsim report``, :func:`archsim.api.write_report`);
a device sweep's folder is drawn by :mod:`archsim.sweep.device_report`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archsim.choices.devices import FP8
from archsim.console import shell_word
from archsim.errors import InputError
from archsim.progress import Phases, quiet_phases
from archsim.sweep.results_check import check_cells, check_spec_rows
from archsim.validate import check_file_ending, exists

if TYPE_CHECKING:  # pandas loads when a report is written
    import pandas as pd

    from archsim.array.config import ArrayConfig


def results_folder(results: str | Path) -> Path:
    """The folder ``archsim report RESULTS`` and :func:`archsim.write_report` draw: RESULTS, or the folder of the
    results.csv given. Refused in one line, before any of its files is read, where one a sweep writes there is a
    symlink (:func:`archsim.sweep.cache.check_entries`, the sweep's own check): read through, a link would draw
    another folder's rows, or an outside file's, as this folder's (docs/security.md)."""
    from archsim.sweep.cache import check_entries

    folder = Path(results)
    if folder.suffix == ".csv":  # the results.csv named: a file, named without a trailing "/"
        check_file_ending(results, "results file")
        folder = folder.parent
    check_entries(folder)
    return folder


def spec_command(folder: Path) -> str:
    """The command that reran the sweep of ``folder`` (its spec.json's source, else a placeholder)."""
    spec = folder / "spec.json"
    if spec.is_file():
        from archsim.validate import parse_json, read_text

        record = parse_json(read_text(spec, "the folder's spec.json"), str(spec))
        source = record.get("source") if isinstance(record, dict) else None
        if isinstance(source, str) and source:
            return f"archsim sweep {shell_word(Path(source).name if not exists(source) else source)} --out {shell_word(folder)}"
    return f"archsim sweep SPEC --out {shell_word(folder)}"


NUMERIC_RESULT_COLUMNS = ("rows", "cols", "batch", "processors", "stages", "single_processor_cycles", "iteration_cycles",
                          "speedup", "mandatory_comm_bytes", "additional_comm_bytes")  # never empty in a sweep's rows


def read_results_csv(path: Path) -> tuple[str, pd.DataFrame]:
    """A results.csv's text and frame: the run's own (pending) file while a sweep writes its report."""
    import io

    import pandas as pd

    from archsim.output_files import pending
    from archsim.validate import read_text

    try:
        text = read_text(pending(path), "results file")
        return text, pd.read_csv(io.StringIO(text))
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise InputError(f"unreadable results ({exc.__class__.__name__})", file=str(path)) from None


def _no_results(folder: Path) -> str:
    """Why ``folder`` has no results.csv to draw, and what to do: a file given for the folder (a spec: its
    folder named), a sweep still writing it, a sweep that stopped before the end (the command that resumes it), or no
    folder there at all."""
    from archsim.sweep.folder import in_use

    if not folder.exists():  # said as what it is, not as an empty folder
        return "no such folder: give a sweep's results folder (`archsim sweep SPEC --out DIR` writes one)"
    if folder.is_file():
        name = _spec_name(folder)
        return (f"a sweep spec, not its results folder: give the folder its sweep wrote (--out; default results/{name}),"
                f" or run `archsim sweep {folder} --report`" if name else "a file, not a sweep's results folder")
    if (folder / "spec.json").is_file():
        holder = in_use(folder)
        if holder:
            return (f"no results.csv yet: a sweep is still writing this folder ({holder}); draw the report once it "
                    "ends, or give the sweep --report")
        return (f"no results.csv: the sweep stopped before its end; `{spec_command(folder)}` computes the rest "
                "from its cache and writes it")
    return "no results.csv here: run `archsim sweep SPEC --out DIR` first"


def _spec_name(path: Path) -> str | None:
    """A sweep spec's name (its ``[sweep] name``, else the file's stem), or None when ``path`` is no spec."""
    from archsim.toml_errors import parse_toml
    from archsim.validate import read_text

    try:
        table = parse_toml(read_text(path, "the file"), str(path)).get("sweep")
    except (InputError, AttributeError):
        return None
    name = table.get("name", path.stem) if isinstance(table, dict) else None
    return name if isinstance(name, str) else None


def read_results(folder: Path) -> pd.DataFrame:
    """A results folder's results.csv (old column names renamed), checked."""
    from archsim.output_files import pending
    from archsim.sweep.results import RESULT_COLUMNS, current_names

    path = folder / "results.csv"
    if not pending(path).is_file():
        raise InputError(_no_results(folder), file=str(folder))
    text, frame = read_results_csv(path)
    frame = frame.rename(columns=current_names(frame.columns))  # an older version's names read as today's
    missing = [c for c in RESULT_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError("missing column", file=str(path), line=1, field=missing[0], missing=True)
    if frame.empty:  # a header alone: no figure or headline to draw (a sweep never writes one)
        raise InputError(f"no result rows, only the header: rerun `{spec_command(folder)}`", file=str(path), line=2)
    check_cells(text, frame, path, [c for c in RESULT_COLUMNS if c in NUMERIC_RESULT_COLUMNS])
    return frame


RESULT_FILES = ("results.csv", "summary.csv", "spec.json")  # what a results folder holds and its report reads


def report_apart(target: str | Path, folder: Path, flag: str) -> None:
    """Refuse a report path that is one of the results folder's own files: the HTML would replace the
    results it is drawn from (a sweep's, written in the same run, or a report's input); ``flag``: how the caller
    names the path (``--out``, ``--report``, the API's ``out``). The one check of ``sweep --report``, ``report
    --out`` and ``archsim.write_report``."""
    import os

    from archsim.output_inputs import same_file, spec_inputs
    from archsim.output_targets import check_target

    if check_target(target) == "through":
        return
    where = os.path.realpath(target)
    for name in RESULT_FILES:
        if where == os.path.realpath(folder / name):
            raise InputError(f"{flag} names the results folder's {name}: the report would replace it; give the "
                             "report another name", file=str(target))
    source = _recorded_spec(folder)
    for path, what in spec_inputs(source) if source else ():
        if same_file(target, path):
            named = "the sweep spec" if path == source else f"{what} of the sweep spec"
            raise InputError(f"{flag} names {named} these results come from ({source}): the report would replace "
                             "it; give the report another name", file=str(target))


def _recorded_spec(folder: Path) -> str | None:
    """The spec file a results folder's spec.json records (``source_path``), where it still exists; None
    when the folder has no readable record (the report's reader says why, if it matters)."""
    import os

    from archsim.validate import parse_json, read_text

    try:
        record = parse_json(read_text(folder / "spec.json", "the folder's spec.json"), str(folder / "spec.json"))
    except (InputError, OSError, ValueError):
        return None
    source = record.get("source_path") if isinstance(record, dict) else None
    return source if isinstance(source, str) and os.path.isfile(source) else None


def write_report(folder: Path, target: str | Path, *, spec_command: str,
                 own_networks: tuple[str, ...] = (), phases: Phases = quiet_phases) -> Path:
    """The sweep's HTML report from the folder's files. A network file its results.csv names is read
    only inside the folder (or the shipped ``layers/``), or when it is one of ``own_networks``, the
    networks of the spec the caller has just run: a results folder may come from someone else. ``folder`` is
    one :func:`results_folder` returned (``archsim report``, :func:`archsim.write_report`) or one a sweep has just
    filled (``sweep --report``: :func:`archsim.sweep.runner.run_sweep` checked it before the run): its entries'
    link check is theirs, made once before any of its files is read. ``phases``: the CLI's bar over the seconds
    plotly's import, the network sections and the page take (a library call's: none)."""
    from archsim.sweep.device_report import is_device_folder, write_device_report

    if is_device_folder(folder):
        return write_device_report(folder, target, spec_command=spec_command)
    results = read_results(folder)
    record = spec_record(folder)
    check_spec_rows(results, record, folder / "results.csv", spec_command)
    with phases(f"report {folder.name}", REPORT_PHASES) as step:
        step(REPORT_PHASES[0])
        from archsim.report.sweep_order import network_order
        from archsim.report.sweep_report import build_report  # plotly loads only for a report
        from archsim.sweep import summarize
        from archsim.sweep.network_names import labelled
        from archsim.sweep.pipedream_points import skipped_line
        from archsim.sweep.report_sections import network_sections, spec_methods, spec_networks
        from archsim.sweep.results_check import recorded_borrow

        listed = record.get("networks")
        networks = [str(n) for n in listed] if isinstance(listed, list) else []
        # LayerPipe's gainful rows: a method of their own on the page; two networks of one stem: one name each
        results = labelled(borrow_series(results), networks)
        order = network_order(results, spec_networks(record))
        step(REPORT_PHASES[1])
        sections = network_sections(results, order, folder, own_networks, record,
                                    f"{spec_command} && archsim report {folder} --out {target}")
        engine = record.get("engine", "analytic")
        step(REPORT_PHASES[2])
        return build_report(results, summarize(results), results_path=str(folder), out=target,
                            spec_command=spec_command, engine=engine if isinstance(engine, str) else None,
                            networks=order, network_sections=sections, skipped=skipped_line(record), record=record,
                            methods=series_methods(spec_methods(record), recorded_borrow(record)))


REPORT_PHASES = ("load plotly", "per-layer and Gantt sections", "figures and page")  # write_report's bar, in order


def borrow_label(borrow: str) -> str:
    """The method a report names LayerPipe's rows of ``borrow`` by: ``layerpipe`` for the printed walk (the
    default, named as ever), ``layerpipe (gainful)`` for ``--borrow gainful``."""
    from archsim.choices.partitions import BORROW_PAPER

    return "layerpipe" if borrow == BORROW_PAPER else f"layerpipe ({borrow})"


def borrow_series(results: pd.DataFrame) -> pd.DataFrame:
    """``results`` with each LayerPipe row of a ``borrow`` sweep under :func:`borrow_label`'s method, so that its
    figures, tables and headline draw ``layerpipe (gainful)`` as a series of its own beside ``layerpipe``;
    a results.csv without the column (every sweep without the key) as it is."""
    from archsim.sweep.spec import BORROW_COLUMN

    if BORROW_COLUMN not in results.columns:
        return results
    gainful = (results["method"] == "layerpipe") & results[BORROW_COLUMN].notna()
    return results.assign(method=results["method"].where(
        ~gainful, results[BORROW_COLUMN].map(lambda b: borrow_label(str(b)))))


def series_methods(methods: tuple[str, ...], borrow: tuple[str, ...]) -> tuple[str, ...]:
    """The spec's ``methods`` in the page's order with LayerPipe as each ``borrow`` value's series
    (:func:`borrow_label`) in the spec's order of ``borrow``, where layerpipe is listed."""
    return tuple(label for method in methods
                 for label in ([borrow_label(b) for b in borrow] if method == "layerpipe" else [method]))


def spec_record(folder: Path) -> dict:
    """The folder's spec.json (the settings the sweep ran with), or nothing: what a report re-costs a row with
    (public: the .cfg sweep test reads the array it names)."""
    from archsim.validate import parse_json, read_text

    spec = folder / "spec.json"
    record = parse_json(read_text(spec, "the folder's spec.json"), str(spec)) if spec.is_file() else {}
    return record if isinstance(record, dict) else {}


def array_path(first) -> str | None:
    """The .cfg ``first``'s array was read from (its ``array_path``), or None for a ROWSxCOLS array (public: the
    report's sections name it in ``cost``'s flags)."""
    path = first.get("array_path")
    return path if isinstance(path, str) and path else None


def sweep_array(record: dict, first) -> tuple[ArrayConfig, str, str]:
    """The array, engine and flags the sweep costed ``first`` on: :func:`_memory_array`'s, at the design row's
    element size (:func:`row_width`; its flag after the memory flags), so a 2-byte row is re-costed, and its
    command reproduces it, in 2-byte words rather than ``cost``'s default 1-byte ones."""
    array, engine, flags = _memory_array(record, first)
    array = _row_rate(array, record, first)
    width, flag = row_width(first)
    return (replace(array, element_bytes=width), engine, flags + flag) if flag else (array, engine, flags)


def _row_rate(array: ArrayConfig, record: dict, first) -> ArrayConfig:
    """``array`` at the MACs per PE per cycle ``first``'s row ran at: a ``dtypes`` row on a .cfg at the file's
    ``[macs_per_pe]`` rate of its dtype, as spec.json recorded the rates (``rates``, absent where none) and as the
    report's ``cost --config FILE --dtype D`` reads them; every other row at one MAC per PE per cycle."""
    path, dtype = array_path(first), first.get("dtype")
    entries = record.get("arrays")
    if path is None or not isinstance(dtype, str) or not isinstance(entries, list):
        return array
    rates = next((entry.get("rates") for entry in entries if isinstance(entry, dict) and entry.get("path") == path),
                 None)
    found = {pair[0]: pair[1] for pair in rates if isinstance(pair, list) and len(pair) == 2} \
        if isinstance(rates, list) else {}
    rate = found.get(dtype, 1)
    return array if rate == 1 else replace(array, mac_rate=float(rate))


def row_width(first) -> tuple[int, str]:
    """(bytes per element, the flag of ``cost`` and ``pipeline`` that sets it) a design row ran at: ``--dtype
    NAME`` for a ``dtypes`` sweep's row (an fp8 row's too: its rate and MAC pJ), else ``--element-bytes N``; (1, "")
    for another 1-byte row or a plain sweep's (no ``element_bytes`` column), the commands' default width."""
    from archsim.validate import is_nan

    width, dtype = first.get("element_bytes"), first.get("dtype")
    if dtype == FP8:  # 1-byte words, but fp8's MAC rate and pJ: the flag that reads them
        return 1, f" --dtype {FP8}"
    if width is None or is_nan(width) or int(width) == 1:
        return 1, ""
    named = isinstance(dtype, str) and dtype
    return int(width), f" --dtype {shell_word(dtype)}" if named else f" --element-bytes {int(width)}"


def row_microbatches(first) -> int:
    """The micro-batches M a design row split its batch into (each of batch / M samples: its profile, and M of
    them its iteration), 1 for a plain sweep's row (no ``microbatches`` column)."""
    from archsim.validate import is_nan

    count = first.get("microbatches")
    return 1 if count is None or is_nan(count) else int(count)


def _memory_array(record: dict, first) -> tuple[ArrayConfig, str, str]:
    """The array, engine and memory flags the sweep costed ``first`` on: its spec's engine and, in a
    design sweep, the row's SRAM and DRAM bandwidth (else the sweep's defaults). A .cfg's array (a row with
    an ``array_path``) under the cycle engine is the one spec.json recorded when the sweep read the file (its
    SRAMs and bandwidths, which ``--config`` restates; the file itself is not opened: a results folder may
    come from someone else); analytic cycles depend on its shape and dataflow alone."""
    from archsim.array.config import ArrayConfig
    from archsim.validate import is_nan

    engine = record.get("engine", "analytic")
    array = ArrayConfig(int(first.rows), int(first.cols), str(first.dataflow))
    path = array_path(first)
    if path is not None and engine == "cycle":
        entries = record.get("arrays")
        saved = next((entry.get("array") for entry in entries if isinstance(entry, dict) and entry.get("path") == path),
                     None) if isinstance(entries, list) else None
        if isinstance(saved, dict):
            fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in saved.items()}
            try:
                saved_array = replace(ArrayConfig(**fields), dataflow=str(first.dataflow))
            except TypeError:  # keys no ArrayConfig has: another version's record
                pass
            else:
                return _design_bandwidth(saved_array, first.get("bandwidth_words_per_cycle"))
        raise InputError("the folder's spec.json does not record this .cfg array (rerun the sweep)", file=path,
                         field="array_path")
    if engine != "cycle":
        return array, "analytic", ""
    sram, bandwidth = first.get("sram_kb"), first.get("bandwidth_words_per_cycle")
    if sram is None or bandwidth is None or is_nan(sram) or is_nan(bandwidth):
        return array, "cycle", " --engine cycle"
    array = replace(array, ifmap_sram_kb=int(sram), filter_sram_kb=int(sram), ofmap_sram_kb=int(sram),
                    bandwidth=(int(bandwidth),), user_bandwidth=True)
    return array, "cycle", f" --engine cycle --sram-kb {int(sram)} --bandwidth {int(bandwidth)}"


def _design_bandwidth(array: ArrayConfig, bandwidth) -> tuple[ArrayConfig, str, str]:
    """A .cfg's recorded array under the cycle engine at a design row's DRAM bandwidth where that differs from
    the file's: a ``bandwidths`` axis over a file that writes none (the only case a spec lets it differ), as
    ``--bandwidth`` sets it beside ``--config``. An array the sweep ran at its ``[memory] hbm_gbps`` rate
    (:attr:`ArrayConfig.dram_rate`) names its words/cycle always: the row's (its design's element size), else the
    recorded array's, so the command states the rate the sweep used rather than leave it to ``cost``'s reading."""
    from archsim.array.options import with_memory
    from archsim.validate import is_nan

    given = bandwidth is not None and not is_nan(bandwidth)
    if array.dram_rate is not None:
        words = int(bandwidth) if given else array.bandwidth[0]
        return with_memory(array, bandwidth=words), "cycle", f" --engine cycle --bandwidth {words}"
    if not given or array.read_bandwidth is not None or array.bandwidth == (int(bandwidth),):
        return array, "cycle", " --engine cycle"
    return with_memory(array, bandwidth=int(bandwidth)), "cycle", f" --engine cycle --bandwidth {int(bandwidth)}"


def report_network(name: str, folder: Path, own_networks: tuple[str, ...] = ()):
    """The network a report's per-layer sections show, or None (with one line on stderr) when the
    results name a file outside their folder: docs/security.md's rule that names resolve inside
    their folder. A shipped name reads ``layers/``; a Python file (``FILE.py:Class``) is never run."""
    from archsim.workload import load_network
    from archsim.workload.shipped import load_shipped, shipped_key
    from archsim.workload.torch_file import is_torch_spec

    if name in own_networks:
        return load_network(name)
    path = Path(name)
    if not is_torch_spec(name) and (path.is_absolute() or len(path.parts) > 1 or path.suffix):
        where = path if path.is_absolute() else folder / path
        try:
            inside = where.resolve().is_relative_to(folder.resolve())
        except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL
            inside = False
        if inside:
            return load_network(str(where))
    elif not is_torch_spec(name):
        try:
            return load_shipped(shipped_key(name))
        except InputError:
            pass
    from archsim.console import note

    note(f"the results name the network {name!r}, outside {folder.name}/ and not shipped: "
         "not read (a results folder's names stay inside it); the per-layer and Gantt sections are left out "
         "(archsim sweep SPEC --report draws them from the spec's files)")
    return None


__all__ = ["NUMERIC_RESULT_COLUMNS", "read_results", "read_results_csv", "results_folder", "spec_command",
           "write_report"]
