"""The one rule for ``#`` lines in every CSV archsim reads (runs files, measured runs, topologies): a line
whose first non-blank character is ``#`` is a comment wherever it stands — above the header or between
rows — and is skipped, each other line keeping its own number. The one line read despite its ``#`` is
vTrain's released header (``# GPUs,global batch,…``), a header by its first cell; ``# key: value`` lines
above a header are comments that a reader may also read as metadata."""

from __future__ import annotations

# the first cell of vTrain's released header (archsim.training.measured.COLUMNS), lower case
VTRAIN_FIRST_CELL = "# gpus"


def comment_line(line: str) -> bool:
    """Whether ``line`` (one physical line of a CSV) is a comment: its first non-blank character is ``#``
    and it is not vTrain's header (module docstring)."""
    text = line.lstrip()
    return text.startswith("#") and text.split(",")[0].strip().lower() != VTRAIN_FIRST_CELL
