"""NeuSight's kernel measurements read as they are, predicted by :mod:`archsim.devices.kernels`, and the fit.

A NeuSight CSV (``../shared/gpu_kernels/*.csv``) has one measured kernel per row: ``OPName``,
``Latency`` (milliseconds), ``Device`` (the GPU as CUDA names it) and the shape columns B, M, N, K
(linear, bmm) or B, H (elementwise, softmax, layer norm). The other columns (kernel name, grid,
warps, blocks) were observed when the kernel ran; nothing here reads them.

NeuSight's GEMM columns name A[B×M×N]·B[B×N×K]: the output is M×K and N is the reduction (the
observed cuBLAS grids cover M×K in the named kernel's tiles on every bmm row and every linear row of
the A100, P100, T4 and V100). archsim's GEMM is out[M×N] = A[M×K]·B[K×N], so the reader renames
them (:data:`GEMM_COLUMNS`): a frame's M, N, K are archsim's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np
import pandas as pd

from archsim.csv_lines import check_row_length, choice_cell, csv_rows
from archsim.devices.catalog import KNOWN_GPUS, GpuSpec
from archsim.devices.gpu_lookup import GPU_NAMES, find_whole_gpu, gpu_name
from archsim.devices.kernel_constants import KernelConstants
from archsim.devices.kernels import GEMM_OPS, OP_CLASSES, kernel_seconds, linear_rows
from archsim.errors import InputError
from archsim.validate import INT32_MAX, check_unique_columns, read_text
from archsim.validation.gpu_csv import measured_ms
from archsim.validation.gpu_seconds import TensorConstants, kernel_timer, ops_seconds
from archsim.value_parsers import stated_integer

REQUIRED = ("OPName", "Latency")
SHAPES = ("B", "M", "N", "K", "H")
GEMM_COLUMNS = {"B": "B", "M": "M", "N": "K", "K": "N"}
"""archsim's GEMM dimension → the NeuSight column that holds it (output rows M, output columns N,
reduction K; NeuSight's N is the reduction, its K the output columns)."""
CLASS_ORDER = ("linear", "bmm", "elementwise", "softmax", "layernorm")
ENERGY_START_PJ = 40.0
"""Where every fit's energy per FLOP starts: high enough that every fitted GPU is power-capped, so
the fit descends to the largest energy the fitted GPUs' GEMMs allow. Below that the error does not
change (no GPU is capped), so starting from a value fitted with the held-out GPU would carry its
figure into a leave-one-GPU-out fit."""
FIT_START = KernelConstants(gemm=0.837, feed=30.2, memory=0.761, softmax=0.630, layernorm=0.528, launch_s=13.6e-6,
                            energy_pj=ENERGY_START_PJ, gemm_memory=0.761)
"""Where the benchmark's fits start (the first model's constants): a fixed start, so that a refit from
it reproduces :data:`archsim.devices.kernel_constants.FITTED` (the simplex finds different local optima from
different starts)."""
FIT_ROUNDS = 3  # Nelder–Mead restarts from its own result, splitting the iterations between them
ENERGY_GRID_PJ = (1.0, 100.0, 201)  # geometric grid (first, last, points) the energy per FLOP is chosen on
ENERGY_TOLERANCE = 1e-3  # loss (sum of the classes' MAPE as fractions) within which energies tie
FIT_FIELDS = tuple(f.name for f in fields(KernelConstants) if f.name not in ("host_s", "tensor_energy_pj"))
"""The constants NeuSight's kernel timings can tell (host time per op is not in them: each kernel is
timed alone; nor the tensor cores' energy per FLOP: its kernels are fp32), in the order the simplex sees them."""


def _logs(constants: KernelConstants) -> np.ndarray:
    return np.log([getattr(constants, name) for name in FIT_FIELDS])


def _constants(logs: np.ndarray, base: KernelConstants) -> KernelConstants:
    return replace(base, **{name: float(v) for name, v in zip(FIT_FIELDS, np.exp(logs), strict=True)})


def is_neusight_header(header: Sequence[str]) -> bool:
    """Whether a CSV header is NeuSight's (it names ``OPName`` or ``Latency``, which archsim's own never
    does) rather than archsim's: so a NeuSight file lacking one of them is told which, not archsim's columns."""
    names = {cell.strip() for cell in header}
    return any(name in names for name in REQUIRED)


@dataclass(frozen=True)
class KernelRows:
    """Measured kernels: ``frame`` has op, op_class, measured_seconds, device and the shape columns;
    ``stated_dtypes`` the (line, cell) of each row whose ``dtype`` column (a column of the user's, not NeuSight's,
    named so in any case) is not empty, which :func:`check_stated_dtypes` holds against the dtype priced."""

    frame: pd.DataFrame
    source: str = "<memory>"
    stated_dtypes: tuple[tuple[int, str], ...] = ()
    dtype_column: str = ""


DTYPE_COLUMN = "dtype"  # a column of this name (any case) states each row's element type
DTYPE_ALIASES = {"fp32": "fp32", "float32": "fp32", "float": "fp32", "torch.float32": "fp32", "f32": "fp32",
                 "fp16": "fp16", "float16": "fp16", "half": "fp16", "torch.float16": "fp16", "f16": "fp16",
                 "bf16": "bf16", "bfloat16": "bf16", "torch.bfloat16": "bf16"}
"""A dtype cell's spellings (PyTorch's and train's names, any case) → the ``--dtype`` name that prices it."""


def check_stated_dtypes(kernels: KernelRows, dtype: str) -> None:
    """Refuse a file whose ``dtype`` column names another element type than ``dtype``, the one every row is priced
    in (``--dtype``; the format has no dtype of its own): read as given, an fp16 file's rows were priced as fp32
    kernels without a word. The error names the file, the row's line and the column, and the flag to pass."""
    for line, cell in kernels.stated_dtypes:
        stated = DTYPE_ALIASES.get(cell.strip().lower())
        if stated == dtype:
            continue
        if stated is None:
            raise InputError(f"{cell!r} is not a dtype validate-gpu prices (fp32, fp16, bf16; PyTorch's names "
                             f"too); every row is priced in --dtype, {dtype}", file=kernels.source, line=line,
                             field=kernels.dtype_column)
        raise InputError(f"{cell!r}, but every row is priced in --dtype {dtype}: give --dtype {stated} (one dtype a "
                         "run; split a file of several)", file=kernels.source, line=line, field=kernels.dtype_column)


def parse_neusight_csv(text: str, source: str = "<memory>") -> KernelRows:
    """The rows of a NeuSight CSV; every error names the file, line and column."""
    rows = [(line, row) for line, row in csv_rows(text, source) if any(c.strip() for c in row)]
    if not rows or not is_neusight_header(rows[0][1]):
        raise InputError(f"not a NeuSight kernel CSV (needs columns {', '.join(REQUIRED)})", file=source)
    header = [cell.strip() for cell in rows[0][1]]
    check_unique_columns(header, source, rows[0][0])
    absent_required = [name for name in REQUIRED if name not in header]
    if absent_required:
        raise InputError(f"missing column {absent_required[0]}: NeuSight kernel CSVs need {', '.join(REQUIRED)}",
                         file=source, line=rows[0][0], field=absent_required[0], missing=True)
    index = {name: position for position, name in enumerate(header)}
    dtype_column = next((name for name in header if name.lower() == DTYPE_COLUMN), "")
    stated_dtypes: list[tuple[int, str]] = []
    records = []
    for line, row in rows[1:]:
        if any(extra.strip() for extra in row[len(header):]):  # read by position, the extra cells shift or vanish
            raise InputError(f"{len(row)} cells, the header {len(header)}: a cell with an unquoted comma (a kernel "
                             "name) or a column the header lacks", file=source, line=line)
        check_row_length(row, header, file=source, line=line)  # a short row's last cells would read as empty

        def cell(name: str, row: list[str] = row) -> str:
            position = index.get(name)
            return row[position].strip() if position is not None and position < len(row) else ""

        op = choice_cell(cell("OPName"), tuple(OP_CLASSES), file=source, line=line, field="OPName")
        needed = GEMM_COLUMNS if OP_CLASSES[op] in ("linear", "bmm") else {"B": "B", "H": "H"}
        record: dict[str, object] = {"line": line, "op": op, "op_class": OP_CLASSES[op], "device": cell("Device")}
        absent = [name for name in needed.values() if name not in index]
        if absent:  # the header's fault, not this row's: named at the header's line
            raise InputError(f"missing column {absent[0]}: {op} rows need {', '.join(sorted(needed.values(), key=SHAPES.index))}",
                             file=source, line=rows[0][0], field=absent[0], missing=True)
        for dimension, name in needed.items():
            text_value = cell(name)
            value = stated_integer(text_value)  # 64 or 64.0, as a runs file's cells; not 1_6 nor ١٦
            if value is None or not 0 < value <= INT32_MAX:
                raise InputError(f"must be a positive integer up to {INT32_MAX}, got {text_value!r}", file=source,
                                 line=line, field=name)
            record[dimension] = value
        record["measured_seconds"] = measured_ms(cell("Latency"), source, line, "Latency") / 1e3
        records.append(record)
        if dtype_column and cell(dtype_column):
            stated_dtypes.append((line, cell(dtype_column)))
    if not records:
        raise InputError("no measured rows", file=source)
    frame = pd.DataFrame.from_records(records)
    for name in SHAPES:
        if name not in frame:
            frame[name] = np.nan
    return KernelRows(frame[["line", "op", "op_class", "device", *SHAPES, "measured_seconds"]], source,
                      tuple(stated_dtypes), dtype_column)


def is_neusight_file(path: str | Path) -> bool:
    """Whether the CSV at ``path`` is NeuSight's (its header names OPName and Latency); an archsim
    measured CSV (``# key: value`` lines, then network, layer, … columns) is not."""
    text = read_text(path, "measured CSV", encoding="utf-8-sig")
    header = next((line for line in text.splitlines() if line.strip() and not line.startswith("#")), "")
    rows = csv_rows(header, str(path))
    return bool(rows) and is_neusight_header(rows[0][1])


def read_neusight_csv(path: str | Path) -> KernelRows:
    """:func:`parse_neusight_csv` of a file."""
    return parse_neusight_csv(read_text(path, "NeuSight kernel CSV", encoding="utf-8-sig"), source=str(path))


def check_devices(rows: KernelRows) -> None:
    """Every row's ``Device`` is a catalog GPU (what :func:`predict` reads without ``--gpu``); else an
    error naming the file, the row's line and the column."""
    for line, name in zip(rows.frame["line"], rows.frame["device"], strict=True):
        if not name:
            raise InputError("no GPU: pass --gpu or give the row a Device", file=rows.source, line=int(line),
                             field="Device")
        if find_whole_gpu(str(name)) is None:
            raise InputError(f"unknown GPU {name!r} (or pass --gpu); the catalog has {', '.join(GPU_NAMES)}",
                             file=rows.source, line=int(line), field="Device")


def device_spec(name: str) -> GpuSpec:
    """The catalog GPU for a catalog name or a CUDA device string such as ``"Tesla T4"``."""
    slug = find_whole_gpu(name)
    if slug is None:
        raise InputError(f"unknown GPU {name!r}; the catalog has {', '.join(GPU_NAMES)}", field="gpu")
    return KNOWN_GPUS[slug]


def measured_on(frame: pd.DataFrame, gpu: str) -> pd.DataFrame:
    """The rows of ``frame`` measured on ``gpu`` (a catalog name or CUDA device string): those whose
    ``device`` names the same catalog GPU, or names none (a file without a Device column). Empty when
    the file has no row of that GPU: its times are then another GPU's, not an error of this one's."""
    device_spec(gpu)  # an unknown name is refused here, in one line
    slug = find_whole_gpu(gpu)
    same = [not str(name) or find_whole_gpu(str(name)) == slug for name in frame["device"]]
    return frame[np.asarray(same, dtype=bool)]


def predict(frame: pd.DataFrame, constants: KernelConstants, gpu: str | None = None,
            dtype: str = "fp32", tensor_constants: TensorConstants | None = None) -> pd.DataFrame:
    """``frame`` with ``gpu`` (the catalog's name, :func:`~archsim.devices.gpu_lookup.gpu_name`),
    ``predicted_seconds`` and ``error`` (predicted / measured − 1) added, rows in input order. ``gpu``
    overrides each row's ``device``; a row measured on another GPU than the one predicted has no error
    (NaN): its time is that GPU's, not a measurement of this one's. ``dtype`` other than fp32: the GEMM
    rows as ``train`` prices that dtype (:func:`gemm_rows_seconds`, ``tensor_constants`` the tensor
    cores' fit), the memory-bound rows by their class mechanism at its element size (2 bytes for
    fp16/bf16, the fitted achieved fractions and launch of ``constants``); each row is priced once."""
    out = frame.copy()
    names = pd.Series(gpu, index=out.index) if gpu else out["device"]
    if names.isna().any() or (names == "").any():
        raise InputError("no GPU: pass --gpu or give the CSV a Device column", field="gpu")
    out["gpu"] = [gpu_name(slug) if (slug := find_whole_gpu(str(n))) else "" for n in names]
    missing = sorted(set(names[out["gpu"] == ""].astype(str)))
    if missing:
        raise InputError(f"unknown GPU {missing[0]!r}; the catalog has {', '.join(GPU_NAMES)}", field="gpu")
    out["predicted_seconds"] = _seconds(out, constants, dtype, tensor_constants)
    out["error"] = out["predicted_seconds"] / out["measured_seconds"] - 1
    if gpu:
        other = [bool(str(d)) and (find_whole_gpu(str(d)) or str(d)) != find_whole_gpu(gpu) for d in out["device"]]
        out.loc[np.asarray(other, dtype=bool), "error"] = np.nan
    return out


def _seconds(frame: pd.DataFrame, constants: KernelConstants, dtype: str = "fp32",
             tensor_constants: TensorConstants | None = None) -> np.ndarray:
    """Predicted seconds of rows whose ``gpu`` column holds catalog names, each row priced once: every
    fp32 row and every memory-bound row by :func:`kernel_seconds` at ``dtype`` (its element size, the
    achieved fractions and launch of ``constants``); an fp16/bf16 GEMM row by :func:`gemm_rows_seconds`
    alone (train's kernel path), never first by the class mechanism too."""
    seconds = np.full(len(frame), np.nan)
    for name, positions in frame.groupby("gpu", sort=False).indices.items():
        group = frame.iloc[positions]
        gemm = group["op"].isin(GEMM_OPS).to_numpy() & (dtype != "fp32")
        if (~gemm).any():
            rest = group[~gemm]
            seconds[positions[~gemm]] = kernel_seconds({c: rest[c].to_numpy() for c in ("op", *SHAPES)},
                                                       device_spec(str(name)), constants, dtype)
        if gemm.any():
            seconds[positions[gemm]] = gemm_rows_seconds(group[gemm], str(name), dtype, tensor_constants)
    return seconds


def gemm_rows_seconds(rows: pd.DataFrame, gpu: str, dtype: str, tensor_constants: TensorConstants | None) -> np.ndarray:
    """Seconds of NeuSight GEMM rows (B GEMMs of archsim's M, K, N in one launch) on catalog GPU ``gpu``
    in ``dtype``, each timed alone: the timer of archsim's measured CSVs
    (:func:`archsim.validation.gpu_seconds.kernel_timer`), i.e. :func:`archsim.devices.kernel_ops.op_seconds`
    on the catalog board — the path ``train`` prices that dtype's GEMMs on (tensor-core tiles, the vTrain
    fit) — with a kernel benchmark's launch. Why not :func:`kernel_seconds`: its GEMM constants are fp32's."""
    from archsim.choices.devices import ELEMENT_BYTES
    from archsim.lowering import Gemm, TrainingOp

    slug = find_whole_gpu(gpu)
    timer = kernel_timer(device_spec(gpu), slug, dtype, tensor_constants)
    if timer is None:
        raise InputError(f"--dtype {dtype}: archsim has no {dtype} GEMM time for {gpu}", field="dtype")
    batches, heights = linear_rows(rows["op"].to_numpy(), rows["B"].to_numpy(), rows["M"].to_numpy())
    ops = [TrainingOp(f"line {line}", "F", (Gemm(int(m), int(k), int(n), int(b)),))
           for line, b, m, k, n in zip(rows["line"], batches, heights, rows["K"], rows["N"], strict=True)]
    return ops_seconds(ops, timer, [], ELEMENT_BYTES[dtype])


# every compared row this many times off its prediction, one way: the Latency column is in another unit than ms
UNIT_RATIO = 100


def latency_unit_note(predicted: pd.DataFrame) -> str:
    """One line when every row of ``predicted`` (:func:`predict`) that has an error is over
    :data:`UNIT_RATIO` times off its prediction the same way: the kernel model is within tens of percent on
    NeuSight's rows (docs/gpu-validation.md), so a CSV written in seconds or microseconds, not NeuSight's
    milliseconds, is 1000× off in every row. '' otherwise (rows as given either way)."""
    ratios = (predicted["measured_seconds"] / predicted["predicted_seconds"])[predicted["error"].notna()]
    if not len(ratios):
        return ""
    for unit, off, worst in (("seconds", ratios.max() < 1 / UNIT_RATIO, f"1/{1 / ratios.max():.0f}"),
                             ("microseconds", ratios.min() > UNIT_RATIO, f"{ratios.min():.0f}×")):
        if off:
            return (f"Latency looks like {unit}: every row measures {'under 1/' if unit == 'seconds' else 'over '}"
                    f"{UNIT_RATIO}{'' if unit == 'seconds' else '×'} of its prediction (the nearest {worst}); "
                    "NeuSight's Latency is in milliseconds, the numbers are as given")
    return ""


def mape_by_class(predicted: pd.DataFrame, by: Sequence[str] = ("op_class",)) -> pd.DataFrame:
    """Mean absolute percentage error (%) and row count per op class (and any other ``by`` column)."""
    table = (predicted.assign(ape=predicted["error"].abs() * 100)
             .groupby(list(by), sort=False)["ape"].agg(mape="mean", rows="size").reset_index())
    order = {name: i for i, name in enumerate(CLASS_ORDER)}
    return table.sort_values([*by[:-1], "op_class"] if "op_class" in by else list(by),
                             key=lambda s: s.map(order).fillna(len(order)) if s.name == "op_class" else s,
                             kind="stable").reset_index(drop=True)


def fit_constants(frame: pd.DataFrame, start: KernelConstants, iterations: int = 3000) -> KernelConstants:
    """Constants minimizing the sum over op classes of each class's MAPE on ``frame`` (measured rows
    with a ``device`` column): Nelder–Mead on their logarithms, from ``start`` but for ``energy_pj``,
    which starts at :data:`ENERGY_START_PJ`; ``iterations`` in all, over :data:`FIT_ROUNDS` restarts."""
    from scipy.optimize import minimize

    start = replace(start, energy_pj=ENERGY_START_PJ)
    frame = predict(frame.reset_index(drop=True), start)  # resolves each row's GPU once
    measured = frame["measured_seconds"].to_numpy()
    classes = [np.flatnonzero(frame["op_class"].to_numpy() == c) for c in CLASS_ORDER]
    classes = [rows for rows in classes if rows.size]

    def loss(logs: np.ndarray) -> float:
        error = np.abs(_seconds(frame, _constants(logs, start)) / measured - 1)
        return float(sum(error[rows].mean() for rows in classes))

    logs = _logs(start)
    for _ in range(FIT_ROUNDS):  # a fresh simplex each round: one collapsed early stalls far from the optimum
        logs = minimize(loss, logs, method="Nelder-Mead",
                        options={"maxiter": max(1, iterations // FIT_ROUNDS), "xatol": 1e-4, "fatol": 1e-6}).x
    fitted = _constants(logs, start)
    # The energy per FLOP: the largest on a grid whose loss is within ENERGY_TOLERANCE of the grid's
    # best. Below the energy at which some fitted GPU's GEMMs become power-capped the loss is flat,
    # and the simplex stops anywhere there; the bound itself is what the fitted GPUs tell.
    grid = np.geomspace(*ENERGY_GRID_PJ)
    losses = np.array([loss(_logs(replace(fitted, energy_pj=float(e)))) for e in grid])
    return replace(fitted, energy_pj=largest_tie(grid, losses))


def largest_tie(energies: np.ndarray, losses: np.ndarray) -> float:
    """The largest of ascending ``energies`` whose loss is within :data:`ENERGY_TOLERANCE` of the
    best: the rule both energy-per-FLOP fits choose by (fp32 here, the tensor cores' in
    :mod:`archsim.validation.tensor_power`). Why the largest: below the energy at which a fitted GPU
    is capped the loss is flat, so only the bound the capped GPUs set is told by the data."""
    return float(energies[np.flatnonzero(losses <= losses.min() + ENERGY_TOLERANCE)[-1]])


def leave_one_gpu_out(fit_rows: pd.DataFrame, check_rows: pd.DataFrame, start: KernelConstants,
                      iterations: int = 3000) -> pd.DataFrame:
    """Held-out accuracy: for each GPU of ``check_rows``, the constants fitted on the other GPUs' rows
    of ``fit_rows`` predict its rows. MAPE (%) per GPU and op class, with the constants used."""
    fit_gpus = predict(fit_rows, start)["gpu"]
    check = predict(check_rows, start)
    tables = []
    for gpu in dict.fromkeys(check["gpu"]):
        constants = fit_constants(fit_rows[(fit_gpus != gpu).to_numpy()], start, iterations)
        mine = predict(check_rows[(check["gpu"] == gpu).to_numpy()], constants)
        tables.append(mape_by_class(mine, ("gpu", "op_class")).assign(constants=str(constants)))
    return pd.concat(tables, ignore_index=True)


__all__ = [
    "CLASS_ORDER",
    "DTYPE_ALIASES",
    "DTYPE_COLUMN",
    "ENERGY_START_PJ",
    "ENERGY_TOLERANCE",
    "FIT_FIELDS",
    "FIT_START",
    "GEMM_COLUMNS",
    "KernelRows",
    "check_devices",
    "check_stated_dtypes",
    "device_spec",
    "fit_constants",
    "gemm_rows_seconds",
    "is_neusight_file",
    "is_neusight_header",
    "largest_tie",
    "leave_one_gpu_out",
    "mape_by_class",
    "measured_on",
    "parse_neusight_csv",
    "predict",
    "read_neusight_csv",
]
