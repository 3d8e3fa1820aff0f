"""A runs file: many training configurations of one model, each predicted by ``archsim train`` in one
process (``archsim train MODEL --runs RUNS.csv``), so a user checks archsim against their own measured
runs in seconds.

Two layouts are read (docs/formats.md, "Runs files"):

* archsim's: a header naming the columns ``tp, pp, dp, micro_batch, global_batch`` (required) and any of
  ``recompute`` (none | selective | full, any case, default full), ``sequence_parallel`` (true/false, default
  false), ``interleave`` (default 1), ``distributed_optimizer`` (true/false, default false: Megatron-LM's
  ``--use-distributed-optimizer``), ``fsdp`` (true/false, default false: PyTorch FSDP's full sharding), ``fsdp_reshard`` (after-forward | none,
  default after-forward: when FSDP frees the gathered parameters), ``fsdp_grad_sync`` (micro-batch | step, default
  micro-batch: when FSDP reduce-scatters the gradients),
  ``cp`` (default 1: context parallelism), ``cp_comm`` (p2p | all_gather | a2a | a2a+p2p, default p2p: how CP
  exchanges K/V), ``cp_hierarchy`` (a2a+p2p's ``A P``, as ``--cp-hierarchy``), ``ep`` (default 1: expert parallelism), ``etp`` (default TP),
  ``gpus`` (checked against TP × CP × PP × DP) and ``measured_seconds``;
* vTrain's released CSV as it is (``# GPUs,global batch,…,iteration time (ms)``,
  :data:`archsim.training.measured.COLUMNS`): each row also names its GPT's hidden size, heads, layers
  and sequence length, which replace MODEL's (FFN kept at MODEL's multiple of hidden); recompute full
  (or its optional ``recompute`` column, as :mod:`archsim.training.measured` reads it), no sequence
  parallelism, no interleaving (how vTrain measured); the time in ms is the measured one.

Rows differ in a few fields, and most of an iteration's cost depends on fewer still: the per-piece
costs (one transformer layer, the embedding, the head on one GPU for one micro-batch) do not depend
on PP, DP or the global batch, and :func:`archsim.training.iteration.model_pieces` keeps them across
rows (vTrain's 1,008 rows need 127 distinct ones).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from archsim.choices.training import CP_COMMS, FSDP_GRAD_SYNCS, FSDP_RESHARDS
from archsim.console import as_keywords, setting
from archsim.csv_lines import check_row_length, choice_cell
from archsim.errors import InputError
from archsim.training.measured import COLUMNS as VTRAIN_COLUMNS
from archsim.training.measured import CsvText, blank_row, read_header, recompute_cell
from archsim.training.parallel import Parallelism
from archsim.validate import shown
from archsim.value_parsers import parse_boolean
from archsim.workload.transformer import TransformerConfig

if TYPE_CHECKING:
    from archsim.training.cluster import GpuCluster

REQUIRED = ("tp", "pp", "dp", "micro_batch", "global_batch")
OPTIONAL = ("recompute", "sequence_parallel", "interleave", "distributed_optimizer", "fsdp", "fsdp_reshard", "fsdp_grad_sync",
            "cp", "cp_comm", "cp_hierarchy", "ep", "etp", "gpus", "measured_seconds")


@dataclass(frozen=True)
class RunRow:
    """One row: its line in the file, its parallelism, and where given the measured iteration (seconds)
    and the model shape that replaces MODEL's (hidden, heads, layers, seq: vTrain's layout)."""

    line: int
    par: Parallelism
    measured_seconds: float | None = None
    shape: tuple[int, int, int, int] | None = None


def read_runs(path: str | Path | CsvText, check: Callable[[RunRow], None] | None = None) -> tuple[RunRow, ...]:
    """The rows of a runs file (either layout, module docstring). A bad row raises an
    :class:`InputError` naming the file, its line and the field; ``check`` (:func:`row_check`) is called on
    each row as it is read, so the first bad row in the file is the one named, whatever is wrong with it."""
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
    unknown = [c for c in names if c not in REQUIRED + OPTIONAL]
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
    """A positive integer cell; ``8.0`` (pandas' ``to_csv`` of a float column) read as 8, as the keyword path
    reads 8.0 (:func:`~archsim.value_parsers.whole_number`); ``8.5`` refused."""
    from archsim.value_parsers import whole_number

    try:
        value = int(cell)
    except ValueError:
        try:
            number = whole_number(float(cell))
        except ValueError:
            number = 0
        value = number if isinstance(number, int) else 0
    if value <= 0:
        raise InputError(f"expected a positive integer, got {cell!r}", file=file, line=line, field=field)
    return value


def _seconds(cell: str, field: str, file: str, line: int, scale: float = 1.0) -> float:
    try:
        value = float(cell) * scale
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise InputError(f"expected a positive time, got {cell!r}", file=file, line=line, field=field)
    return value


def _column(field: str | None) -> str | None:
    """The runs file's column for an error's field: the flag ``global-batch`` is the column ``global_batch``
    (a row's error names what its reader sees in the header); a field no column holds stays as it is."""
    column = None if field is None else field.replace("-", "_")
    return column if column in REQUIRED + OPTIONAL else field


def _parallelism(fields: dict, file: str, line: int) -> Parallelism:
    try:
        with as_keywords():  # a setting named as the file's column (tp, interleave), not a flag (--tp)
            return Parallelism(**fields)
    except InputError as exc:
        raise InputError(exc.message, file=file, line=line, field=_column(exc.where.field)) from None


def _archsim_row(raw: list[str], index: dict[str, int], line: int, file: str) -> RunRow:
    if any(cell.strip() for cell in raw[len(index):]):  # a cell past the header's columns has no name to be read by
        raise InputError(f"{len(raw)} cells, the header names {len(index)} columns", file=file, line=line)
    cells = {name: raw[i].strip() for name, i in index.items()}  # (read_runs: no row short of the header)
    fields: dict = {name: _int(cells[name], name, file, line) for name in REQUIRED}
    fields["recompute"] = recompute_cell(cells.get("recompute", ""), file, line)
    for switch in ("sequence_parallel", "distributed_optimizer", "fsdp"):
        try:
            fields[switch] = parse_boolean(cells.get(switch, ""), empty=True)
        except ValueError as exc:
            raise InputError(str(exc), file=file, line=line, field=switch) from None
    for column in ("interleave", "cp", "ep", "etp"):
        if cells.get(column):
            fields[column] = _int(cells[column], column, file, line)
    fields["cp_comm"] = choice_cell(cells.get("cp_comm", ""), CP_COMMS, file=file, line=line, field="cp_comm",
                                    default="p2p")  # any case, as recompute's cell
    sizes = cells.get("cp_hierarchy", "").split()  # "4 2", as the flag's two values
    if sizes and len(sizes) != 2:
        raise InputError(f"takes two sizes A P, got {cells['cp_hierarchy']!r}", file=file, line=line, field="cp_hierarchy")
    fields["cp_hierarchy"] = tuple(_int(n, "cp_hierarchy", file, line) for n in sizes) or None
    fields["fsdp_reshard"] = choice_cell(cells.get("fsdp_reshard", ""), FSDP_RESHARDS, file=file, line=line,
                                         field="fsdp_reshard", default="after-forward")
    fields["fsdp_grad_sync"] = choice_cell(cells.get("fsdp_grad_sync", ""), FSDP_GRAD_SYNCS, file=file, line=line,
                                           field="fsdp_grad_sync", default="micro-batch")
    par = _parallelism(fields, file, line)
    if cells.get("gpus") and _int(cells["gpus"], "gpus", file, line) != par.gpus:
        product = "TP × CP × PP × DP" if par.cp > 1 else "TP × PP × DP"
        raise InputError(f"gpus {cells['gpus']} ≠ {product} = {par.gpus}", file=file, line=line, field="gpus")
    measured = cells.get("measured_seconds")
    return RunRow(line, par, _seconds(measured, "measured_seconds", file, line) if measured else None)


def _measured_rows(path: str | Path | CsvText, lines: list[int]) -> tuple[RunRow, ...]:
    """vTrain's layout, read by :func:`~archsim.training.measured.read_measured_table` (one reader of that
    format); ``lines``: the file's non-blank body lines, one per run in order."""
    from archsim.training.measured import read_measured_table

    runs = read_measured_table(path).runs
    return tuple(RunRow(line, run.parallelism(), run.milliseconds / 1e3, (run.hidden, run.heads, run.layers, run.seq))
                 for line, run in zip(lines, runs))


def row_config(base: TransformerConfig, row: RunRow) -> TransformerConfig:
    """MODEL with the row's hidden, heads, layers and sequence length where the row names them (the FFN
    kept at MODEL's multiple of hidden, kv heads at its ratio, learned positions — and their limit — at the
    sequence); such a row (vTrain's) needs a GPT MODEL, the layer vTrain measured."""
    if row.shape is None:
        return base
    if base.family != "gpt":  # vTrain measured Megatron-LM's GPT: its shapes on another layer compare nothing
        raise InputError(f"vTrain's rows replace MODEL's hidden, heads, layers and sequence and were measured on "
                         f"Megatron-LM's GPT: give a GPT config with vTrain's vocabulary (gpt_1024h_24l), not a "
                         f"{base.family} one", field="model")
    hidden, heads, layers, seq = row.shape
    group = base.heads // base.kv_heads
    if heads % group:
        raise InputError(f"{heads} heads do not group into MODEL's {group} query heads per kv head", field="heads")
    try:
        return replace(base, name=f"{base.name}-h{hidden}-l{layers}", hidden=hidden, heads=heads, layers=layers,
                       seq=seq, ffn=base.ffn * hidden // base.hidden, kv_heads=heads // group,
                       positions=seq if base.positions else 0, position_limit=seq if base.position_limit else 0)
    except InputError as exc:
        raise InputError(exc.message, field=exc.where.field) from None


def runs_to_run(path: str | Path | CsvText, *, attention: str, dp_overlap: str, grad_accumulation: str | None, schedule: str,
                max_ops: int, seq_given: bool = False,
                check: Callable[[RunRow], None] | None = None) -> tuple[RunRow, ...]:
    """The rows of a runs file as ``archsim train --runs`` runs them: each with the command's ``attention``,
    ``dp_overlap``, ``grad_accumulation`` and ``schedule`` (a row's own :class:`Parallelism` has the
    library's defaults, not the command's), each row's schedule within ``max_ops`` actions. Refused
    (file, line, field) before any row runs, the first bad row in the file's order (``check``, with the
    command's settings: :func:`row_check`); ``seq_given``: a sequence length was given, which vTrain's
    rows, each with its own, refuse."""
    from archsim.validate import check_job_size

    def with_flags(row: RunRow) -> RunRow:
        try:
            with as_keywords():  # the row's settings named as its columns (interleave 2, pp), not flags
                return replace(row, par=replace(row.par, attention=attention, dp_overlap=dp_overlap,
                                                grad_accumulation=grad_accumulation, schedule=schedule))
        except InputError as exc:
            raise InputError(exc.message, file=str(path), line=row.line, field=exc.where.field) from None

    rows = tuple(with_flags(row) for row in read_runs(path, None if check is None else
                                                       lambda row: check(with_flags(row))))
    if seq_given and rows[0].shape is not None:  # (read_runs: ≥ 1 row, all of one layout)
        raise InputError(f"each row of vTrain's runs file sets its own sequence length; drop {setting('seq')}",
                         field="seq")
    for row in rows:  # each row is one iteration
        check_job_size(row.par.schedule_actions, max_ops)
    return rows


def row_check(base: TransformerConfig, cluster: GpuCluster,
              file: str | Path | CsvText | None = None) -> Callable[[RunRow], None]:
    """What a row must pass to run on MODEL ``base`` and ``cluster`` — its shape, TP over the heads, the layer
    split, its TP groups over the servers — as a check raising :class:`InputError` naming its line (and
    ``file``): run on every row before any runs, so a bad row is named at once, not after the rows above it."""
    from archsim.training.parallel import check_fits

    def check(row: RunRow) -> None:
        try:
            with as_keywords():  # the row's settings named as its columns (tp), not flags (--tp)
                check_fits(row_config(base, row), row.par)
                cluster.laid_out(row.par)
        except InputError as exc:
            raise InputError(exc.message, file=None if file is None else str(file), line=row.line,
                             field=_column(exc.where.field)) from None

    return check


def predict_runs(base: TransformerConfig, cluster: GpuCluster, rows: tuple[RunRow, ...],
                 tick: Callable[[], None] = lambda: None, file: str | Path | CsvText | None = None,
                 warn: Callable[[int, str], None] = lambda line, text: None) -> list[dict]:
    """Each row's predicted iteration (seconds), peak memory per GPU and its fullest rank's GPU's memory (GiB,
    ``memory_capacity_gib`` as ``archsim train``'s meta), energy (J, and how it was found:
    :func:`~archsim.training.energy.iteration_energy`, as ``archsim train`` prices it) and, where
    measured, its error (predicted / measured − 1), in the rows' order; ``tick`` is called after each row (a progress bar).
    A row that cannot run on ``cluster`` raises an :class:`InputError` naming its line (and ``file``, the runs file)
    before any row runs (:func:`row_check`).
    ``warn(line, text)`` gets each line ``archsim train`` would warn with for a row alone (a TP group across
    servers, a rank over its GPU's memory): such a row still runs, as a what-if."""
    from archsim.fits import cp_span_warning, rank_memory_warning, tp_span_warning
    from archsim.training.energy import iteration_energy
    from archsim.training.run import train

    sharded = any(row.par.distributed_optimizer for row in rows)  # the column only where a row sets it: as before
    full = any(row.par.fsdp for row in rows)
    split = any(row.par.cp > 1 for row in rows)  # the cp and cp_comm columns only where a row sets CP above 1
    # the order a row ran, where one differs from the command's --schedule (1f1b with interleave > 1 runs
    # Megatron's interleaved 1F1B, as train's meta names it): the column only then, as the meta's alone misleads
    renamed = any(row.par.schedule_name != row.par.schedule for row in rows)
    check = row_check(base, cluster, file)
    for row in rows:  # every row checked before any runs (a bad last row is named at once)
        check(row)
    out = []
    for row in rows:
        try:
            config = row_config(base, row)
            machines = cluster.laid_out(row.par)  # refused as train refuses it (a TP group across part-servers)
            result = train(config, row.par, machines[0], machines)
        except InputError as exc:
            raise InputError(exc.message, file=None if file is None else str(file), line=row.line,
                             field=_column(exc.where.field)) from None
        for text in (tp_span_warning(cluster, row.par), cp_span_warning(cluster, row.par),
                     rank_memory_warning(result, machines)):
            if text:
                warn(row.line, text)
        p = row.par
        record = {"line": row.line, "model": config.name, "gpus": p.gpus, "tp": p.tp,
                  **({"cp": p.cp, "cp_comm": p.cp_comm} if split else {}),
                  **({"cp_hierarchy": " ".join(map(str, p.cp_hierarchy or ()))} if any(r.par.cp_hierarchy for r in rows) else {}), **({"ep": p.ep} if any(r.par.ep > 1 for r in rows) else {}), **({"etp": p.expert_tp} if any(r.par.etp is not None for r in rows) else {}), "pp": p.pp, "dp": p.dp, "micro_batch": p.micro_batch, "global_batch": p.global_batch, "recompute": p.recompute,
                  "sequence_parallel": p.sequence_parallel, "interleave": p.chunks,
                  **({"schedule": p.schedule_name} if renamed else {}),
                  **({"distributed_optimizer": p.distributed_optimizer} if sharded else {}),
                  **({"fsdp": p.fsdp} if full else {}),
                  **({"fsdp_reshard": p.fsdp_reshard} if any(r.par.fsdp_reshard != "after-forward" for r in rows) else {}),
                  **({"fsdp_grad_sync": p.fsdp_grad_sync} if any(r.par.fsdp_grad_sync != "micro-batch" for r in rows)
                     else {}),
                  "predicted_seconds": result.iteration_seconds, "peak_memory_gib": result.peak_memory_gib,
                  "memory_capacity_gib": result.memory_capacity_gib,
                  **iteration_energy(config, p, cluster, result.iteration_seconds, memory=result.memory),
                  "measured_seconds": row.measured_seconds,
                  "error": None if row.measured_seconds is None else result.iteration_seconds / row.measured_seconds - 1}
        out.append(record)
        tick()
    return out


def model_note(path: str | Path | CsvText, model: str) -> str:
    """One line when the runs file's optional ``# model: NAME`` line names another model than MODEL's name
    ``model`` ('' when it names the same or is absent). NAME is the model's name as archsim gives it (the
    ``model`` of ``train``'s meta); a config's path there stands for its name
    (:func:`~archsim.workload.config_fields.file_model_name`). A note, not a refusal: the user may mean to
    predict one model's layouts on another."""
    from archsim.workload.config_fields import file_model_name
    from archsim.workload.model_files import MODEL_SUFFIXES

    named = read_header(path, "runs file")[1].get("model", "")
    if "/" in named or "\\" in named or named.lower().endswith(MODEL_SUFFIXES):
        named = file_model_name(named.replace("\\", "/"))
    if not named or named == model:
        return ""
    if not named.isprintable():  # a file's text on a terminal: escaped, as an error line shows it
        named = shown(named)
    return (f"the runs file was made for model {named} (its '# model:' line), MODEL is {model}: "
            f"every row was predicted for {model}")


def one_chunk_rows_note(rows: tuple[RunRow, ...]) -> str:
    """:func:`~archsim.training.parallel.one_chunk_note` once for a runs file, with how many of its rows it
    applies to (those whose ``interleave`` is 1, as a row without the column has it); '' when none."""
    from archsim.training.parallel import one_chunk_note

    notes = [note for note in (one_chunk_note(row.par, "interleave") for row in rows) if note]
    return f"{len(notes)} of the {len(rows)} rows: {notes[0]}" if notes else ""


# a measured run over this many times its prediction, in every measured row: the column is in ms, not seconds
MILLISECONDS_RATIO = 100


def milliseconds_note(out: list[dict]) -> str | None:
    """One line when ``out``'s (:func:`predict_runs`) measured times look like milliseconds: every measured
    row over :data:`MILLISECONDS_RATIO` times its prediction. archsim's predictions are within tens of
    percent of measured runs (docs/training.md), ms read as seconds are 1000× too long; a factor of 100
    in every row is neither, and one row in seconds (or none measured) says nothing. None otherwise."""
    ratios = [r["measured_seconds"] / r["predicted_seconds"] for r in out if r["measured_seconds"] is not None]
    if not ratios or min(ratios) <= MILLISECONDS_RATIO:
        return None
    return (f"measured_seconds look like milliseconds: every measured run is over {MILLISECONDS_RATIO}× its "
            f"prediction (the least {min(ratios):.0f}×); the column is in seconds, the numbers are as given")


__all__ = ["MILLISECONDS_RATIO", "OPTIONAL", "REQUIRED", "RunRow", "frame_text", "milliseconds_note", "model_note",
           "one_chunk_rows_note", "predict_runs", "read_runs", "row_check", "row_config", "runs_to_run"]
