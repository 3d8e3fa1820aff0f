"""A SCALE-Sim sparsity run, whole: a ``.cfg`` with ``SparsitySupport`` on and a topology with its
``Sparsity`` column → one row per layer with SCALE-Sim's compute report, SRAM counts and sparse
report (:func:`~archsim.array.sparsity.sparse_layer_cost`), and the δ and G cycles of training on
the pruned layer (:mod:`archsim.array.sparse_training`) beside the dense ones.

Layers load in SCALE-Sim's geometry (``load_topology(..., geometry="scalesim")``), so each row's
forward GEMM is the one SCALE-Sim simulates; a depthwise (``DP``) row is SCALE-Sim's one layer per
channel, its figures summed over the channels. ``F_cycles`` are stall-free (SCALE-Sim's Total
Cycles minus its Stall Cycles). In USER bandwidth mode with layer-wise N:M, :func:`memory_columns`
adds the memory stalls: SCALE-Sim then runs the condensed GEMM (the ifmap's kept columns, the
filter's kept rows, built like dense operands) through the same memory model as a dense one, so the
cycle engine on M × K' × N, given a conv layer's windows (:func:`kept_windows`: its kept columns
repeat the words of overlapping windows), gives its stall cycles, Total Cycles and DRAM counts.
Row-wise mapping (``OptimizedMapping``) streams the unpruned ifmap with its own skew, which the
engine does not model: there the columns are absent and the output says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from archsim.array.config import ArrayConfig, read_scalesim_cfg
from archsim.array.device_sections import is_device_toml
from archsim.array.sparse_input import read_sparsity_column, read_sparsity_section
from archsim.array.sparse_training import SparseTraining, backward_gemms, gemms_cycles
from archsim.array.sparsity import SparsityConfig, sparse_layer_cost
from archsim.errors import InputError
from archsim.lowering import Mode, lower_layer
from archsim.workload import load_topology
from archsim.workload.layer import Layer, Network
from archsim.workload.layer_types import CONV_FC_KINDS
from archsim.workload.shipped import shipped_networks

if TYPE_CHECKING:
    from archsim.array.cycle import ConvWindows

def read_sparse_run(config: str | Path, topology: str | Path) -> tuple[ArrayConfig, SparsityConfig, Network,
                                                                       list[tuple[int, int]]]:
    """The array, its ``[sparsity]`` section, the network and each layer's N:M, as SCALE-Sim reads them. A device
    TOML is refused in one line: it states no ``[sparsity]`` section (the flags cost's refusal named, sparse lacks)."""
    if is_device_toml(config):
        raise InputError("a device TOML states no [sparsity] section: sparse reads a SCALE-Sim .cfg with [sparsity] "
                         "SparsitySupport : true (a .cfg device file of the chip, with that section, serves both)",
                         file=str(config))
    array = read_scalesim_cfg(config, sparsity=True)
    sparsity = read_sparsity_section(config)
    if sparsity is None:
        raise InputError("SparsitySupport is not true in [sparsity]; `archsim cost` or `archsim gemm` cost a dense "
                         "array", file=str(config), field="SparsitySupport")
    if not Path(topology).exists() and str(topology).strip().lower().replace("-", "_") in shipped_networks():
        raise InputError("a shipped network has no Sparsity N:M column: give a SCALE-Sim topology CSV with one "
                         "(docs/examples/pruned_convs.csv)", file=str(topology), field="NETWORK")
    network = load_topology(topology, geometry="scalesim")
    ratios = read_sparsity_column(topology)
    if len(ratios) != len(network.layers):
        raise InputError(f"{len(ratios)} sparsity rows for {len(network.layers)} layers", file=str(topology))
    return array, sparsity, network, ratios


def memory_modelled(array: ArrayConfig, sparsity: SparsityConfig) -> bool:
    """Whether :func:`memory_columns` applies: USER bandwidth mode and layer-wise N:M."""
    return array.user_bandwidth and not sparsity.optimized_mapping


def kept_windows(layer: Layer, m: int, k: int, ratio: tuple[int, int]) -> ConvWindows | None:
    """The windows of a SCALE-Sim-geometry conv layer's forward GEMM (M × K, K = taps × channels per
    GEMM), condensed by layer-wise N:M to the columns j with j mod M < N: overlapping windows repeat
    ifmap words, and SCALE-Sim's ⌈(H − f + s)/s⌉ outputs put off-edge taps (null words) in windows
    that run past the ifmap. None for a layer that is not a plain convolution (fc)."""
    from archsim.array.cycle import ConvWindows

    taps = layer.filter_h * layer.filter_w
    eh, ew = layer.ofmap_h, layer.ofmap_w
    if layer.kind != "conv" or layer.dilation != 1 or k % taps or m != eh * ew:
        return None
    kept = tuple(j for j in range(k) if j % ratio[1] < ratio[0])
    return ConvWindows(eh, ew, layer.filter_h, layer.filter_w, k // taps, layer.stride, kept, layer.ifmap_h,
                       layer.ifmap_w)


def memory_columns(m: int, condensed_k: int, n: int, count: int, array: ArrayConfig,
                   windows: ConvWindows | None = None) -> dict[str, int]:
    """SCALE-Sim's USER-mode stall cycles, Total Cycles ("Compute cycles", stalls included) and DRAM
    words of a layer-wise sparse layer (``count`` copies): the cycle engine on the condensed GEMM,
    its ifmap words repeated as the layer's overlapping ``windows`` repeat them (:func:`kept_windows`)."""
    from archsim.array.cycle import simulate_gemm, sram_words  # numba: USER mode only

    run = simulate_gemm(m, condensed_k, n, array.rows, array.cols, array.dataflow, sram_words=sram_words(array),
                        bandwidth=array.dram_bandwidths, conv=windows)
    return {"F_stall_cycles": run.stall_cycles * count, "F_total_cycles": run.cycles * count,
            "ifmap_dram_reads": run.ifmap_dram_reads * count, "filter_dram_reads": run.filter_dram_reads * count,
            "ofmap_dram_writes": run.ofmap_dram_writes * count}


def sparse_table(array: ArrayConfig, sparsity: SparsityConfig, network: Network, ratios: list[tuple[int, int]],
                 options: SparseTraining = SparseTraining(), batch: int = 1, energy: bool = False,
                 mode: Mode = "exact") -> pd.DataFrame:
    """One row per conv/fc layer (see the module docstring); ``batch`` multiplies M (SCALE-Sim: 1).
    δ and G are archsim's lowering (``mode``) of the layer, shrunk by ``options``
    (:func:`~archsim.array.sparse_training.backward_gemms`); the ``*_dense_cycles`` are the unpruned ones.
    ``energy``: add ``energy_pj`` (F + δ + G of the pruned layer, :mod:`archsim.energy.sparse`, the
    array's default energy table) and ``dense_energy_pj`` (the same layer unpruned)."""
    rows, cols, dataflow = array.rows, array.cols, array.dataflow
    records = []
    for layer, ratio in zip(network.layers, ratios):
        lowered = lower_layer(layer, batch=batch, mode=mode, element_bytes=array.element_bytes)
        forward = lowered.required_op("F").gemms
        if len(forward) != 1 or layer.kind not in CONV_FC_KINDS:
            raise InputError(f"{layer.kind} layers have no SCALE-Sim sparse mapping", field=layer.name)
        (gemm,) = forward
        cost = sparse_layer_cost(gemm.m, gemm.k, gemm.n, rows, cols, dataflow, ratio, sparsity)
        back = backward_gemms(lowered, ratio, sparsity, options)
        dense = {op.kind: gemms_cycles(op.gemms, rows, cols, dataflow) for op in lowered.ops}
        count = gemm.count
        extra = {}
        if energy:
            from archsim.energy.sparse import dense_layer_counts, sparse_layer_counts, with_energy

            extra = {"energy_pj": with_energy(sparse_layer_counts(lowered, array, ratio, sparsity, options), array),
                     "dense_energy_pj": with_energy(dense_layer_counts(lowered, array), array)}
        if memory_modelled(array, sparsity):
            extra.update(memory_columns(gemm.m, cost.filter_rows, gemm.n, count, array,
                                        kept_windows(layer, gemm.m, gemm.k, ratio)))
        records.append({
            "layer": layer.name, "sparsity": f"{ratio[0]}:{ratio[1]}", "m": gemm.m, "k": gemm.k, "n": gemm.n,
            "count": count, "filter_rows": cost.filter_rows,
            "F_cycles": cost.cycles * count, "F_dense_cycles": dense["F"],
            "folds": cost.folds * count, "mapping_efficiency": cost.mapping_efficiency,
            "ifmap_sram_reads": cost.ifmap_sram_reads * count, "filter_sram_reads": cost.filter_sram_reads * count,
            "ofmap_sram_writes": cost.ofmap_sram_writes * count,
            "original_storage": cost.original_storage * count, "new_storage": cost.new_storage * count,
            "metadata_storage": cost.metadata_storage * count,
            "D_cycles": gemms_cycles(back.get("D", ()), rows, cols, dataflow), "D_dense_cycles": dense.get("D", 0),
            "G_cycles": gemms_cycles(back["G"], rows, cols, dataflow), "G_dense_cycles": dense["G"], **extra,
        })
    return pd.DataFrame.from_records(records)
