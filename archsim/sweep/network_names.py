"""The name a sweep's network goes by where people read it: summary.csv's rows, the report's series, headings and
notes, the skipped points' line. results.csv's ``network`` column is the file's stem (docs/formats.md) and its
``network_path`` the file; two networks of one stem (``a/net.csv`` and ``b/net.csv``, ``my.csv`` and
``my.onnx``, a ``vgg16.csv`` beside the shipped ``vgg16``) share the stem, so whatever groups or labels by the
name would average or draw the two as one. :func:`display_names` gives each a name unique within the sweep,
and keeps the stem wherever it is unique, so a sweep without such a pair reads as it always has."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas loads with a summary or a report
    import pandas as pd


def _parts(network: str) -> tuple[str, ...]:
    """``network``'s path components, its root left out (a shipped name: the name alone)."""
    path = Path(network)
    return path.parts[1:] if path.anchor else path.parts


def path_suffix(network: str, count: int, extension: bool) -> str:
    """The last ``count`` components of ``network``'s path joined by ``/``, its file's extension kept or not
    (``a/net`` or ``a/net.csv``); the whole path where it has fewer."""
    parts = list(_parts(network))[-count:]
    if parts and not extension:
        parts[-1] = Path(parts[-1]).stem
    return "/".join(parts)


def _apart(group: list[str], taken: set[str]) -> dict[str, str]:
    """Names for ``group`` (networks of one stem) that tell them apart and are none of ``taken``: the shortest
    path suffix, without the extension where that does (``a/net``, ``b/net``), else with it (``my.csv``,
    ``my.onnx``; ``vgg16.csv`` beside the shipped ``vgg16``), else each network as recorded (distinct paths)."""
    depth = max(len(_parts(network)) for network in group)
    for count in range(1, depth + 1):
        for extension in (False, True):
            names = {network: path_suffix(network, count, extension) for network in group}
            if len(set(names.values())) == len(group) and not set(names.values()) & taken:
                return names
    return {network: network for network in group}


def display_names(networks: Iterable[str]) -> dict[str, str]:
    """Each of a sweep's ``networks`` (results.csv's ``network_path``: a file's path or a shipped name) mapped to
    its display name, in their order: its stem where no other of them shares it, else :func:`_apart`'s."""
    listed = list(dict.fromkeys(networks))
    stems: dict[str, list[str]] = {}
    for network in listed:
        stems.setdefault(Path(network).stem, []).append(network)
    names = {group[0]: stem for stem, group in stems.items() if len(group) == 1}
    taken = set(names.values())
    for group in (group for group in stems.values() if len(group) > 1):
        apart = _apart(group, taken)
        names.update(apart)
        taken |= set(apart.values())
    return {network: names[network] for network in listed}


def labelled(results: pd.DataFrame, networks: Iterable[str] = ()) -> pd.DataFrame:
    """``results`` with each row's ``network`` its display name (:func:`display_names` of ``networks``, the
    spec's in its order, and the rows' ``network_path``), so that everything that groups or labels by ``network``
    tells two networks of one stem apart; ``results`` itself where no two share a stem (or it has no
    ``network_path``: an older results.csv, named by stem as it was)."""
    if "network_path" not in results.columns:
        return results
    paths = results["network_path"]
    known = paths.notna()
    names = display_names([*map(str, networks), *paths[known].astype(str)])
    renamed = {network: name for network, name in names.items() if name != Path(network).stem}
    if not renamed:
        return results
    out = results.copy()
    changed = known & paths.astype(str).isin(list(renamed))
    out.loc[changed, "network"] = paths[changed].astype(str).map(renamed)
    return out


__all__ = ["display_names", "labelled", "path_suffix"]
