"""A device file's or a SCALE-Sim ``.cfg``'s ``[energy]`` section (a table and figure overrides), and the table and
per-event figures a command prices an array with from the flags and that file."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from archsim.array.config import ArrayConfig
from archsim.array.device_sections import is_device_toml
from archsim.energy.table import (
    LEAKAGE_FIGURES,
    OVERRIDABLE,
    AccessEnergies,
    EnergyTable,
    access_energies,
    figure_number,
    load_table,
    shipped_table,
    with_overrides,
)
from archsim.errors import InputError
from archsim.toml_errors import locate, located, parse_toml
from archsim.validate import did_you_mean, read_text, shown


@dataclass(frozen=True)
class CfgEnergy:
    """A ``.cfg``'s ``[energy]`` section: the table to use (None: default) and figure overrides."""

    table: str | None
    overrides: dict[str, float]


def read_cfg_energy(path: str | Path, *, leakage: bool = True) -> CfgEnergy:
    """The optional ``[energy]`` section of a SCALE-Sim ``.cfg`` (SCALE-Sim never reads it) or of a device TOML:
    ``table = NAME|PATH.toml`` (a path relative to the file) and any of :data:`OVERRIDABLE` (pJ; leakage mW).
    One reader of both forms (:func:`energy_section`), so the two state a chip's energy in the same record.
    ``leakage``: whether the caller prices the leakage figures (train and search refuse them), so that an unknown
    key's error lists only the keys the caller takes."""
    file = str(path)
    if is_device_toml(path):  # a device TOML: its values typed, a key's error naming its line
        document = parse_toml(read_text(path, "device file"), file)
        section = document.get("energy", {})
        if not isinstance(section, dict):
            raise InputError("[energy] must be a table", file=file)
        with located(document, file):
            try:
                return energy_section(section, path, typed=True, leakage=leakage)
            except InputError as exc:  # the key as the TOML nests it, for its line
                raise exc.at(file=exc.where.file, field=f"energy.{exc.where.field}") if exc.where.field else exc from None
    from archsim.array.cfg_lines import cfg_located, cfg_parser, cfg_unquoted

    text = read_text(path, "config file", encoding="utf-8-sig")
    parser = cfg_parser(text, file)
    section = dict(parser["energy"]) if parser.has_section("energy") else {}
    try:
        for key, value in section.items():  # a TOML habit, table = "name": the quotes would be read as the name's
            cfg_unquoted(value, file, key)
        return energy_section(section, path, leakage=leakage)
    except InputError as exc:  # the key as [energy]'s, at its line, as the .cfg's device keys are named
        if not exc.where.field or exc.where.file != file:
            raise
        raise cfg_located(exc.at(file=file, field=f"energy.{exc.where.field}"), text) from None


def energy_key_error(message: str, path: str | Path, key: str) -> InputError:
    """An error of the ``[energy]`` key ``key`` of the device file ``path`` (a TOML or a ``.cfg``) found once the
    section is read (train's refusal of a leakage figure), at the key's line as :func:`read_cfg_energy`'s own
    errors give it (``FILE, line N, field 'energy.KEY'``)."""
    file = str(path)
    exc = InputError(message, file=file, field=f"energy.{key}")
    if is_device_toml(path):
        return locate(exc, parse_toml(read_text(path, "device file"), file), file)
    from archsim.array.cfg_lines import cfg_located

    return cfg_located(exc, read_text(path, "config file", encoding="utf-8-sig"))


def energy_section(section: Mapping[str, object], path: str | Path, typed: bool = False,
                   leakage: bool = True) -> CfgEnergy:
    """A file's ``[energy]`` keys (:func:`read_cfg_energy`) checked: ``table`` a shipped name or a ``.toml`` beside
    the file (never the working folder's), the rest :data:`OVERRIDABLE` figures. ``typed``: a TOML's values, where a
    number takes no quotes and the table is text (a .cfg's values are all text); ``leakage``: whether an unknown
    key's error lists the leakage figures (:func:`read_cfg_energy`)."""
    file = str(path)
    taken = ("table", *(key for key in OVERRIDABLE if leakage or key not in LEAKAGE_FIGURES))
    for key in section:
        if key not in taken and key not in LEAKAGE_FIGURES:  # a leakage figure: the caller's to refuse, saying why
            raise InputError(f"unknown energy figure{did_you_mean(key, taken)}; choose from {', '.join(taken)}",
                             file=file, field=key)
    table, overrides = None, dict[str, float | str]()
    for key, raw in section.items():
        if key == "table":  # a path is the file's neighbour, a name a shipped table: never the working folder's
            if not isinstance(raw, str):
                raise InputError(f"expected a table's name or a .toml path, got {shown(raw)}", file=file,
                                 field="table")
            value = raw.strip()
            if not value.endswith(".toml"):  # a name: refused here, as the file's key, not later as a flag's
                try:
                    shipped_table(value, field="table")
                except InputError as exc:
                    raise exc.at(file=file, field="table") from None
            table = str(Path(path).parent / value) if value.endswith(".toml") else value
            continue
        if typed and key in OVERRIDABLE and isinstance(raw, (str, bool)):  # as a device TOML refuses a quoted number
            raise InputError(f"expected a number, got {shown(raw)}", file=file, field=key)
        overrides[key] = figure_number(raw, key, file) if key in OVERRIDABLE else str(raw)
    with_overrides(_ZERO, overrides, file)  # validate names and values here, with the file named
    return CfgEnergy(table, {key: float(value) for key, value in overrides.items()})


_ZERO = AccessEnergies("", *([0.0] * len(OVERRIDABLE)))


def table_for(name: str | Path | None = None, config: str | Path | None = None) -> EnergyTable:
    """The table ``--energy-table`` names, else a ``--config`` .cfg's ``[energy]`` table, else the default."""
    cfg = read_cfg_energy(config) if config else None
    if name:
        return load_table(name)
    return cfg_table(cfg.table) if cfg and cfg.table else load_table()


def cfg_table(table: str) -> EnergyTable:
    """A ``.cfg``'s ``[energy] table`` as :func:`read_cfg_energy` gives it: a path beside the .cfg, or a shipped
    table's name (never a file of the working folder, docs/security.md)."""
    return load_table(table, shipped_only=not table.endswith(".toml"))


def figures_meta(config: str | Path | None) -> dict[str, dict[str, float]]:
    """``energy_figures``: the per-event figures (pJ; leakage mW) a ``--config`` file's ``[energy]`` states over its
    table, key → figure (``{"mac_pj": 0.3}``; csv and the table write ``mac_pj=0.3, …``:
    :data:`archsim.outputs.PAIRS`), so that ``energy_table`` is not read as the table alone; empty where the file
    states none (or no file is given)."""
    overrides = read_cfg_energy(config).overrides if config else {}
    return {"energy_figures": {key: float(value) for key, value in overrides.items()}} if overrides else {}


def energies_for(array: ArrayConfig, name: str | Path | None = None,
                 config: str | Path | None = None, dtype: str | None = None) -> tuple[EnergyTable, AccessEnergies]:
    """(table, per-event energies in pJ) for ``array``: :func:`table_for`, then the .cfg's ``[energy]``
    figure overrides — what ``archsim cost --energy`` and ``archsim energy`` price with; ``dtype`` fp8: each MAC
    an fp8 one (:func:`~archsim.energy.table.access_energies`)."""
    from archsim.choices.devices import FP8

    cfg = read_cfg_energy(config) if config else None
    table = table_for(name, config)
    return table, access_energies(array, table, cfg.overrides if cfg else None, fp8=dtype == FP8)


__all__ = ["CfgEnergy", "cfg_table", "energies_for", "energy_key_error", "energy_section", "figures_meta", "read_cfg_energy",
           "table_for"]
