"""What the cycle-engine tests compare: the dataflows, and one GEMM's figures from the engine and
from SCALE-Sim in the same order (cycles with stalls, stall cycles, DRAM reads per operand, DRAM
writes, cycles including prefetch), so one tuple equality checks all six."""

DATAFLOWS = ["ws", "os", "is"]


def figures(result):
    return (result.cycles, result.stall_cycles, result.ifmap_dram_reads, result.filter_dram_reads,
            result.ofmap_dram_writes, result.cycles_incl_prefetch)


def reference_figures(reference):
    return (reference.compute_cycles, reference.stall_cycles, reference.ifmap_dram_reads,
            reference.filter_dram_reads, reference.ofmap_dram_writes, reference.cycles_incl_prefetch)
