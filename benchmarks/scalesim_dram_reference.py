"""Run SCALE-Sim 3.0.0 (the ``scalesim`` package), unchanged, and record its DRAM access counts.

For each GEMM, dataflow and SRAM size below, SCALE-Sim's layer simulator runs in-process through
``tests/scalesim_reference.py``'s ``scalesim_gemm`` (SCALE-Sim's own GEMM encoding, USER bandwidth
mode at 10 words/cycle for every operand, 1-byte words, the three SRAMs at the same KiB), and its
detailed-access report's "DRAM IFMAP Reads", "DRAM Filter Reads" and "DRAM OFMAP Writes" (words)
are written as one CSV row. Slow: about 8 minutes on one core (SCALE-Sim builds its demand matrices).

    .venv/bin/python benchmarks/scalesim_dram_reference.py --out tests/data/scalesim_dram/sram_32k_32m.csv
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


def record() -> str:
    """The CSV text: one row per GEMM × dataflow × SRAM size, in that order."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from scalesim_reference import scalesim_gemm

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for m, k, n, rows, cols in GEMMS:
        for dataflow in DATAFLOWS:
            for kib in SRAM_KIB:
                ref = scalesim_gemm(m, k, n, rows, cols, dataflow, ifmap_kb=kib, filter_kb=kib, ofmap_kb=kib,
                                    bandwidth=BANDWIDTH)
                writer.writerow((m, k, n, rows, cols, dataflow, kib, BANDWIDTH, ref.ifmap_dram_reads,
                                 ref.filter_dram_reads, ref.ofmap_dram_writes))
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="CSV file to write")
    args = parser.parse_args()
    Path(args.out).write_text(record())


if __name__ == "__main__":
    main()
