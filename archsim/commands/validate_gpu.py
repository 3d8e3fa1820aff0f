"""``archsim validate-gpu``: archsim's costs vs kernels measured on a GPU (no GPU needed to run it).

Reads CSVs written by ``benchmarks/gpu_validate.py``, costs every measured conv/fc kernel on a
GPU-like set of arrays (:mod:`archsim.validation.gpu`) and prints Spearman ρ and ratio errors per
op type, or the joined rows, or the two-stream D ∥ G effect; optionally writes the HTML report.

NeuSight's kernel CSVs (header ``OPName,Latency,Device,…``; told apart by their header) are timed
instead by the kernel time model (:mod:`archsim.devices.kernels`): every row predicted from its op,
shape and the GPU's datasheet; ``--show kernels`` (the default for csv/json) gives the rows in input
order, ``--show stats`` (the default table) the MAPE per GPU and op class.
"""

from __future__ import annotations

import argparse

from archsim.array.config import DATAFLOWS
from archsim.choices.devices import DTYPES
from archsim.commands import Command
from archsim.commands.common import add_output_arguments, clock_flag, emit, phases, positive_int
from archsim.commands.list_flag import ListFlag
from archsim.modes import MODES
from archsim.output_files import note_written
from archsim.output_targets import output_flag
from archsim.validate_gpu_run import SHOW
from archsim.value_parsers import positive_float_flag

positive_float = positive_float_flag


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--csv", action=ListFlag, required=True, metavar="FILE.csv",
                        help="measured CSV(s) from benchmarks/gpu_validate.py (benchmarks/results/gpu_kernels_*.csv), or "
                             "NeuSight's kernel CSVs, whose linear and bmm rows are read as NeuSight's files write "
                             "them, A[MxN]·B[NxK] with N the reduction (not its README's x[MxK]·W[KxN]: a hand-made "
                             "row written that way swaps N and K)")
    parser.add_argument("--gpu", default=None,
                        help="GPU: a catalog name or a CUDA device string such as 'Tesla T4'; a NeuSight "
                             "CSV keeps the rows measured on it, and a measured CSV whose '# gpu:' line names "
                             "another GPU is refused (default: the CSV's '# gpu:' line, or a NeuSight CSV's "
                             "Device column); on NeuSight CSVs also a device file (PATH.toml), every row timed "
                             "on it as train times it")
    parser.add_argument("--like", default=None, help="a known GPU to start from when the name is not in the table")
    parser.add_argument("--sm-count", type=positive_int, default=None, help="SMs (default: the CSV's, else the table's)")
    parser.add_argument("--tensor-cores-per-sm", type=positive_int, default=None,
                        help="tensor cores per SM (default: the GPU table's)")
    parser.add_argument("--mma", default=None, metavar="ROWSxCOLS", help="one tensor core as a PE array, e.g. 16x32")
    parser.add_argument("--clock-mhz", type=clock_flag("MHz"), default=None,
                        help="tensor-core clock, MHz (default: the table's)")
    parser.add_argument("--memory-gbps", type=positive_float, default=None, help="DRAM bandwidth for the memory floor")
    parser.add_argument("--dataflow", default=None, choices=DATAFLOWS, help="tensor-core dataflow (default os)")
    parser.add_argument("--no-split-k", action="store_true",
                        help="deal out only output tiles (default: split the reduction when tiles < arrays)")
    parser.add_argument("--mode", default=None, choices=MODES, help="lowering mode (default exact: stride-aware δ)")
    parser.add_argument("--dtype", default=None, choices=DTYPES,
                        help="NeuSight kernel CSVs (no dtype column): the dtype the rows were measured in, each "
                             "GEMM priced as train prices it (fp16/bf16: tensor cores; default fp32, NeuSight's)")
    parser.add_argument("--show", default=None, choices=SHOW,
                        help="which table to print (default stats; NeuSight CSVs: kernels for csv/json)")
    parser.add_argument("--report", type=output_flag, default=None, metavar="OUT.html", help="write the HTML report (atomically)")
    parser.add_argument("--markdown", type=output_flag, default=None, metavar="OUT.md", help="write the Markdown summary (atomically)")
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from archsim.outputs import render
    from archsim.validate_gpu_run import run_validate_gpu

    done = run_validate_gpu(args, tabular=args.format == "table", phases=phases)
    for path in done.wrote:  # after the bar is gone, so the lines stay whole
        note_written(f"wrote {path}")
    emit(render(done.table, args.format, precision=args.precision, meta=done.meta, float_format="{:.3g}"), args)
    return 0


COMMAND = Command("validate-gpu", "compare archsim's per-layer F/D/G costs with kernels measured on a GPU",
                  add_arguments, run)
