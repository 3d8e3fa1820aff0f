"""A sweep's networks: each read once per process (a spec's file checked to be the one the sweep hashed, or a
shipped name) and lowered once per batch for every array that shares it; the digests of their parsed layers, which
key the cache; the notes ``archsim cost`` gives of their files; and an error at its spec key's line."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from archsim.errors import InputError
from archsim.lowering import LoweredLayer, Mode, lower_network
from archsim.sweep.device_spec import DeviceSweepSpec
from archsim.sweep.spec import SweepSpec
from archsim.sweep.spec_files import check_unchanged, file_sha256_unless_shipped, spec_named
from archsim.toml_errors import locate, parse_toml
from archsim.validate import read_text
from archsim.workload import load_network
from archsim.workload.layer import Network
from archsim.workload.shipped import file_batch_note, load_shipped


@lru_cache(maxsize=16)
def unit_network(path: str, sha256: str, only: tuple[str, ...]) -> Network:
    """A unit's network, loaded once per process (``sha256``, of a file's bytes, keys a changed file)."""
    network = loaded_network(path, sha256)
    return network.only(*only) if only else network


def network_file_notes(spec: SweepSpec) -> tuple[str, ...]:
    """What ``archsim cost`` notes of each of a spec's network files (a layer renamed, a conv row that is a
    flattening fc, a batch the file fixes that is none of the spec's ``batches``), once per file and named as the
    spec names it: ``archsim sweep`` says them on stderr and :func:`archsim.api.run_sweep` warns them (UserWarning)."""
    lines = []
    for network in dict.fromkeys(spec.networks):
        if Path(network).is_absolute():
            shown = spec_named(spec.source, network)
            loaded = loaded_network(network, file_sha256_unless_shipped(network))
            batch = file_batch_note(replace(loaded, source=str(shown)), spec.batches)  # names the file as the spec
            lines += [f"{shown}: {note}" for note in loaded.notes] + ([batch] if batch else [])
    return tuple(lines)


@lru_cache(maxsize=16)
def loaded_network(path: str, sha256: str) -> Network:
    """The whole network, read once per process for its digest and every ``only`` subset: a spec's
    file (an absolute path inside the spec's folder) or a shipped name, never a working-folder file.
    A file is checked to still be the one of SHA-256 ``sha256`` once parsed: a process that reads it after the
    sweep started (a dask worker, which inherits nothing of the sweep's process as a forked pool's worker does)
    would otherwise cost an edited file under the hash, and cache file, of the one the sweep started with."""
    if not Path(path).is_absolute():
        return load_shipped(path)
    network = load_network(path)
    check_unchanged(path, sha256, "after the sweep started")
    return network


@lru_cache(maxsize=64)
def unit_lowering(path: str, sha256: str, only: tuple[str, ...], batch: int, mode: Mode,
                  element_bytes: int) -> tuple[LoweredLayer, ...]:
    """The network lowered once per process for every array shape and dataflow that share it."""
    return lower_network(unit_network(path, sha256, only), batch, mode, element_bytes)


def network_digests(spec: SweepSpec | DeviceSweepSpec) -> dict[str, str]:
    """sha256 of each network's parsed layers (what its results depend on, not its file name); a network without
    any of the spec's ``only`` kinds is refused at that key's line."""
    digests = {}
    only = spec.only if isinstance(spec, SweepSpec) else ()
    for network in spec.networks:
        sha256 = file_sha256_unless_shipped(network)
        try:
            layers = loaded_network(network, sha256).layers
        except InputError as exc:
            raise spec_key_error(network_error(spec.source, network, exc), spec.source, "networks") from None
        try:  # a kind the network lacks: refused at the spec's only line, before anything is written
            unit_network(network, sha256, only)
        except InputError as exc:
            raise spec_key_error(exc.message, spec.source, "only") from None
        digests[network] = hashlib.sha256(repr(layers).encode()).hexdigest()
    return digests


def network_error(source: str | None, network: str, exc: InputError) -> str:
    """A network that does not load, named once as the spec names it, with the file's row and column where the
    reader found them (``network net.csv, line 3, field 'Type': …``; the resolved path was said twice,
    ``network '/…/net.csv': /…/net.csv, line 3, …``)."""
    shown = spec_named(source, network)
    if exc.where.file is None:
        return f"network {shown!r}: {exc.message}"
    where = replace(exc.where, file=shown) if Path(exc.where.file) == Path(network) else exc.where
    return f"network {where}: {exc.message}"


def spec_key_error(message: str, source: str | None, field: str) -> InputError:
    """An error of a spec key found once the spec is read (a network that does not load, a processor count a
    network cannot take), at the key's line as the spec's own checks give it; without one where the file no
    longer reads as TOML (or is a SCALE-Sim .cfg)."""
    exc = InputError(message, file=source, field=field)
    if source is None or Path(source).suffix.lower() == ".cfg":
        return exc
    try:
        return locate(exc, parse_toml(read_text(Path(source), "sweep spec"), source), source)
    except InputError:
        return exc


__all__ = ["loaded_network", "network_digests", "network_file_notes", "spec_key_error", "unit_lowering", "unit_network"]
