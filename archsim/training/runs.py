"""A runs file read: many training configurations of one model, each a :class:`RunRow` that ``archsim train MODEL
--runs RUNS.csv`` predicts in one process (:mod:`archsim.training.runs_predict`), so a user checks archsim against
their own measured runs in seconds. This module reads and checks the rows; predicting them is the other's job.

Two layouts are read (docs/formats.md, "Runs files"):

* archsim's: a header naming the columns ``tp, pp, dp, micro_batch, global_batch`` (required) and any of
  ``recompute`` (none | selective | full, any case, default full), ``sequence_parallel`` (true/false, default
  false), ``interleave`` (default 1), ``distributed_optimizer`` (true/false, default false: Megatron-LM's
  ``--use-distributed-optimizer``), ``fsdp`` (true/false, default false: PyTorch FSDP's full sharding), ``fsdp_reshard`` (after-forward | none,
  default after-forward: when FSDP frees the gathered parameters), ``fsdp_grad_sync`` (micro-batch | step, default
  micro-batch: when FSDP reduce-scatters the gradients),
  ``cp`` (default 1: context parallelism), ``cp_comm`` (p2p | all_gather | a2a | a2a+p2p, default p2p: how CP
  exchanges K/V), ``cp_hierarchy`` (a2a+p2p's ``A P``, as ``--cp-hierarchy``), ``ep`` (default 1: expert parallelism), ``etp`` (default TP),
  ``moe_expert_capacity_factor`` (a number above 0, empty: dropless) and ``moe_pad_expert_input_to_capacity``
  (true/false, default false: Megatron-Core's flags of those names), ``moe_load_imbalance`` (a ratio ≥ 1, empty:
  uniform; ``--moe-load-imbalance``), ``fp8`` (hybrid | e4m3, empty or none: off;
  ``--fp8``) and ``fp8_param_gather`` (true/false, default false: ``--fp8-param-gather``), ``p2p`` (overlapped |
  blocking | megatron, any case; empty or absent: the command's ``--p2p``), ``gpus`` (checked against
  TP × CP × PP × DP) and ``measured_seconds``;
* vTrain's released CSV as it is (``# GPUs,global batch,…,iteration time (ms)``,
  :data:`archsim.training.measured.COLUMNS`): each row also names its GPT's hidden size, heads, layers
  and sequence length, which replace MODEL's (FFN kept at MODEL's multiple of hidden); recompute full
  (or its optional ``recompute`` column, as :mod:`archsim.training.measured` reads it), no sequence
  parallelism, no interleaving (how vTrain measured), the command's ``--p2p``; the time in ms is the measured one.

"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from archsim.choices.schedules import TRAINING_SCHEDULES
from archsim.choices.training import CP_COMMS, DEFAULT_P2P, FP8_RECIPES, FSDP_GRAD_SYNCS, FSDP_RESHARDS, P2P_MODES
from archsim.console import as_keywords, setting
from archsim.csv_lines import check_row_length, choice_cell
from archsim.errors import InputError
from archsim.training.layout_notes import sequence_parallel_run
from archsim.training.measured import COLUMNS as VTRAIN_COLUMNS
from archsim.training.measured import CsvText, blank_row, read_header, recompute_cell
from archsim.training.parallel import Parallelism
from archsim.validate import INT32_MAX, MAX_FIGURE, did_you_mean, shown
from archsim.value_parsers import parse_boolean, parse_float, parse_ratio

REQUIRED = ("tp", "pp", "dp", "micro_batch", "global_batch")
OPTIONAL = ("recompute", "sequence_parallel", "interleave", "distributed_optimizer", "fsdp", "fsdp_reshard", "fsdp_grad_sync",
            "cp", "cp_comm", "cp_hierarchy", "ep", "etp", "moe_expert_capacity_factor", "moe_pad_expert_input_to_capacity",
            "moe_load_imbalance", "fp8", "fp8_param_gather", "schedule", "p2p", "gpus", "measured_seconds")


@dataclass(frozen=True)
class RunRow:
    """One row: its line in the file, its parallelism, and where given the measured iteration (seconds),
    the model shape that replaces MODEL's (hidden, heads, layers, seq: vTrain's layout), the experts' capacity
    factor and padding (Megatron-Core's; None and False: dropless, MODEL's own), the load imbalance (None:
    uniform, MODEL's own), the row's own pipeline schedule (its ``schedule`` column; None: the command's), its own
    pipeline sends (its ``p2p`` column, :attr:`~archsim.training.parallel.Parallelism.p2p_blocking`; None: the
    command's ``--p2p``) and whether
    its ``sequence_parallel`` true at TP 1 was turned off, as ``archsim train`` turns it off
    (:func:`~archsim.training.layout_notes.sequence_parallel_run`)."""

    line: int
    par: Parallelism
    measured_seconds: float | None = None
    shape: tuple[int, int, int, int] | None = None
    moe_expert_capacity_factor: float | None = None
    moe_pad_expert_input_to_capacity: bool = False
    moe_load_imbalance: float | None = None
    schedule: str | None = None
    sequence_parallel_off: bool = False
    p2p: str | None = None


def read_runs(path: str | Path | CsvText, check: Callable[[RunRow], None] | None = None) -> tuple[RunRow, ...]:
    """The rows of a runs file (either layout, module docstring). A bad row raises an :class:`InputError` naming the
    file, its line and the field; ``check`` (:func:`~archsim.training.runs_predict.row_check`) is called on each row as
    it is read, so the first bad row in the file is the one named, whatever is wrong with it."""
    file = str(path)
    lines, _, first, names = read_header(path, "runs file")
    body = [(n, line) for n, line in enumerate(lines[first + 1:], start=first + 2) if not blank_row(line)]
    if not body:
        raise InputError("no runs after the header", file=file, line=first + 1)
    check = check or (lambda row: None)
    if tuple(names[:len(VTRAIN_COLUMNS)]) == VTRAIN_COLUMNS:
        measured = _measured_rows(path, [n for n, _ in body])
        for row in measured:
            check(row)
        return measured
    columns = (f"a runs file names {', '.join(REQUIRED)} and optionally {', '.join(OPTIONAL)} (or is vTrain's "
               "CSV as released)")
    while names and not names[-1]:  # a trailing comma (a spreadsheet's empty last column) names no column
        names = names[:-1]
    if "" in names:
        raise InputError(f"column {names.index('') + 1} has no name: {columns}", file=file, line=first + 1)
    missing = [c for c in REQUIRED if c not in names]
    unknown = [c + did_you_mean(c, REQUIRED + OPTIONAL) for c in names if c not in REQUIRED + OPTIONAL]
    if missing:  # a misspelt column is named too: it is what the user typed for the missing one
        typed = f" (unknown column(s) {', '.join(unknown)})" if unknown else ""
        raise InputError(f"missing column(s) {', '.join(missing)}{typed}: {columns}", file=file, line=first + 1,
                         missing=True)
    if unknown:  # measured_ms for measured_seconds: the columns it may have, as a missing one gets them
        raise InputError(f"unknown column(s) {', '.join(unknown)}: {columns}", file=file, line=first + 1)
    index = {name: i for i, name in enumerate(names)}
    rows = []
    for n, line in body:
        cells = line.split(",")
        check_row_length(cells, names, file=file, line=n)  # a short row's last cells would read as empty
        rows.append(_archsim_row(cells, index, n, file))
        check(rows[-1])
    return tuple(rows)


def frame_text(frame, name: str = "the runs DataFrame") -> CsvText:
    """A pandas DataFrame of a runs file's columns as the CSV it would be written as (``frame.to_csv(index=False)``:
    a header, then one line a row, numbered from line 2 in errors, as that file's; pandas' ``Unnamed: N`` header, a blank
    cell's, blank); a float cell that is a whole number is written as the integer (``8.0``, a float column's, is 8), an empty or NaN cell empty, True/False as true/false."""
    import numbers

    import numpy
    import pandas

    def cell(value, line: int, column: str) -> str:
        if isinstance(value, str):
            if "," in value or "\n" in value or "\r" in value:  # would split a cell or a row of the CSV
                raise InputError(f"a cell holds a comma or a line break: {shown(value)}", file=name, line=line,
                                 field=column)
            return value
        if pandas.api.types.is_scalar(value) and pandas.isna(value):  # None, NaN, pandas' NA: an empty cell
            return ""
        if isinstance(value, (bool, numpy.bool_)):
            return "true" if value else "false"
        if isinstance(value, numbers.Integral):
            return str(int(value))
        if isinstance(value, numbers.Real):
            number = float(value)
            return str(int(number)) if number.is_integer() and abs(number) <= 2**53 else repr(number)
        return str(value)  # (a cell of another type: refused by the reader as it reads it)

    # pandas names a blank header cell "Unnamed: N" (a trailing comma's column, a written index's): blank again, as
    # the file had it, so the frame reads as its file does
    columns = ["" if re.fullmatch(r"Unnamed: \d+", str(c)) else str(c) for c in frame.columns]
    lines = [",".join(columns)]
    lines += [",".join(cell(v, n, c) for v, c in zip(row, columns))
              for n, row in enumerate(frame.itertuples(index=False, name=None), start=2)]
    return CsvText(name, "\n".join(lines) + "\n")


def _int(cell: str, field: str, file: str, line: int) -> int:
    """A positive integer cell of at most 2³¹ − 1, as its flag takes (:func:`~archsim.value_parsers.stated_integer`);
    ``8.0`` (pandas' ``to_csv`` of a float column) read as 8, as the keyword path reads 8.0
    (:func:`~archsim.value_parsers.whole_number`); ``8.5`` refused. Written
    as every number archsim reads (:mod:`archsim.value_parsers`): ASCII digits, so ``1_6``, ``１６`` and ``١٦``,
    which Python's int() takes, are refused (until 2026-12-05 read as 16)."""
    from archsim.value_parsers import stated_integer

    value = stated_integer(cell)
    if value is None or value <= 0:
        raise InputError(f"expected a positive integer, got {cell!r}", file=file, line=line, field=field)
    if value > INT32_MAX:  # every integer archsim reads: its flag's bound, not a job size refused as --max-ops
        raise InputError(f"expected a positive integer in 1…{INT32_MAX}, got {cell!r}", file=file, line=line,
                         field=field)
    return value


def _seconds(cell: str, field: str, file: str, line: int, scale: float = 1.0) -> float:
    """A positive time cell in seconds (× ``scale``), written as every real archsim reads
    (:func:`~archsim.value_parsers.parse_float`: no ``1_0`` nor non-ASCII digits, which float() takes), of at most
    :data:`~archsim.validate.MAX_FIGURE` seconds, so that its error and its ratio to the prediction stay finite."""
    from archsim.value_parsers import parse_float

    try:
        value = parse_float(cell, low=0.0, low_open=True) * scale
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise InputError(f"expected a positive time, got {cell!r}", file=file, line=line, field=field)
    if value > MAX_FIGURE:  # 1e308 s: predicted ÷ it is 0 (an error of -1.0), it ÷ predicted overflows to inf
        raise InputError(f"a measured time out of range: at most {MAX_FIGURE:g} s (some 32 million years), got "
                         f"{cell!r}", file=file, line=line, field=field)
    return value


def column_for(field: str | None) -> str | None:
    """The runs file's column for an error's field: the flag ``global-batch`` is the column ``global_batch``
    (a row's error names what its reader sees in the header); a field no column holds stays as it is."""
    column = None if field is None else field.replace("-", "_")
    return column if column in REQUIRED + OPTIONAL else field


def _parallelism(fields: dict, file: str, line: int) -> Parallelism:
    try:
        with as_keywords():  # a setting named as the file's column (tp, interleave), not a flag (--tp)
            return Parallelism(**fields)
    except InputError as exc:
        raise InputError(exc.message, file=file, line=line, field=column_for(exc.where.field)) from None


def _archsim_row(raw: list[str], index: dict[str, int], line: int, file: str) -> RunRow:
    if any(cell.strip() for cell in raw[len(index):]):  # a cell past the header's columns has no name to be read by
        raise InputError(f"{len(raw)} cells, the header names {len(index)} columns", file=file, line=line)
    cells = {name: raw[i].strip() for name, i in index.items()}  # (read_runs: no row short of the header)
    quoted = next((name for name, cell in cells.items() if cell[:1] in ('"', "'")), None)
    if quoted:  # cells are split at commas, never unquoted (a spreadsheet's "quote all text cells" export)
        cell = cells[quoted]
        bare = cell.strip(chr(34) + chr(39))  # a lone quote mark leaves nothing to name
        raise InputError("quoted cells are not read (cells are split at commas, unquoted): "
                         + (f"write {bare}, not {cell}" if bare else "write the cell without quotes"), file=file,
                         line=line, field=quoted)
    fields: dict = {name: _int(cells[name], name, file, line) for name in REQUIRED}
    fields["recompute"] = recompute_cell(cells.get("recompute", ""), file, line)
    switches = {}
    for switch in ("sequence_parallel", "distributed_optimizer", "fsdp", "fp8_param_gather",
                   "moe_pad_expert_input_to_capacity"):
        try:
            switches[switch] = parse_boolean(cells.get(switch, ""), empty=True)
        except ValueError as exc:
            raise InputError(str(exc), file=file, line=line, field=switch) from None
    pad = switches.pop("moe_pad_expert_input_to_capacity")
    asked = switches["sequence_parallel"]
    switches["sequence_parallel"], _ = sequence_parallel_run(fields["tp"], asked)  # TP 1: off, as train runs it
    fields.update(switches)
    factor = _capacity_factor(cells.get("moe_expert_capacity_factor", ""), file, line)
    imbalance = _imbalance(cells.get("moe_load_imbalance", ""), file, line)
    for column in ("interleave", "cp", "ep", "etp"):
        if cells.get(column):
            fields[column] = _int(cells[column], column, file, line)
    fields["cp_comm"] = choice_cell(cells.get("cp_comm", ""), CP_COMMS, file=file, line=line, field="cp_comm",
                                    default="p2p")  # any case, as recompute's cell
    sizes = cells.get("cp_hierarchy", "").split()  # "4 2", as the flag's two values
    if sizes and len(sizes) != 2:
        raise InputError(f"takes two sizes A P, got {cells['cp_hierarchy']!r}", file=file, line=line, field="cp_hierarchy")
    fields["cp_hierarchy"] = tuple(_int(n, "cp_hierarchy", file, line) for n in sizes) or None
    fp8 = choice_cell(cells.get("fp8", ""), (*FP8_RECIPES, "none"), file=file, line=line, field="fp8", default="none")
    fields["fp8"] = None if fp8 == "none" else fp8  # as --sweep's fp8=none: the flag not given
    fields["fsdp_reshard"] = choice_cell(cells.get("fsdp_reshard", ""), FSDP_RESHARDS, file=file, line=line,
                                         field="fsdp_reshard", default="after-forward")
    fields["fsdp_grad_sync"] = choice_cell(cells.get("fsdp_grad_sync", ""), FSDP_GRAD_SYNCS, file=file, line=line,
                                           field="fsdp_grad_sync", default="micro-batch")
    schedule = choice_cell(cells["schedule"], TRAINING_SCHEDULES, file=file, line=line, field="schedule") \
        if cells.get("schedule") else None  # a search row's order, as its command's --schedule; empty: the command's
    if schedule is not None:
        fields["schedule"] = schedule  # checked with the row's layout (zb-v's two chunks, interleaved's micro-batches)
    p2p = choice_cell(cells["p2p"], P2P_MODES, file=file, line=line, field="p2p") if cells.get("p2p") else None
    if p2p is not None:  # the row's sends; empty: the command's --p2p (runs_to_run)
        fields["p2p"] = p2p
    par = _parallelism(fields, file, line)
    if cells.get("gpus") and _int(cells["gpus"], "gpus", file, line) != par.gpus:
        product = "TP × CP × PP × DP" if par.cp > 1 else "TP × PP × DP"
        raise InputError(f"gpus {cells['gpus']} ≠ {product} = {par.gpus}", file=file, line=line, field="gpus")
    measured = cells.get("measured_seconds")
    return RunRow(line, par, _seconds(measured, "measured_seconds", file, line) if measured else None,
                  moe_expert_capacity_factor=factor, moe_pad_expert_input_to_capacity=pad, moe_load_imbalance=imbalance,
                  schedule=schedule, sequence_parallel_off=asked and not par.sequence_parallel, p2p=p2p)


def _capacity_factor(cell: str, file: str, line: int) -> float | None:
    """A ``moe_expert_capacity_factor`` cell: a number above 0, as ``--moe-expert-capacity-factor`` reads it; empty:
    None (dropless)."""
    try:
        return parse_float(cell, low=0.0, low_open=True, what="a positive number") if cell else None
    except ValueError as exc:
        raise InputError(str(exc), file=file, line=line, field="moe_expert_capacity_factor") from None


def _imbalance(cell: str, file: str, line: int) -> float | None:
    """A ``moe_load_imbalance`` cell: a ratio ≥ 1, as ``--moe-load-imbalance`` reads it; empty: None (uniform)."""
    try:
        return parse_ratio(cell) if cell else None
    except ValueError as exc:
        raise InputError(str(exc), file=file, line=line, field="moe_load_imbalance") from None


def _measured_rows(path: str | Path | CsvText, lines: list[int]) -> tuple[RunRow, ...]:
    """vTrain's layout, read by :func:`~archsim.training.measured.read_measured_table` (one reader of that
    format); ``lines``: the file's non-blank body lines, one per run in order."""
    from archsim.training.measured import read_measured_table

    runs = read_measured_table(path).runs
    return tuple(RunRow(line, run.parallelism(), run.milliseconds / 1e3, (run.hidden, run.heads, run.layers, run.seq))
                 for line, run in zip(lines, runs))


def runs_to_run(path: str | Path | CsvText, *, attention: str, dp_overlap: str, grad_accumulation: str | None, schedule: str,
                max_ops: int, seq_given: bool = False,
                check: Callable[[RunRow], None] | None = None, p2p: str = DEFAULT_P2P) -> tuple[RunRow, ...]:
    """The rows of a runs file as ``archsim train --runs`` runs them: each with the command's ``attention``,
    ``dp_overlap``, ``grad_accumulation``, ``schedule`` and ``p2p`` (its fp8 the row's own column, and its schedule
    and pipeline sends where its ``schedule`` and ``p2p`` columns name them; a row's :class:`Parallelism` has the
    library's defaults, not the command's), each row's schedule within ``max_ops`` actions. Refused
    (file, line, field) before any row runs, the first bad row in the file's order (``check``, with the command's
    settings: :func:`~archsim.training.runs_predict.row_check`); ``seq_given``: a sequence length was given, which
    vTrain's rows, each with its own, refuse."""
    from archsim.console import field_name
    from archsim.validate import check_job_size

    def with_flags(row: RunRow) -> RunRow:
        try:
            with as_keywords():  # the row's settings named as its columns (interleave 2, pp), not flags
                return replace(row, par=replace(row.par, attention=attention, dp_overlap=dp_overlap,
                                                grad_accumulation=grad_accumulation,
                                                schedule=row.schedule or schedule, p2p=row.p2p or p2p))
        except InputError as exc:
            raise InputError(exc.message, file=str(path), line=row.line, field=exc.where.field) from None

    rows = tuple(with_flags(row) for row in read_runs(path, None if check is None else
                                                       lambda row: check(with_flags(row))))
    if seq_given and rows[0].shape is not None:  # (read_runs: ≥ 1 row, all of one layout)
        raise InputError(f"each row of vTrain's runs file sets its own sequence length; drop {setting('seq')}",
                         field="seq")
    for row in rows:  # each row is one iteration: its line named, the flag that lets it run kept
        try:
            check_job_size(row.par.schedule_actions, max_ops)
        except InputError as exc:  # the setting as the caller spells it (max_ops from the library): no column's
            raise InputError(exc.message, file=str(path), line=row.line,
                             field=None if exc.where.field is None else field_name(exc.where.field)) from None
    return rows


__all__ = ["OPTIONAL", "REQUIRED", "RunRow", "column_for", "frame_text", "read_runs", "runs_to_run"]
