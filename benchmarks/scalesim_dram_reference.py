"""Run SCALE-Sim 3.0.0 (the ``scalesim`` package), unchanged, and record its DRAM access counts.

For each GEMM, dataflow and SRAM size of a set below, SCALE-Sim's layer simulator runs in-process through
``tests/scalesim_reference.py``'s ``scalesim_gemm`` (SCALE-Sim's own GEMM encoding, USER bandwidth
mode at 10 words/cycle for every operand, 1-byte words, the three SRAMs at the same KiB), and its
detailed-access report's "DRAM IFMAP Reads", "DRAM Filter Reads" and "DRAM OFMAP Writes" (words)
are written as one CSV row. Slow: SCALE-Sim builds its demand matrices and steps every refetch.

* ``refetch`` (default): two square-ish GEMMs at 32 KiB and 32 MiB, about 8 minutes on one core.
* ``weight-gradient``: a convolution's weight gradient in both operand orders — dW = Xᵀ·dY as archsim lowers
  it (R·S·C × N·E·F × M) and its transpose dWᵀ = dYᵀ·X (M × N·E·F × R·S·C) — for VGG16's conv1_1 (3 × 3,
  3 → 64 channels) on a 28 × 28 and a 56 × 56 input at batch 1, on a 32 × 32 array; with SCALE-Sim's
  USER-mode "Compute cycles" (stalls included) and stall cycles beside the DRAM words. About 2 minutes.

    .venv/bin/python benchmarks/scalesim_dram_reference.py --out tests/data/scalesim_dram/sram_32k_32m.csv
    .venv/bin/python benchmarks/scalesim_dram_reference.py --set weight-gradient \\
        --out tests/data/scalesim_dram/conv_weight_gradient.csv
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from pathlib import Path

GEMMS = ((256, 256, 256, 16, 16), (512, 256, 128, 32, 32))  # M, K, N, array rows, array cols
DATAFLOWS = ("ws", "os", "is")
SRAM_KIB = (32, 32768)  # 32 KiB and 32 MiB per operand
BANDWIDTH = 10  # words/cycle, every operand
COLUMNS = ("m", "k", "n", "rows", "cols", "dataflow", "sram_kib", "bandwidth", "ifmap_dram_reads",
           "filter_dram_reads", "ofmap_dram_writes")
# (M, K, N, rows, cols, dataflow, KiB): conv1_1's weight gradient at 28 × 28 (K = 784) in all three dataflows at
# 4 KiB, and at 56 × 56 (K = 3,136) in ws at 8 KiB; each in archsim's order (27 × K × 64) and transposed (64 × K × 27)
WEIGHT_GRADIENT = tuple((m, k, n, 32, 32, dataflow, kib)
                        for k, dataflows, kib in ((784, DATAFLOWS, 4), (3136, ("ws",), 8))
                        for dataflow in dataflows for m, n in ((27, 64), (64, 27)))
WEIGHT_GRADIENT_COLUMNS = (*COLUMNS, "cycles", "stall_cycles")


def _runs() -> list[tuple[int, int, int, int, int, str, int]]:
    """The ``refetch`` set's (M, K, N, rows, cols, dataflow, KiB), in its recorded order."""
    return [(m, k, n, rows, cols, dataflow, kib) for m, k, n, rows, cols in GEMMS for dataflow in DATAFLOWS
            for kib in SRAM_KIB]


def record(name: str = "refetch") -> str:
    """The CSV text of set ``name``: one row per GEMM × dataflow × SRAM size, in that order."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from scalesim_reference import scalesim_gemm

    cycles = name == "weight-gradient"
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(WEIGHT_GRADIENT_COLUMNS if cycles else COLUMNS)
    for m, k, n, rows, cols, dataflow, kib in (WEIGHT_GRADIENT if cycles else _runs()):
        ref = scalesim_gemm(m, k, n, rows, cols, dataflow, ifmap_kb=kib, filter_kb=kib, ofmap_kb=kib,
                            bandwidth=BANDWIDTH)
        row = [m, k, n, rows, cols, dataflow, kib, BANDWIDTH, ref.ifmap_dram_reads, ref.filter_dram_reads,
               ref.ofmap_dram_writes]
        writer.writerow(row + [ref.compute_cycles, ref.stall_cycles] if cycles else row)
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="refetch", choices=("refetch", "weight-gradient"),
                        help="which GEMMs to record (default: refetch)")
    parser.add_argument("--out", required=True, help="CSV file to write")
    args = parser.parse_args()
    Path(args.out).write_text(record(args.set))


if __name__ == "__main__":
    main()
