"""Training ops → cycles on an array: the one place ops meet a cost source.

Every partitioner and schedule reads op costs from here, so a new cost source (cycle-level engine,
measured profile) plugs in behind :func:`op_cycles` without touching them. Costing is vectorized:
all GEMMs of all ops go through one :func:`~archsim.array.analytic.gemm_cost` call.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from archsim.array.analytic import gemm_cost
from archsim.array.config import ArrayConfig
from archsim.errors import InputError
from archsim.lowering import LoweredLayer, Mode, TrainingOp, lower_network
from archsim.workload.layer import Network

ENGINES = ("analytic",)


def _flatten(ops: Sequence[TrainingOp]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    owner, m, k, n, count = [], [], [], [], []
    for index, op in enumerate(ops):
        for g in op.gemms:
            owner.append(index)
            m.append(g.m)
            k.append(g.k)
            n.append(g.n)
            count.append(g.count)
    as_int = lambda xs: np.asarray(xs, dtype=np.int64)  # noqa: E731
    return as_int(owner), as_int(m), as_int(k), as_int(n), as_int(count)


def op_costs(ops: Sequence[TrainingOp], array: ArrayConfig, engine: str = "analytic") -> pd.DataFrame:
    """One row per op: cycles, MACs, utilization, array GEMM count and bytes.

    GEMM cycles come from the chosen engine; vector-unit work costs ⌈elements / cols⌉ cycles
    (one lane per array column).
    """
    if engine not in ENGINES:
        raise InputError(f"unknown engine {engine!r}; available: {', '.join(ENGINES)}", field="engine")
    owner, m, k, n, count = _flatten(ops)
    cycles = np.zeros(len(ops), dtype=np.int64)
    macs = np.zeros(len(ops), dtype=np.int64)
    if owner.size:
        cost = gemm_cost(m, k, n, array.rows, array.cols, array.dataflow)
        np.add.at(cycles, owner, cost.cycles * count)
        np.add.at(macs, owner, cost.macs * count)
    vector = np.asarray([op.vector_elements for op in ops], dtype=np.int64)
    cycles += -(-vector // array.cols)
    with np.errstate(divide="ignore", invalid="ignore"):
        utilization = np.where(cycles > 0, macs / (np.maximum(cycles, 1) * array.pes), 0.0)
    return pd.DataFrame({
        "layer": [op.layer for op in ops],
        "op": [op.kind for op in ops],
        "cycles": cycles,
        "macs": macs,
        "utilization": utilization,
        "gemms": [sum(g.count for g in op.gemms) for op in ops],
        "vector_elements": vector,
        "out_bytes": np.asarray([op.out_bytes for op in ops], dtype=np.int64),
        "extra_bytes": np.asarray([op.extra_bytes for op in ops], dtype=np.int64),
    })


def op_cycles(ops: Sequence[TrainingOp], array: ArrayConfig, engine: str = "analytic") -> np.ndarray:
    """Cycles of each op (int64 array), the cost interface partitioners use (no pandas: hot path)."""
    if engine not in ENGINES:
        raise InputError(f"unknown engine {engine!r}; available: {', '.join(ENGINES)}", field="engine")
    owner, m, k, n, count = _flatten(ops)
    cycles = np.zeros(len(ops), dtype=np.int64)
    if owner.size:
        cost = gemm_cost(m, k, n, array.rows, array.cols, array.dataflow)
        np.add.at(cycles, owner, cost.cycles * count)
    vector = np.fromiter((op.vector_elements for op in ops), dtype=np.int64, count=len(ops))
    return cycles + -(-vector // array.cols)


LAYER_COLUMNS = ("layer", "type", "F_cycles", "G_cycles", "D_cycles", "total_cycles", "F_utilization",
                 "G_utilization", "D_utilization", "activation_bytes", "delta_bytes", "weight_bytes")


def cost_lowered(lowered: Sequence[LoweredLayer], array: ArrayConfig, engine: str = "analytic") -> pd.DataFrame:
    """Per-layer table: F/G/D cycles and utilization, total, and the tensors a stage boundary moves."""
    ops = [op for item in lowered for op in item.ops]
    costs = op_costs(ops, array, engine)
    rows = []
    position = 0
    for item in lowered:
        row: dict[str, object] = {"layer": item.layer.name, "type": item.layer.kind}
        for kind in ("F", "G", "D"):
            row[f"{kind}_cycles"] = 0
            row[f"{kind}_utilization"] = 0.0
        for op in item.ops:
            cost = costs.iloc[position]
            row[f"{op.kind}_cycles"] = int(cost["cycles"])
            row[f"{op.kind}_utilization"] = float(cost["utilization"])
            position += 1
        row["total_cycles"] = int(row["F_cycles"]) + int(row["G_cycles"]) + int(row["D_cycles"])  # type: ignore[arg-type]
        row["activation_bytes"] = item.tensors.activation_bytes
        row["delta_bytes"] = item.tensors.delta_bytes
        row["weight_bytes"] = item.tensors.weight_bytes
        rows.append(row)
    frame = pd.DataFrame(rows, columns=list(LAYER_COLUMNS))
    for column in ("F_cycles", "G_cycles", "D_cycles", "total_cycles", "activation_bytes", "delta_bytes", "weight_bytes"):
        frame[column] = frame[column].astype(np.int64)
    return frame


def cost_network(network: Network, array: ArrayConfig, batch: int, mode: Mode = "paper",
                 engine: str = "analytic") -> pd.DataFrame:
    """Lower and cost a whole network: the table ``archsim cost`` prints."""
    return cost_lowered(lower_network(network, batch, mode, array.element_bytes), array, engine)
