"""Run the real SCALE-Sim 3.0.0 (the ``scalesim`` package) in-process on one layer or GEMM.

SCALE-Sim's own driver writes report files and prints. This harness instead writes a config in
SCALE-Sim's exact ``.cfg`` format into a temporary folder (deleted before the simulation starts),
builds the topology and layout objects from lists, runs ``single_layer_sim`` directly — which
writes no files unless asked to save traces — with its prints and warnings silenced, and reads the
numbers straight from the layer simulator: the compute report (``get_compute_report_items``), the
SRAM access counts (``single_layer_sim.ifmap_sram_reads`` …), the DRAM access counts and first and
last DRAM cycles of its detailed-access report (``get_detail_report_items``) and the fold counts of
the compute system. ``scalesim`` is imported lazily, so importing this module never needs it.

USER bandwidth mode: SCALE-Sim 3.0.0 takes the ofmap DRAM bandwidth from ``Bandwidth`` but the
ifmap and filter DRAM bandwidths from ``[layout] IfmapSRAMBankBandwidth`` / ``FilterSRAMBankBandwidth``
(``single_layer_sim.run``), and asserts that each is divisible by its bank count. The harness writes
``read_bandwidth`` (default: ``bandwidth``) there with one bank, so one ``bandwidth`` argument gives
all three operands the same words/cycle, as archsim's ``ArrayConfig.bandwidth`` means.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

# SCALE-Sim's shipped config format (its configs/google.cfg), every section it reads; ``ifmap`` and ``filter``:
# each read SRAM's (custom layout on, bank bandwidth, banks, ports per bank)
CONFIG = """[general]
run_name = reference

[architecture_presets]
ArrayHeight:    {rows}
ArrayWidth:     {cols}
IfmapSramSzkB:    {ifmap_kb}
FilterSramSzkB:   {filter_kb}
OfmapSramSzkB:    {ofmap_kb}
IfmapOffset:    0
FilterOffset:   {filter_offset}
OfmapOffset:    20000000
Bandwidth : {bandwidth}
Dataflow : {dataflow}
ReadRequestBuffer: 32
WriteRequestBuffer: 32

[layout]
IfmapCustomLayout: {ifmap[0]}
IfmapSRAMBankBandwidth: {ifmap[1]}
IfmapSRAMBankNum: {ifmap[2]}
IfmapSRAMBankPort: {ifmap[3]}
FilterCustomLayout: {filter[0]}
FilterSRAMBankBandwidth: {filter[1]}
FilterSRAMBankNum: {filter[2]}
FilterSRAMBankPort: {filter[3]}

[sparsity]
SparsitySupport : {sparse}
SparseRep : {representation}
OptimizedMapping : {optimized}
BlockSize : {block_size}
RandomNumberGeneratorSeed : {seed}

[run_presets]
InterfaceBandwidth: {mode}
UseRamulatorTrace: False
"""


@dataclass(frozen=True)
class Reference:
    """SCALE-Sim's numbers for one layer, in SCALE-Sim's units (ratios in percent, as it reports)."""

    compute_cycles: int  # "Compute cycles" of COMPUTE_REPORT.csv (get_compute_report_items()[1])
    stall_cycles: int
    overall_utilization: float  # percent
    mapping_efficiency: float  # percent, mean over folds
    compute_utilization: float  # percent, mean over folds
    ifmap_sram_reads: int
    filter_sram_reads: int
    ofmap_sram_writes: int
    folds: int  # folds the compute system iterated (one mapping-efficiency entry per fold)
    row_folds: int
    col_folds: int
    ifmap_dram_reads: int = 0  # words, DETAILED_ACCESS_REPORT "DRAM IFMAP Reads"
    filter_dram_reads: int = 0
    ofmap_dram_writes: int = 0
    cycles_incl_prefetch: int = 0  # COMPUTE_REPORT "Total Cycles (incl. prefetch)"


def config_text(rows: int, cols: int, dataflow: str, *, ifmap_kb: int = 64, filter_kb: int = 64,
                ofmap_kb: int = 64, bandwidth: int | None = None, read_bandwidth: int | None = None,
                banks: tuple[int, int] | None = None) -> str:
    """A SCALE-Sim .cfg; ``bandwidth`` given → USER interface-bandwidth mode, else CALC.
    ``read_bandwidth`` → the ifmap/filter bank bandwidth SCALE-Sim's USER mode reads (one bank);
    without it the shipped layout (10 words/cycle in 10 banks). ``banks`` = (banks, ports per bank)
    of both read SRAMs, overriding those (custom layouts stay off)."""
    read = (False, read_bandwidth or 10, banks[0] if banks else (1 if read_bandwidth else 10), banks[1] if banks else 2)
    return CONFIG.format(rows=rows, cols=cols, dataflow=dataflow, ifmap_kb=ifmap_kb, filter_kb=filter_kb,
                         ofmap_kb=ofmap_kb, filter_offset=10000000, bandwidth=bandwidth or 10,
                         mode="USER" if bandwidth else "CALC", ifmap=read, filter=read, sparse="false",
                         representation="ellpack_block", optimized="false", block_size=8, seed=40)


@contextlib.contextmanager
def silenced():
    """SCALE-Sim's prints and its DeprecationWarnings (it converts 1-element arrays to scalars,
    deprecated in numpy ≥ 1.25: its code, not ours) kept out of the test output."""
    silent = io.StringIO()
    with contextlib.redirect_stdout(silent), contextlib.redirect_stderr(silent), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        yield


def _one_layer(text: str, row: list):
    """SCALE-Sim's ``single_layer_sim`` run on one conv topology ``row`` under the ``.cfg`` ``text``
    (written to a temporary folder, deleted before the run), with the shipped layout."""
    from scalesim.layout_utils import layouts
    from scalesim.scale_config import scale_config
    from scalesim.single_layer_sim import single_layer_sim
    from scalesim.topology_utils import topologies

    with tempfile.TemporaryDirectory(prefix="archsim-scalesim-") as folder:
        path = Path(folder) / "reference.cfg"
        path.write_text(text)
        config = scale_config()
        config.read_conf_file(str(path))
    topology = topologies()
    topology.load_layer_params_from_list("layer", row)
    layout = layouts()
    layout.load_layer_params_from_list("layer", ["layer", 1, 1, 1, 1, 1, 1, 1, 1])
    sim = single_layer_sim()
    with silenced():
        sim.set_params(layer_id=0, config_obj=config, topology_obj=topology, layout_obj=layout, verbose=False)
        sim.run()
    return sim


def scalesim_conv(h: int, w: int, fh: int, fw: int, c: int, m: int, stride: int, rows: int, cols: int,
                  dataflow: str, *, ifmap_kb: int = 64, filter_kb: int = 64, ofmap_kb: int = 64,
                  bandwidth: int | None = None, read_bandwidth: int | None = None,
                  banks: tuple[int, int] | None = None) -> Reference:
    """SCALE-Sim's numbers for one conv layer in its geometry: H×W×C input (no padding), fh×fw×C×M
    filters, the same stride both ways, batch 1; output ⌈(H − fh + s)/s⌉ × ⌈(W − fw + s)/s⌉.
    ``bandwidth`` (words/cycle) selects USER mode; ifmap and filter then read at ``read_bandwidth``,
    by default the same ``bandwidth`` (see the module docstring)."""
    if bandwidth and read_bandwidth is None:
        read_bandwidth = bandwidth
    text = config_text(rows, cols, dataflow, ifmap_kb=ifmap_kb, filter_kb=filter_kb, ofmap_kb=ofmap_kb,
                       bandwidth=bandwidth, read_bandwidth=read_bandwidth, banks=banks)
    sim = _one_layer(text, ["layer", h, w, fh, fw, c, m, stride, stride, 1, 1])
    with silenced():
        incl_prefetch, compute, stalls, overall, mapping, util = sim.get_compute_report_items()
        detail = sim.get_detail_report_items()
    compute_system = sim.compute_system
    return Reference(
        compute_cycles=int(compute), stall_cycles=int(stalls), overall_utilization=float(overall),
        mapping_efficiency=float(mapping), compute_utilization=float(util),
        ifmap_sram_reads=int(sim.ifmap_sram_reads), filter_sram_reads=int(sim.filter_sram_reads),
        ofmap_sram_writes=int(sim.ofmap_sram_writes), folds=len(compute_system.mapping_efficiency_per_fold),
        row_folds=int(compute_system.row_fold), col_folds=int(compute_system.col_fold),
        ifmap_dram_reads=int(detail[11]), filter_dram_reads=int(detail[14]), ofmap_dram_writes=int(detail[17]),
        cycles_incl_prefetch=int(incl_prefetch),
    )


def scalesim_gemm(m: int, k: int, n: int, rows: int, cols: int, dataflow: str, **memory) -> Reference:
    """out[M×N] = A[M×K]·B[K×N], encoded as SCALE-Sim's own GEMM mode encodes it: a conv layer with
    an M×K input, a 1×K filter, 1 channel and N filters (``scale_sim.py`` with ``input_type_gemm``).
    ``memory``: ifmap_kb, filter_kb, ofmap_kb, bandwidth, read_bandwidth as for :func:`scalesim_conv`."""
    return scalesim_conv(m, k, 1, k, 1, n, 1, rows, cols, dataflow, **memory)


def scalesim_input_size(size: int, kernel: int, stride: int, padding: int) -> int:
    """The unpadded input size SCALE-Sim needs to reproduce a padded layer's output size.

    SCALE-Sim has no padding and computes the output as ⌈(H − f + s)/s⌉. Zero-padding folded into the
    input gives H + 2p, but when (H + 2p − f) is not a multiple of s the last padded rows are never
    read, and SCALE-Sim's ceiling would count one output row too many; (E − 1)·s + f is exactly the
    part of the padded input the layer reads (226 for VGG16 conv1_1: 224×224, 3×3, pad 1).
    """
    out = (size + 2 * padding - kernel) // stride + 1
    return (out - 1) * stride + kernel


def scalesim_layer(layer, rows: int, cols: int, dataflow: str, **memory) -> Reference:
    """SCALE-Sim's numbers for an archsim conv/fc ``Layer`` at batch 1, its padding folded into the input
    (which is what archsim's im2col lowering computes: the zero taps are MACs too)."""
    if layer.kind not in ("conv", "fc") or layer.repeat != 1:
        raise ValueError(f"{layer.name}: only single-instance conv/fc layers map onto SCALE-Sim's conv mode")
    if layer.geometry == "scalesim":  # already SCALE-Sim's own geometry
        h, w = layer.ifmap_h, layer.ifmap_w
    else:
        h = scalesim_input_size(layer.ifmap_h, layer.filter_h, layer.stride, layer.padding)
        w = scalesim_input_size(layer.ifmap_w, layer.filter_w, layer.stride, layer.padding)
    return scalesim_conv(h, w, layer.filter_h, layer.filter_w, layer.channels, layer.filters, layer.stride,
                         rows, cols, dataflow, **memory)


def scalesim_compute_matrices(m: int, k: int, n: int, rows: int, cols: int, dataflow: str):
    """SCALE-Sim's own prefetch and demand matrices for a GEMM whose operand words are numbered by
    flat index (A[i, j] = i·K + j, B[i, j] = i·N + j, out[i, j] = i·N + j; −1 is its idle marker).
    Returns (ifmap prefetch, filter prefetch, ifmap demand, filter demand, ofmap demand)."""
    import numpy as np
    from scalesim.compute.systolic_compute_is import systolic_compute_is
    from scalesim.compute.systolic_compute_os import systolic_compute_os
    from scalesim.compute.systolic_compute_ws import systolic_compute_ws
    from scalesim.scale_config import scale_config

    with tempfile.TemporaryDirectory(prefix="archsim-scalesim-") as folder:
        path = Path(folder) / "reference.cfg"
        path.write_text(config_text(rows, cols, dataflow))
        config = scale_config()
        config.read_conf_file(str(path))
    system = {"ws": systolic_compute_ws, "os": systolic_compute_os, "is": systolic_compute_is}[dataflow]()
    a = np.arange(m * k).reshape(m, k)
    b = np.arange(k * n).reshape(k, n)
    out = np.arange(m * n).reshape(m, n)
    silent = io.StringIO()
    with contextlib.redirect_stdout(silent), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        system.set_params(config_obj=config, ifmap_op_mat=a, filter_op_mat=b, ofmap_op_mat=out)
        ifmap_prefetch, filter_prefetch = system.get_prefetch_matrices()
        ifmap_demand, filter_demand, ofmap_demand = system.get_demand_matrices()
    return ifmap_prefetch, filter_prefetch, ifmap_demand, filter_demand, ofmap_demand


@dataclass(frozen=True, eq=False)
class SparseReference:
    """SCALE-Sim's numbers for one layer with ``SparsitySupport`` on (CALC bandwidth mode), in its units:
    the compute report, the SRAM access counts of its compute system (the ifmap count is a float in
    SCALE-Sim: ws scales it by M/N) and its SPARSE_REPORT storage columns (words)."""

    compute_cycles: int
    stall_cycles: int
    mapping_efficiency: float  # percent
    compute_utilization: float  # percent
    ifmap_sram_reads: float
    filter_sram_reads: int
    ofmap_sram_writes: int
    folds: int
    original_storage: int
    new_storage: float
    metadata_storage: float
    kept_weights: int  # ones in SCALE-Sim's K×N pattern (operand_matrix.sparse_filter_array)
    pattern: object = None  # that K×N 0/1 pattern itself (a numpy array)
    memory: tuple = ()  # USER mode: (Total Cycles incl. prefetch, DRAM ifmap, filter reads, ofmap writes)


def sparse_config_text(rows: int, cols: int, dataflow: str, representation: str, optimized: bool,
                       block_size: int, seed: int = 40, user: tuple[int, int, int] | None = None) -> str:
    """A SCALE-Sim .cfg with ``SparsitySupport : true`` (the shipped offsets): CALC mode, or with
    ``user`` = (SRAM KiB, ofmap Bandwidth, ifmap/filter bank bandwidth) USER mode."""
    kb, bandwidth, read = user or (64, 10, 10)
    banks = (False, read, 1 if user else 10, 2)
    return CONFIG.format(rows=rows, cols=cols, dataflow=dataflow, ifmap_kb=kb, filter_kb=kb, ofmap_kb=kb,
                         filter_offset=10000000, bandwidth=bandwidth, mode="USER" if user else "CALC",
                         ifmap=banks, filter=banks, sparse="true",
                         representation=representation, optimized="true" if optimized else "false",
                         block_size=block_size, seed=seed)


def scalesim_sparse_conv(h: int, w: int, fh: int, fw: int, c: int, m: int, stride: int, ratio: tuple[int, int],
                         rows: int, cols: int, dataflow: str, representation: str = "ellpack_block",
                         optimized: bool = False, block_size: int = 4, seed: int = 40,
                         user: tuple[int, int, int] | None = None) -> SparseReference:
    """SCALE-Sim's numbers for one conv layer (its geometry, as :func:`scalesim_conv`) whose topology row
    carries the sparsity ratio ``ratio`` = (N, M). Raises whatever SCALE-Sim raises where it refuses.
    ``user``: USER bandwidth mode (see :func:`sparse_config_text`), filling ``memory``."""
    sim = _one_layer(sparse_config_text(rows, cols, dataflow, representation, optimized, block_size, seed, user),
                     ["layer", h, w, fh, fw, c, m, stride, stride, *ratio])
    with silenced():
        incl_prefetch, compute, stalls, _, mapping, util = sim.get_compute_report_items()
        original, new, metadata, _ = sim.get_sparse_report_items()
        detail = sim.get_detail_report_items() if user else None
    return SparseReference(
        compute_cycles=int(compute), stall_cycles=int(stalls), mapping_efficiency=float(mapping),
        compute_utilization=float(util), ifmap_sram_reads=float(sim.ifmap_sram_reads),
        filter_sram_reads=int(sim.filter_sram_reads), ofmap_sram_writes=int(sim.ofmap_sram_writes),
        folds=len(sim.compute_system.mapping_efficiency_per_fold), original_storage=int(original),
        new_storage=float(new), metadata_storage=float(metadata),
        kept_weights=int(sim.op_mat_obj.sparse_filter_array.sum()), pattern=sim.op_mat_obj.sparse_filter_array.copy(),
        memory=(int(incl_prefetch), int(detail[11]), int(detail[14]), int(detail[17])) if user else (),
    )


def scalesim_run_files(config_path, topology_path, gemm: bool) -> list[dict]:
    """SCALE-Sim's per-layer figures for a .cfg and a topology file as its driver reads them
    (``scale_config.read_conf_file``, ``topologies.load_arrays``), each layer through ``single_layer_sim``:
    its compute report (total and stall cycles), SRAM counts and, with sparsity on, its sparse report."""
    from scalesim.layout_utils import layouts
    from scalesim.scale_config import scale_config
    from scalesim.single_layer_sim import single_layer_sim
    from scalesim.topology_utils import topologies

    config = scale_config()
    config.read_conf_file(str(config_path))
    topology = topologies()
    layout = layouts()
    out = []
    with silenced():
        topology.load_arrays(str(topology_path), mnk_inputs=gemm)
        for layer_id in range(topology.get_num_layers()):
            layout.load_layer_params_from_list(f"layer{layer_id}", ["layer", 1, 1, 1, 1, 1, 1, 1, 1])
            sim = single_layer_sim()
            sim.set_params(layer_id=layer_id, config_obj=config, topology_obj=topology, layout_obj=layout,
                           verbose=False)
            sim.run()
            _, total, stalls, _, mapping, _ = sim.get_compute_report_items()
            row = {"total_cycles": int(total), "stall_cycles": int(stalls), "mapping_efficiency": float(mapping),
                   "ifmap_sram_reads": float(sim.ifmap_sram_reads), "filter_sram_reads": int(sim.filter_sram_reads),
                   "ofmap_sram_writes": int(sim.ofmap_sram_writes)}
            if config.sparsity_support:
                original, new, metadata, _ = sim.get_sparse_report_items()
                row.update(original_storage=int(original), new_storage=float(new), metadata_storage=float(metadata))
            out.append(row)
    return out
