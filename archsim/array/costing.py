"""Training ops → cycles on an array: the one place ops meet a cost source.

Every partitioner and schedule reads op costs from here, so a new cost source plugs in behind
:func:`op_cycles` without touching them. Engines:

* ``analytic``: compute cycles only; all GEMMs of all ops go through one vectorized
  :func:`~archsim.array.analytic.gemm_cost` call.
* ``cycle``: memory-aware — compute + stall cycles of :mod:`archsim.array.cycle` (SCALE-Sim's USER
  bandwidth model with the array's SRAMs and ``bandwidth[0]`` words/cycle), each distinct GEMM shape
  stepped once (cached), plus stall cycles and DRAM bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from archsim.array.analytic import gemm_cost
from archsim.array.config import ArrayConfig
from archsim.choices.devices import ENGINES
from archsim.errors import InputError
from archsim.lowering import LoweredLayer, Mode, TrainingOp, lower_network
from archsim.lowering.gemm_arrays import flatten_gemms
from archsim.validate import check_exact
from archsim.workload.layer import Network

if TYPE_CHECKING:
    import pandas as pd  # annotations only: loaded where used

CYCLE_COLUMNS = ("stall_cycles", "dram_read_bytes", "dram_write_bytes")
STEPS_PER_SECOND = 1_200_000  # stall-free cycles the cycle engine steps a second, about (archsim.array.cycle.MAX_STEPS)
REFETCH_NOTED = 10  # an operand read from DRAM this many times its words or more, in an op mostly stalled, is noted


def _check_total(per_gemm: np.ndarray, count: np.ndarray, vector: np.ndarray, what: str) -> None:
    """Refuse when the network's summed ``what`` would pass 2^53 (int64 sums could wrap)."""
    check_exact(float(np.sum(per_gemm.astype(np.float64) * count)) + float(np.sum(vector, dtype=np.float64)),
                f"the network's total {what}")


def check_engine(engine: str) -> None:
    """Refuse an unknown GEMM cycle engine (``--engine``): the array's costing and the energy model's event
    counts (:mod:`archsim.energy.model`) take the same engines and refuse alike."""
    if engine not in ENGINES:
        raise InputError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}", field="engine")


def rated_k(k: npt.ArrayLike, array: ArrayConfig) -> np.ndarray:
    """The reduction depth each GEMM of depth ``k`` is timed at on ``array``: train's packing at the array's MACs per
    PE per cycle (:func:`archsim.array.mac_rates.packed_k`, ``array.mac_rate``); ``k`` itself at 1. Its MACs and
    SRAM words stay the real GEMM's."""
    from archsim.array.mac_rates import packed_k

    return np.asarray(k) if array.mac_rate == 1 else packed_k(k, array.mac_rate)


def bar_delay(work: float) -> float:
    """Seconds before the cycle engine's bar is drawn, for ``work`` stall-free cycles to step (the analytic cycles: a
    measure of its stepping, :data:`STEPS_PER_SECOND`). A bar with a delay is drawn only at an update past it, so one
    long GEMM would run unseen: at once (0) where the run is a second or more of stepping, else after 1 s (never, for
    a quick run)."""
    return 0.0 if work >= STEPS_PER_SECOND else 1.0


def cycle_results(m: np.ndarray, k: np.ndarray, n: np.ndarray, array: ArrayConfig) -> tuple[list, np.ndarray]:
    """(results, index): the cycle engine's result of each distinct GEMM shape among ``m``, ``k``, ``n``, each
    stepped once, and each GEMM's row in them. The one loop the cycle engine's costs and energies step through, with
    its progress bar (a network's cycle-engine run takes seconds to minutes: shown on a terminal after a second)."""
    from archsim.array.cycle import simulate_cached  # numba loads only for the cycle engine
    from archsim.progress import progress

    shapes, inverse = np.unique(np.stack([m, k, n], axis=1), axis=0, return_inverse=True)
    results = []
    # The simulation steps through every cycle: the analytic (stall-free) cycles measure its work.
    work = gemm_cost(shapes[:, 0], shapes[:, 1], shapes[:, 2], array.rows, array.cols, array.dataflow).cycles.tolist()
    with progress(int(sum(work)), "cycle engine", "cycle", delay=bar_delay(sum(work)), unit_scale=True) as bar:
        for row, (a, b, c) in enumerate(shapes.tolist()):
            bar.set_postfix_str(f"{a}x{b}x{c}")
            results.append(simulate_cached(a, b, c, array))
            bar.update(work[row])
    return results, inverse.reshape(-1)


def refetch_note(ops: Sequence[TrainingOp], array: ArrayConfig) -> str | None:
    """One line naming the op whose operand the cycle engine re-reads from DRAM most (its reads ÷ its words, as
    SCALE-Sim counts them: pads and wrapped prefetch windows included), where that is :data:`REFETCH_NOTED` times
    or more and stalls are most of the op's cycles; None otherwise. Why: such a run can take minutes and give
    cycles far above the analytic ones, which is SCALE-Sim's memory model, not an error. Each GEMM's result is
    the cached one the costing stepped (:func:`~archsim.array.cycle.simulate_cached`)."""
    from archsim.array.cycle import simulate_cached, sram_words

    worst: tuple[float, str] | None = None
    for op in ops:
        results = [(g, simulate_cached(g.m, int(rated_k(np.int64(g.k), array)), g.n, array)) for g in op.gemms]
        cycles = sum(r.cycles * g.count for g, r in results)
        stalls = sum(r.stall_cycles * g.count for g, r in results)
        if not results or 2 * stalls < cycles:
            continue
        for g, r in results:
            for operand, reads, words, sram in (("A", r.ifmap_dram_reads, g.m * g.k, 0),
                                                ("B", r.filter_dram_reads, g.k * g.n, 1)):
                times = reads / words
                if times >= REFETCH_NOTED and (worst is None or times > worst[0]):
                    half = -(-sram_words(array)[sram] // 2)
                    text = (f"{op.layer}'s {op.kind} (a {g.m}x{g.k}x{g.n} GEMM) reads its {operand} operand, "
                            f"{words:,} words through an SRAM half of {half:,}, {times:,.0f} times over from DRAM "
                            f"and stalls {stalls / cycles:.1%} of its {cycles:,} cycles: SCALE-Sim's refetch, "
                            "counted as SCALE-Sim counts it (docs/concepts.md, \"A larger array can be slower\")")
                    worst = (times, text)
    return None if worst is None else worst[1]


def _cycle_figures(m: np.ndarray, k: np.ndarray, n: np.ndarray, array: ArrayConfig) -> np.ndarray:
    """Per GEMM: [cycles with stalls, stall cycles, DRAM read words, DRAM write words], each distinct
    shape simulated once."""
    results, index = cycle_results(m, k, n, array)
    figures = np.array([(r.cycles, r.stall_cycles, r.ifmap_dram_reads + r.filter_dram_reads, r.ofmap_dram_writes)
                        for r in results], dtype=np.int64).reshape(-1, 4)
    return figures[index]


def op_costs(ops: Sequence[TrainingOp], array: ArrayConfig, engine: str = "analytic") -> pd.DataFrame:
    """One row per op: cycles, MACs, utilization, array GEMM count and bytes (and, under the
    ``cycle`` engine, stall cycles and DRAM bytes read and written): :func:`op_cost_columns` as a DataFrame."""
    import pandas as pd

    return pd.DataFrame(op_cost_columns(ops, array, engine))


def op_cost_columns(ops: Sequence[TrainingOp], array: ArrayConfig, engine: str = "analytic") -> dict[str, Any]:
    """:func:`op_costs`' columns by name (lists of names, int64/float64 arrays), without pandas.

    GEMM cycles come from the chosen engine; vector-unit work costs ⌈elements / cols⌉ cycles
    (one lane per array column) and never stalls. Utilization: MACs ÷ (cycles · PEs · the array's MAC rate).
    """
    check_engine(engine)
    owner, m, k, n, count = flatten_gemms(ops)
    cycles = np.zeros(len(ops), dtype=np.int64)
    macs = np.zeros(len(ops), dtype=np.int64)
    extra = {column: np.zeros(len(ops), dtype=np.int64) for column in CYCLE_COLUMNS}
    if owner.size:
        cost = gemm_cost(m, k, n, array.rows, array.cols, array.dataflow)
        np.add.at(macs, owner, cost.macs * count)
        timed = cost if array.mac_rate == 1 else gemm_cost(m, rated_k(k, array), n, array.rows, array.cols,
                                                           array.dataflow)  # the packed GEMM's cycles
        if engine == "cycle":
            figures = _cycle_figures(m, rated_k(k, array), n, array)  # the packed GEMM stepped: its cycles, stalls
            words = figures if array.mac_rate == 1 else _cycle_figures(m, k, n, array)  # the real GEMM's DRAM words
            np.add.at(cycles, owner, figures[:, 0] * count)
            np.add.at(extra["stall_cycles"], owner, figures[:, 1] * count)
            np.add.at(extra["dram_read_bytes"], owner, words[:, 2] * count * array.element_bytes)
            np.add.at(extra["dram_write_bytes"], owner, words[:, 3] * count * array.element_bytes)
        else:
            np.add.at(cycles, owner, timed.cycles * count)
    vector = np.asarray([op.vector_elements for op in ops], dtype=np.int64)
    if owner.size:
        _check_total(timed.cycles if engine != "cycle" else figures[:, 0], count, vector, "cycles")
        _check_total(cost.macs, count, np.zeros(0), "MACs")
    cycles += -(-vector // array.cols)
    with np.errstate(divide="ignore", invalid="ignore"):
        # the share of the PEs' capacity, array.mac_rate MACs a PE a cycle (float: may pass int64)
        utilization = np.where(cycles > 0, macs / (np.maximum(cycles, 1) * float(array.pes) * array.mac_rate), 0.0)
    columns: dict[str, Any] = {
        "layer": [op.layer for op in ops],
        "op": [op.kind for op in ops],
        "cycles": cycles,
        "macs": macs,
        "utilization": utilization,
        "gemms": [sum(g.count for g in op.gemms) for op in ops],
        "vector_elements": vector,
        "out_bytes": np.asarray([op.out_bytes for op in ops], dtype=np.int64),
        "extra_bytes": np.asarray([op.extra_bytes for op in ops], dtype=np.int64),
    }
    if engine == "cycle":
        columns.update(extra)
    return columns


def op_cycles(ops: Sequence[TrainingOp], array: ArrayConfig, engine: str = "analytic") -> np.ndarray:
    """Cycles of each op (int64 array), the cost interface partitioners use (no pandas: hot path)."""
    check_engine(engine)
    owner, m, k, n, count = flatten_gemms(ops)
    cycles = np.zeros(len(ops), dtype=np.int64)
    if owner.size:
        k = rated_k(k, array)  # the reduction packed at the array's MACs per PE per cycle
        gemm = (_cycle_figures(m, k, n, array)[:, 0] if engine == "cycle"
                else gemm_cost(m, k, n, array.rows, array.cols, array.dataflow).cycles)
        np.add.at(cycles, owner, gemm * count)
    vector = np.fromiter((op.vector_elements for op in ops), dtype=np.int64, count=len(ops))
    if owner.size:
        _check_total(gemm, count, vector, "cycles")
    return cycles + -(-vector // array.cols)


LAYER_COLUMNS = ("layer", "type", "F_cycles", "G_cycles", "D_cycles", "total_cycles", "F_utilization",
                 "G_utilization", "D_utilization", "activation_bytes", "delta_bytes", "weight_bytes")


def cost_lowered(lowered: Sequence[LoweredLayer], array: ArrayConfig, engine: str = "analytic") -> pd.DataFrame:
    """Per-layer table: F/G/D cycles and utilization, total, and the tensors a stage boundary moves;
    under the ``cycle`` engine also the layer's stall cycles and DRAM bytes (F + G + D):
    :func:`layer_cost_rows` as a DataFrame."""
    return cost_frame(layer_cost_rows(lowered, array, engine), engine)


def cost_frame(rows: Sequence[dict], engine: str = "analytic") -> pd.DataFrame:
    """:func:`layer_cost_rows`' records (and any columns added to each, such as energy) as a DataFrame,
    the cycle and byte counts as int64."""
    import pandas as pd

    extra = CYCLE_COLUMNS if engine == "cycle" else ()
    names = [*LAYER_COLUMNS, *extra]
    names += [name for name in (rows[0] if rows else ()) if name not in names]
    frame = pd.DataFrame(list(rows), columns=names)
    for column in ("F_cycles", "G_cycles", "D_cycles", "total_cycles", "activation_bytes", "delta_bytes", "weight_bytes",
                   *extra):
        frame[column] = frame[column].astype(np.int64)
    return frame


def layer_cost_rows(lowered: Sequence[LoweredLayer], array: ArrayConfig, engine: str = "analytic") -> list[dict]:
    """:func:`cost_lowered`'s rows as plain records (Python ints and floats), without pandas."""
    ops = [op for item in lowered for op in item.ops]
    costs = op_cost_columns(ops, array, engine)
    extra = CYCLE_COLUMNS if engine == "cycle" else ()
    op_cycles_, utilization = costs["cycles"].tolist(), costs["utilization"].tolist()
    extras = {column: costs[column].tolist() for column in extra}
    rows = []
    position = 0
    for item in lowered:
        row: dict[str, object] = {"layer": item.layer.name, "type": item.layer.kind}
        for kind in ("F", "G", "D"):
            row[f"{kind}_cycles"] = 0
            row[f"{kind}_utilization"] = 0.0
        sums = dict.fromkeys(extra, 0)
        row.update(sums)
        cycles = {"F": 0, "G": 0, "D": 0}
        for op in item.ops:
            cycles[op.kind] = row[f"{op.kind}_cycles"] = int(op_cycles_[position])
            row[f"{op.kind}_utilization"] = float(utilization[position])
            for column in extra:
                sums[column] += int(extras[column][position])
                row[column] = sums[column]
            position += 1
        row["total_cycles"] = cycles["F"] + cycles["G"] + cycles["D"]
        row["activation_bytes"] = item.tensors.activation_bytes
        row["delta_bytes"] = item.tensors.delta_bytes
        row["weight_bytes"] = item.tensors.weight_bytes
        rows.append({column: row[column] for column in (*LAYER_COLUMNS, *extra)})
    return rows


def cost_network(network: Network, array: ArrayConfig, batch: int, mode: Mode = "exact",
                 engine: str = "analytic") -> pd.DataFrame:
    """Lower and cost a whole network: the table ``archsim cost`` prints (its rows:
    :func:`layer_cost_rows` of :func:`~archsim.lowering.lower_network`)."""
    return cost_lowered(lower_network(network, batch, mode, array.element_bytes), array, engine)
