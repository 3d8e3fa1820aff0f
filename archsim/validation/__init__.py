"""Checks of archsim's cost model against measurements (GPU kernel timings: :mod:`archsim.validation.gpu`)."""

from archsim.validation.gpu import KNOWN_GPUS, GpuArrays, GpuSpec, gpu_arrays, model_kernels, resolve_gpu
from archsim.validation.gpu_compare import compare, concurrency, concurrency_summary
from archsim.validation.gpu_csv import KernelTable, format_kernel_csv, read_kernel_csv

__all__ = ["KNOWN_GPUS", "GpuArrays", "GpuSpec", "KernelTable", "compare", "concurrency", "concurrency_summary",
           "format_kernel_csv", "gpu_arrays", "model_kernels", "read_kernel_csv", "resolve_gpu"]
