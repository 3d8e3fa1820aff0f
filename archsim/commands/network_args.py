"""The NETWORK argument and its loading options (--only, --shapes, ONNX's --unsupported/--input-shape/--dim),
shared by the array commands (cost, energy, pipeline, schedule, plan) and ``import``."""

from __future__ import annotations

import argparse
from typing import Any

from archsim.choices.networks import SHAPE_CHECKS, UNSUPPORTED
from archsim.console import note
from archsim.errors import InputError
from archsim.validate import shown
from archsim.value_parsers import comma_items, parse_int


def add_network_arguments(parser: argparse.ArgumentParser, optional: bool = False) -> None:
    parser.add_argument("network", metavar="NETWORK", nargs="?" if optional else None, default=None,
                        help="topology CSV, ONNX file, transformer config (.json/.toml), PyTorch model "
                             "(FILE.py:ClassName with --input-shape) or shipped network name")
    parser.add_argument("--only", default=None, metavar="KIND[,KIND]",
                        help="keep only these layer kinds (conv, fc, matmul, pool, elementwise, batchnorm, layernorm, deconv)")
    parser.add_argument("--shapes", default="auto", choices=SHAPE_CHECKS,
                        help="check each layer's input against its producers' outputs: auto (files that declare "
                             "Inputs; default), check (also a raw SCALE-Sim chain), off")
    add_onnx_arguments(parser)


def add_onnx_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--unsupported", default="error", choices=UNSUPPORTED,
                        help="an ONNX op archsim does not model: error (default), or skip it and list it")
    parser.add_argument("--input-shape", default=None, metavar="1,3,224,224",
                        help="a PyTorch model's (FILE.py:ClassName) example input, batch first; several inputs "
                             "separated by ';'; ':int64' after a shape for token ids (1,128:int64)")
    parser.add_argument("--dim", action="append", type=_dim, default=[], metavar="NAME=VALUE",
                        help="value of a symbolic ONNX input dimension, or a transformer config's sequence length "
                             "(e.g. --dim seq=128); the batch dimension needs none: layers are per sample")


def _dim(text: str) -> tuple[str, int]:
    name, _, value = text.partition("=")
    try:
        if not name.strip() or not name.strip().isprintable() or not value.strip().isdigit():
            raise ValueError
        return name.strip(), parse_int(value, what="a positive integer")
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME=POSITIVE_INTEGER, got {shown(text)}") from None


def onnx_options(args: argparse.Namespace) -> dict[str, Any]:
    """``load_network``'s keywords from --unsupported, --dim and --shapes."""
    from archsim.workload.shipped import dims_of

    return {"unsupported": getattr(args, "unsupported", "error"), "dims": dims_of(getattr(args, "dim", [])),
            "shapes": getattr(args, "shapes", "auto"), "input_shape": getattr(args, "input_shape", None)}


def network_from_args(args: argparse.Namespace, geometry: str = "archsim", *, batch_note: bool = True):
    """The NETWORK argument, restricted to ``--only`` kinds; ``batch_note`` False: a batch its file fixes is noted
    by the caller, which knows the batch costed (``plan``'s mini-batch, without ``--batch`` too)."""
    from archsim.workload import load_network

    try:
        network = load_network(args.network, geometry=geometry, **onnx_options(args))
    except InputError:
        if _kernel_csv(args.network):
            raise InputError("a NeuSight kernel CSV (OPName, Latency, …), not a network: `archsim validate-gpu "
                             "--csv FILE` times its kernels", file=str(args.network)) from None
        raise
    from archsim.workload.shipped import file_batch_note

    batch = getattr(args, "batch", None) if batch_note else None
    for line in (*network.notes, file_batch_note(network, batch if isinstance(batch, int) else None)):
        if line:
            note(line)
    if args.only:
        network = network.only(*comma_items(args.only, "only"))
    return network


def _kernel_csv(path: str) -> bool:
    """Whether a NETWORK that failed to load is a NeuSight kernel CSV (a common mix-up, named in the error)."""
    if not str(path).lower().endswith(".csv"):
        return False
    from archsim.validation.neusight import is_neusight_file

    try:
        return is_neusight_file(path)
    except InputError:
        return False
