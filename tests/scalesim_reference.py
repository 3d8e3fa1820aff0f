"""Run the real SCALE-Sim 3.0.0 in-process on one layer or GEMM and return its report numbers.

SCALE-Sim writes report files and prints; this harness gives it a temporary config, keeps its
prints out of the test output, and reads the numbers straight from its layer simulator.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from dataclasses import dataclass
from pathlib import Path

CONFIG = """[general]
run_name = reference

[architecture_presets]
ArrayHeight:    {rows}
ArrayWidth:     {cols}
IfmapSramSzkB:    {ifmap_kb}
FilterSramSzkB:   {filter_kb}
OfmapSramSzkB:    {ofmap_kb}
IfmapOffset:    0
FilterOffset:   10000000
OfmapOffset:    20000000
Bandwidth : {bandwidth}
Dataflow : {dataflow}
ReadRequestBuffer: 32
WriteRequestBuffer: 32

[layout]
IfmapCustomLayout: False
IfmapSRAMBankBandwidth: 10
IfmapSRAMBankNum: 10
IfmapSRAMBankPort: 2
FilterCustomLayout: False
FilterSRAMBankBandwidth: 10
FilterSRAMBankNum: 10
FilterSRAMBankPort: 2

[sparsity]
SparsitySupport : false
SparseRep : ellpack_block
OptimizedMapping : false
BlockSize : 8
RandomNumberGeneratorSeed : 40

[run_presets]
InterfaceBandwidth: {mode}
UseRamulatorTrace: False
"""


@dataclass(frozen=True)
class Reference:
    compute_cycles: int
    stall_cycles: int
    overall_utilization: float  # percent, as SCALE-Sim reports
    mapping_efficiency: float  # percent
    compute_utilization: float  # percent
    ifmap_sram_reads: int
    filter_sram_reads: int
    ofmap_sram_writes: int


def config_text(rows: int, cols: int, dataflow: str, *, ifmap_kb=64, filter_kb=64, ofmap_kb=64,
                bandwidth: int | None = None) -> str:
    return CONFIG.format(rows=rows, cols=cols, dataflow=dataflow, ifmap_kb=ifmap_kb, filter_kb=filter_kb,
                         ofmap_kb=ofmap_kb, bandwidth=bandwidth or 10, mode="USER" if bandwidth else "CALC")


def scalesim_conv(h: int, w: int, fh: int, fw: int, c: int, m: int, stride: int, rows: int, cols: int,
                  dataflow: str) -> Reference:
    """SCALE-Sim's numbers for one conv layer (its geometry: no padding, batch 1)."""
    from scalesim.layout_utils import layouts
    from scalesim.scale_config import scale_config
    from scalesim.single_layer_sim import single_layer_sim
    from scalesim.topology_utils import topologies

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "reference.cfg"
        path.write_text(config_text(rows, cols, dataflow))
        config = scale_config()
        config.read_conf_file(str(path))
    topology = topologies()
    topology.load_layer_params_from_list("layer", ["layer", h, w, fh, fw, c, m, stride, stride, 1, 1])
    layout = layouts()
    layout.load_layer_params_from_list("layer", ["layer", 1, 1, 1, 1, 1, 1, 1, 1])
    sim = single_layer_sim()
    with contextlib.redirect_stdout(io.StringIO()):
        sim.set_params(layer_id=0, config_obj=config, topology_obj=topology, layout_obj=layout, verbose=False)
        sim.run()
        _, compute, stalls, overall, mapping, util = sim.get_compute_report_items()
    return Reference(int(compute), int(stalls), float(overall), float(mapping), float(util),
                     int(sim.ifmap_sram_reads), int(sim.filter_sram_reads), int(sim.ofmap_sram_writes))


def scalesim_gemm(m: int, k: int, n: int, rows: int, cols: int, dataflow: str) -> Reference:
    """out[M×N] = A[M×K]·B[K×N], encoded as SCALE-Sim's own GEMM mode encodes it (M, K, 1, K, 1, N)."""
    return scalesim_conv(m, k, 1, k, 1, n, 1, rows, cols, dataflow)
