"""A ``.cfg``'s text read as configparser reads SCALE-Sim's (:func:`cfg_parser`, the one place one is parsed), where a
key sits in it (its line, its section's line) so an error names it as the file spells it, and a ``.cfg`` value taken
as written (no TOML quotes): what the ``.cfg`` readers of archsim's device and array files share."""

from __future__ import annotations

import configparser
import re

from archsim.errors import InputError
from archsim.validate import cfg_syntax_error


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
        elif current == section and re.match(rf"\s*{re.escape(key)}\s*[:=]", line, flags=re.IGNORECASE):
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


__all__ = ["cfg_line", "cfg_located", "cfg_parser", "cfg_section_line", "cfg_unquoted"]
