"""Job traces: Tiresias's CSV format, and a seeded generator of the SPB paper's workload (§4.2).

Tiresias format (one header row, columns in any order, no others)::

    job_id,num_gpu,submit_time,iterations,model_name,duration,interval

``num_gpu``: workers (one device each); ``submit_time``: seconds from the trace start;
``iterations``: iteration count, 0 = derive it from ``duration``; ``model_name``: a catalog model
(:mod:`archsim.cluster.catalog`); ``duration``: seconds the job runs alone on ``num_gpu`` devices
without SPB, 0 = derive it from ``iterations`` and the model profile; ``interval``: read and checked,
unused (Tiresias's own simulators leave it 0). Mistakes raise :class:`InputError` with file, line and field; a row
the run reads otherwise than written (a duration under half an iteration) is a :class:`UserWarning`, which
``archsim cluster`` prints as its note on stderr (:mod:`archsim.console`).

Synthetic workload (§4.2): ``jobs`` jobs (≈500), exponential inter-arrival times of mean 30 s,
workers 1/2/4/8/16 with probability 50/10/20/15/5 %, the model uniform over the catalog. The paper
gives no run-time distribution for its scaled-down Microsoft trace; we assume a dedicated run time
log-uniform between 1 minute and 1 hour (documented in ``configs/traces/README.md``), turned into an
iteration count with the model's per-iteration time.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from archsim.cluster.catalog import ModelProfile, lookup, paper_catalog
from archsim.cluster.csv_table import non_negative, read_rows
from archsim.console import library_note
from archsim.errors import InputError, Where
from archsim.validate import check_name, read_text, shown

COLUMNS = ("job_id", "num_gpu", "submit_time", "iterations", "model_name", "duration", "interval")
WORKER_MIX = ((1, 0.50), (2, 0.10), (4, 0.20), (8, 0.15), (16, 0.05))


@dataclass(frozen=True)
class TraceJob:
    """One trace row. duration_s / iterations may be 0 (derived later from the model profile). ``line``: the row's
    line in its trace file (None for a drawn or hand-built row), so that a check made later, against the cluster
    (a job wider than it, a model larger than a device), can name it; not part of the row's value."""

    job_id: str
    workers: int
    submit_s: float
    iterations: int
    model: str
    duration_s: float
    line: int | None = field(default=None, compare=False)


def parse_tiresias_csv(text: str, *, source: str = "<string>", catalog: dict[str, ModelProfile] | None = None
                       ) -> tuple[TraceJob, ...]:
    """Parse a Tiresias-format trace; model names are checked against ``catalog`` (default: the paper's)."""
    catalog = paper_catalog() if catalog is None else catalog
    jobs: list[TraceJob] = []
    seen: set[str] = set()
    for line, cell in read_rows(text, COLUMNS, source=source, what="job"):
        job_id = cell["job_id"]
        if not job_id.isprintable():  # it reaches tables and pages: a newline, NUL or escape is refused
            raise InputError(f"job_id contains control characters: {shown(job_id)}", file=source, line=line,
                             field="job_id")
        if not job_id or job_id in seen:
            raise InputError(f"job_id must be unique and non-empty, got {job_id!r}", file=source, line=line,
                             field="job_id")
        seen.add(job_id)
        num = {c: non_negative(cell[c], integer=c in ("num_gpu", "iterations"), file=source, line=line, field=c)
               for c in ("num_gpu", "submit_time", "iterations", "duration", "interval")}
        if num["num_gpu"] < 1:
            raise InputError("a job needs at least one GPU", file=source, line=line, field="num_gpu")
        if num["iterations"] == 0 and num["duration"] == 0:
            raise InputError("iterations and duration cannot both be 0", file=source, line=line, field="duration")
        check_name(cell["model_name"], "model_name", file=source, line=line)  # "vgg\n16" is not vgg16
        profile = lookup(catalog, cell["model_name"], file=source, line=line)
        if num["iterations"] == 0 and round(num["duration"] / profile.full_s) == 0:
            _note_one_iteration(Where(source, line, "duration"), job_id, num["duration"], cell["model_name"],
                                profile.full_s)
        jobs.append(TraceJob(job_id, int(num["num_gpu"]), num["submit_time"], int(num["iterations"]),
                             cell["model_name"], num["duration"], line))
    return tuple(sorted(jobs, key=lambda j: j.submit_s))


def _note_one_iteration(where: Where, job_id: str, duration_s: float, model: str, iteration_s: float) -> None:
    """Warn (a :class:`UserWarning`, the library's way, or kept: :func:`archsim.console.library_note`; the CLI
    prints it as a note) that a row whose ``duration``
    (seconds) is under half of one iteration and whose ``iterations`` is 0 runs one whole iteration (iterations
    derive from duration by rounding, at least one): its time grows."""
    library_note(f"{where}: job {job_id}: duration {duration_s:g} s is under half of one {model} iteration "
                 f"({iteration_s:.3g} s) and iterations is 0: the job runs one whole iteration", stacklevel=3)


def load_tiresias_csv(path: str | Path, catalog: dict[str, ModelProfile] | None = None) -> tuple[TraceJob, ...]:
    text = read_text(path, "trace file", encoding="utf-8-sig")  # as written: Path drops a trailing "/"
    path = Path(path)  # a spreadsheet's byte-order mark is skipped
    return parse_tiresias_csv(text, source=str(path), catalog=catalog)


def trace_to_csv(jobs: tuple[TraceJob, ...]) -> str:
    """Tiresias-format text of a trace (interval written as 0)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for j in jobs:
        writer.writerow([j.job_id, j.workers, f"{j.submit_s:.3f}", j.iterations, j.model, f"{j.duration_s:.3f}", 0])
    return out.getvalue()


def synthetic_trace(jobs: int = 500, seed: int = 0, *, mean_interarrival_s: float = 30.0,
                    worker_mix: tuple[tuple[int, float], ...] = WORKER_MIX,
                    duration_range_s: tuple[float, float] = (60.0, 3600.0),
                    catalog: dict[str, ModelProfile] | None = None) -> tuple[TraceJob, ...]:
    """The §4.2 workload, reproducible from ``seed`` (module docstring gives the assumptions)."""
    if jobs <= 0:
        raise InputError(f"jobs must be positive, got {jobs}", field="jobs")
    low, high = duration_range_s
    if not 0 < low <= high:
        raise InputError(f"need 0 < min ≤ max duration, got {duration_range_s}", field="duration_range_s")
    catalog = paper_catalog() if catalog is None else catalog
    names = sorted(catalog)
    sizes = np.array([w for w, _ in worker_mix])
    weights = np.array([p for _, p in worker_mix], dtype=float)
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(mean_interarrival_s, size=jobs)
    submit = np.concatenate(([0.0], np.cumsum(gaps[1:])))
    workers = rng.choice(sizes, size=jobs, p=weights / weights.sum())
    models = rng.choice(len(names), size=jobs)
    duration = np.exp(rng.uniform(math.log(low), math.log(high), size=jobs))
    out = []
    for i in range(jobs):
        profile = catalog[names[models[i]]]
        iterations = max(1, round(duration[i] / profile.full_s))
        out.append(TraceJob(f"j{i:04d}", int(workers[i]), round(float(submit[i]), 3), iterations, names[models[i]],
                            round(iterations * profile.full_s, 3)))
    return tuple(out)
