"""Where a key sits in a ``.cfg`` (its line, its section's line) so an error names it as the file spells it, and a
``.cfg`` value taken as written (no TOML quotes): what the ``.cfg`` readers of archsim's device and array files share."""

from __future__ import annotations

import re

from archsim.errors import InputError


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


__all__ = ["cfg_line", "cfg_located", "cfg_section_line", "cfg_unquoted"]
