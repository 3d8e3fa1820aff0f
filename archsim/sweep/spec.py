"""Sweep specs (``configs/sweeps/*.toml``): file → validator → :class:`SweepSpec`.

Keys are checked exactly — an unknown key is an error naming it, never silently ignored::

    [sweep]
    name = "layerpipe_vgg16"
    networks = ["vgg16"]            # shipped names or CSV paths (relative to the spec file)
    only = ["conv"]                 # optional: keep only these layer kinds
    arrays = ["32x32", "64x64"]
    dataflows = ["ws"]
    batches = [16, 32]
    processors = [2, 3, 4]
    methods = ["layerpipe", "pipedream", "gpipe"]
    mode = "paper"                  # or "exact"
    engine = "analytic"             # or "cycle": memory-aware (compute + SCALE-Sim stall cycles)
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass
from itertools import product
from pathlib import Path

from archsim.array.config import parse_array_shape
from archsim.array.costing import ENGINES
from archsim.errors import InputError
from archsim.lowering import MODES
from archsim.partition import METHODS
from archsim.validate import INT32_MAX, MAX_PROCESSORS, check_name, read_text, shown
from archsim.workload.layer import LAYER_KINDS

MAX_LIST = 1000  # values per list: a sweep is their product

KEYS = {"name", "networks", "only", "arrays", "dataflows", "batches", "processors", "methods", "mode", "alpha",
        "engine"}
REQUIRED = {"networks", "arrays", "batches", "processors", "methods"}


@dataclass(frozen=True)
class Unit:
    """One cost-model configuration; every (processors, method) of it shares one profile."""

    network: str
    only: tuple[str, ...]
    rows: int
    cols: int
    dataflow: str
    batch: int
    mode: str
    processors: tuple[int, ...]
    methods: tuple[str, ...]
    alpha: float
    engine: str = "analytic"
    label: str = ""  # the results' network column: the file stem, or more of the path where stems collide

    @property
    def key(self) -> str:
        only = "+".join(self.only) or "all"
        engine = "" if self.engine == "analytic" else f"_{self.engine}"  # analytic keys as before
        return (f"{Path(self.network).stem}_{only}_{self.rows}x{self.cols}_{self.dataflow}_b{self.batch}_{self.mode}"
                f"_p{'-'.join(map(str, self.processors))}_{'-'.join(self.methods)}_a{self.alpha:g}{engine}")


@dataclass(frozen=True)
class SweepSpec:
    name: str
    networks: tuple[str, ...]
    only: tuple[str, ...]
    arrays: tuple[tuple[int, int], ...]
    dataflows: tuple[str, ...]
    batches: tuple[int, ...]
    processors: tuple[int, ...]
    methods: tuple[str, ...]
    mode: str = "paper"
    alpha: float = 1.001
    engine: str = "analytic"
    source: str | None = None

    def units(self) -> list[Unit]:
        labels = network_labels(self.networks)
        return [Unit(network, self.only, rows, cols, dataflow, batch, self.mode, self.processors, self.methods,
                     self.alpha, self.engine, labels[network])
                for network, (rows, cols), dataflow, batch in product(self.networks, self.arrays, self.dataflows,
                                                                      self.batches)]

    @property
    def size(self) -> int:
        return len(self.units()) * len(self.processors) * len(self.methods)


def network_labels(networks: tuple[str, ...]) -> dict[str, str]:
    """Each network's name in results: its stem, or its path below the colliding ones' common folder
    (``a/net``, ``b/net``) when two networks share a stem."""
    stems = [Path(n).stem for n in networks]
    labels = {}
    for network, stem in zip(networks, stems):
        twins = [n for n, s in zip(networks, stems) if s == stem]
        if len(twins) > 1:
            root = os.path.commonpath([str(Path(n).parent) for n in twins])
            stem = str(Path(os.path.relpath(network, root)).with_suffix("")).replace(os.sep, "/")
        labels[network] = stem
    return labels


def load_spec(path: str | Path) -> SweepSpec:
    path = Path(path)
    file = str(path)
    try:
        document = tomllib.loads(read_text(path, "sweep spec"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc})", file=file) from None
    if set(document) != {"sweep"}:
        raise InputError("expected exactly one table, [sweep]", file=file,
                         field=next(iter(set(document) - {"sweep"}), "sweep"))
    table = document["sweep"]
    if not isinstance(table, dict):
        raise InputError("expected a table: write [sweep] above the keys", file=file, field="sweep")
    unknown = sorted(set(table) - KEYS)
    if unknown:
        raise InputError(f"unknown key; allowed: {', '.join(sorted(KEYS))}", file=file, field=unknown[0])
    missing = sorted(REQUIRED - set(table))
    if missing:
        raise InputError("missing key", file=file, field=missing[0])

    def strings(key: str, allowed: tuple[str, ...] | None = None) -> tuple[str, ...]:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise InputError("expected a list of strings", file=file, field=key)
        if len(value) > MAX_LIST:
            raise InputError(f"more than {MAX_LIST} values", file=file, field=key)
        if allowed is not None:
            for item in value:
                if item not in allowed:
                    raise InputError(f"unknown value {shown(item)}; choose from {', '.join(allowed)}", file=file, field=key)
        return tuple(value)

    def positives(key: str, high: int = INT32_MAX) -> tuple[int, ...]:
        value = table.get(key)
        if not isinstance(value, list) or not value or not all(
                isinstance(x, int) and not isinstance(x, bool) and 0 < x <= high for x in value):
            raise InputError(f"expected a non-empty list of integers in 1…{high}", file=file, field=key)
        if len(value) > MAX_LIST:
            raise InputError(f"more than {MAX_LIST} values", file=file, field=key)
        return tuple(value)

    networks = strings("networks")
    if not networks:
        raise InputError("expected at least one network", file=file, field="networks")
    resolved = tuple(str((path.parent / n).resolve()) if n.endswith(".csv") else n for n in networks)
    arrays = []
    for text in strings("arrays"):
        try:
            arrays.append(parse_array_shape(text))
        except InputError as exc:
            raise InputError(exc.message, file=file, field="arrays") from None
    if not arrays:
        raise InputError("expected at least one array", file=file, field="arrays")
    mode = table.get("mode", "paper")
    if mode not in MODES:
        raise InputError(f"unknown mode {shown(mode)}; choose paper or exact", file=file, field="mode")
    alpha = table.get("alpha", 1.001)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 1 < alpha < math.inf:
        raise InputError("alpha must be a finite number > 1", file=file, field="alpha")
    engine = table.get("engine", "analytic")
    if engine not in ENGINES:
        raise InputError(f"unknown engine {shown(engine)}; choose one of {', '.join(ENGINES)}", file=file, field="engine")
    methods = strings("methods", METHODS)
    if not methods:
        raise InputError("expected at least one method", file=file, field="methods")
    return SweepSpec(
        name=check_name(table.get("name", path.stem), "name", file=file), networks=resolved, only=strings("only", LAYER_KINDS),
        arrays=tuple(arrays), dataflows=strings("dataflows", ("ws", "os", "is")) or ("ws",),
        batches=positives("batches"), processors=positives("processors", MAX_PROCESSORS), methods=methods, mode=mode,
        alpha=float(alpha), engine=engine, source=file)
