"""Device sweep specs: the ``[sweep]`` table that names a ``model`` and a ``device`` → validator →
:class:`DeviceSweepSpec`, whose points (:class:`DevicePoint`) :mod:`archsim.sweep.device_points` times
and prices (docs/concepts.md, "Sweeps and reports"; docs/formats.md, "Device sweep spec")::

    [sweep]
    name = "tpu_v4_like_gpt"
    model = "gpt3_1.3b"              # a shipped configs/transformers/ name, or a file beside the spec
    device = "tpu_v4_like"           # a shipped configs/devices/ name, or a file beside the spec
    array_sides = [64, 128, 256]     # square arrays at the file's PE budget; or array_shapes = ["8x128x128"]
    sram_kib_per_array = [1024, 4096]  # the file's [memory] sram_kib_per_array, KiB (array devices only)
    clocks_ghz = [0.94, 1.05]        # the file's clock ([compute] clock_mhz, a .cfg's ClockGHz), GHz
    hbm_gbps = [600, 1200, 2400]     # the file's [memory] hbm_gbps, GB/s
    chips = [4, 8, 16]               # one server of this many chips
    tp = [1, 2]                      # tensor- and pipeline-parallel degrees (default [1]): DP = chips / (tp · pp)
    pp = [1, 2]
    global_batch = 64                # archsim train's flags, same names and choices
    micro_batch = 1
    seq = 4096                       # tokens per sample (default: the model's; a rotary config.json's is its longest context)
    recompute = "full"
    dtype = "bf16"
    attention = "standard"
    static_watts = 0                 # assumed static power per chip, W (default: the device file's, else 0)

Every key is checked and both files are read here, so a bad spec stops the run before it writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from archsim.array.device_sections import STATIC_ON_TILES
from archsim.array.device_values import static_watts
from archsim.array.sram_sizes import MAX_SRAM_KIB, MIN_SRAM_KIB, sram_figure
from archsim.choices.devices import DEVICE_SUFFIXES, DTYPES
from archsim.choices.training import ATTENTIONS, DEFAULT_ATTENTION, FP8_RECIPES, RECOMPUTE
from archsim.errors import InputError
from archsim.sweep.device_arrays import square_arrays
from archsim.sweep.device_files import check_cfg_bandwidths, file_sha256, spec_file
from archsim.sweep.device_layouts import checked_layouts
from archsim.training.cluster_file import MAX_GPUS
from archsim.validate import (
    INT32_MAX,
    did_you_mean,
    shown,
    shown_number,
)
from archsim.workload.model_files import MODEL_SUFFIXES
from archsim.workload.transformer import LIMITS

if TYPE_CHECKING:
    from archsim.devices.device import Device

T = TypeVar("T")
D = TypeVar("D", bound=dict)
MAX_AXIS = 1000  # values per axis: a sweep is their product
# chips a point trains on: one server of them, held to what train takes in a cluster (a larger count was accepted
# here and refused by the point's cluster, naming the device file and a servers[1].count no one wrote)
MAX_CHIPS = MAX_GPUS
KEYS = {"name", "model", "device", "array_sides", "array_shapes", "sram_kib_per_array", "clocks_ghz", "hbm_gbps",
        "chips", "tp", "pp", "global_batch", "micro_batch", "recompute", "dtype", "attention", "static_watts", "seq",
        "fp8"}
REQUIRED = {"model", "device", "chips", "global_batch"}
# keys a designer writes for a device sweep's own, unlike it in spelling (difflib names none): the key meant, and why
MEANT = {
    "gpus": ("chips", "chips the model trains on, one server of them"),
    "processors": ("chips", "an array sweep's processors; a device sweep's chips are whole devices"),
    "bandwidths": ("hbm_gbps", "an array sweep's DRAM words/cycle; a device sweep's HBM bandwidth, GB/s"),
    "sram_kb": ("sram_kib_per_array", "an array sweep's KiB per buffer; a device sweep's per array, the three together"),
    "hbm_bandwidth": ("hbm_gbps", "the HBM bandwidth, GB/s"),
    "bandwidth": ("hbm_gbps", "the HBM bandwidth, GB/s"),
    "clock_mhz": ("clocks_ghz", "the arrays' clock, GHz (MHz ÷ 1000)"),
    "sram_mib": ("sram_kib_per_array", "SRAM beside each array, KiB (MiB × 1024)"),
}


@dataclass(frozen=True)
class DeviceSetup:
    """What every point of a device sweep shares: the files (and their SHA-256, so an edited file is
    recomputed) and the training settings (``static_watts``: W per chip)."""

    model: str
    model_path: str
    model_sha256: str
    device: str
    device_path: str
    device_sha256: str
    global_batch: int
    micro_batch: int = 1
    recompute: str = "full"
    dtype: str = "fp16"
    attention: str = DEFAULT_ATTENTION
    static_watts: float = 0.0
    seq: int | None = None  # train's --seq, tokens per sample; None: the model file's
    fp8: str | None = None  # train's --fp8 recipe (FP8_RECIPES) for every point; None: off


@dataclass(frozen=True)
class DevicePoint:
    """One point of a device sweep: the sweep's shared ``setup`` and the fields this point replaces
    (``arrays``: count, rows, cols; ``hbm_gbps`` in GB/s; ``sram_kib_per_array`` in KiB; ``clock_ghz`` in GHz;
    None: the file's) with its chip count and their layout (``tp``, ``pp``; None: not swept, 1). Its
    fields are its cache key (a None clock, TP or PP left out, so a point cached before those axes keeps its
    entry): never the spec's name or its other axis values, so a point stays cached
    when the spec gains or loses another point."""

    setup: DeviceSetup
    arrays: tuple[int, int, int] | None
    hbm_gbps: float | None
    chips: int
    sram_kib_per_array: int | None = None
    clock_ghz: float | None = None
    tp: int | None = None
    pp: int | None = None

    @property
    def configs(self) -> int:
        """Rows of results.csv this point gives."""
        return 1

    @property
    def dp(self) -> int:
        """Data-parallel degree: the chips over TP × PP (the spec kept only layouts that divide)."""
        return self.chips // ((self.tp or 1) * (self.pp or 1))


@dataclass(frozen=True)
class DeviceSweepSpec:
    """A device sweep (module docstring): its points are the product of the axes (arrays, then SRAM
    per array, then clock, then HBM bandwidth, then chips, TP and PP), each sharing ``setup``, less the
    layouts ``archsim train`` refuses (``skipped``: chips, TP, PP and the reason each;
    :mod:`archsim.sweep.device_layouts`)."""

    name: str
    setup: DeviceSetup
    arrays: tuple[tuple[int, int, int] | None, ...]
    hbm_gbps: tuple[float | None, ...]
    chips: tuple[int, ...]
    source: str | None = None
    sram_kib_per_array: tuple[int | None, ...] = (None,)
    array_sides: tuple[int, ...] = ()  # the spec's array_sides, whose arrays fill the PE budget rounded down
    clocks_ghz: tuple[float | None, ...] = (None,)
    tp: tuple[int | None, ...] = (None,)
    pp: tuple[int | None, ...] = (None,)
    skipped: tuple[tuple[int, int, int, str], ...] = ()

    def layouts(self) -> list[tuple[int, int | None, int | None]]:
        """(chips, TP, PP) of every point, in the spec's order, the skipped ones left out."""
        refused = {(n, t, p) for n, t, p, _ in self.skipped}
        return [(n, t, p) for n in self.chips for t in self.tp for p in self.pp if (n, t or 1, p or 1) not in refused]

    def units(self) -> list[DevicePoint]:
        return [DevicePoint(self.setup, arrays, gbps, chips, sram, clock, tp, pp) for arrays in self.arrays
                for sram in self.sram_kib_per_array for clock in self.clocks_ghz for gbps in self.hbm_gbps
                for chips, tp, pp in self.layouts()]

    @property
    def size(self) -> int:
        return (len(self.arrays) * len(self.sram_kib_per_array) * len(self.clocks_ghz) * len(self.hbm_gbps)
                * len(self.layouts()))

    @property
    def networks(self) -> tuple[str, ...]:
        """A device sweep costs no network (``archsim sweep --report``'s own networks: none)."""
        return ()


def spec_document(path: Path, document: D | None) -> D:
    """``document``, the TOML of the spec file ``path`` (None: a SCALE-Sim ``.cfg``, no TOML), unless it is a file
    archsim reads elsewhere: a device file, a model or a cluster file given for the spec was refused as "expected
    exactly one table, [sweep]", naming one of its own tables, and a ``.cfg`` as bad TOML. Now one line says what
    the file is and the spec key that names it."""
    tables = set(document or ()) - {"sweep"}
    run = "global_batch (configs/sweeps/device_tpu_v4_like_gpt.toml)"
    if document is None or {"compute", "memory", "links"} <= tables:
        said = (f'{"a device file" if document else "a SCALE-Sim .cfg"}, not a sweep spec: name it in a spec\'s '
                f'[sweep] table, device = "FILE" beside model, chips and {run}'
                + ("" if document else ', or arrays = ["FILE"] in an array sweep (configs/sweeps/sample_quick.toml)'))
    elif tables == {"transformer"}:
        said = f'a transformer config, not a sweep spec: name it in a spec\'s [sweep] table, model = "FILE" beside ' \
               f"device, chips and {run}"
    elif "servers" in tables:
        said = ("a cluster file, not a sweep spec: a device sweep trains on one server of its device's chips, "
                f"chips = [N, …], in a spec's [sweep] table beside model, device and {run}")
    else:
        return document
    raise InputError(said, file=str(path))


def load_device_spec(table: dict, path: Path) -> DeviceSweepSpec:
    """The ``[sweep]`` table of a device sweep (module docstring), every key checked; an array sweep's
    key (``arrays``, ``networks``, …) is refused, never ignored."""
    from archsim.training.energy import load_priced_device
    from archsim.validate import check_name
    from archsim.workload.model_files import load_transformer
    from archsim.workload.transformer import check_positions

    file = str(path)
    unknown = sorted(set(table) - KEYS)
    if unknown:
        meant = MEANT.get(unknown[0])
        hint = f" (did you mean {meant[0]!r}? {meant[1]})" if meant else did_you_mean(unknown[0], KEYS)
        raise InputError(f"not a key of a device sweep{hint} (model = and device = make one); "
                         "allowed: "
                         f"{', '.join(sorted(KEYS))}", file=file, field=unknown[0])
    missing = sorted(REQUIRED - set(table))
    if missing:
        raise InputError("missing key (a device sweep needs model, device, chips and global_batch)", file=file,
                         field=missing[0], missing=True)

    def axis(key: str, check, accepted: str) -> tuple:
        value = table[key]
        if not isinstance(value, list):  # one number where the axis takes a list: the list to write
            one = isinstance(value, (int, float)) and not isinstance(value, bool)
            raise InputError(f"expected a list{f', {key} = [{value}]' if one else ''}, got {shown(value)}", file=file,
                             field=key)
        if not value:
            raise InputError(f"expected a non-empty list of {accepted}, got []", file=file, field=key)
        if len(value) > MAX_AXIS:
            raise InputError(f"more than {MAX_AXIS} values", file=file, field=key)
        checked = tuple(check(x) for x in value)
        for i, point in enumerate(checked):  # the entry as written (array_shapes' text), once per point
            if point in checked[:i]:
                raise InputError(f"{shown(value[i])} is given twice: expected distinct {accepted}, each value "
                                 "one point of the sweep", file=file, field=key)
        return checked

    def integer(key: str, high: int = INT32_MAX):
        def check(x) -> int:
            if isinstance(x, bool) or not isinstance(x, int) or not 0 < x <= high:
                raise InputError(f"expected integers in 1…{high}, got {shown_number(x)}", file=file, field=key)
            return x
        return check

    def choice(key: str, choices: tuple[str, ...], default: str) -> str:
        value = table.get(key, default)
        if value not in choices:
            hint = did_you_mean(value, choices) if isinstance(value, str) else ""  # dtype = "bf17": 'bf16'
            raise InputError(f"unknown value {shown(value)}{hint}; choose from {', '.join(choices)}", file=file,
                             field=key)
        return value

    model_path = spec_file(table["model"], path.parent, file, "model", "transformers", MODEL_SUFFIXES)
    device_path = spec_file(table["device"], path.parent, file, "device", "devices", DEVICE_SUFFIXES)
    config = _read(load_transformer, model_path, file, "model")  # both read here: a bad file stops the run before it writes
    seq = integer("seq", LIMITS["seq"])(table["seq"]) if "seq" in table else None  # train's --seq range
    if seq is not None:  # train's --seq: a learned position table's limit named as this spec's key
        try:
            check_positions(config.name, config.seq_limit, seq, "seq = N", "seq")
        except InputError as exc:
            raise exc.at(file=file, field="seq") from None
        config = replace(config, seq=seq)
    device = _read(load_priced_device, device_path, file, "device")  # its [energy] too
    if "array_sides" in table and "array_shapes" in table:
        raise InputError("give array_sides (square arrays at the file's PE budget) or array_shapes, not both",
                         file=file, field="array_shapes")
    arrays: tuple[tuple[int, int, int] | None, ...] = (None,)
    sides: tuple[int, ...] = ()
    if "array_sides" in table or "array_shapes" in table:
        key = "array_sides" if "array_sides" in table else "array_shapes"
        if device.gemm != "arrays":
            raise InputError(f"array axes are for devices whose GEMMs run on their arrays (gemm = \"arrays\"); this "
                             f"one has gemm = {device.gemm!r}", file=file, field=key)
        if key == "array_sides":
            try:
                sides = axis(key, integer(key, 1 << 15), f"integers in 1…{1 << 15}")
                arrays = square_arrays(device, sides)
            except InputError as exc:
                raise exc.at(file=file, field=key) from None
        else:
            arrays = axis(key, lambda text: _shape(text, file, key), 'COUNTxROWSxCOLS texts such as "8x128x128"')
    sram: tuple[int | None, ...] = (None,)
    if "sram_kib_per_array" in table:
        if device.gemm != "arrays":
            raise InputError(f"SRAM per array is an array device's (gemm = \"arrays\"), whose energy model prices its "
                             f"accesses; this one has gemm = {device.gemm!r}, priced at board power × time",
                             file=file, field="sram_kib_per_array")
        # a device file's rule for the key it replaces (sram_figure): whole KiB, at least the 3 the energy model
        # prices; above 256 MiB is warned as a device file's figure is (implausible_points), not refused
        def kib(x) -> int:
            try:
                return sram_figure(x)
            except ValueError as exc:
                raise InputError(str(exc), file=file, field="sram_kib_per_array") from None
        sram = axis("sram_kib_per_array", kib, f"whole KiB in {MIN_SRAM_KIB}…{MAX_SRAM_KIB}")
    clocks = _clocks(table, device, file, axis)
    hbm: tuple[float | None, ...] = (None,)
    if "hbm_gbps" in table:
        def gbps(x) -> float:
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 < x < 1e7:
                raise InputError(f"expected GB/s in (0, 10⁷), got {shown_number(x)}", file=file, field="hbm_gbps")
            return float(x)
        hbm = axis("hbm_gbps", gbps, "GB/s in (0, 10⁷)")
        check_cfg_bandwidths(device_path, device.arrays.clock_hz, hbm, file)
    for clock in (c for c in clocks if c is not None):  # each clock's points restate the bandwidths too
        try:
            check_cfg_bandwidths(device_path, clock * 1e9, tuple(device.hbm_bytes_per_s / 1e9 if g is None else g
                                                                 for g in hbm), file)
        except InputError as exc:
            raise InputError(f"at {clock:g} GHz: {exc.message}", file=file, field="clocks_ghz") from None
    chips = axis("chips", integer("chips", MAX_CHIPS), f"integers in 1…{MAX_CHIPS}")
    tps, pps = ((axis(key, integer(key, MAX_CHIPS), f"integers in 1…{MAX_CHIPS}") if key in table else (None,))
                for key in ("tp", "pp"))
    global_batch = integer("global_batch")(table["global_batch"])
    micro_batch = integer("micro_batch")(table.get("micro_batch", 1))
    recompute = choice("recompute", RECOMPUTE, "full")
    dtype = choice("dtype", DTYPES, "fp16")
    attention = choice("attention", ATTENTIONS, DEFAULT_ATTENTION)
    if isinstance(table.get("static_watts"), str):  # a TOML number takes no quotes, as in the device file
        raise InputError(f"expected a number, got {shown_number(table['static_watts'])}", file=file,
                         field="static_watts")
    try:  # the spec's what-if, else the device file's own (spec_warnings notes a spec overriding it)
        watts = static_watts(table["static_watts"]) if "static_watts" in table else device.static_watts
    except ValueError as exc:
        raise InputError(str(exc), file=file, field="static_watts") from None
    if watts and device.gemm != "arrays":
        raise InputError(STATIC_ON_TILES.format(gemm=device.gemm), file=file, field="static_watts")
    if global_batch % micro_batch:  # no chip count mends it: the key to change is one of these two, not chips
        raise InputError(f"global_batch {global_batch} is not a multiple of micro_batch {micro_batch}", file=file,
                         field="micro_batch" if "micro_batch" in table else "global_batch")
    # every point's layout and its schedule's size (train's --max-ops), before anything is written
    skipped = checked_layouts(config, chips, tps, pps, global_batch=global_batch, micro_batch=micro_batch,
                              recompute=recompute, attention=attention, file=file)
    try:
        device.peak(dtype)
    except InputError as exc:
        raise exc.at(file=file, field="dtype") from None
    from archsim.training.fp8_ops import check_fp8

    fp8 = choice("fp8", FP8_RECIPES, FP8_RECIPES[0]) if "fp8" in table else None
    try:  # train's --fp8 refusals (a 16-bit dtype beside it, an fp8 peak: the file's macs_per_pe.fp8), at the key
        check_fp8(fp8, device, dtype)
    except InputError as exc:
        raise InputError(exc.message, file=file, field="fp8") from None
    from archsim.devices.kernel_ops import fused_attention_refusal

    if attention == "flash" and (why := fused_attention_refusal(device, dtype)):  # train's refusal, as the spec's key
        raise InputError(f'{why}: write attention = "standard"', file=file,
                         field="attention" if "attention" in table else "dtype")
    setup = DeviceSetup(model=table["model"], model_path=model_path, model_sha256=file_sha256(model_path),
                        device=table["device"], device_path=device_path, device_sha256=file_sha256(device_path),
                        global_batch=global_batch, micro_batch=micro_batch, recompute=recompute, dtype=dtype,
                        attention=attention, static_watts=float(watts), seq=seq, fp8=fp8)
    return DeviceSweepSpec(name=check_name(table.get("name", path.stem), "name", file=file), setup=setup,
                           arrays=arrays, hbm_gbps=hbm, chips=chips, source=file, sram_kib_per_array=sram,
                           array_sides=sides, clocks_ghz=clocks, tp=tps, pp=pps, skipped=skipped)


def _clocks(table: dict, device: Device, file: str, axis) -> tuple[float | None, ...]:
    """``clocks_ghz``: the device file's clock replaced, GHz, each in the range every clock archsim reads is
    checked against (:func:`archsim.clock.checked_clock`); an array device's (gemm = "arrays") only, whose
    arrays' rate the clock sets (a tile-timed device runs its GEMMs at the peaks it states)."""
    from archsim.clock import checked_clock, clock_range

    if "clocks_ghz" not in table:
        return (None,)
    if device.gemm != "arrays":
        raise InputError(f"a clock axis is for devices whose GEMMs run on their arrays at the clock (gemm = "
                         f"\"arrays\"); this one has gemm = {device.gemm!r}, timed at the peaks it states",
                         file=file, field="clocks_ghz")

    def ghz(x) -> float:
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise InputError(f"expected clocks in GHz ({clock_range('GHz')}), got {shown_number(x)}", file=file,
                             field="clocks_ghz")
        try:
            return checked_clock(x, "GHz")
        except ValueError as exc:
            raise InputError(str(exc), file=file, field="clocks_ghz") from None

    return axis("clocks_ghz", ghz, f"clocks in GHz ({clock_range('GHz')})")


def _read(load: Callable[[str], T], path: str, file: str, key: str) -> T:
    """``load(path)``, its error naming the spec's key (and the named file's own line and key, when known)."""
    try:
        return load(path)
    except InputError as exc:
        if exc.where.file:  # the named file's own place kept in the text: not a key of this file that is missing
            raise InputError(str(exc), file=file, field=key) from None
        raise exc.at(file=file, field=key) from None


def _shape(text: object, file: str, key: str) -> tuple[int, int, int]:
    """``"COUNTxROWSxCOLS"`` (``"8x128x128"``) as integers ≥ 1."""
    parts = text.lower().split("x") if isinstance(text, str) else []
    if len(parts) != 3 or not all(p.isdigit() and 0 < int(p) <= 1 << 20 for p in parts):
        raise InputError(f"expected COUNTxROWSxCOLS such as \"8x128x128\", got {shown(text)}", file=file, field=key)
    count, rows, cols = (int(p) for p in parts)
    return count, rows, cols


__all__ = ["DevicePoint", "DeviceSetup", "DeviceSweepSpec", "load_device_spec"]
