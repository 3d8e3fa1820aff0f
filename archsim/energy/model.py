"""Energy of training ops on a systolic array: event counts × per-event energies.

Counts come from the cost engines archsim already has; this module only names the events and
multiplies, so energy is linear in every count by construction. Per GEMM out[M×N] = A[M×K]·B[K×N]:

* ``macs`` = M·K·N, each one MAC (the multiplier and its accumulating adder).
* ``register_words``: operand movement inside the array. Each MAC moves two words one PE hop
  through a pipeline register (ws: the ifmap word right, the partial sum down; os: ifmap right and
  filter down; is: filter and partial sum), and every word of the stationary operand passes one
  register on its way in (ws: K·N filter words; is: M·K ifmap words) or out (os: M·N outputs):
  2·MACs + stationary words. ``psum_register_words``: those of them that are partial sums (ws and is: one a
  MAC; os: the M·N accumulated outputs drained), priced at the accumulator's width (32 bits: int8 accumulates in
  int32, fp16/bf16 in fp32 — :func:`~archsim.energy.table.accumulator_bits`), the rest at the operand's
  (until 2026-12-05 every register word at the operand's width).
* SRAM reads and writes per operand. Reads into the array are SCALE-Sim's demand counts
  (:func:`~archsim.array.analytic.gemm_cost`, with the true M·N ofmap count for os). The ofmap SRAM
  is read back to accumulate every partial sum written before the last reduction fold (writes − M·N)
  and read once more for every word drained to DRAM; the ifmap and filter SRAMs are written once for
  every word filled from DRAM.
* DRAM words per operand. ``engine="cycle"``: what the cycle engine counts (SCALE-Sim's USER-mode
  DRAM traffic for the array's SRAMs and bandwidth). ``engine="analytic"``: compulsory traffic —
  A and B read once, out written once — the floor any SRAM size reaches. A caller that times the GEMMs
  with a count of its own passes it (``dram``, :data:`DramWords`: a device file's ``dram_traffic =
  "scalesim"``, :func:`archsim.devices.array_dram.device_dram_words`), and those words replace either.
* Vector-unit work: one add per element (pooling, element-wise and batch-norm layers).
* A fused kernel's non-matmul work (FlashAttention's ``lane_ops``, ``exps``, ``int_ops`` of which ``int_mults``
  multiply): each instruction at the table's ``[fused]`` figure (:func:`nonmatmul_picojoules`; train prices it,
  no CNN layer has any).
* Leakage: (PE leakage × PEs + SRAM leakage × KiB) × the op's cycles / clock, when the table has
  leakage (it needs a clock then).

Energies are pJ. An op's energy is the sum over its GEMMs (× their ``count``) and vector work,
so a δ split into D1/D2 sub-GEMMs is costed as what it is, never as a share of δ.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from archsim.array.analytic import gemm_cost
from archsim.array.config import ArrayConfig
from archsim.array.costing import check_engine, cycle_results, op_cycles
from archsim.console import setting
from archsim.energy.table import AccessEnergies, access_energies
from archsim.errors import InputError
from archsim.lowering import LoweredLayer, Mode, TrainingOp, lower_network
from archsim.lowering.gemm_arrays import flatten_gemms
from archsim.workload.layer import Network

if TYPE_CHECKING:
    import pandas as pd  # annotations only: loaded where used (``archsim cost`` needs none of it)

COUNTS = ("macs", "register_words", "psum_register_words", "ifmap_sram_reads", "filter_sram_reads", "ofmap_sram_reads",
          "ifmap_sram_writes", "filter_sram_writes", "ofmap_sram_writes", "ifmap_dram_reads", "filter_dram_reads",
          "ofmap_dram_writes", "vector_elements")
# energy column → (per-event figure of AccessEnergies, counts it multiplies); register_pj: its operand words at
# register_pj, its partial sums (psum_register_words, a part of register_words) at psum_register_pj (energy_columns)
PARTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "mac_pj": ("mac_pj", ("macs",)),
    "register_pj": ("register_pj", ("register_words",)),
    "ifmap_sram_read_pj": ("ifmap_read_pj", ("ifmap_sram_reads",)),
    "filter_sram_read_pj": ("filter_read_pj", ("filter_sram_reads",)),
    "ofmap_sram_read_pj": ("ofmap_read_pj", ("ofmap_sram_reads",)),
    "ifmap_sram_write_pj": ("ifmap_write_pj", ("ifmap_sram_writes",)),
    "filter_sram_write_pj": ("filter_write_pj", ("filter_sram_writes",)),
    "ofmap_sram_write_pj": ("ofmap_write_pj", ("ofmap_sram_writes",)),
    "dram_read_pj": ("dram_read_pj", ("ifmap_dram_reads", "filter_dram_reads")),
    "dram_write_pj": ("dram_write_pj", ("ofmap_dram_writes",)),
    "vector_pj": ("vector_pj", ("vector_elements",)),
}
ENERGY_COLUMNS = (*PARTS, "leakage_pj", "energy_pj")
DramWords = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]
"""(m, k, n, count) of each GEMM → its (ifmap, filter, ofmap) DRAM words, shape (N, 3), one of ``count`` dealt
together: a caller's own count (module docstring), replacing the engine's."""


def gemm_counts(m: np.ndarray, k: np.ndarray, n: np.ndarray, array: ArrayConfig,
                engine: str = "analytic", dram_words: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Event counts (words of the array's element size) of each GEMM out[m×n] = A[m×k]·B[k×n]. ``dram_words``:
    each GEMM's (ifmap, filter, ofmap) DRAM words, shape (N, 3), counted by the caller (:data:`DramWords`), in place
    of ``engine``'s; the SRAM fills and drains follow them."""
    check_engine(engine)
    m, k, n = (np.asarray(x, dtype=np.int64) for x in (m, k, n))
    cost = gemm_cost(m, k, n, array.rows, array.cols, array.dataflow, ofmap_count="true")
    if dram_words is not None:
        ifmap_dram, filter_dram, ofmap_dram = np.asarray(dram_words, dtype=np.int64).T
    elif engine == "cycle":
        results, index = cycle_results(m, k, n, array)  # the cost's loop and bar: numba loads only for it
        traffic = np.array([[r.ifmap_dram_reads, r.filter_dram_reads, r.ofmap_dram_writes] for r in results],
                           dtype=np.int64).reshape(-1, 3)[index]
        ifmap_dram, filter_dram, ofmap_dram = traffic.T
    else:
        ifmap_dram, filter_dram, ofmap_dram = m * k, k * n, m * n
    stationary = {"ws": k * n, "is": m * k, "os": m * n}[array.dataflow]
    return {
        "macs": cost.macs,
        "register_words": 2 * cost.macs + stationary,
        "psum_register_words": np.asarray(m * n if array.dataflow == "os" else cost.macs),
        "ifmap_sram_reads": cost.ifmap_sram_reads,
        "filter_sram_reads": cost.filter_sram_reads,
        "ofmap_sram_reads": cost.ofmap_sram_writes - m * n + ofmap_dram,
        "ifmap_sram_writes": np.asarray(ifmap_dram),
        "filter_sram_writes": np.asarray(filter_dram),
        "ofmap_sram_writes": cost.ofmap_sram_writes,
        "ifmap_dram_reads": np.asarray(ifmap_dram),
        "filter_dram_reads": np.asarray(filter_dram),
        "ofmap_dram_writes": np.asarray(ofmap_dram),
    }


def op_counts(ops: Sequence[TrainingOp], array: ArrayConfig, engine: str = "analytic") -> pd.DataFrame:
    """One row per op: layer, op kind, cycles and every event count of :data:`COUNTS`."""
    import pandas as pd

    return pd.DataFrame(op_count_columns(ops, array, engine))


def op_count_columns(ops: Sequence[TrainingOp], array: ArrayConfig, engine: str = "analytic",
                     dram: DramWords | None = None) -> dict[str, Any]:
    """:func:`op_counts`' columns by name (lists of text, int64 arrays), without pandas; ``dram``: the caller's
    DRAM count (:data:`DramWords`), in place of ``engine``'s."""
    owner, m, k, n, count = flatten_gemms(ops)
    totals = {name: np.zeros(len(ops), dtype=np.int64) for name in COUNTS}
    if owner.size:
        words = None if dram is None else dram(m, k, n, count)
        for name, values in gemm_counts(m, k, n, array, engine, words).items():
            np.add.at(totals[name], owner, values * count)
    totals["vector_elements"] = np.asarray([op.vector_elements for op in ops], dtype=np.int64)
    return {"layer": [op.layer for op in ops], "op": [op.kind for op in ops], "cycles": op_cycles(ops, array, engine),
            **{name: totals[name] for name in COUNTS}}


def nonmatmul_picojoules(ops: Sequence[TrainingOp], energies: AccessEnergies) -> float:
    """Picojoules of ``ops``' fused non-matmul work: FP32 lane operations, exponentials, 32-bit integer multiplies
    and the other integer instructions, each at its ``energies`` figure (pJ per instruction at every dtype)."""
    lane = sum(op.lane_ops for op in ops) * energies.lane_pj + sum(op.exps for op in ops) * energies.exp_pj
    mults = sum(op.int_mults for op in ops)
    return lane + (sum(op.int_ops for op in ops) - mults) * energies.int_pj + mults * energies.int_mult_pj


def static_power_mw(energies: AccessEnergies, array: ArrayConfig) -> float:
    """Leakage power of one array (mW): its PEs and the KiB of its three SRAMs."""
    return energies.pe_leakage_mw * array.pes + energies.sram_leakage_mw_per_kib * (
        array.ifmap_sram_kb + array.filter_sram_kb + array.ofmap_sram_kb)


def energy_of(counts: pd.DataFrame, energies: AccessEnergies, array: ArrayConfig) -> pd.DataFrame:
    """Energy (pJ) of each row of ``counts`` (columns :data:`COUNTS` and ``cycles``), by part:
    :func:`energy_columns` as a DataFrame on the same index."""
    import pandas as pd

    return pd.DataFrame(energy_columns(counts, energies, array), index=counts.index)


def energy_columns(counts: Mapping[str, Any], energies: AccessEnergies, array: ArrayConfig) -> dict[str, np.ndarray]:
    """Energy (pJ, float64 arrays by :data:`ENERGY_COLUMNS`) of each row of ``counts`` (columns of
    :data:`COUNTS` and ``cycles``: a DataFrame or :func:`op_count_columns`), without pandas."""
    out: dict[str, np.ndarray] = {}
    for column, (figure, names) in PARTS.items():
        events = sum(np.asarray(counts[name], dtype=np.float64) for name in names)
        out[column] = events * getattr(energies, figure)
    psums = np.asarray(counts["psum_register_words"], dtype=np.float64)
    out["register_pj"] = (np.asarray(counts["register_words"], dtype=np.float64) - psums) * energies.register_pj \
        + psums * energies.psum_register_pj
    static_mw = static_power_mw(energies, array)
    if static_mw > 0 and array.clock_hz is None:
        raise InputError(f"leakage needs the array's clock ({setting('clock-ghz')} or [archsim] ClockGHz)", field="clock-ghz")
    seconds = np.asarray(counts["cycles"], dtype=np.float64) / (array.clock_hz or 1.0)
    out["leakage_pj"] = static_mw * seconds * 1e9 if static_mw > 0 else np.zeros(len(seconds))  # mW·s = 1e9 pJ
    total = out["mac_pj"]
    for column in [*list(PARTS)[1:], "leakage_pj"]:  # part by part, in this order (as a DataFrame's row sums)
        total = total + out[column]
    out["energy_pj"] = total
    return out


def op_energy(ops: Sequence[TrainingOp], array: ArrayConfig, energies: AccessEnergies | None = None,
              engine: str = "analytic") -> pd.DataFrame:
    """Per op: counts (:func:`op_counts`) then energy by part (:data:`ENERGY_COLUMNS`, pJ)."""
    import pandas as pd

    return pd.DataFrame(op_energy_columns(ops, array, energies, engine))


def op_energy_columns(ops: Sequence[TrainingOp], array: ArrayConfig, energies: AccessEnergies | None = None,
                      engine: str = "analytic", dram: DramWords | None = None) -> dict[str, Any]:
    """:func:`op_energy`'s columns by name, without pandas; ``dram``: the caller's DRAM count (:data:`DramWords`: a
    device file's ``dram_traffic = "scalesim"``), in place of ``engine``'s."""
    counts = op_count_columns(ops, array, engine, dram)
    return {**counts, **energy_columns(counts, energies or access_energies(array), array)}


LAYER_ENERGY_COLUMNS = ("layer", "F_energy_pj", "G_energy_pj", "D_energy_pj", "energy_pj")


def layer_energy(lowered: Sequence[LoweredLayer], array: ArrayConfig, energies: AccessEnergies | None = None,
                 engine: str = "analytic") -> pd.DataFrame:
    """Per layer: F, G, D energy (pJ, a split δ's D1 + D2 under D) and the total."""
    import pandas as pd

    return pd.DataFrame(layer_energy_rows(lowered, array, energies, engine), columns=list(LAYER_ENERGY_COLUMNS))


def layer_energy_rows(lowered: Sequence[LoweredLayer], array: ArrayConfig, energies: AccessEnergies | None = None,
                      engine: str = "analytic", dram: DramWords | None = None) -> list[dict]:
    """:func:`layer_energy`'s rows as plain records, without pandas; ``dram``: the caller's DRAM count
    (:data:`DramWords`), in place of ``engine``'s."""
    return [{"layer": item.layer.name, **{f"{kind}_energy_pj": energy for kind, (energy, _) in kinds.items()},
             "energy_pj": sum(energy for energy, _ in kinds.values())}
            for item, kinds in zip(lowered, layer_kind_energy(lowered, array, energies, engine, dram), strict=True)]


def layer_kind_energy(lowered: Sequence[LoweredLayer], array: ArrayConfig, energies: AccessEnergies | None = None,
                      engine: str = "analytic", dram: DramWords | None = None) -> list[dict[str, tuple[float, float]]]:
    """Per layer, per op kind (F, G, D: a split δ's D1 + D2 under D), (energy, its leakage) in pJ, the leakage one
    array's over the ops' cycles: what a caller pricing the chip's static power instead replaces
    (:func:`archsim.energy_run.chip_priced_pj`); ``dram``: the caller's DRAM count (:data:`DramWords`)."""
    ops = [op for item in lowered for op in item.ops]
    columns = op_energy_columns(ops, array, energies, engine, dram)
    per_op, leakage = columns["energy_pj"].tolist(), columns["leakage_pj"].tolist()
    layers = []
    position = 0
    for item in lowered:
        kinds = {"F": [0.0, 0.0], "G": [0.0, 0.0], "D": [0.0, 0.0]}
        for op in item.ops:
            kinds[op.kind[0]][0] += float(per_op[position])
            kinds[op.kind[0]][1] += float(leakage[position])
            position += 1
        layers.append({kind: (energy, leak) for kind, (energy, leak) in kinds.items()})
    return layers


def with_layer_energy(rows: Sequence[dict], lowered: Sequence[LoweredLayer], array: ArrayConfig,
                      energies: AccessEnergies | None = None, engine: str = "analytic",
                      dram: DramWords | None = None) -> list[dict]:
    """``rows`` (``layer_cost_rows`` of ``lowered``) each with its layer's F/G/D energy and total (pJ) after
    its own columns: the table of ``archsim cost --energy`` and ``archsim.cost(energy=True)``; ``dram``: the
    caller's DRAM count (:data:`DramWords`: a device file's ``dram_traffic = "scalesim"``)."""
    energy = layer_energy_rows(lowered, array, energies, engine, dram)
    return [{**row, **{name: value for name, value in e.items() if name != "layer"}} for row, e in zip(rows, energy)]


def iteration_energy(network: Network, array: ArrayConfig, batch: int, mode: Mode = "exact",
                     engine: str = "analytic", energies: AccessEnergies | None = None,
                     microbatches: int = 1) -> pd.DataFrame:
    """Energy of one training iteration by part and op kind: one row per kind (F, G, D) and a TOTAL:
    :func:`iteration_energy_rows` as a DataFrame."""
    import pandas as pd

    return pd.DataFrame(iteration_energy_rows(network, array, batch, mode, engine, energies, microbatches))


def iteration_energy_rows(network: Network, array: ArrayConfig, batch: int, mode: Mode = "exact",
                          engine: str = "analytic", energies: AccessEnergies | None = None,
                          microbatches: int = 1, dram: DramWords | None = None) -> list[dict]:
    """:func:`iteration_energy`'s rows (op, cycles, :data:`COUNTS`, :data:`ENERGY_COLUMNS`), without pandas;
    ``dram``: the caller's DRAM count (:data:`DramWords`: ``energy`` on a device file's ``dram_traffic =
    "scalesim"``), in place of ``engine``'s.

    With ``microbatches`` M the batch runs as M micro-batches of batch / M (which must divide), so
    every GEMM is M times a smaller one — fold and fill effects included. Each kind's floats are
    summed with Kahan compensation in op order and the TOTAL kind by kind, as pandas' group sums
    were (the same floats as before this moved off pandas)."""
    if batch % microbatches:
        raise InputError(f"micro-batches ({microbatches}) must divide the batch ({batch})", field="microbatches")
    lowered = lower_network(network, batch // microbatches, mode, array.element_bytes)
    per_op = op_energy_columns([op for item in lowered for op in item.ops], array, energies, engine, dram)
    numeric = ["cycles", *COUNTS, *ENERGY_COLUMNS]
    values = {name: np.asarray(per_op[name]) * microbatches for name in numeric}
    kinds = [op[0] for op in per_op["op"]]
    rows = [{"op": kind, **{name: _group_sum(values[name], [k == kind for k in kinds]) for name in numeric}}
            for kind in dict.fromkeys(kinds)]
    total: dict[str, object] = {"op": "TOTAL"}
    for name in numeric:
        acc: Any = 0 if values[name].dtype.kind == "i" else 0.0
        for row in rows:
            acc += row[name]
        total[name] = acc
    return [*rows, total]


def _group_sum(values: np.ndarray, members: list[bool]) -> int | float:
    """The sum of ``values`` where ``members``: exact for integers; for floats, Kahan-compensated in
    order (pandas' groupby sum, whose numbers archsim printed first)."""
    if values.dtype.kind == "i":
        return int(values[np.asarray(members, dtype=bool)].sum()) if values.size else 0
    total = compensation = 0.0
    for value, member in zip(values.tolist(), members):
        if member:
            y = value - compensation
            t = total + y
            compensation = t - total - y
            if math.isnan(compensation):  # an infinite value: no compensation (pandas GH#53606)
                compensation = 0.0
            total = t
    return total
