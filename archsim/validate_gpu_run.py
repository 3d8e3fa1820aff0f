"""``validate-gpu``'s run from its flags' values, once for the command and ``archsim.validate_gpu``: archsim's
measured CSVs costed on a GPU-like set of arrays (:mod:`archsim.validation.gpu_study`), NeuSight's kernel CSVs timed
by the kernel time model (:mod:`archsim.devices.kernels`). ``args`` is any object with the flags' attributes (the
command's namespace, or the library's keywords); a note is said through ``speak(kind, text)``. Seconds throughout.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from archsim.array.config import parse_array_shape
from archsim.console import say, setting, switch_on
from archsim.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

SHOW = ("stats", "kernels", "streams", "streams-summary", "sensitivity", "assumptions")
NEUSIGHT_REFUSED = ("like", "sm_count", "tensor_cores_per_sm", "mma", "clock_mhz", "memory_gbps", "dataflow", "mode",
                    "report", "markdown")  # the arrays view's flags: the kernel time model reads none of them

DEVICE_FIGURES = ("like", "sm_count", "tensor_cores_per_sm", "mma", "clock_mhz", "memory_gbps")  # a device file's own

Speak = Callable[[str, str], None]
Phases = Callable[[str, Sequence[str]], AbstractContextManager]


@dataclass(frozen=True)
class ValidateGpuRun:
    """One validate-gpu run: the ``table`` and ``meta`` the command prints, and the reports it ``wrote``."""

    table: pd.DataFrame
    meta: dict
    wrote: tuple[str, ...] = ()


@contextmanager
def _quiet(desc: str, names: Sequence[str]):
    """No progress bar: the library's run, or a caller that draws none."""
    yield lambda name: None


def overrides_from_args(args: Any):
    """The GPU flags as :class:`~archsim.validation.gpu_study.GpuOverrides`."""
    from archsim.validation.gpu_study import GpuOverrides

    return GpuOverrides(
        gpu=args.gpu, like=args.like, sm_count=args.sm_count, tensor_cores_per_sm=args.tensor_cores_per_sm,
        mma=parse_array_shape(args.mma, field_name="mma", files="") if args.mma else None,
        clock_hz=args.clock_mhz * 1e6 if args.clock_mhz else None,
        memory_bytes_per_s=args.memory_gbps * 1e9 if args.memory_gbps else None, dataflow=args.dataflow or "os",
        split_k=not args.no_split_k)


def command_line(args: Any) -> str:
    """The command that regenerates the report (printed in it)."""
    words = ["archsim", "validate-gpu", "--csv", *args.csv]
    for flag in ("gpu", "like", "sm_count", "tensor_cores_per_sm", "mma", "clock_mhz", "memory_gbps"):
        value = getattr(args, flag)
        if value is not None:
            words += [f"--{flag.replace('_', '-')}", str(value)]
    if args.dataflow not in (None, "os"):
        words += ["--dataflow", args.dataflow]
    if args.no_split_k:
        words.append("--no-split-k")
    if args.mode not in (None, "exact"):
        words += ["--mode", args.mode]
    words += ["--report", args.report or "reports/gpu_validation.html"]
    if args.markdown:
        words += ["--markdown", args.markdown]
    return shlex.join(words)


def is_device_file(gpu: str | None) -> bool:
    """Whether ``--gpu`` names a device file (a path ending ``.toml`` or ``.cfg``, or one with a ``/`` naming an
    existing file) rather than a GPU: a bare word is a GPU's name even where a file of that name exists in the
    working directory, so ``t4`` stays the catalog T4."""
    from pathlib import Path

    return bool(gpu) and (Path(str(gpu)).suffix.lower() in (".toml", ".cfg") or
                          ("/" in str(gpu) and Path(str(gpu)).is_file()))


def refuse_device_file(gpu: str | None) -> None:
    """A device file given as ``--gpu`` on archsim's measured CSVs is refused: their arrays view describes a GPU
    by the catalog's figures and the GPU flags, never read from a file (NeuSight's kernel CSVs take one)."""
    if is_device_file(gpu):
        raise InputError(f"{setting('gpu')} {gpu!r} is a device file; it times NeuSight kernel CSVs only (archsim's "
                         "measured CSVs take a catalog name or a CUDA device string such as 'Tesla T4'; --like and "
                         "the GPU flags describe another)", field="gpu")


def refuse_mixed_devices(files: Sequence[Any]) -> None:
    """NeuSight rows measured on more than one GPU (their Device column) are refused for a device file's stats: every
    row is predicted on the file's device, so one MAPE would hold it against several GPUs' times at once."""
    from archsim.devices.gpu_lookup import find_whole_gpu

    names = {str(name): find_whole_gpu(str(name)) or str(name) for kernels in files
             for name in kernels.frame["device"] if str(name)}
    if len(set(names.values())) > 1:
        shown = ", ".join(sorted(names)[:4])
        raise InputError(f"the CSVs' rows were measured on {len(set(names.values()))} GPUs ({shown}): a device file's "
                         f"MAPE would compare it with all of them; give one GPU's rows, or {setting('show', 'kernels')} "
                         "for every row's prediction beside its measured_device", field="gpu")


def run_validate_gpu(args: Any, *, tabular: bool = False, speak: Speak = say,
                     phases: Phases | None = None) -> ValidateGpuRun:
    """The table and meta ``archsim validate-gpu`` prints for ``args`` (``args.show`` None: stats, or for NeuSight's
    CSVs kernels where ``tabular`` is False, the csv/json default), the reports written first."""
    from archsim.validation.neusight import is_neusight_file

    if is_device_file(args.gpu):  # the file states the GPU's figures: a flag beside it would contradict it
        for flag in DEVICE_FIGURES:
            if getattr(args, flag) is not None:
                raise InputError(f"{setting(flag)} beside a device file {setting('gpu')}: the file states the GPU's "
                                 "figures; edit it instead", field=flag)
    kinds = {is_neusight_file(path) for path in args.csv}
    if kinds == {True}:
        return run_neusight(args, tabular=tabular, speak=speak, phases=phases or _quiet)
    if len(kinds) > 1:
        raise InputError("mixes NeuSight kernel CSVs with archsim's measured CSVs; give one kind", field="csv")
    refuse_device_file(args.gpu)
    if args.dtype is not None:  # a measured CSV's '# dtype:' line says it; a flag would silently disagree
        raise InputError(f"{setting('dtype')} is for NeuSight kernel CSVs; archsim's measured CSVs give theirs in the "
                         "'# dtype:' line", field="dtype")
    show = args.show or "stats"
    wrote = []
    # 2–6 s on DeepBench's CSVs, most of it scipy's import and the study: named phase by phase on a terminal
    with (phases or _quiet)("validate-gpu", ("load model", "read", "study",
                                             *(("report",) if args.report or args.markdown else ()))) as phase:
        phase("load model")
        # imported here: scipy.stats and plotly would slow every other archsim command's start-up
        from archsim.training.fitted import kernels as tensor_constants
        from archsim.validation.gpu_csv import read_kernel_csv
        from archsim.validation.gpu_report import write_markdown, write_report
        from archsim.validation.gpu_study import run_study

        phase("read")
        tables = [read_kernel_csv(path) for path in args.csv]
        phase("study")
        study = run_study(tables, overrides_from_args(args), args.mode or "exact", tensor_constants)
        command = command_line(args)
        if args.report or args.markdown:
            phase("report")
        if args.report:
            wrote.append(str(write_report(study, args.report, command)))
        if args.markdown:
            wrote.append(str(write_markdown(study, args.markdown, command)))
    frame = {"stats": study.stats, "kernels": study.joined, "streams": study.streams,
             "streams-summary": study.streams_summary, "sensitivity": study.sensitivity,
             "assumptions": study.assumptions}[show].rename(columns={"kind": "type"})  # as `cost` names it
    meta = {"csv": " ".join(args.csv), "mode": study.mode, "dataflow": args.dataflow or "os",
            "arrays": "; ".join(f"{r.gpu}: {r.value}" for r in study.assumptions.itertuples() if r.item == "arrays P")}
    return ValidateGpuRun(frame, meta, tuple(wrote))


def run_neusight(args: Any, *, tabular: bool, speak: Speak, phases: Phases) -> ValidateGpuRun:
    """NeuSight's kernel CSVs: every row timed by :mod:`archsim.devices.kernels`."""
    import pandas as pd

    from archsim.devices.kernel_constants import FITTED
    from archsim.validation.device_rows import device_rows_seconds
    from archsim.validation.neusight import (
        GEMM_COLUMNS,
        SHAPES,
        check_devices,
        check_stated_dtypes,
        latency_unit_note,
        mape_by_class,
        measured_on,
        predict,
        read_neusight_csv,
    )

    for flag in NEUSIGHT_REFUSED:  # refused, not ignored
        if getattr(args, flag) is not None:
            raise InputError(f"{setting(flag)} is not for NeuSight kernel CSVs", field=flag)
    if args.no_split_k:
        raise InputError(f"{switch_on('no_split_k')} is not for NeuSight kernel CSVs", field="no_split_k")
    show = args.show or ("stats" if tabular else "kernels")
    if show not in ("stats", "kernels"):
        raise InputError(f"{setting('show', show)}: NeuSight kernel CSVs give stats or kernels", field="show")
    # 2–3 s for 10,000 rows, most of it pandas' import and the reading: named phase by phase on a terminal
    with phases("validate-gpu", ("read", "predict")) as phase:
        phase("read")
        files = [read_neusight_csv(path) for path in args.csv]
        for kernels in files:  # a dtype column the user added: held against the one dtype priced, never ignored
            check_stated_dtypes(kernels, args.dtype or "fp32")
        device = None
        if is_device_file(args.gpu):  # every row, on the file's device; a MAPE only over one GPU's rows
            from pathlib import Path

            from archsim.devices.device_file import load_device

            if not Path(args.gpu).is_file():
                raise InputError(f"{setting('gpu')} {args.gpu!r}: no such device file", field="gpu")
            device = load_device(args.gpu)
            if show == "stats":
                refuse_mixed_devices(files)
        elif not args.gpu:  # each row's Device is read: an unknown one is named by its file and line
            for kernels in files:
                check_devices(kernels)
        # each row's file beside its line: with several CSVs a line alone names two rows
        frame = pd.concat([kernels.frame.assign(file=kernels.source) for kernels in files], ignore_index=True)
        if args.gpu and device is None:  # the rows measured on that GPU; none: its predictions beside another GPU's times
            mine = measured_on(frame, args.gpu)
            if len(mine):
                frame = mine.reset_index(drop=True)
            elif show == "stats":
                raise InputError(f"no row was measured on {args.gpu!r}: its MAPE would compare it with other "
                                 f"GPUs' times; {setting('show', 'kernels')} gives its predictions beside each row's "
                                 "measured_device", field="gpu")
        phase("predict")
        dtype = args.dtype or "fp32"
        # the tensor cores' fit, as train takes it (validation may not import training)
        from archsim.training.fitted import kernels as tensor_constants

        if device is not None:
            rows = frame.assign(gpu=device.name, predicted_seconds=device_rows_seconds(frame, device, dtype))
            rows = rows.assign(error=rows["predicted_seconds"] / rows["measured_seconds"] - 1)
        else:
            rows = predict(frame, FITTED, args.gpu, dtype, tensor_constants)
        rows = rows.rename(columns={"device": "measured_device"})
    unit_note = latency_unit_note(rows)
    if unit_note:
        speak("note", unit_note)
    meta = {"csv": " ".join(args.csv), "kernel_model": "archsim.devices.kernels, fp32, kernels.FITTED"}
    if device is not None:
        meta = {"csv": meta["csv"], "dtype": dtype, "device_file": args.gpu,
                "kernel_model": "kernel_ops.op_seconds on the device file as train prices it (its own gemm/memory "
                                "efficiencies and launch; each kernel timed alone)"}
    elif dtype != "fp32":  # fp32's meta as it was: its output stays byte-identical
        meta = {"csv": meta["csv"], "dtype": dtype,
                "kernel_model": f"GEMMs: kernel_ops.op_seconds at {dtype} as train prices them (tensor-core tiles, "
                                "the vTrain fit; each kernel timed alone); memory-bound rows: archsim.devices.kernels "
                                f"at {dtype}'s element size, kernels.FITTED"}
    if show == "stats":
        table = mape_by_class(rows, ("gpu", "op_class"))
        table = table.assign(mape=table["mape"] / 100).rename(columns={"rows": "kernel_count"})
        # the MAPE has no sign: the median predicted / measured says which way a class is off (as measured CSVs')
        ratios = rows.assign(median_ratio=rows["error"] + 1).groupby(["gpu", "op_class"], sort=False)["median_ratio"]
        table = table.merge(ratios.median().reset_index(), on=["gpu", "op_class"], how="left", validate="one_to_one")
        table = table[["gpu", "op_class", "mape", "median_ratio", "kernel_count"]]
    else:
        shapes = [c for c in SHAPES if rows[c].notna().any()]
        table = rows[["file", "line", "op", *shapes, "measured_seconds", "predicted_seconds", "error", "gpu",
                      "measured_device"]].rename(columns={"error": "relative_error"})
        for column in shapes:
            if rows[column].notna().all():
                table[column] = table[column].astype("int64")
        # the shapes under the file's own column names (NeuSight's N is the reduction, its K the output columns)
        # each row's line in its CSV, as measured CSVs give it: --gpu keeps a subset, which the line joins back
        table = table.rename(columns=GEMM_COLUMNS)[["file", "line", "op", *shapes, "measured_seconds",
                                                    "predicted_seconds", "relative_error", "gpu", "measured_device"]]
    return ValidateGpuRun(table, meta)


__all__ = ["SHOW", "ValidateGpuRun", "command_line", "is_device_file", "overrides_from_args", "refuse_device_file", "run_validate_gpu"]
