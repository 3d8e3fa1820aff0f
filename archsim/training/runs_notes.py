"""The notes ``archsim train --runs`` and ``archsim.train_runs`` say once of a runs file's rows
(:mod:`archsim.training.runs` reads them): a ``# model:`` line naming another model, rows of empty cells skipped,
rows of one chunk under an interleaved schedule, of fewer micro-batches than stages, of sequence parallelism at
TP 1 and of selective recompute beside FlashAttention; each '' when it does not hold (:func:`runs_file_notes`: all
that hold, in order)."""

from __future__ import annotations

from pathlib import Path

from archsim.console import as_keywords
from archsim.training.layout_notes import sequence_parallel_run
from archsim.training.measured import CsvText, read_header
from archsim.training.runs import RunRow
from archsim.validate import shown


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


def cleared_rows_note(path: str | Path | CsvText) -> str:
    """One line counting the runs file's rows of empty cells (``,,,,``: a spreadsheet's cleared row), which
    :func:`read_runs` skips as blank lines (:func:`~archsim.training.measured.blank_row`), with their lines (the
    first three): a run the user meant to keep is then missed aloud, not silently; '' when there are none. Blank and
    ``#`` comment lines are no rows and are not counted."""
    lines, _, first, _ = read_header(path, "runs file")
    cleared = [n for n, line in enumerate(lines[first + 1:], start=first + 2)
               if "," in line and not line.replace(",", "").strip()]
    if not cleared:
        return ""
    named = ", ".join(str(n) for n in cleared[:3]) + (f" and {len(cleared) - 3} more" if len(cleared) > 3 else "")
    many = len(cleared) > 1
    return (f"{len(cleared)} row{'s' * many} of empty cells (line{'s' * many} {named}: a spreadsheet's cleared "
            f"row{'s' * many}) {'were' if many else 'was'} skipped, as a blank line is: no run is read from "
            f"{'them' if many else 'it'}")


def one_chunk_rows_note(rows: tuple[RunRow, ...]) -> str:
    """:func:`~archsim.training.layout_notes.one_chunk_note` once for a runs file, with how many of its rows it
    applies to (those whose ``interleave`` is 1, as a row without the column has it); '' when none."""
    from archsim.training.layout_notes import one_chunk_note

    notes = [note for note in (one_chunk_note(row.par, "interleave") for row in rows) if note]
    return f"{len(notes)} of the {len(rows)} rows: {notes[0]}" if notes else ""


def few_microbatches_rows_note(rows: tuple[RunRow, ...]) -> str:
    """:func:`~archsim.training.layout_notes.few_microbatches_note` once for a runs file, naming its columns: how many
    of its rows run a pipeline of fewer micro-batches than stages, their lines (the first three) and the first's
    figures; '' when none. vTrain's released CSV (rows of a model shape) names its own columns."""
    from archsim.training.layout_notes import few_microbatches_note

    columns = ("pipeline parallelism", "global batch", "micro batch") if rows and rows[0].shape is not None else \
        ("pp", "global_batch", "micro_batch")
    short = [(row.line, note) for row in rows if (note := few_microbatches_note(row.par, columns))]
    if not short:
        return ""
    lines = ", ".join(str(line) for line, _ in short[:3]) + (f" and {len(short) - 3} more" if len(short) > 3 else "")
    return f"{len(short)} of the {len(rows)} rows (line{'s' * (len(short) > 1)} {lines}): {short[0][1]}"


def sequence_parallel_rows_note(rows: tuple[RunRow, ...]) -> str:
    """:func:`~archsim.training.layout_notes.sequence_parallel_run`'s note once for a runs file, its settings named
    as the file's columns: how many of its rows set ``sequence_parallel`` true at ``tp`` 1 (run without it) and
    their lines (the first three); '' when none."""
    off = [row.line for row in rows if row.sequence_parallel_off]
    if not off:
        return ""
    with as_keywords():  # the row's columns (sequence_parallel, tp), not train's flags
        text = sequence_parallel_run(1, True)[1]
    lines = ", ".join(str(line) for line in off[:3]) + (f" and {len(off) - 3} more" if len(off) > 3 else "")
    return f"{len(off)} of the {len(rows)} rows (line{'s' * (len(off) > 1)} {lines}): {text}"


def selective_flash_rows_note(rows: tuple[RunRow, ...]) -> str:
    """:func:`~archsim.training.layout_notes.selective_flash_note` once for a runs file, with how many of its rows it
    holds for (``recompute`` selective beside the command's FlashAttention); '' when none."""
    from archsim.training.layout_notes import selective_flash_count_note

    return selective_flash_count_note([(row.par.recompute, row.par.attention) for row in rows], "rows", "recompute")


def runs_file_notes(path: str | Path | CsvText, model: str, rows: tuple[RunRow, ...]) -> tuple[str, ...]:
    """Every note above that holds for the runs file at ``path`` of ``rows``, run for the model named ``model``, in
    the order the command says them (cleared rows, the ``# model:`` line, then the rows' layouts)."""
    notes = (cleared_rows_note(path), model_note(path, model), one_chunk_rows_note(rows),
             few_microbatches_rows_note(rows), sequence_parallel_rows_note(rows), selective_flash_rows_note(rows))
    return tuple(note for note in notes if note)


__all__ = ["cleared_rows_note", "few_microbatches_rows_note", "model_note", "one_chunk_rows_note", "runs_file_notes",
           "selective_flash_rows_note", "sequence_parallel_rows_note"]
