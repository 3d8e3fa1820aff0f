"""An output must not replace what its run reads: the run's input files, by path (through a symlink or a hard link
too), by the files an input TOML names (a cluster's device files, a sweep spec's model, device, network and array
files) or by a shipped name (``vgg16`` → ``layers/vgg16.csv``). Why its own module: what a run reads is another
question than what a target is and where it goes (:mod:`archsim.output_targets`, whose flags it reads), and the
CLI (:func:`outputs_apart_from_inputs`) and the API (:func:`outputs_apart`, its keywords) ask it alike."""

from __future__ import annotations

import argparse
import os
import stat
from pathlib import Path

from archsim.errors import InputError
from archsim.output_targets import check_target, flag_name, folder_flag, output_flag, output_flags


def outputs_apart_from_inputs(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The CLI's :func:`outputs_apart`: its inputs are the other arguments' values."""
    inputs = [(_input_name(parser, action), value) for action in parser._actions
              if action.type not in (output_flag, folder_flag) and action.dest != "help"
              for value in [getattr(args, action.dest, None)]]
    outputs_apart(output_flags(parser, args), inputs)


def outputs_apart(outputs: list[tuple[str, str | None]], inputs: list[tuple[str, object]]) -> None:
    """Refuse an output that names a file this run reads (``import m.onnx -o m.onnx``, ``cost net.csv --out
    net.csv``, ``sweep spec.toml --report spec.toml``): the output would replace the input the user wrote, silently,
    with a different kind of file. ``inputs``: (name, value) pairs, a value a path, a shipped name or a list of
    them; those that name an existing regular file (``FILE.py:ClassName``'s file too) or a shipped one are inputs.
    Devices, FIFOs and this process's own descriptors are written through, not replaced, so they may be both."""
    files: dict[tuple[int, int], str] = {}
    names: list[tuple[str, str]] = []  # (a value that may be a shipped name, its input's name)
    for source, value in inputs:
        for text in value if isinstance(value, list | tuple) else [value]:
            text = str(text) if isinstance(text, Path) else text
            if not isinstance(text, str) or not text:
                continue
            names.append((text, source))
            for name in {text, text.rpartition(":")[0] or text}:  # a PyTorch model, FILE.py:ClassName
                for path, what in [(name, source), *(_named_inputs(name) if _regular(name) else ())]:
                    found = _regular(path)
                    if found is not None:
                        files.setdefault(found, what if path == name else f"{what} {source} names")
    for flag, value in outputs:
        if not value or check_target(value) == "through":
            continue
        found = _regular(value)  # None: a new name, nothing there to replace
        reads = None if found is None else files.get(found) or _shipped_source(str(value), names)
        if reads is not None:
            raise InputError(f"{flag} names this run's input ({reads}): writing would replace it; give the output "
                             "another name", file=str(value))


def _regular(path: str | Path) -> tuple[int, int] | None:
    """(device, inode) of the regular file ``path`` names, else None (none, another kind, a name the OS refuses)."""
    try:
        found = os.stat(path)
    except (OSError, ValueError):
        return None
    return (found.st_dev, found.st_ino) if stat.S_ISREG(found.st_mode) else None


def _shipped_source(output: str, names: list[tuple[str, str]]) -> str | None:
    """The input whose shipped name (``vgg16``) stands for ``output``'s file, else None: ``cost vgg16 --out
    layers/vgg16.csv`` replaced the network it read. Only an output in ``configs/`` or ``layers/`` is looked into."""
    from archsim.validate import shipped_configs

    real, configs = Path(os.path.realpath(output)), Path(os.path.realpath(str(shipped_configs(""))))
    folders = [configs / kind for kind in ("transformers", "energy", "devices")] if real.is_relative_to(configs) else []
    layers = None
    if real.parent.name == "layers":  # the shipped networks' folder is so named, installed or not: imported only then
        from archsim.workload.shipped import shipped_dir

        layers = Path(os.path.realpath(str(shipped_dir())))
    for text, source in names:  # a network's name keyed as workload.shipped keys it
        candidates = [layers / f"{text.strip().lower().replace('-', '_')}.csv"] if layers else []
        candidates += [folder / f"{text}{suffix}" for folder in folders for suffix in ("", ".toml", ".json", ".cfg")]
        if any(same_file(candidate, real) for candidate in candidates):
            return f"{source}, the shipped {text!r}"
    return None


def spec_inputs(spec: str) -> list[tuple[str, str]]:
    """The files a sweep spec's run reads, as (path, what): the spec itself and the files it names
    (:func:`_named_inputs`). Why: ``archsim report`` writes beside a sweep it did not run, and its ``--out``
    must spare them as ``sweep --report`` does (the report's own "Reproduce" line reruns that spec)."""
    return [(spec, "the sweep spec"), *_named_inputs(spec)]


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether two paths name one existing file (a hard link or symlink too); False when either is missing."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _named_inputs(path: str) -> list[tuple[str, str]]:
    """The files an input names that the run reads too, as (path, what): those an input TOML names
    (:func:`_toml_named`), and the energy table a ``.cfg``'s or device TOML's ``[energy] table`` names as a path, the
    input's own and those of the device and array files it names (:func:`_energy_table`).
    Why: ``cost --config chip.cfg --energy --out mine.toml``, chip.cfg stating ``[energy] table = mine.toml``, replaced
    the table the run had just priced with (so did ``train`` through a cluster's device file, and ``sweep --report``
    through a spec's ``energy_tables`` or its array ``.cfg``), until 2026-12-05."""
    named = _toml_named(path)
    return [*_energy_table(path, "the energy table"), *named,
            *(table for file, _ in named for table in _energy_table(file, "an energy table"))]


def _energy_table(path: str, what: str) -> list[tuple[str, str]]:
    """[(the table, ``what``)] where ``path`` is a ``.cfg`` or device TOML whose ``[energy] table`` is a ``.toml``
    path (beside it, as :func:`~archsim.energy.file_energy.read_cfg_energy` resolves it); [] for a shipped table's
    name, another file, or one that does not read (its command says why)."""
    if not path.lower().endswith((".cfg", ".toml")):
        return []
    from archsim.energy.file_energy import read_cfg_energy

    try:
        table = read_cfg_energy(path).table
    except (OSError, ValueError, InputError):
        return []
    return [(table, what)] if table and table.lower().endswith(".toml") else []


def _toml_named(path: str) -> list[tuple[str, str]]:
    """The files an input TOML names that the run reads too, as (path, what): a cluster's ``[[servers]]``
    device files (relative to the cluster file) and a sweep spec's ``model``, ``device``, network, ``.cfg``
    array and ``.toml`` energy table files.
    Why: ``train --cluster c.toml --out chip.cfg`` would otherwise replace the device file the run just
    read. A file that is not such a TOML, or does not parse, names nothing here (its command says why)."""
    if not path.lower().endswith(".toml"):
        return []
    from archsim.toml_errors import parse_toml

    try:
        with open(path, encoding="utf-8") as handle:
            table = parse_toml(handle.read(), path)
    except (OSError, ValueError, InputError):  # unreadable or not TOML: the command's own reader says so
        return []
    folder = Path(path).parent
    named: list[tuple[str, str]] = []
    servers = table.get("servers")
    for group in servers if isinstance(servers, list) else []:
        device = group.get("device") if isinstance(group, dict) else None
        if isinstance(device, str) and device:
            named.append((str(folder / device), "a device file"))
    sweep = table.get("sweep")
    if isinstance(sweep, dict):
        from archsim.choices.devices import DEVICE_SUFFIXES
        from archsim.sweep.device_files import spec_file
        from archsim.sweep.spec_arrays import ARRAY_SUFFIX, resolve_array_file
        from archsim.sweep.spec_files import resolve_network
        from archsim.workload.model_files import MODEL_SUFFIXES

        keys = (("model", "transformers", MODEL_SUFFIXES), ("device", "devices", DEVICE_SUFFIXES))
        for key, shipped, suffixes in keys:
            try:
                named.append((spec_file(sweep.get(key), folder, path, key, shipped, suffixes), f"the {key} file"))
            except (InputError, OSError, ValueError, TypeError):  # the sweep names the fault when it reads the spec
                continue
        networks = sweep.get("networks")
        for network in networks if isinstance(networks, list) else []:
            try:
                named.append((resolve_network(network, folder, path), "a network file"))
            except (InputError, OSError, ValueError, TypeError, AttributeError):
                continue
        arrays = sweep.get("arrays")
        for array in arrays if isinstance(arrays, list) else []:
            if isinstance(array, str) and array.lower().endswith(ARRAY_SUFFIX):
                try:
                    named.append((str(resolve_array_file(array, folder, path)), "an array file"))
                except (InputError, OSError, ValueError):
                    continue
        tables = sweep.get("energy_tables")  # a .toml one is the spec's neighbour; another, a shipped name
        named += [(str(folder / table), "an energy table") for table in (tables if isinstance(tables, list) else [])
                  if isinstance(table, str) and table.lower().endswith(".toml")]
    return named


def _input_name(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """How the help names an input: its flag (``--config``), else its metavar (``NETWORK``)."""
    metavar = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
    return flag_name(parser, action.dest) if action.option_strings else metavar
