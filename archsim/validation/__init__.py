"""Checks of archsim's cost model against measurements (GPU kernel timings: :mod:`archsim.validation.gpu`).

Names load on first use (PEP 562): reading the GPU table (:mod:`archsim.devices.catalog`, re-exported
here) does not pull in the comparison's scipy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from archsim.lazy import lazy_exports

if TYPE_CHECKING:  # the names, for type checkers and the API docs
    from archsim.devices.catalog import KNOWN_GPUS, GpuSpec
    from archsim.devices.gpu_lookup import resolve_gpu
    from archsim.validation.gpu import GpuArrays, gpu_arrays, model_kernels
    from archsim.validation.gpu_compare import compare, concurrency, concurrency_summary
    from archsim.validation.gpu_csv import KernelTable, format_kernel_csv, read_kernel_csv

# public name -> the module defining it
_EXPORTS = {
    **{name: "archsim.devices.catalog" for name in ("KNOWN_GPUS", "GpuSpec")},
    "resolve_gpu": "archsim.devices.gpu_lookup",
    **{name: "archsim.validation.gpu" for name in ("GpuArrays", "gpu_arrays", "model_kernels")},
    **{name: "archsim.validation.gpu_compare" for name in ("compare", "concurrency", "concurrency_summary")},
    **{name: "archsim.validation.gpu_csv" for name in ("KernelTable", "format_kernel_csv", "read_kernel_csv")},
}

__all__ = ["KNOWN_GPUS", "GpuArrays", "GpuSpec", "KernelTable", "compare", "concurrency", "concurrency_summary",
           "format_kernel_csv", "gpu_arrays", "model_kernels", "read_kernel_csv", "resolve_gpu"]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
