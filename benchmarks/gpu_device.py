"""The device a GPU measuring script runs on (``gpu_train_measure.py``, ``gpu_efficiency_probe.py``):
PyTorch opened with that device selected, its CPU threads for the run, and the device's identity for the
output file's metadata."""

from __future__ import annotations

import platform
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def open_torch(script: str, device: str) -> Any:
    """The ``torch`` module with ``device`` (cuda, cuda:N or cpu) selected, or None after one line on stderr
    saying why nothing is measured (the script then exits 2)."""
    try:
        import torch
    except ImportError:
        print(f"{script}: PyTorch is not installed; nothing measured", file=sys.stderr)
        return None
    cuda = device.startswith("cuda")
    if cuda and not torch.cuda.is_available():
        print(f"{script}: no CUDA GPU visible to PyTorch; nothing measured (--device cpu --tiny to try)",
              file=sys.stderr)
        return None
    if cuda and torch.device(device).index is not None:
        torch.cuda.set_device(torch.device(device))
    return torch


@contextmanager
def cpu_threads(torch, device: str, threads: int = 1) -> Iterator[None]:
    """On the CPU (``device`` not cuda), torch's intra-op threads set to ``threads`` inside the block (the CPU
    mode runs tiny shapes to test the code, where more threads only contend) and restored after it, also when
    it raises, so what runs next in the same process keeps its threads; on a GPU, nothing is changed."""
    if device.startswith("cuda"):
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def device_meta(torch, device: str) -> dict[str, object]:
    """The GPU's name, memory (GiB), SM count, compute capability, CUDA and cuDNN versions; on the CPU, its
    processor."""
    if not device.startswith("cuda"):
        return {"gpu": f"cpu ({platform.processor() or platform.machine()})", "gpu_memory_gib": "none"}
    props = torch.cuda.get_device_properties(torch.device(device))
    return {"gpu": props.name, "gpu_memory_gib": round(props.total_memory / 2**30, 1),
            "sm_count": props.multi_processor_count, "compute_capability": f"{props.major}.{props.minor}",
            "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version()}


def identity(torch, device: str) -> dict[str, object]:
    """:func:`device_meta`, then the torch and Python versions: the first metadata lines of a measurement."""
    return {**device_meta(torch, device), "torch": torch.__version__, "python": platform.python_version()}
