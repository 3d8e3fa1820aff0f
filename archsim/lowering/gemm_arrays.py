"""The GEMMs of lowered training ops as flat int64 arrays, for one vectorized call of any cost source
(an array's :mod:`archsim.array.costing`, a GPU's :mod:`archsim.devices.kernel_ops`). Apart from
:mod:`archsim.lowering.ops` so that the ops stay importable without numpy (a command's ``--help``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from archsim.lowering.ops import TrainingOp
from archsim.validate import SMALLER_JOB, check_exact, shown


def check_ops_exact(ops: Sequence[TrainingOp], hint: str = SMALLER_JOB) -> None:
    """Refuse ops whose elements or bytes reach 2⁵³ (:func:`~archsim.validate.check_exact`), naming the first;
    ``hint``: what to change, where the caller knows the setting that made them so large."""
    for op in ops:
        check_exact([op.vector_elements, op.out_bytes, op.extra_bytes], f"op {op.kind} of layer {shown(op.layer)}: bytes",
                    hint)


def flatten_gemms(ops: Sequence[TrainingOp]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(owning op index, m, k, n, count) of every GEMM of ``ops``, as int64 arrays for one vectorized call."""
    owner, m, k, n, count = [], [], [], [], []
    for index, op in enumerate(ops):
        for g in op.gemms:
            owner.append(index)
            m.append(g.m)
            k.append(g.k)
            n.append(g.n)
            count.append(g.count)
    check_ops_exact(ops)
    check_exact([max(m, default=0), max(k, default=0), max(n, default=0), max(count, default=0)], "a GEMM dimension")
    as_int = lambda xs: np.asarray(xs, dtype=np.int64)
    return as_int(owner), as_int(m), as_int(k), as_int(n), as_int(count)
