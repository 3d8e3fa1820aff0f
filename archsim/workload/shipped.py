"""Find networks by path or by the name of a CSV shipped in ``layers/`` (package ``archsim.layers``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from importlib import resources
from pathlib import Path

from archsim.console import keyed, setting
from archsim.errors import InputError
from archsim.validate import check_operand, did_you_mean, exists, is_file, read_text, resolve_name, shown
from archsim.value_parsers import parse_int
from archsim.workload.csv_loader import load_topology, parse_topology
from archsim.workload.layer import Network


def shipped_dir():
    """``layers/`` as installed (package ``archsim.layers``), or beside the package in a checkout: the one
    place the shipped network CSVs are read from (the tests read the same folder)."""
    try:
        return resources.files("archsim.layers")
    except ModuleNotFoundError:  # editable installs put the repo root on sys.path, not the mapping
        return Path(__file__).resolve().parents[2] / "layers"


def shipped_networks(blocks: bool = False) -> list[str]:
    """Names of the networks shipped with archsim (CSV stems in ``layers/``), sorted; ``blocks``: with the block
    networks built from them (:data:`BLOCK_NETWORKS`), which ``archsim schedule`` alone takes, so its errors list
    every name it takes and the other commands' none they refuse."""
    csvs = [entry.name[:-4] for entry in shipped_dir().iterdir() if entry.name.endswith(".csv")]
    return sorted([*csvs, *(BLOCK_NETWORKS if blocks else ())])


class UnknownNetwork(InputError):
    """:func:`shipped_key`'s error: ``name`` is no shipped network (``opening``: what the line says first, "no such
    file, and no"); :meth:`among` says the same line with another command's list of names."""

    def __init__(self, name: str, opening: str, names: list[str]) -> None:
        key = name.strip().lower().replace("-", "_")
        hint = _transformer_hint(name) or did_you_mean(key, names)  # a near miss (vgg17) named beside the list
        super().__init__(f"{opening} shipped network named {name!r}{hint}; shipped: {', '.join(names)}",
                         field="NETWORK")
        self.name, self.opening = name, opening

    def among(self, names: list[str]) -> UnknownNetwork:
        """The same error listing ``names`` (``archsim schedule``'s, :func:`shipped_networks` with blocks)."""
        return UnknownNetwork(self.name, self.opening, names)


BLOCK_NETWORKS: dict[str, str] = {"bert_large_blocks": "bert_large"}
"""Block-granularity networks: name → the shipped per-op network whose blocks (ops named ``l<k>_…``,
one transformer block each) become one layer each, as out-of-order backprop's paper runs BERT (§8.4:
"i'th encoder to GPU i mod 4"). Their costs are the per-op network's, summed per block
(:func:`archsim.partition.profile.collapse_profile`); only ``archsim schedule``'s ooo policies take them."""

_BLOCK_PREFIX = re.compile(r"(l\d+)_")


def block_network_of(name: str) -> str | None:
    """The block network built from the shipped per-op network ``name`` (``bert_large`` →
    ``bert_large_blocks``), or None."""
    return next((blocks for blocks, per_op in BLOCK_NETWORKS.items() if per_op == name), None)


def block_groups(network: Network) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """``network``'s layers grouped by transformer block: (block name ``l<k>``, its layer indices), in order;
    every layer must be named ``l<k>_…`` and each block's layers must be consecutive."""
    groups: dict[str, list[int]] = {}
    for index, layer in enumerate(network.layers):
        match = _BLOCK_PREFIX.match(layer.name)
        if match is None:
            raise InputError(f"layer {layer.name!r} of {network.name} belongs to no block (l<k>_…)", field="NETWORK")
        block = groups.setdefault(match.group(1), [])
        if block and block[-1] != index - 1:
            raise InputError(f"block {match.group(1)!r} of {network.name} is not contiguous", field="NETWORK")
        block.append(index)
    return tuple((name, tuple(indices)) for name, indices in groups.items())


def dims_of(pairs: Mapping[str, int] | Iterable[tuple[str, int] | str] | str) -> dict[str, int]:
    """``--dim NAME=VALUE`` pairs (or a mapping, or the flag's text: ``"seq=64"`` or a list of such) as
    :func:`load_network`'s ``dims``: each value a positive integer, each name given once (InputError naming the
    flag)."""
    if not isinstance(pairs, Iterable):  # dim=5: no --dim text, refused naming it (a TypeError)
        raise InputError(f"expected NAME=POSITIVE_INTEGER, got {shown(pairs)}", field="dim")
    items = list(pairs.items()) if isinstance(pairs, Mapping) else [pairs] if isinstance(pairs, str) else list(pairs)
    dims: dict[str, int] = {}
    for item in items:
        name, value = _dim_pair(item)
        if not isinstance(name, str) or not name.strip() or not name.strip().isprintable():
            raise InputError(f"expected NAME=POSITIVE_INTEGER, got {shown(name)}", field="dim")
        try:
            dims[name.strip()] = parse_int(value, what="a positive integer")
        except ValueError as exc:
            raise InputError(str(exc), field="dim") from None
    if len(dims) != len(items):
        raise InputError(f"a {setting('dim')} name is given twice", field="dim")
    return dims


def _dim_pair(item: object) -> tuple[object, object]:
    """One ``--dim`` entry as (name, value): a pair, or its text ``NAME=VALUE``."""
    if isinstance(item, str) and "=" in item:
        name, _, value = item.partition("=")
        return name, value
    if isinstance(item, (tuple, list)) and len(item) == 2:
        return item[0], item[1]
    raise InputError(f"expected NAME=POSITIVE_INTEGER, got {shown(item)}", field="dim")


def load_network(name_or_path: str | Path, *, geometry: str = "archsim", unsupported: str = "error",
                 dims: dict[str, int] | None = None, shapes: str = "auto", input_shape: str | None = None,
                 timeout: float | None = None) -> Network:
    """Load a network from a CSV or ONNX path, a transformer config (``.json``/``.toml``), or by
    shipped name (``vgg16``, ``resnet50`` …).

    ``unsupported`` and ``dims`` apply to ONNX files (:func:`archsim.workload.onnx_import.load_onnx`),
    whose shapes come from ONNX shape inference; ``shapes`` to CSV files (:func:`parse_topology`);
    ``timeout`` (seconds; default :data:`~archsim.workload.torch_file.DEFAULT_TIMEOUT`) to a PyTorch
    file's code.
    """
    from archsim.workload.torch_file import DEFAULT_TIMEOUT, is_torch_spec, load_torch_file

    check_operand(name_or_path, "NETWORK", "a network's", shipped_networks())
    if is_torch_spec(str(name_or_path)):  # model.py:ClassName, exported through ONNX (input_shape: batch first)
        if dims:
            raise InputError(f"{setting('dim')} applies to ONNX files and transformer configs; a PyTorch model's "
                             f"shapes come from {setting('input-shape')}", field="dim")
        return load_torch_file(str(name_or_path), input_shape, unsupported=unsupported,
                               timeout=DEFAULT_TIMEOUT if timeout is None else timeout)
    if input_shape is not None:
        raise InputError(f"{setting('input-shape')} applies to a PyTorch model given as FILE.py:ClassName",
                         field="input-shape")
    path = Path(name_or_path)
    if path.suffix.lower() in (".onnx", ".json", ".toml") and geometry != "archsim":
        raise InputError("SCALE-Sim geometry applies to topology CSVs only (ONNX files and transformer configs "
                         "carry their own padding)", field="geometry")
    if path.suffix.lower() == ".onnx":
        from archsim.workload.onnx_import import load_onnx

        return load_onnx(name_or_path, unsupported=unsupported, dims=dims)
    if path.suffix.lower() in (".json", ".toml"):
        from archsim.workload.model_files import load_transformer, unread_fields_note

        unknown = sorted(set(dims or {}) - {"seq"})
        if unknown:
            raise InputError(f"a transformer config takes {keyed('dim', 'seq', placeholder='N')} only, not "
                             f"{unknown[0]!r}", field="dim")
        seq = (dims or {}).get("seq")
        config = load_transformer(name_or_path, seq=seq, seq_dim=True)
        network = config.network()
        source = keyed("dim", "seq") if seq is not None else (
            "the config's seq" if path.suffix.lower() == ".toml" else
            "the config's position limit (n_positions or max_position_embeddings)")
        note = (f"sequence length {config.seq} tokens per sample, from {source}; "
                f"{keyed('dim', 'seq', placeholder='N')} sets it")
        unread = unread_fields_note(path)
        return replace(network, notes=(*network.notes, note, *([unread] if unread else [])))
    if path.suffix.lower() in (".py", ".pt", ".pth"):  # else read as a topology CSV: an error about its bytes
        what = "a Python file" if path.suffix.lower() == ".py" else "a PyTorch checkpoint, which archsim does not read"
        raise InputError(f"{what}: give a PyTorch module as FILE.py:ClassName with {setting('input_shape')} (batch "
                         "first), or export it to ONNX", file=str(path))
    if dims:  # a topology's shapes are all given: a --dim would silently change nothing
        raise InputError(f"{keyed('dim', next(iter(dims)), placeholder='…')} names no dimension: a topology CSV or "
                         f"shipped network has no symbolic dimensions ({setting('dim')} applies to ONNX files and "
                         "transformer configs)", field="dim")
    if path.suffix.lower() == ".csv" or exists(path) or "/" in str(name_or_path):
        return load_topology(name_or_path, geometry=geometry, shapes=shapes)  # as written: Path drops a "/"
    return load_shipped(str(name_or_path), geometry=geometry, shapes=shapes, missing="no such file, and no")


def file_batch_note(network: Network, batch: int | Sequence[int] | None) -> str | None:
    """The note for a model file that fixes a batch other than the one costed (``Network.file_batch``): its
    layers are read per sample, so the file's batch would otherwise be replaced without a word; None where
    the file states no batch, the batches agree, or ``batch`` is None (the command's own default applies), and
    for batch 1: the usual export of one sample (``torch.onnx.export`` of one example input), which states no
    batch the user meant to cost, so every such file would carry a note saying nothing. ``batch``: a command's
    one batch, or a sweep spec's ``batches`` axis (noted where the file's batch is none of them)."""
    batches = (batch,) if isinstance(batch, int) else tuple(batch or ())
    if network.file_batch in (None, 1) or not batches or network.file_batch in batches:
        return None
    from archsim.workload.torch_file import is_torch_spec

    source = network.source if network.source and not network.source.startswith("<") else "the ONNX model"
    fixed = f"{setting('input-shape')} gives {source}" if is_torch_spec(source) else f"{source} fixes"
    if not isinstance(batch, int):  # a sweep's axis: the spec's key, not a flag
        listed = ", ".join(map(str, batches))
        return (f"{fixed} batch {network.file_batch}; archsim reads its layers per sample and costs "
                f"batch{'es' if len(batches) > 1 else ''} {listed} (the spec's batches): list "
                f"{network.file_batch} in batches to cost the file's batch")
    return (f"{fixed} batch {network.file_batch}; archsim reads its layers per "
            f"sample and costs batch {batch} ({setting('batch', batch)}): give {setting('batch', network.file_batch)}"
            " to cost the file's batch")


def shipped_key(name: str, *, missing: str = "no") -> str:
    """The shipped network ``name`` stands for (``VGG-16`` → ``vgg_16``), or an InputError listing them:
    only a file inside ``layers/`` is ever read for a name, never one in the working folder."""
    key = name.strip().lower().replace("-", "_")
    entry = resolve_name(shipped_dir(), key, ".csv", "shipped network", field="NETWORK")
    if not is_file(entry):
        # a near miss (vgg17, resnet5) is named beside the list, as an unknown flag or policy is
        raise UnknownNetwork(name, missing, shipped_networks())
    return key


def _transformer_hint(name: str) -> str:
    """Where ``name`` is a shipped transformer's (``gpt2``: what ``train`` takes as MODEL), its config file, which the
    array commands read by path: a user who trained ``gpt2`` is told what to give ``cost`` rather than a list of CSVs
    without it; "" for any other name."""
    from archsim.validate import shipped_file

    text = name.strip()
    if not text or "/" in text or "\\" in text or not text.isprintable():
        return ""
    try:
        found = shipped_file("transformers", text, (".json", ".toml"), "transformer config")
    except InputError:  # a name the shipped folder refuses (".." and the like): no hint
        return ""
    return f" ({text} is a shipped transformer config: give its file, {found})" if found else ""


def load_shipped(name: str, *, geometry: str = "archsim", shapes: str = "auto", missing: str = "no") -> Network:
    """A shipped network by name (``vgg16``), read from ``layers/`` only."""
    key = shipped_key(name, missing=missing)
    entry = resolve_name(shipped_dir(), key, ".csv", "shipped network", field="NETWORK")
    return parse_topology(read_text(entry, "shipped network"), source=f"layers/{key}.csv", name=key,
                          geometry=geometry, shapes=shapes)
