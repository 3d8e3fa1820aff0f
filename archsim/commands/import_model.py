"""``archsim import``: a user's model (ONNX, a PyTorch class as ``model.py:ClassName --input-shape 1,3,32,32``,
or any NETWORK archsim reads) → archsim's topology CSV.

The CSV holds one row per layer, per sample (the batch is applied when costing), with ``Inputs``
for branches (``qkv#1/3`` where a layer reads one of N equal parts of a layer's output); skipped ONNX nodes are
listed on stderr.
"""

from __future__ import annotations

import argparse
import sys

from archsim.commands import Command
from archsim.commands.network_args import add_onnx_arguments, onnx_options
from archsim.console import note
from archsim.output_targets import output_flag
from archsim.value_parsers import float_flag
from archsim.workload.torch_file import DEFAULT_TIMEOUT


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL",
                        help="an .onnx file, a PyTorch model FILE.py:ClassName (with --input-shape), or any NETWORK")
    parser.add_argument("-o", "--out", type=output_flag, default=None, metavar="OUT.csv",
                        help="write the topology CSV here (atomically; default stdout)")
    add_onnx_arguments(parser)
    parser.add_argument("--timeout", type=float_flag(0.0, 1e6, low_open=True, what="seconds"), default=DEFAULT_TIMEOUT,
                        metavar="SECONDS", help="most seconds a PyTorch model's code (FILE.py:ClassName) may run: "
                                                "importing, building and tracing it (it runs as Python, unsandboxed)")


def run(args: argparse.Namespace) -> int:
    from archsim.output_files import note_written, write_output
    from archsim.workload import load_network
    from archsim.workload.builders import to_csv

    network = load_network(args.model, **onnx_options(args), timeout=args.timeout)
    _refuse_part_reads(network, args.model)
    for line in network.notes:
        note(line)
    unchecked = _shape_problem(network)
    if unchecked:
        why = ("; a node left out (--unsupported skip) changed its tensor's shape"
               if any(note.startswith("skipped ONNX node") for note in network.notes) else "")
        note(f"the CSV declares Inputs, so reading it back checks shapes, and this one fails: "
             f"{unchecked}{why}: read the CSV with --shapes off")
    text = to_csv(network)
    if args.out:
        path = write_output(args.out, text)
        count = len(network.layers)
        note_written(f"wrote {path} ({count} layer{'' if count == 1 else 's'}, {_parameters(network, args.model)})", out=True)
    else:
        sys.stdout.write(text)
    return 0


def _parameters(network, model: str) -> str:
    """The written line's parameter count: the CSV's layers' weights and biases; for a transformer config also the
    model's own count, the one ``archsim train`` prints, where the two differ, so that they are told apart instead
    of contradicting each other (the CSV has no rows for embedding tables, lookups, and costs a norm's γ and β)."""
    from pathlib import Path

    from archsim.workload.model_files import load_transformer

    text = f"{network.parameter_count:,} parameters"
    if Path(model).suffix.lower() not in (".json", ".toml"):
        return text
    whole = load_transformer(model).parameter_count  # read once already: no error here
    if whole == network.parameter_count:
        return text
    return (f"{text} in its layers; the model has {whole:,}, as archsim train counts it: the CSV has no rows for "
            "embedding tables, which are lookups, and costs every norm with γ and β")


def _refuse_part_reads(network, model: str) -> None:
    """Refuse, before a line is written, a network whose CSV would fail its shape check because a layer reads a
    part of another's output that no ``Inputs`` entry states: a ``NAME#K/N`` entry states one of N equal parts
    (the q, k and v an ``nn.MultiheadAttention`` cuts from its fused projection with a Gather or Split), not a
    Slice's arbitrary range, nor two parts of one producer read together."""
    from archsim.errors import InputError
    from archsim.workload.layer import NETWORK_INPUT
    from archsim.workload.shapes import shape_problem

    by_name = {layer.name: layer for layer in network.layers}
    for part in network.part_reads:
        layer = by_name.get(part.layer)
        if layer is None or part.index:
            continue
        producers = [by_name[p] for p in layer.inputs if p != NETWORK_INPUT and p in by_name]
        if shape_problem(layer, producers, network.parts_of(layer.name)):
            raise InputError(f"node {part.node} hands {part.layer!r} a part of the output of {part.producer!r} that "
                             "a topology CSV cannot state (its Inputs state whole layers or one of N equal parts, "
                             "NAME#K/N), so the CSV would fail its shape check when read: cost the model itself "
                             "(give it as NETWORK), which reads the part as it is", file=model)


def _shape_problem(network) -> str | None:
    """What the topology CSV reader's shape check (:func:`~archsim.workload.shapes.check_shapes`) will
    refuse in the written file, or None. Why: a skipped ONNX node that changes its tensor's shape (TopK,
    a crop) leaves its consumer reading its producer, which the CSV's ``Inputs`` column then states."""
    from archsim.errors import InputError
    from archsim.workload.shapes import check_shapes

    try:
        check_shapes(network)
    except InputError as exc:
        return exc.message
    return None


COMMAND = Command("import", "convert a model (ONNX, PyTorch, transformer config) to archsim's topology CSV", add_arguments, run)
