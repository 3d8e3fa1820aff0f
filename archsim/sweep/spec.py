"""Sweep specs (``configs/sweeps/*.toml``): file → validator → :class:`SweepSpec`.

Keys are checked exactly — an unknown key is an error naming it, never silently ignored::

    [sweep]
    name = "layerpipe_vgg16"
    networks = ["vgg16"]            # shipped names, or CSV/ONNX paths (relative to the spec file or the
                                    # working directory); results keep the path and a content hash
    only = ["conv"]                 # optional: keep only these layer kinds
    arrays = ["32x32", "64x64"]      # ROWSxCOLS, or a SCALE-Sim .cfg path (relative to the spec file)
    dataflows = ["ws"]
    batches = [16, 32]
    processors = [2, 3, 4]
    methods = ["layerpipe", "pipedream", "gpipe"]
    mode = "paper"                  # or "exact"
    alpha = 1.001                   # LayerPipe's relaxation factor, as --alpha (with layerpipe in methods)
    split_axes = ["channels"]       # optional: the δ split axes LayerPipe may use, as --split-axes (default all three)
    borrow = ["paper", "gainful"]   # optional: LayerPipe's δ moves kept, as --borrow; each value its own rows
    engine = "analytic"             # or "cycle": memory-aware (compute + SCALE-Sim stall cycles)

Design-space axes (optional; any of them makes it a design sweep whose rows add time, energy per
iteration and area — ``archsim.sweep.design``)::

    sram_kb = [32, 64, 256]         # KiB of each of the ifmap, filter and ofmap SRAMs
    bandwidths = [4, 10, 32]        # DRAM words/cycle per operand (the cycle engine's stalls; engine = "cycle")
    clocks_ghz = [0.5, 1.0, 2.0]    # seconds = cycles / clock
    element_bytes = [1, 2]          # bytes per element: tensor sizes, MAC/SRAM energies, area
    dtypes = ["int8", "fp16"]       # or the same by --dtype's names (one of dtypes and element_bytes)
    microbatches = [1, 4]           # the batch runs as M micro-batches of batch / M (M must divide it)
    energy_tables = ["horowitz45"]  # shipped names or .toml paths (relative to the spec file)

Beside a ``.cfg`` array a design sweep varies only what the file leaves unset: an axis that would override
its SRAMs, ``Bandwidth`` or ``[archsim] ClockGHz`` is refused (:func:`archsim.sweep.spec_arrays.check_cfg_axes`).
Under the cycle engine without ``bandwidths``, a device ``.cfg`` stating ``[memory] hbm_gbps`` (and no ``Bandwidth``)
runs at that rate in each design's words, as ``archsim cost --config --engine cycle`` does
(:func:`archsim.sweep.spec_arrays.at_device_rate`); elsewhere the default is 10 words/cycle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from itertools import product
from pathlib import Path
from typing import TYPE_CHECKING

from archsim.array.config import ArrayConfig
from archsim.choices.devices import ENGINES
from archsim.choices.partitions import BORROW_PAPER, LAYERPIPE_ALPHA, LAYERPIPE_BORROW, MAX_ALPHA
from archsim.errors import InputError
from archsim.lowering import MODES, Mode
from archsim.planners import PARTITIONERS
from archsim.split_axis import SPLIT_AXES
from archsim.sweep.device_spec import spec_document
from archsim.sweep.spec_arrays import ArrayFile, at_device_rate, check_cfg_axes, check_fp8_arrays, read_array
from archsim.sweep.spec_files import file_sha256_unless_shipped, resolve_network
from archsim.sweep.spec_lists import SET_REPEAT, clock_list, once, positive_list, string_list
from archsim.toml_errors import located, parse_toml
from archsim.validate import (
    INT32_MAX,
    MAX_CONFIGS,
    MAX_PROCESSORS,
    check_name,
    did_you_mean,
    read_text,
    resolve_name,
    shown,
)
from archsim.workload.layer_types import LAYER_KINDS

if TYPE_CHECKING:

    from archsim.sweep.device_spec import DeviceSweepSpec

def check_size(configs: int, max_configs: int, file: str | None) -> None:
    """Refuse a sweep of more than ``max_configs`` configurations (counted from its axes, never listed) before
    anything is built: 10³ values on each of six axes would be 10¹⁸ rows, ground on for ever."""
    from archsim.console import in_library, setting

    if configs > max_configs:  # the cap as the caller gives it: --max-configs 1,000,000 or max_configs=1000000
        cap = setting("max-configs", placeholder=f"{max_configs}" if in_library() else f"{max_configs:,}")
        raise InputError(f"the sweep has {configs:,} configurations (its axes' lengths multiplied), more than "
                         f"{cap}: give fewer values, or a larger {setting('max-configs')}", file=file)

DESIGN_KEYS = {"sram_kb", "bandwidths", "clocks_ghz", "element_bytes", "dtypes", "microbatches", "energy_tables"}
KEYS = {"name", "networks", "only", "arrays", "dataflows", "batches", "processors", "methods", "mode", "alpha",
        "split_axes", "borrow", "engine"} | DESIGN_KEYS
REQUIRED = {"networks", "arrays", "batches", "processors", "methods"}
# The keys that tune LayerPipe's Algorithm 1, as results.csv and summary.csv name them after ``method`` (alpha; the δ
# split axes joined by "+", as ``only``'s kinds are): empty on another method's rows, which read neither
SETTING_COLUMNS = ["alpha", "split_axes"]
# LayerPipe's --borrow values a spec's ``borrow`` key runs: each one LayerPipe rows of its own, told apart by a
# ``borrow`` column (after ``split_axes``) only where the spec runs other than the printed algorithm's alone, so a
# spec without the key writes the files (and cache entries) it wrote before the key
BORROW_COLUMN = "borrow"
DEFAULT_BORROW = (BORROW_PAPER,)  # the axis's default: the printed walk alone


def method_runs(methods: tuple[str, ...], borrow: tuple[str, ...]) -> tuple[tuple[str, str | None], ...]:
    """(method, borrow) of each row one configuration (processor count, clock) gives, in the spec's order: LayerPipe
    once per ``borrow`` value, any other method once (None: it reads no borrow)."""
    return tuple((m, b) for m in methods for b in (borrow if m == "layerpipe" else (None,)))


@dataclass(frozen=True)
class Unit:
    """One cost-model configuration; every (processors, method) of it shares one profile."""

    network: str
    only: tuple[str, ...]
    rows: int
    cols: int
    dataflow: str
    batch: int
    mode: Mode
    processors: tuple[int, ...]
    methods: tuple[str, ...]
    alpha: float
    engine: str = "analytic"
    network_sha256: str = ""  # of a network file's bytes; empty for a shipped name
    design: Design | None = None  # None: a plain sweep (cycles and speedups only)
    array_file: ArrayFile | None = None  # None: rows × cols at ArrayConfig's defaults (a "ROWSxCOLS" entry)
    split_axes: tuple[str, ...] = SPLIT_AXES  # LayerPipe's δ split axes (--split-axes' names)
    borrow: tuple[str, ...] = DEFAULT_BORROW  # LayerPipe's --borrow values, each its own rows (:func:`method_runs`)

    @property
    def array(self) -> ArrayConfig:
        """The array this unit's plain rows are costed on, at its dataflow."""
        if self.array_file is None:
            return ArrayConfig(rows=self.rows, cols=self.cols, dataflow=self.dataflow)
        return replace(self.array_file.array, dataflow=self.dataflow)

    @property
    def configs(self) -> int:
        """Configurations of this unit, one per (processors, method) and design clock (as :attr:`SweepSpec.size`
        counts them); results.csv has one row each but those of PipeDream's skipped points
        (:func:`archsim.sweep.pipedream_points.unit_skipped`), which the runner subtracts."""
        clocks = max(1, len(self.design.clocks_ghz)) if self.design is not None else 1
        return len(self.processors) * len(method_runs(self.methods, self.borrow)) * clocks

    @property
    def key(self) -> str:
        only = "+".join(self.only) or "all"
        engine = "" if self.engine == "analytic" else f"_{self.engine}"  # analytic keys as before
        content = f"_{self.network_sha256[:12]}" if self.network_sha256 else ""  # a changed file is recomputed
        design = "" if self.design is None else f"_{self.design.key}"
        array = "" if self.array_file is None else f"_{Path(self.array_file.path).stem}"
        axes = "" if self.split_axes == SPLIT_AXES else f"_x{'-'.join(self.split_axes)}"  # every axis: keys as before
        borrow = "" if self.borrow == DEFAULT_BORROW else f"_b{'-'.join(self.borrow)}"  # the printed walk: as before
        return (f"{Path(self.network).stem}{content}_{only}_{self.rows}x{self.cols}_{self.dataflow}_b{self.batch}"
                f"_{self.mode}_p{'-'.join(map(str, self.processors))}_{'-'.join(self.methods)}_a{self.alpha:g}{engine}"
                f"{design}{array}{axes}{borrow}")


@dataclass(frozen=True)
class Design:
    """One point of the design-space axes; clocks only rescale time, so a unit carries all of them."""

    sram_kb: int = 64
    bandwidth: int = 10
    element_bytes: int = 1
    microbatches: int = 1
    energy_table: str = "horowitz45"
    clocks_ghz: tuple[float, ...] = ()
    dtype: str | None = None  # the name of element_bytes where the spec gave dtypes (a results column)

    @property
    def key(self) -> str:
        clocks = "-".join(f"{c:g}" for c in self.clocks_ghz) or "none"
        named = f"_{self.dtype}" if self.dtype else ""  # element_bytes sweeps keep their cached keys
        return (f"s{self.sram_kb}_bw{self.bandwidth}_e{self.element_bytes}_m{self.microbatches}_"
                f"{Path(self.energy_table).stem}_c{clocks}{named}")


@dataclass(frozen=True)
class SweepSpec:
    name: str
    networks: tuple[str, ...]
    only: tuple[str, ...]
    arrays: tuple[tuple[int, int] | ArrayFile, ...]  # (rows, cols), or a .cfg's array
    dataflows: tuple[str, ...]  # empty: each array's own (a .cfg's Dataflow; ws for a shape)
    batches: tuple[int, ...]
    processors: tuple[int, ...]
    methods: tuple[str, ...]
    mode: Mode = "exact"
    alpha: float = LAYERPIPE_ALPHA
    engine: str = "analytic"
    source: str | None = None
    split_axes: tuple[str, ...] = SPLIT_AXES
    designs: tuple[Design, ...] = ()  # empty: a plain sweep
    bandwidths_given: bool = False  # the spec states bandwidths (else a device .cfg's hbm_gbps rate, or 10 words/cycle)
    borrow: tuple[str, ...] = DEFAULT_BORROW  # LayerPipe's --borrow values (the spec's ``borrow``)

    def units(self) -> list[Unit]:
        digests = {network: file_sha256_unless_shipped(network) for network in self.networks}
        return [Unit(network, self.only, *_shape(array), dataflow, batch, self.mode, self.processors, self.methods,
                     self.alpha, self.engine, digests[network], design,
                     array if isinstance(array, ArrayFile) else None, self.split_axes, self.borrow)
                for network, array in product(self.networks, self.arrays)
                for dataflow, batch, design in product(self.dataflows or (_dataflow(array),), self.batches,
                                                       self.designs or (None,))]

    @property
    def size(self) -> int:
        """Configurations (rows of results.csv), counted without listing the units."""
        clocks = max(1, len(self.designs[0].clocks_ghz)) if self.designs else 1
        units = len(self.networks) * len(self.arrays) * max(1, len(self.dataflows)) * len(self.batches)
        runs = len(method_runs(self.methods, self.borrow))
        return units * max(1, len(self.designs)) * len(self.processors) * runs * clocks


def _shape(array: tuple[int, int] | ArrayFile) -> tuple[int, int]:
    return (array.array.rows, array.array.cols) if isinstance(array, ArrayFile) else array


def _dataflow(array: tuple[int, int] | ArrayFile) -> str:
    """An array's dataflow where the spec gives no ``dataflows``: a .cfg's own, else ws."""
    return array.array.dataflow if isinstance(array, ArrayFile) else "ws"


def _shipped_table_name(name: str, file: str) -> str:
    """A spec's energy table that is not a ``.toml`` file: a shipped table's name, never a path."""
    from archsim.energy.table import shipped_table

    try:
        shipped_table(name, field="energy_tables")
    except InputError as exc:
        raise exc.at(file=file, field="energy_tables") from None
    return name


def load_spec(path: str | Path, *, max_configs: int = MAX_CONFIGS) -> SweepSpec | DeviceSweepSpec:
    """A spec file's sweep: an array sweep, or a device sweep when ``[sweep]`` names a ``device`` or a
    ``model`` (:mod:`archsim.sweep.device_spec`); one of more than ``max_configs`` configurations is refused."""
    text = read_text(path, "sweep spec")  # as written: Path drops a trailing "/"
    path = Path(path)
    file = str(path)  # a .cfg, SCALE-Sim's (no TOML), is said as such by spec_document
    document = spec_document(path, None if path.suffix.lower() == ".cfg" else parse_toml(text, file))
    with located(document, file):  # a key's error names its line
        spec = _spec(document, path, file, max_configs)
    check_size(spec.size, max_configs, file)
    return spec


def _spec(document: dict, path: Path, file: str, max_configs: int) -> SweepSpec | DeviceSweepSpec:
    """A parsed spec's sweep, checked (:func:`load_spec`)."""
    if set(document) != {"sweep"}:
        raise InputError("expected exactly one table, [sweep]", file=file,
                         field=next(iter(set(document) - {"sweep"}), "sweep"))
    table = document["sweep"]
    if not isinstance(table, dict):
        raise InputError("expected a table: write [sweep] above the keys", file=file, field="sweep")
    from archsim.sweep import device_spec

    if "device" in table or "model" in table:
        return device_spec.load_device_spec(table, path)
    unknown = sorted(set(table) - KEYS)
    if unknown:
        if unknown[0] in device_spec.KEYS:
            raise InputError("a device sweep's key: name the device file and the model (device = …, model = …)",
                             file=file, field=unknown[0])
        raise InputError(f"unknown key{did_you_mean(unknown[0], KEYS)}; allowed: {', '.join(sorted(KEYS))}", file=file,
                         field=unknown[0])
    missing = sorted(REQUIRED - set(table))
    if missing:
        raise InputError("missing key", file=file, field=missing[0], missing=True)

    def strings(key: str, allowed: tuple[str, ...] | None = None) -> tuple[str, ...]:
        return string_list(table, key, file, allowed, SET_REPEAT if key == "only" else None)

    def positives(key: str, high: int = INT32_MAX) -> tuple[int, ...]:
        return positive_list(table, key, file, high)

    networks = strings("networks")
    if not networks:
        raise InputError("expected at least one network (a shipped name or a file), got []", file=file,
                         field="networks")
    resolved = tuple(resolve_network(n, path.parent, file) for n in networks)
    once(resolved, networks, "networks", file)
    array_texts = strings("arrays")
    arrays = [read_array(text, path.parent, file) for text in array_texts]
    once(arrays, array_texts, "arrays", file)
    if not arrays:
        raise InputError("expected at least one array (ROWSxCOLS or a .cfg), got []", file=file, field="arrays")
    mode = table.get("mode", "exact")
    if mode not in MODES:
        hint = did_you_mean(mode, MODES) if isinstance(mode, str) else ""
        raise InputError(f"unknown mode {shown(mode)}{hint}; choose paper or exact", file=file, field="mode")
    alpha = table.get("alpha", LAYERPIPE_ALPHA)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 1 < alpha <= MAX_ALPHA:
        raise InputError(f"alpha must be a number > 1 and <= {MAX_ALPHA:g}, as --alpha", file=file, field="alpha")
    delta_axes = string_list(table, "split_axes", file, SPLIT_AXES, SET_REPEAT) if "split_axes" in table else SPLIT_AXES
    if not delta_axes:  # split_axes = []: no split at all, which --split-axes cannot say
        raise InputError(f"expected at least one split axis of {', '.join(SPLIT_AXES)}, got []", file=file,
                         field="split_axes")
    engine = table.get("engine", "analytic")
    if engine not in ENGINES:
        hint = did_you_mean(engine, ENGINES) if isinstance(engine, str) else ""
        raise InputError(f"unknown engine {shown(engine)}{hint}; choose one of {', '.join(ENGINES)}", file=file,
                         field="engine")
    if "bandwidths" in table and engine != "cycle":  # as --bandwidth: the analytic engine has no memory stalls
        raise InputError('bandwidths is the cycle engine\'s DRAM words/cycle: add engine = "cycle" (analytic '
                         "cycles have no memory stalls, so every bandwidth gives the same rows)", file=file,
                         field="bandwidths")
    if engine == "cycle" and "bandwidths" not in table:  # a device .cfg's hbm_gbps, as cost --engine cycle reads it
        arrays = [at_device_rate(array) if isinstance(array, ArrayFile) else array for array in arrays]
    methods = strings("methods", PARTITIONERS)
    if not methods:
        raise InputError(f"expected at least one method of {', '.join(PARTITIONERS)}, got []", file=file,
                         field="methods")
    for key in (*SETTING_COLUMNS, "borrow"):  # as pipeline refuses --alpha, --split-axes, --borrow beside another method
        if key in table and "layerpipe" not in methods:  # it would change no row: refused, as plan refuses a setting
            raise InputError(f"{key} tunes LayerPipe's Algorithm 1, which none of methods ({', '.join(methods)}) "
                             f"runs: list layerpipe in methods, or drop {key}", file=file, field=key)
    borrow = strings("borrow", LAYERPIPE_BORROW) if "borrow" in table else DEFAULT_BORROW
    if not borrow:
        raise InputError(f"expected at least one of {', '.join(LAYERPIPE_BORROW)}, as --borrow, got []", file=file,
                         field="borrow")
    designs: tuple[Design, ...] = ()
    if DESIGN_KEYS & set(table):
        check_cfg_axes(table, array_texts, arrays, file)
        clocks = clock_list(table, file)
        if table.get("energy_tables") == []:  # read as the default table before: refused as every empty axis is
            raise InputError("expected at least one energy table (a shipped name or a .toml path), got []", file=file,
                             field="energy_tables")
        tables = strings("energy_tables") or ("horowitz45",)
        tables = tuple(str(resolve_name(path.parent, t, "", "energy table", field="energy_tables").resolve())
                       if t.endswith(".toml") else _shipped_table_name(t, file) for t in tables)
        micro = positives("microbatches") if "microbatches" in table else (1,)
        batches = positives("batches")
        for m in micro:
            bad = [b for b in batches if b % m]
            if bad:
                raise InputError(f"{m} micro-batches do not divide batch {bad[0]}", file=file, field="microbatches")
        widths = _widths(table, strings, positives, file)
        if any(name == "fp8" for _, name in widths):  # cost --dtype fp8's refusals, before anything is written
            check_fp8_arrays(arrays, tables, file)
        axes = (len(positives("sram_kb")) if "sram_kb" in table else 1, len(positives("bandwidths"))
                if "bandwidths" in table else 1, len(widths), len(micro), len(tables), max(1, len(clocks)))
        check_size(len(resolved) * len(arrays) * max(1, len(strings("dataflows", ("ws", "os", "is")))) * len(batches)
                   * len(positives("processors", MAX_PROCESSORS)) * len(method_runs(methods, borrow)) * math.prod(axes),
                   max_configs, file)
        designs = tuple(Design(s, bw, e, m, t, clocks, name) for s, bw, (e, name), m, t in
                        product(positives("sram_kb") if "sram_kb" in table else (64,),
                                positives("bandwidths") if "bandwidths" in table else (10,), widths, micro, tables))
    return SweepSpec(designs=designs, 
        name=check_name(table.get("name", path.stem), "name", file=file), networks=resolved, only=strings("only", LAYER_KINDS),
        arrays=tuple(arrays), dataflows=strings("dataflows", ("ws", "os", "is")),
        batches=positives("batches"), processors=positives("processors", MAX_PROCESSORS), methods=methods, mode=mode,
        alpha=float(alpha), engine=engine, source=file, split_axes=delta_axes, bandwidths_given="bandwidths" in table,
        borrow=borrow)


def _widths(table: dict, strings, positives, file: str) -> tuple[tuple[int, str | None], ...]:
    """(bytes per element, dtype name or None) of each point of the width axis: ``dtypes`` by ``--dtype``'s
    names (:func:`archsim.array.options.element_width`), else ``element_bytes`` (default 1); both is refused,
    as are two names of one width (fp16 and bf16: their rows would be the same)."""
    from archsim.array.options import element_width
    from archsim.choices.devices import FP8, FP8_ARRAY_DTYPES

    if "dtypes" not in table:
        return tuple((e, None) for e in (positives("element_bytes") if "element_bytes" in table else (1,)))
    if "element_bytes" in table:
        raise InputError("give dtypes or element_bytes, not both (dtypes names the widths)", file=file,
                         field="element_bytes")
    names = strings("dtypes", FP8_ARRAY_DTYPES)
    if not names:
        raise InputError(f"expected at least one dtype of {', '.join(FP8_ARRAY_DTYPES)}, got []", file=file,
                         field="dtypes")
    seen: dict[tuple[int, bool], str] = {}  # fp8 beside int8: 1-byte words both, its MACs at fp8's rate and pJ
    for name in names:
        width = element_width(name)
        assert width is not None  # a name always has a width
        if (width, name == FP8) in seen:
            raise InputError(f"{seen[width, name == FP8]} and {name} are both {width}-byte elements: the rows would "
                             "be the same; keep one", file=file, field="dtypes")
        seen[width, name == FP8] = name
    return tuple((width, name) for (width, _), name in seen.items())
