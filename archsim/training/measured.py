"""Measured training iterations and the model archsim predicts each with — shared by the benchmark,
its fit and the tests. Two sources, one format: vTrain's released single-node A100 runs
(``vtrain_single_node_shown.csv``) and one-GPU runs timed by ``benchmarks/gpu_train_measure.py``,
whose CSV adds ``recompute``, ``peak_memory_gib`` and ``gpu_name`` columns after ``# key: value``
metadata lines (docs/formats.md, "Measured training runs")."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from archsim.choices.training import DEFAULT_P2P, RECOMPUTE
from archsim.csv_lines import check_row_length, choice_cell, comment_line
from archsim.errors import InputError
from archsim.training.parallel import Parallelism
from archsim.validate import MAX_FIGURE, check_name, check_unique_columns, read_text
from archsim.value_parsers import parse_float, parse_integer_cell
from archsim.workload.transformer import TransformerConfig

if TYPE_CHECKING:
    from archsim.devices.kernel_constants import KernelConstants
    from archsim.training.cluster import GpuCluster

VOCAB = 50257  # GPT-2's vocabulary, as the measured runs used
COLUMNS = ("# gpus", "global batch", "micro batch", "hidden size", "attention heads", "# layers", "sequence length",
           "tensor parallelism", "data parallelism", "pipeline parallelism", "iteration time (ms)")
OPTIONAL = ("recompute", "peak_memory_gib", "gpu_name")
_META = re.compile(r"^#\s*([^,:]+?)\s*:\s?(.*)$")  # "# key: value" (the header "# GPUs,…" has commas, no colon)


@dataclass(frozen=True)
class MeasuredRun:
    """One measured iteration; ``recompute`` as :class:`Parallelism`'s (the A100 runs: full);
    ``peak_memory_gib``: the GPU's measured peak allocation (None: not measured); ``grad_accumulation``
    as :class:`Parallelism`'s (None: the implementation's own) — what a check predicts the run with."""

    gpus: int
    global_batch: int
    micro_batch: int
    hidden: int
    heads: int
    layers: int
    seq: int
    tp: int
    dp: int
    pp: int
    milliseconds: float
    recompute: str = "full"
    peak_memory_gib: float | None = None
    gpu_name: str = ""
    grad_accumulation: str | None = None

    def config(self) -> TransformerConfig:
        """The GPT the run trained: learned positions, FFN 4h, tied embeddings."""
        return TransformerConfig(f"gpt-h{self.hidden}-l{self.layers}", "gpt", self.layers, self.hidden, self.heads,
                                 VOCAB, self.seq, 4 * self.hidden, self.heads, True, self.seq)

    def parallelism(self, attention: str = "standard") -> Parallelism:
        """Megatron-DeepSpeed as measured: 1F1B, the run's recomputation, no sequence parallelism, the
        standard attention core unless the file says otherwise (``# attention: flash``)."""
        return Parallelism(self.tp, self.pp, self.dp, self.global_batch, self.micro_batch, self.recompute,
                           grad_accumulation=self.grad_accumulation, attention=attention)

    @property
    def shape(self) -> tuple[int, int]:
        return self.hidden, self.layers


@dataclass(frozen=True)
class MeasuredTable:
    """A measured CSV's runs and its ``# key: value`` metadata."""

    runs: tuple[MeasuredRun, ...]
    meta: dict[str, str] = field(default_factory=dict)


def blank_row(line: str) -> bool:
    """Whether a body line holds no run: blank, cells all empty (``,,,,``: the row a spreadsheet saves
    after its cells were cleared) or a ``#`` comment (:func:`archsim.csv_lines.comment_line`), as the topology
    CSV reader skips them."""
    return not line.replace(",", "").strip() or comment_line(line)


def recompute_cell(cell: str, file: str, line: int) -> str:
    """A ``recompute`` cell of a runs or measured-runs file: a choice in any case, as every CSV's choice cells
    (:func:`archsim.csv_lines.choice_cell`; ``Full`` is ``full``); empty is ``full``, as vTrain measured."""
    return choice_cell(cell, RECOMPUTE, file=file, line=line, field="recompute", default="full")


def split_meta(lines: list[str]) -> tuple[dict[str, str], int]:
    """The leading ``# key: value`` lines of a CSV (blank and other ``#`` comment lines skipped) and the index
    of its header."""
    meta: dict[str, str] = {}
    first = 0
    while first < len(lines) and (not lines[first].strip() or comment_line(lines[first])):
        match = _META.match(lines[first])
        if match:
            meta[match.group(1)] = match.group(2).strip()
        first += 1
    return meta, first


@dataclass(frozen=True)
class CsvText:
    """A CSV's text in memory (a pandas DataFrame written out: :func:`archsim.training.runs.frame_text`), read
    where a path is, its errors naming ``name`` as a file's name."""

    name: str
    text: str

    def __str__(self) -> str:
        return self.name


def read_header(path: str | Path | CsvText, what: str) -> tuple[list[str], dict, int, list[str]]:
    """A measured-runs CSV's lines, its ``# key: value`` metadata, the header's line index and its
    column names (lower case): what every reader of such a file starts from."""
    text = path.text if isinstance(path, CsvText) else read_text(path, what, encoding="utf-8-sig")
    lines = text.splitlines()
    meta, first = split_meta(lines)
    if first == len(lines):
        raise InputError("no header row", file=str(path))
    names = [c.strip().lower() for c in lines[first].split(",")]
    if any(name.startswith(('"', "'")) for name in names):  # cells are split at commas, never unquoted
        raise InputError("quoted cells are not read: write the header and cells without quotes",
                         file=str(path), line=first + 1)
    for mark, said in ((";", "';'"), ("\t", "a tab")):  # a spreadsheet's export: a comma decimal mark, or "Text"
        if len(names) == 1 and mark in names[0]:
            raise InputError(f"one column: cells are separated by a comma, not {said}", file=str(path), line=first + 1)
    check_unique_columns(names, str(path), first + 1)
    return lines, meta, first, names


def read_measured_table(path: str | Path | CsvText) -> MeasuredTable:
    """Read a measured CSV: metadata lines, the header (the 11 columns of :data:`COLUMNS`, then any of
    :data:`OPTIONAL` by name), one run per line. Errors name the file, line and field."""
    file = str(path)
    lines, meta, first, names = read_header(path, "measured runs")
    if tuple(names[:len(COLUMNS)]) != COLUMNS:
        raise InputError(f"expected the columns {', '.join(COLUMNS)} first", file=file, line=first + 1)
    extra = {name: names.index(name) for name in OPTIONAL if name in names}
    runs = []
    for number, line in enumerate(lines[first + 1:], start=first + 2):
        if blank_row(line):
            continue
        cells = [c.strip() for c in line.split(",")]
        check_row_length(cells, names, file=file, line=number)  # a short row's last cells would read as empty
        counts = []  # the counts positive integers of at most 31 bits, the time a finite positive number (no subnormal)
        for k, cell in enumerate(cells[:11]):  # each bad cell named by its column (until 2026-12-05: the line alone)
            try:
                counts.append(parse_integer_cell(cell, what="a positive integer") if k < 10 else
                              parse_float(cell, low=0.0, low_open=True, high=MAX_FIGURE,  # its ratios finite
                                          what="a positive iteration time (ms)"))
            except ValueError as exc:
                raise InputError(str(exc), file=file, line=number, field=COLUMNS[k]) from None
        gpus, batch, micro, hidden, heads, layers, seq, tp, dp, pp = (int(n) for n in counts[:10])
        ms = float(counts[10])
        recompute = recompute_cell(cells[extra["recompute"]] if "recompute" in extra and len(cells) > extra["recompute"]
                                   else "", file, number)
        peak = _optional_float(cells, extra.get("peak_memory_gib"), file, number)
        name = cells[extra["gpu_name"]] if "gpu_name" in extra and len(cells) > extra["gpu_name"] else ""
        if name:
            check_name(name, "gpu_name", file=file, line=number)
        runs.append(MeasuredRun(gpus, batch, micro, hidden, heads, layers, seq, tp, dp, pp, ms, recompute, peak,
                                name))
        if gpus != tp * dp * pp:
            raise InputError(f"{gpus} GPUs ≠ TP × DP × PP = {tp} × {dp} × {pp} = {tp * dp * pp}", file=file, line=number,
                             field=COLUMNS[0])
    return MeasuredTable(tuple(runs), meta)


def _optional_float(cells: list[str], index: int | None, file: str, line: int) -> float | None:
    if index is None or index >= len(cells) or not cells[index]:
        return None
    try:
        value = parse_float(cells[index], what="a number of GiB ≥ 0")
    except ValueError as exc:
        raise InputError(str(exc), file=file, line=line, field="peak_memory_gib") from None
    return value


def read_measured(path: str | Path) -> list[MeasuredRun]:
    """The runs of a measured CSV (:func:`read_measured_table`), e.g. ``vtrain_single_node_shown.csv``."""
    return list(read_measured_table(path).runs)


@dataclass(frozen=True)
class Prediction:
    """archsim train's iteration time (ms), peak memory per GPU (GiB), breakdown (s) and the seconds of its compute
    that are the host issuing ops (``host_bound_seconds``, :class:`~archsim.training.run.TrainResult`'s) for one run."""

    run: MeasuredRun
    milliseconds: float
    peak_memory_gib: float
    breakdown: dict[str, float]
    host_bound_seconds: float = 0.0

    @property
    def error(self) -> float:
        """predicted / measured − 1 (signed)."""
        return self.milliseconds / self.run.milliseconds - 1

    @property
    def memory_error(self) -> float | None:
        """predicted / measured peak memory − 1 (None where the run's memory was not measured)."""
        measured = self.run.peak_memory_gib
        return None if not measured else self.peak_memory_gib / measured - 1


def predict(runs: list[MeasuredRun] | tuple[MeasuredRun, ...], cluster: GpuCluster,
            efficiency: KernelConstants | None = None, implementation: str = "megatron", dtype: str = "fp16",
            attention: str = "standard", p2p: str = DEFAULT_P2P) -> list[Prediction]:
    """``archsim train`` on ``cluster`` (its first GPU type) for every run — nothing fitted here;
    ``efficiency``: kernel constants instead of the catalog's (e.g. a probe's fit); ``implementation``:
    whose op list (:class:`~archsim.training.machine.Machine`); ``dtype`` and ``attention``: how the runs
    trained (a measured file's ``# dtype:`` and ``# attention:`` lines; the A100 runs: fp16, standard); ``p2p``: the
    pipeline sends, as ``archsim train --p2p`` (:attr:`~archsim.training.parallel.Parallelism.p2p_blocking`)."""
    from archsim.training.run import train

    out = []
    for run in runs:
        par = replace(run.parallelism(attention), p2p=p2p)
        machine = replace(cluster.machine(par), implementation=implementation, dtype=dtype)
        if efficiency is not None:
            machine = replace(machine, efficiency=efficiency)
        result = train(run.config(), par, machine)
        out.append(Prediction(run, result.iteration_seconds * 1e3, result.peak_memory_gib, result.breakdown,
                              result.host_bound_seconds))
    return out


__all__ = [
    "COLUMNS",
    "OPTIONAL",
    "VOCAB",
    "CsvText",
    "MeasuredRun",
    "MeasuredTable",
    "Prediction",
    "predict",
    "read_header",
    "read_measured",
    "read_measured_table",
    "recompute_cell",
    "split_meta",
]
