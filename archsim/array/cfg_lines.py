"""A ``.cfg``'s text read as configparser reads SCALE-Sim's (:func:`cfg_parser`, the one place one is parsed), where a
key sits in it (its line, its section's line) so an error names it as the file spells it, and a ``.cfg`` value taken
as written (no TOML quotes): what the ``.cfg`` readers of archsim's device and array files share."""

from __future__ import annotations

import configparser
import re
from dataclasses import dataclass
from pathlib import Path

from archsim.clock import checked_clock
from archsim.errors import InputError
from archsim.validate import cfg_syntax_error, read_text


def cfg_parser(text: str, file: str) -> configparser.ConfigParser:
    """``text`` (a ``.cfg``'s, read with ``encoding="utf-8-sig"`` so a BOM is no part of its first header) as
    SCALE-Sim's configparser reads it: keys in any case and trimmed around ``:`` or ``=``, section names in their own
    case, no interpolation (a '%' in a value is just a character). Every archsim reader of a ``.cfg`` parses it here,
    so that no two read one file by different rules; a file configparser cannot read is refused in one line at its
    line (:func:`~archsim.validate.cfg_syntax_error`), named as ``file``."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text, source=file)
    except (configparser.Error, UnicodeDecodeError) as exc:
        raise cfg_syntax_error(exc, file, text) from None
    return parser


def _writes_key(line: str, key: str) -> bool:
    """Whether a ``.cfg`` ``line`` sets ``key`` (its case ignored and space around ``:`` or ``=`` trimmed, as
    configparser reads keys)."""
    return re.match(rf"\s*{re.escape(key)}\s*[:=]", line, flags=re.IGNORECASE) is not None


def cfg_key_line(text: str, key: str) -> int | None:
    """The 1-based line of the first ``key`` in a ``.cfg``'s ``text``, in any section (SCALE-Sim's key names are
    each in one section); None where it is not written. :func:`cfg_line` finds a key in its named section."""
    for number, line in enumerate(text.splitlines(), start=1):
        if _writes_key(line, key):
            return number
    return None


def cfg_line(text: str, field: str) -> int | None:
    """The 1-based line of ``[section] key`` in a ``.cfg``'s ``text`` (``field``: ``section.key``, as this module's
    errors name a key), found in that section only, the key's case ignored as configparser ignores it; None where it
    is not written (a missing key)."""
    section, _, key = field.partition(".")
    current = None
    for number, line in enumerate(text.splitlines(), start=1):
        header = re.match(r"\[(.+)\]", line)  # configparser's section header
        if header:
            current = header[1]
        elif current == section and _writes_key(line, key):
            return number
    return None


def cfg_section_line(text: str, section: str) -> int | None:
    """The 1-based line of a ``.cfg``'s ``[section]`` header (configparser's header, its name as written); None
    where it is not written."""
    for number, line in enumerate(text.splitlines(), start=1):
        header = re.match(r"\[(.+)\]", line)
        if header and header[1] == section:
            return number
    return None


def cfg_located(exc: InputError, text: str) -> InputError:
    """``exc`` with the line of the ``.cfg`` key its field names (:func:`cfg_line`), where it names none: the
    file's device keys are then located as its SCALE-Sim keys are (``FILE, line N, field 'memory.hbm_gbps'``), the
    key named as the file spells it (``memory.HBM_GIB``), which configparser handed on lowercased."""
    field = exc.where.field
    if exc.where.line is not None or not field or "." not in field:
        return exc
    line = cfg_line(text, field)
    if line is None:
        return exc
    written = re.split(r"[:=]", text.splitlines()[line - 1], maxsplit=1)[0].strip()  # configparser lowercased it
    return InputError(exc.message, file=exc.where.file, line=line, field=f"{field.partition('.')[0]}.{written}")


def cfg_unquoted(value: str, file: str, field: str) -> None:
    """A .cfg's value is its text as written, quotes included (configparser strips none): a TOML habit such as
    ``name = "chip"`` would name the chip with its quotes, so a value in matching quotes is refused, saying what to
    write."""
    text = value.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        key = field.rpartition(".")[2]
        raise InputError(f"a .cfg's values take no quotes (it reads the text as written): write {key} = {text[1:-1]}",
                         file=file, field=field)


def cfg_interface_mode(parser: configparser.ConfigParser, text: str, file: str) -> str | None:
    """``[run_presets] InterfaceBandwidth`` as SCALE-Sim reads it (trimmed, any case): "USER" or "CALC", else
    refused at its line; None where the file does not write it (SCALE-Sim then runs CALC)."""
    if not parser.has_option("run_presets", "InterfaceBandwidth"):
        return None
    mode = parser["run_presets"]["InterfaceBandwidth"].strip().upper()
    if mode not in ("CALC", "USER"):
        raise InputError(f"expected USER or CALC, got {mode!r}", file=file,
                         line=cfg_line(text, "run_presets.InterfaceBandwidth"), field="InterfaceBandwidth")
    return mode


def cfg_clock_ghz(parser: configparser.ConfigParser, text: str, file: str) -> float | None:
    """``[archsim] ClockGHz`` in GHz, checked as every clock is (:func:`archsim.clock.checked_clock`), else refused
    at its line; None where the file does not write it."""
    if not parser.has_option("archsim", "ClockGHz"):
        return None
    try:
        return checked_clock(parser["archsim"]["ClockGHz"].strip(), "GHz")
    except ValueError as exc:
        raise InputError(str(exc), file=file, line=cfg_line(text, "archsim.ClockGHz"), field="ClockGHz") from None


@dataclass(frozen=True)
class CfgStated:
    """What a SCALE-Sim ``.cfg`` writes of its clock and DRAM interface, read as :func:`~archsim.array.config.read_scalesim_cfg` reads it
    (:func:`cfg_stated`). clock_ghz: ``[archsim] ClockGHz`` (GHz), None where not written; bandwidth: whether
    ``[architecture_presets] Bandwidth`` is written (the reader's default 10 words/cycle is no statement);
    interface: ``[run_presets] InterfaceBandwidth``, "USER" or "CALC", None where not written (SCALE-Sim then runs
    CALC)."""

    clock_ghz: float | None
    bandwidth: bool
    interface: str | None


def cfg_stated(path: str | Path) -> CfgStated:
    """The clock, ``Bandwidth`` and interface mode a ``.cfg`` writes (:class:`CfgStated`), parsed by the rules of
    :func:`~archsim.array.config.read_scalesim_cfg` (one configparser reading, a BOM dropped, the same checks and one-line refusals), so
    that what the cycle engine's DRAM rate and notes read of a file is what the array was read from."""
    text = read_text(path, "config file", encoding="utf-8-sig")
    file = str(path)
    parser = cfg_parser(text, file)
    return CfgStated(cfg_clock_ghz(parser, text, file), parser.has_option("architecture_presets", "Bandwidth"),
                     cfg_interface_mode(parser, text, file))


__all__ = ["CfgStated", "cfg_clock_ghz", "cfg_interface_mode", "cfg_key_line", "cfg_line", "cfg_located", "cfg_parser", "cfg_section_line",
           "cfg_stated", "cfg_unquoted"]
