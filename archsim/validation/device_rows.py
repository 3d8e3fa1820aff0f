"""NeuSight's kernel rows timed on a device file (``validate-gpu --gpu PATH.toml``): each row one op, timed alone by
the op timer ``train`` prices that device with, so a made-up GPU or an accelerator is checked by the model that
trains on it, not by a second one. Seconds."""

from __future__ import annotations

import numpy as np
import pandas as pd

from archsim.devices.device import Device
from archsim.devices.kernels import GEMM_OPS, OP_CLASSES, linear_rows
from archsim.errors import InputError


def device_rows_seconds(frame: pd.DataFrame, device: Device, dtype: str = "fp32") -> np.ndarray:
    """Seconds of every row of ``frame`` (archsim's M, K, N; B, H) on a device file's ``device``, by the op timer
    ``train`` prices that device with (:func:`archsim.devices.kernel_ops.op_seconds` at the file's own constants,
    ``Device.efficiency``, chosen by :func:`~archsim.devices.kernel_ops.kernel_families`: a device file keeps its
    own launch, whatever runs its kernels), each row one op timed alone: a GEMM row one :class:`Gemm` (a linear
    B·M rows against one weight, a bmm B GEMMs), a memory-bound row its tensors' elements streamed at the file's
    HBM bandwidth and the class's efficiency — elementwise its inputs and output
    (:data:`~archsim.devices.kernels.ELEMENTWISE_TENSORS`), a softmax one read and one write (a device file states
    no L1 for the block softmax's re-reads), a layer norm two reads and a write."""
    from archsim.choices.devices import ELEMENT_BYTES
    from archsim.devices.kernel_ops import kernel_families, op_seconds
    from archsim.devices.kernels import ELEMENTWISE_TENSORS, LAYERNORM_READS
    from archsim.lowering import Gemm, TrainingOp

    assert device.efficiency is not None  # a device file states its own (1.0 and no launch unstated)
    tensors = {**ELEMENTWISE_TENSORS, "softmax": 2, "ln": LAYERNORM_READS + 1}
    ops = []
    for row in frame.itertuples(index=False):
        name = f"line {row.line}"
        if row.op in GEMM_OPS:
            batches, heights = linear_rows(np.array([row.op], dtype=object), np.array([row.B]), np.array([row.M]))
            gemm = Gemm(int(heights[0]), int(row.K), int(row.N), int(batches[0]))
            ops.append(TrainingOp(name, "F", (gemm,)))
        elif row.op in tensors:
            kernel = (row.op, int(row.B), int(row.H)) if row.op in ("softmax", "ln") else ()
            ops.append(TrainingOp(name, "F", (), vector_elements=int(tensors[row.op] * row.B * row.H), kernel=kernel))
        else:
            raise InputError(f"unknown op {row.op!r}; known: {', '.join(OP_CLASSES)}", field="op")
    families = kernel_families(device, dtype, device.efficiency, alone=True)
    return op_seconds(ops, device, families, dtype, ELEMENT_BYTES[dtype]) if ops else np.zeros(0)


__all__ = ["device_rows_seconds"]
