"""A results folder's sweep cache: ``DIR/cache/<digest>.json``, one file (an *entry*) per unit, named by the unit's
settings and its network's layers (:func:`cache_file`), written whole by atomic rename (:mod:`.runner`).

Entries are never rewritten, so a spec edited over time leaves the entries of units it no longer has: the cache
only grows. :func:`cache_use` says what a spec uses of it (``archsim sweep SPEC --cache-info``) and
:func:`prune_cache` drops the rest (``--prune-cache``) under the folder's lock (:mod:`.folder`), so no sweep is
writing there meanwhile; each entry goes by one ``unlink``, whole or not at all, and a file the cache did not
write (another name) is never touched.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from archsim.json_text import dumps
from archsim.output_targets import check_entry
from archsim.output_temps import remove_orphans
from archsim.split_axis import SPLIT_AXES
from archsim.sweep.device_spec import DevicePoint, DeviceSweepSpec
from archsim.sweep.folder import check_owner, holding
from archsim.sweep.spec import DEFAULT_BORROW, SweepSpec, Unit

CACHE_FORMAT = 2  # bump when a unit's rows change meaning, so old cache files are not reused
# A design unit of M > 1 micro-batches: its rows' byte columns per iteration since 2026-12-05 (one micro-batch's
# before), so its entries take a key of their own; every other unit's rows mean what they meant and keep their names.
ITERATION_BYTES = {"comm_bytes": "per iteration"}
ENTRY = re.compile(r"[0-9a-f]{40}\.json")  # a cache entry's name (:func:`cache_file`): nothing else is pruned


def cache_file(out: Path, unit: Unit | DevicePoint, digests: dict[str, str]) -> Path:
    """A unit's cache file, named by its settings and its network's layers (a device point's settings
    hold its files' SHA-256)."""
    network = digests[unit.network] if isinstance(unit, Unit) else None
    fields = asdict(unit)
    if fields.get("array_file", False) is None:  # a ROWSxCOLS array: the settings (and cache files) as before .cfg arrays
        del fields["array_file"]
    elif fields.get("array_file") and not fields["array_file"]["energy_table"] and not fields["array_file"]["energy_figures"]:
        del fields["array_file"]["energy_table"], fields["array_file"]["energy_figures"]  # no [energy]: names as before
    if fields.get("array_file") and not fields["array_file"].get("rates", True):
        del fields["array_file"]["rates"]  # no [macs_per_pe]: names as before the field
    if fields.get("array_file") and fields["array_file"]["array"].get("dram_rate", False) is None:
        del fields["array_file"]["array"]["dram_rate"]  # no device rate carried: names as before the field
    if fields.get("split_axes") == SPLIT_AXES:  # every δ split axis, the default: names as before the key
        del fields["split_axes"]
    if fields.get("borrow") == DEFAULT_BORROW:  # the printed walk alone, the default: names as before the key
        del fields["borrow"]
    if isinstance(unit, DevicePoint):  # a clock, TP or PP not swept: names as before those axes
        for key in ("clock_ghz", "tp", "pp"):
            if fields[key] is None:
                del fields[key]
        for key in ("seq", "fp8"):  # the model's own length, fp8 off: names as before the spec's seq and fp8 keys
            if fields["setup"][key] is None:
                del fields["setup"][key]
    extra = ITERATION_BYTES if isinstance(unit, Unit) and unit.design is not None and unit.design.microbatches > 1 else {}
    settings = dumps({"format": CACHE_FORMAT, "unit": fields, "network": network, **extra}, sort_keys=True)
    return out / "cache" / f"{hashlib.sha256(settings.encode()).hexdigest()[:40]}.json"


def remove_killed_temps(out: Path) -> int:
    """Delete the temp files killed writers left in a sweep's folder and its cache
    (:func:`~archsim.output_temps.remove_orphans`, the one cleaner: a live process's kept, and one with no PID in
    its name) and return how many. Called under the folder's lock, so no other sweep is writing there; another
    command may be (``archsim report DIR --out DIR/r.html``)."""
    return remove_orphans(out) + remove_orphans(out / "cache")


def check_entries(out: Path) -> None:
    """Refuse, before any work, a results folder in which a file the sweep writes or reads back — ``spec.json``,
    ``results.csv``, ``summary.csv``, ``cache/`` or a cache entry — is a symlink, naming it
    (:func:`~archsim.output_targets.check_entry`, which the writer applies again to every file it writes there;
    the lock, opened without following a link, refuses one itself: :func:`.folder.holding`). The report's reader
    applies it too (:func:`.report.results_folder`): a folder a sweep would refuse is never drawn."""
    for name in ("spec.json", "results.csv", "summary.csv", "cache"):
        check_entry(out / name, out)
    try:
        with os.scandir(out / "cache") as entries:
            linked = sorted(entry.name for entry in entries if ENTRY.fullmatch(entry.name) and entry.is_symlink())
    except OSError:  # no cache yet
        return
    if linked:
        check_entry(out / "cache" / linked[0], out)


@dataclass(frozen=True)
class CacheUse:
    """A folder's cache against a spec: its entries and their bytes in all, the spec's units (``units``) and how
    many of them are cached (``used``, ``used_bytes``), and the entries no unit of the spec names (``unused``)."""

    folder: Path
    entries: int
    bytes: int
    units: int
    used: int
    used_bytes: int
    unused: tuple[Path, ...]
    unused_bytes: int


def spec_files(spec: SweepSpec | DeviceSweepSpec, out: Path) -> set[Path]:
    """The cache files of ``spec``'s units in ``out`` (a network that cannot be read is refused here)."""
    from archsim.sweep.networks import network_digests

    digests = network_digests(spec)
    return {cache_file(out, unit, digests) for unit in spec.units()}


def cache_use(spec: SweepSpec | DeviceSweepSpec, out: str | Path) -> CacheUse:
    """What ``spec`` uses of ``out``'s cache (a snapshot: a sweep running there adds entries meanwhile)."""
    out = Path(out)
    wanted = spec_files(spec, out)
    sizes = _entries(out / "cache")
    unused = tuple(sorted(path for path in sizes if path not in wanted))
    return CacheUse(out / "cache", len(sizes), sum(sizes.values()), len(wanted),
                    sum(path in wanted for path in sizes), sum(size for path, size in sizes.items() if path in wanted),
                    unused, sum(sizes[path] for path in unused))


def prune_cache(spec: SweepSpec | DeviceSweepSpec, out: str | Path, *, force: bool = False) -> CacheUse:
    """Delete the entries of ``out``'s cache that no unit of ``spec`` names (and killed writers' temp files) and
    return the cache as it was (its ``unused`` are what was deleted). Refused, nothing deleted, while a sweep holds
    the folder, or when the folder holds another spec's results unless ``force`` (:func:`.folder.check_owner`)."""
    out = Path(out)
    if not (out / "cache").is_dir():
        return cache_use(spec, out)  # nothing cached: nothing to lock or delete
    if spec.source is None:
        from archsim.errors import InputError

        raise InputError("a sweep's cache is pruned for a spec read from its file (load_spec)", field="spec")
    check_owner(out, spec.source, force=force)  # so a refused folder gets no lock file (again when locked)
    with holding(out, spec.source, spec.name):  # no sweep writes into the folder until the entries are gone
        check_owner(out, spec.source, force=force)
        remove_killed_temps(out)
        use = cache_use(spec, out)
        for path in use.unused:
            path.unlink(missing_ok=True)
    return use


def _entries(folder: Path) -> dict[Path, int]:
    """The cache entries in ``folder`` (named as :func:`cache_file` names them) and their sizes in bytes."""
    if not folder.is_dir():
        return {}
    sizes = {}
    for path in folder.iterdir():
        if ENTRY.fullmatch(path.name):
            try:
                sizes[path] = path.lstat().st_size
            except FileNotFoundError:  # deleted meanwhile
                continue
    return sizes
