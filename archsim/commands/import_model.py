"""``archsim import``: a user's model (ONNX, or any NETWORK archsim reads) → archsim's topology CSV.

The CSV holds one row per layer, per sample (the batch is applied when costing), with ``Inputs``
for branches; skipped ONNX nodes are listed on stderr.
"""

from __future__ import annotations

import argparse
import sys

from archsim.cli import Command
from archsim.errors import InputError


def _dim(text: str) -> tuple[str, int]:
    name, _, value = text.partition("=")
    if not name.strip() or not value.strip().isdigit() or int(value) <= 0:
        raise argparse.ArgumentTypeError(f"expected NAME=POSITIVE_INTEGER, got {text!r}")
    return name.strip(), int(value)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL", help="an .onnx file (or any NETWORK: CSV path, shipped name)")
    parser.add_argument("-o", "--out", default=None, metavar="OUT.csv",
                        help="write the topology CSV here (atomically; default stdout)")
    parser.add_argument("--unsupported", default="error", choices=("error", "skip"),
                        help="an ONNX op archsim does not model: error (default), or skip it and list it")
    parser.add_argument("--dim", action="append", type=_dim, default=[], metavar="NAME=VALUE",
                        help="value of a symbolic ONNX input dimension (e.g. --dim seq=128); the batch "
                             "dimension needs none: layers are per sample")


def run(args: argparse.Namespace) -> int:
    from archsim.outputs import atomic_write_text
    from archsim.workload import load_network
    from archsim.workload.builders import to_csv

    dims = dict(args.dim)
    if len(dims) != len(args.dim):
        raise InputError("a --dim name is given twice", field="dim")
    network = load_network(args.model, unsupported=args.unsupported, dims=dims)
    for note in network.notes:
        print(f"archsim: note: {note}", file=sys.stderr)
    text = to_csv(network)
    if args.out:
        path = atomic_write_text(args.out, text)
        print(f"wrote {path} ({len(network.layers)} layers, {network.parameter_count:,} parameters)", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


COMMAND = Command("import", "convert a model (ONNX) to archsim's topology CSV", add_arguments, run)
