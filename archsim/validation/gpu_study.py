"""One call from measured CSVs to every table the GPU validation shows (CLI, report and script share it)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from archsim.choices.devices import ELEMENT_BYTES
from archsim.devices.catalog import GpuSpec
from archsim.devices.gpu_lookup import find_whole_gpu, resolve_gpu, whole_gpu_name
from archsim.devices.kernel_constants import FITTED, KernelConstants
from archsim.errors import InputError
from archsim.validation.gpu import assumptions, gpu_arrays, model_kernels
from archsim.validation.gpu_algorithms import DGRAD
from archsim.validation.gpu_compare import compare, concurrency, concurrency_summary
from archsim.validation.gpu_csv import KernelTable
from archsim.validation.gpu_seconds import CSV_DTYPES, TensorConstants, kernel_timer

VARIANTS = (("os", True), ("os", False), ("ws", False), ("is", False))
"""(dataflow, split-K) pairs of the sensitivity table; split-K applies to os only."""


@dataclass(frozen=True)
class GpuOverrides:
    """What the user says about the GPU beyond (or instead of) the CSV's metadata and the known-GPU table."""

    gpu: str | None = None
    like: str | None = None
    sm_count: int | None = None
    tensor_cores_per_sm: int | None = None
    mma: tuple[int, int] | None = None
    clock_hz: float | None = None
    memory_bytes_per_s: float | None = None
    dataflow: str = "os"
    split_k: bool = True
    dgrad: str = DGRAD[0]
    cuda_core_fallback: bool = True
    winograd: bool = True


@dataclass(frozen=True)
class GpuStudy:
    """joined: every measured row with its modeled cost; stats: ρ and ratio errors per group;
    streams / streams_summary: the D ∥ G effect; sensitivity: per-op ρ under each dataflow;
    assumptions: (gpu, item, value) rows."""

    joined: pd.DataFrame
    stats: pd.DataFrame
    streams: pd.DataFrame
    streams_summary: pd.DataFrame
    sensitivity: pd.DataFrame
    assumptions: pd.DataFrame
    sources: tuple[str, ...]
    mode: str


def slug(name: str) -> str:
    """``"NVIDIA H100 80GB HBM3"`` → ``"h100-80gb-hbm3"`` (file names, the ``gpu`` column)."""
    text = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return re.sub(r"^nvidia-", "", text) or "gpu"


def table_element_bytes(table: KernelTable) -> int:
    """Bytes per element of a measured table's ``# dtype:`` (fp16 where it states none)."""
    dtype = table.meta.get("dtype", "fp16").strip().lower()
    if dtype not in CSV_DTYPES:
        raise InputError(f"unknown dtype {dtype!r} in the metadata; one of {', '.join(CSV_DTYPES)}",
                         file=table.source, field="dtype")
    return ELEMENT_BYTES[CSV_DTYPES[dtype]]


def _catalog_gpu(name: str) -> str | None:
    """The catalog slug of a GPU name, a MIG slice's GPU's included (None: not in the catalog)."""
    return find_whole_gpu(whole_gpu_name(name))


def table_gpu(table: KernelTable, overrides: GpuOverrides = GpuOverrides()) -> tuple[str, GpuSpec]:
    """The GPU a measured table ran on: its name (``--gpu`` or the ``# gpu:`` line) and its chip with the
    CSV's SM count and the user's overrides applied."""
    name = overrides.gpu or table.meta.get("gpu")
    measured_on = table.meta.get("gpu")
    if overrides.gpu and measured_on and _catalog_gpu(measured_on) not in (None, _catalog_gpu(overrides.gpu)):
        raise InputError(f"measured on {measured_on!r} (its '# gpu:' line): --gpu {overrides.gpu!r} would model "
                         "another GPU against its times; drop --gpu", file=table.source, field="gpu")
    if not name:
        raise InputError("no '# gpu:' metadata line; name the GPU with --gpu", file=table.source, field="gpu")
    measured_sms = table.meta.get("sm_count")
    sm_count = overrides.sm_count
    if sm_count is None and measured_sms:
        try:
            sm_count = int(measured_sms)
        except ValueError:
            raise InputError(f"expected an integer, got {measured_sms!r}", file=table.source,
                             field="sm_count") from None
    try:
        spec = resolve_gpu(name, like=overrides.like, sm_count=sm_count,
                           tensor_cores_per_sm=overrides.tensor_cores_per_sm, mma=overrides.mma,
                           clock_hz=overrides.clock_hz, memory_bytes_per_s=overrides.memory_bytes_per_s)
    except InputError as exc:  # an SM count the CSV's '# sm_count:' line gave is refused at that file, not the flag
        if exc.where.field != "sm_count" or exc.where.file is not None or overrides.sm_count is not None:
            raise
        raise InputError(exc.message, file=table.source, field="sm_count") from None
    return name, spec


def run_study(tables: Sequence[KernelTable], overrides: GpuOverrides = GpuOverrides(), mode: str = "exact",
              tensor_constants: TensorConstants | None = None, simt_constants: KernelConstants = FITTED) -> GpuStudy:
    """Model every table's kernels on its GPU and compare; several tables (GPUs) are stacked by ``gpu``.

    ``tensor_constants`` (GPU name → constants; :func:`archsim.training.fitted.kernels`, which this
    package may not import) times fp16/bf16 tables in seconds too; without it only fp32 ones are.
    ``simt_constants``: the fit of kernels timed alone (:class:`~archsim.validation.gpu_seconds.KernelTimer`)."""
    if not tables:
        raise InputError("no measured CSV given", field="csv")
    joined, sensitivity, notes = [], [], []
    for table in tables:
        name, spec = table_gpu(table, overrides)
        measured_sms = table.meta.get("sm_count")
        eb = table_element_bytes(table)
        gpu = table.meta.get("gpu_slug") or slug(name)
        arrays = gpu_arrays(spec, overrides.dataflow, eb, overrides.split_k, overrides.dgrad,
                            overrides.cuda_core_fallback, overrides.winograd)
        dtype = table.meta.get("dtype", "fp16")
        timer = kernel_timer(spec, find_whole_gpu(overrides.like or whole_gpu_name(name)), dtype, tensor_constants,
                             simt_constants)
        joined.append(model_kernels(table, arrays, mode, timer).assign(gpu=gpu))
        from_csv = measured_sms if overrides.sm_count is None else None
        notes += [{"gpu": gpu, "item": item, "value": value} for item, value in assumptions(arrays, mode, from_csv)]
        notes.append({"gpu": gpu, "item": "predicted_seconds", "value": timer.note if timer is not None else
                      f"not timed: the device model has no {dtype} path here (tf32, no tensor-core constants, "
                      "or FP32 lanes the catalog does not describe)"})
        notes.append({"gpu": gpu, "item": "measured with", "value": ", ".join(
            f"{k} {table.meta[k]}" for k in ("dtype", "torch", "cuda", "cudnn", "sm_clock_max_mhz", "repeats")
            if k in table.meta)})
        for dataflow, split_k in VARIANTS:
            variant = gpu_arrays(spec, dataflow, eb, split_k, overrides.dgrad, overrides.cuda_core_fallback,
                                 overrides.winograd)
            other = model_kernels(table, variant, mode).assign(gpu=gpu)
            # split_k_allowed: the variant's switch (a kernel's own split count is the kernels table's split_k)
            stats = compare(other, groupings=(("op",),)).assign(dataflow=dataflow, split_k_allowed=split_k)
            sensitivity.append(stats[["gpu", "dataflow", "split_k_allowed", "op", "kernel_count", "rho", "median_ratio",
                                      "scaled_abs_err", "rho_mem"]])
    frame = pd.concat(joined, ignore_index=True)
    streams = concurrency(frame)
    return GpuStudy(joined=frame, stats=compare(frame), streams=streams,
                    streams_summary=concurrency_summary(streams) if len(streams) else pd.DataFrame(),
                    sensitivity=pd.concat(sensitivity, ignore_index=True), assumptions=pd.DataFrame(notes),
                    sources=tuple(t.source for t in tables), mode=mode)
