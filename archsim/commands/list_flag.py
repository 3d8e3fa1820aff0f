"""The one way a list flag reads its values: space- or comma-separated alike (``--gpus 4 8``, ``--gpus 4,8``,
``--gpus 4,8 16``), as the Python API takes a list or a comma string."""

from __future__ import annotations

import argparse
import copy
from collections.abc import Callable, Sequence

from archsim.errors import InputError
from archsim.value_parsers import comma_items


class _Choices(tuple):
    """A list flag's choices as argparse checks them on a whole word, before the split: a word of several
    items passes here, and each of its items is checked alone once split (the error names that item)."""

    def __contains__(self, word: object) -> bool:
        return "," in str(word) or tuple.__contains__(self, word)


class ListFlag(argparse.Action):
    """A list flag (``nargs="+"``): each word split at its commas, then each item read by ``item`` (its
    argparse type: argparse would read each whole word, ``4,8`` as one integer) and checked against
    ``choices``, with argparse's own messages. Each word is split as every comma list is
    (:func:`~archsim.value_parsers.comma_items`: spaces around an item dropped); an empty item (``4,,8``, a
    trailing comma) is refused, as an empty value is."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, item: Callable | None = None,
                 choices: Sequence[str] | None = None, **kwargs) -> None:
        kwargs.setdefault("nargs", "+")
        if kwargs.get("help") not in (None, argparse.SUPPRESS):
            kwargs["help"] = f"{kwargs['help']}; separated by spaces or commas"
        super().__init__(option_strings, dest, choices=None if choices is None else _Choices(choices), **kwargs)
        self.item = item

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values,
                 option_string: str | None = None) -> None:
        words = [values] if isinstance(values, str) else list(values)
        try:
            items = [item for word in words for item in comma_items(word, self.dest)]
        except InputError:
            raise argparse.ArgumentError(self, f"{' '.join(map(str, words))!r} has an empty item; give values "
                                               "separated by spaces or commas") from None
        reader = copy.copy(self)  # argparse's reading of one value, with this flag's type and choices
        reader.type, reader.choices = self.item, None if self.choices is None else tuple(self.choices)
        read = [parser._get_value(reader, text) for text in items]
        for value in read:
            parser._check_value(reader, value)
        setattr(namespace, self.dest, read)
