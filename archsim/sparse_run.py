"""``archsim sparse``'s run, once for the command and :func:`archsim.sparse`: a SCALE-Sim sparsity run (a ``.cfg``
with ``[sparsity] SparsitySupport : true`` and a topology with a ``Sparsity`` column), per layer SCALE-Sim's compute
cycles, SRAM counts and sparse report and the δ/G cycles of training the pruned layer; or, given ``processors``, the
pruned network partitioned. :func:`run_sparse` takes the flags' values as keywords of the same names, refuses what
the command refuses with the same lines, and returns the table and meta it prints. Cycles are array clock cycles."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from archsim.console import setting, switch_on
from archsim.errors import InputError

if TYPE_CHECKING:
    import pandas as pd  # annotations only: loaded where used


@dataclass(frozen=True)
class SparseRun:
    """One run's printed table (the layer table, or the partition's stages) and its meta."""

    table: pd.DataFrame
    meta: dict


def stalls_note(array, sparsity) -> str:
    """What the table says of memory stalls, in one line."""
    from archsim.array.sparse_network import memory_modelled  # pandas: only when the command runs

    if not array.user_bandwidth:
        return "none: CALC bandwidth mode (F_cycles are SCALE-Sim's Total Cycles)"
    if memory_modelled(array, sparsity):
        return ("cycle engine on the condensed GEMM with each conv layer's windows (repeated ifmap words, off-edge "
                "nulls): F_total_cycles and F_stall_cycles are SCALE-Sim's USER-mode Total and Stall Cycles, exact "
                "for GEMM, fc and conv layers (dilation 1)")
    return ("not modelled for row-wise mapping (OptimizedMapping): F_cycles are SCALE-Sim's Total Cycles minus "
            "Stall Cycles")


def check_flags(processors: int | None, method: str | None, energy: bool) -> None:
    """Refuse a setting the run would drop: ``method`` only partitions, ``energy`` is a layer-table column."""
    if processors is None and method is not None:
        raise InputError(f"{setting('method')} needs {setting('processors')} (without it the layer table is printed)",
                         field="method")
    if processors is not None and energy:
        raise InputError(f"{switch_on('energy')} adds columns to the layer table; {setting('processors')} prints the "
                         "partition instead", field="energy")


def ratios_note(sparsity, ratios) -> str:
    """What row-wise mapping (OptimizedMapping) does with the topology's N:M column, as SCALE-Sim does: each filter
    keeps n of every block of BlockSize weights, n drawn from the seed, so the column's N sets nothing."""
    shown = ", ".join(dict.fromkeys(f"{n}:{m}" for n, m in ratios))
    metadata = " (only their M sizes ELLPACK's metadata)" if sparsity.representation == "ellpack_block" else ""
    return (f"row-wise mapping (OptimizedMapping): each filter keeps n of every block of {sparsity.block_size} "
            f"weights, n drawn from the seed in 1…{sparsity.block_size // 2}, as SCALE-Sim does; the topology's "
            f"Sparsity ratios ({shown}) do not set the kept weights{metadata}: set OptimizedMapping false to cost them")


def run_sparse(network: str | Path, *, config: str | Path, delta: str = "transposed", gradient: str = "dense",
               batch: int = 1, energy: bool = False, processors: int | None = None,
               method: str | None = None) -> SparseRun:
    """One ``archsim sparse`` run: each keyword its flag's value, already of the flag's type (``network``: the
    topology CSV, NETWORK or ``--topology``)."""
    from archsim.array.sparse_network import read_sparse_run, sparse_table
    from archsim.array.sparse_training import SparseTraining
    from archsim.partition import build_profile
    from archsim.partition.pruned import pruned_profile
    from archsim.planners import partition

    check_flags(processors, method, energy)
    array, sparsity, layers, ratios = read_sparse_run(str(config), str(network))
    options = SparseTraining(delta=delta, gradient=gradient)
    table = sparse_table(array, sparsity, layers, ratios, options, batch, energy)
    meta = {"array": f"{array.rows}x{array.cols}", "dataflow": array.dataflow,
            "representation": sparsity.representation, "optimized_mapping": sparsity.optimized_mapping,
            # BlockSize is read with row-wise mapping only (layer-wise N:M: each layer's M is its block)
            "block_size": sparsity.block_size if sparsity.optimized_mapping else None, "seed": sparsity.seed,
            "delta": delta, "gradient": gradient, "batch": batch, "stalls": stalls_note(array, sparsity)}
    if sparsity.optimized_mapping:  # SCALE-Sim draws the ratios itself there: the column is not what ran
        meta["ratios"] = ratios_note(sparsity, ratios)
    if processors is not None:
        dense = build_profile(layers, array, batch, "exact")
        pruned = pruned_profile(table, dense, array.element_bytes)
        chosen = method or "layerpipe"
        plan = partition(pruned, processors, chosen)
        unsplit = replace(pruned, forward=dense.forward, weight_grad=dense.weight_grad, delta=dense.delta,
                          weight_bytes=dense.weight_bytes)  # the dense network under the same rules
        meta.update(method=chosen, processors=processors,
                    single_processor_cycles=float(pruned.total.sum()),
                    dense_single_processor_cycles=float(dense.total.sum()),
                    iteration_cycles=plan.max_stage_cost,
                    dense_iteration_cycles=partition(unsplit, processors, chosen).max_stage_cost)
        table = plan.to_frame()
    return SparseRun(table, meta)


__all__ = ["SparseRun", "check_flags", "ratios_note", "run_sparse", "stalls_note"]
