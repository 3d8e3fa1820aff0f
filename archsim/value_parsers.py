"""Written values read in their ranges: a flag's text, a file's cell or a keyword as an integer, a real or a
boolean, and the argparse ``type=`` converters built on them.

Why one module: every flag parser and file reader reads a number the same way (ASCII digits, no ``1_000``,
no ``inf``/``nan``, no subnormal), within the ranges :mod:`archsim.validate` states, so an error line says
the same thing wherever the value was written.
"""

from __future__ import annotations

import argparse
import math
import numbers
import re

from archsim.choices.training import MAX_SEQ
from archsim.errors import InputError
from archsim.validate import INT32_MAX, MAX_PROCESSORS, MIN_MAGNITUDE, SEED_MAX, did_you_mean, flag_text, shown

EMPTY_VALUE = "expected a value, got an empty one"  # a flag's or keyword's blank text: no setting takes one
NO_VALUE = "expected one argument"  # a comma flag given no value (argparse's line), a keyword given an empty list
NO_VALUES = "expected at least one argument"  # a list flag (nargs "+") given none, its keyword an empty list
MAX_INTEGER_DIGITS = 40  # a written integer longer than this is refused before int() reads it
_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
_REAL = re.compile(r"(?i)[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)(e[+-]?[0-9]+)?|nan|inf|infinity)", re.ASCII)  # refuses 1_000


def not_a_choice(value: object, choices) -> str:
    """The line refusing ``value`` where one of ``choices`` goes, the same for a flag's choices (``archsim.cli.Parser``)
    and a setting's (:func:`check_choice`); a misspelt name gets the one it resembles, as a
    misspelt flag or key does (``got 'layerpip' (did you mean 'layerpipe'?)``)."""
    hint = did_you_mean(value, map(str, choices)) if isinstance(value, str) else ""
    return f"expected one of {', '.join(map(str, choices))}, got {value!r}{hint}"


def check_choice(value: object, choices, field: str) -> None:
    """Refuse ``value`` unless it is one of ``choices``: :func:`not_a_choice`'s line, an :class:`InputError` on
    ``field`` (the flag's spelling, ``dp-overlap``), from a keyword, a flag's value or a dataclass's field alike."""
    if value not in choices:
        raise InputError(not_a_choice(value, choices), field=field)


def whole_number(value: object) -> object:
    """A float that is exactly a whole number (``8.0``, what pandas writes for a float column) as that int;
    any other value as it is, for its reader to accept or refuse. One rule for keywords and runs-file cells."""
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        number = float(value)
        if number.is_integer() and abs(number) <= 2**53:  # exactly a whole number; 1e300 refused as written
            return int(number)
    return value


def parse_int(text: object, *, low: int = 1, high: int = INT32_MAX, what: str = "an integer") -> int:
    """``text`` as an integer in [low, high], or ValueError with a short reason."""
    if isinstance(text, bool):
        raise ValueError(f"expected {what}, got {text!r}")  # noqa: TRY004 (one error type for the callers)
    if isinstance(text, int):
        value = text
    else:  # ASCII digits only: no "1_000", no "²" or "٣", no 5,000-digit string handed to int()
        digits = str(text).strip()
        if not _INTEGER.fullmatch(digits) or len(digits) > MAX_INTEGER_DIGITS:
            raise ValueError(f"expected {what}, got {shown(text)}")
        value = int(digits)
    if not low <= value <= high:
        raise ValueError(f"expected {what} in {low}…{high}, got {shown(value)}")
    return value


def stated_integer(text: object) -> int | None:
    """The integer a file's cell states, or None where it states none: ASCII digits (:func:`parse_int`'s reading),
    or a real written as exactly a whole number (``8.0``, what pandas writes for a float column; ``1e3``), read by
    :func:`parse_float` and :func:`whole_number`; ``8.5``, ``1_6``, ``١٦`` and ``x`` state none. One reading for the
    count cells of a runs file and of NeuSight's kernel tables; the caller states the range and its error line."""
    bound = 10**MAX_INTEGER_DIGITS
    try:
        return parse_int(text, low=-bound, high=bound)
    except ValueError:
        pass
    try:
        number = whole_number(parse_float(text, low=-math.inf))
    except ValueError:
        return None
    return number if isinstance(number, int) else None


def parse_integer_cell(text: object, *, low: int = 1, high: int = INT32_MAX, what: str = "an integer") -> int:
    """A file's integer cell in [low, high], read as :func:`stated_integer` reads it (``64`` and ``64.0`` are 64;
    ``64.5``, ``1_6``, ``١٦`` and ``x`` refused), or ValueError with :func:`parse_int`'s reason, which the caller
    raises naming its file, row (line) and column. The one reading of the integer cells of every CSV archsim reads:
    topology files, validate-gpu's kernel CSVs, job traces, GEMM shape and kernel files, runs files, NeuSight's."""
    value = stated_integer(text)
    if value is None:
        raise ValueError(f"expected {what}, got {shown(text)}")
    return parse_int(value, low=low, high=high, what=what)


_BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def parse_boolean(text: str, *, empty: bool = False) -> bool:
    """One reading of a boolean for a runs file's cell and a ``--sweep`` value: true/false, 1/0, yes/no in any
    case; an empty text is false where ``empty`` (a blank CSV cell). ValueError names every spelling taken."""
    word = text.strip().lower()
    if word in _BOOLEANS or (empty and not word):
        return _BOOLEANS.get(word, False)
    raise ValueError(f"expected true or false (or 1/0, yes/no, any case{'; empty: false' if empty else ''}), "
                     f"got {shown(text)}{did_you_mean(word, ('true', 'false', 'yes', 'no'))}")


def parse_float(text: object, *, low: float = 0.0, high: float = math.inf, low_open: bool = False,
                what: str = "a number") -> float:
    """``text`` as a finite float in [low, high] (or (low, high] when ``low_open``)."""
    if isinstance(text, bool):
        raise ValueError(f"expected {what}, got {text!r}")  # noqa: TRY004 (one error type for the callers)
    try:
        if not isinstance(text, (int, float)) and not _REAL.fullmatch(str(text).strip()):
            raise ValueError
        value = float(text) if isinstance(text, (int, float)) else float(str(text).strip())
    except (ValueError, OverflowError):
        raise ValueError(f"expected {what}, got {shown(text)}") from None
    if not math.isfinite(value):
        raise ValueError(f"expected a finite {what.removeprefix('a ').removeprefix('an ')}, got {shown(text)}")
    if 0 < abs(value) < MIN_MAGNITUDE:  # e.g. 1e-320: dividing by it overflows to inf downstream
        zero = low < 0 or (low == 0 and not low_open)  # 0 is taken: the alternative to a value this small
        raise ValueError(f"expected {what} {'of 0 or a magnitude of' if zero else 'of'} at least {MIN_MAGNITUDE:g}, "
                         f"got {shown(text)}")
    if value < low or (low_open and value == low) or value > high:
        said = ((low, low_open) == (0.0, True) and "positive" in what) or \
            ((low, low_open) == (0.0, False) and "non-negative" in what)  # the word says the bound
        bound = "" if said else f" > {low:g}" if low_open else f" >= {low:g}"
        upper = f"{' and' if bound else ''} <= {high:g}" if math.isfinite(high) else ""
        raise ValueError(f"expected {what}{bound}{upper}, got {shown(text)}")
    return value


def below_floor(text: object) -> bool:
    """Whether ``text`` is a real number :func:`parse_float` refuses as too small (0 < magnitude < MIN_MAGNITUDE), so
    that a caller whose own line names a range (a fraction in (0, 1], a clock's) can say the floor rather than that
    range, which such a number lies in or below."""
    if isinstance(text, bool) or not (isinstance(text, (int, float)) or _REAL.fullmatch(str(text).strip())):
        return False
    return 0 < abs(float(text) if isinstance(text, (int, float)) else float(str(text).strip())) < MIN_MAGNITUDE


def int_flag(low: int = 1, high: int = INT32_MAX, what: str = "an integer"):
    """An argparse ``type=`` for integers in [low, high]."""

    def convert(text: str) -> int:
        try:
            return parse_int(text, low=low, high=high, what=what)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


def float_flag(low: float = 0.0, high: float = math.inf, *, low_open: bool = False, what: str = "a number"):
    """An argparse ``type=`` for finite floats in [low, high] ((low, high] when ``low_open``)."""

    def convert(text: str) -> float:
        try:
            return parse_float(text, low=low, high=high, low_open=low_open, what=what)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


def parse_int_or_word(text: object, word: str, *, what: str = "a positive integer") -> int | str:
    """``text`` as ``word`` (a keyword a flag takes beside its integers: search's ``--etp tp``) or as
    :func:`parse_int`'s integer in 1 … 2³¹ − 1; ValueError names both."""
    if isinstance(text, str) and text.strip() == word:
        return word
    try:
        return parse_int(text, what=what)
    except ValueError:
        raise ValueError(f"expected {what} or {word!r}, got {shown(text)}") from None


def int_or_word_flag(word: str, what: str = "a positive integer"):
    """An argparse ``type=`` for :func:`parse_int_or_word`."""

    def convert(text: str) -> int | str:
        try:
            return parse_int_or_word(text, word, what=what)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


def parse_seq(text: object) -> int:
    """A sequence length, tokens per sample, in 1 … :data:`~archsim.choices.training.MAX_SEQ`, or ValueError saying
    that range: one line for ``--seq`` and the library's ``seq``, not the generic integer's 1 … 2³¹ − 1."""
    try:
        return parse_int(text, low=1, high=MAX_SEQ, what="a sequence length")
    except ValueError:
        raise ValueError(f"expected a sequence of 1…{MAX_SEQ} tokens, got {shown(text)}") from None


def seq_flag(text: str) -> int:
    """argparse type of ``--seq`` (train, search): :func:`parse_seq`."""
    try:
        return parse_seq(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_ratio(text: object) -> float:
    """A largest share over the mean, at least 1 (train's ``--moe-load-imbalance``, its keyword, runs column and sweep
    axis alike), or ValueError: :func:`parse_float`'s finite number ≥ 1."""
    return parse_float(text, low=1.0, what="a ratio")


def ratio_flag(text: str) -> float:
    """argparse type of ``--moe-load-imbalance`` (train, search): :func:`parse_ratio`."""
    try:
        return parse_ratio(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


positive_int_flag = int_flag(1, INT32_MAX, "a positive integer")
seed_flag = int_flag(0, SEED_MAX, "a seed")
processors_flag = int_flag(1, MAX_PROCESSORS, "a processor count")
positive_float_flag = float_flag(0.0, low_open=True, what="a positive number")
non_negative_float_flag = float_flag(0.0, what="a non-negative number")

def comma_items(value: object, flag: str) -> tuple[str, ...]:
    """A comma-list flag's entries (its :func:`~archsim.validate.flag_text`), each without the spaces around it, as typed inside
    quotes (``--only "conv, fc"``); an empty one (``conv,,fc``, a trailing comma) is an InputError naming ``flag``.
    Every comma list is read here, so no flag drops or refuses what another takes."""
    items = tuple(part.strip() for part in flag_text(value).split(","))
    if not all(items):
        raise InputError(f"{shown(flag_text(value))} has an empty item; give values separated by commas", field=flag)
    return items
