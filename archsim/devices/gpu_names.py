"""Whether a GPU name that is no catalog key or alias is a whole name of the board it matched.

Why: the catalog reads CUDA's names ("NVIDIA A100-SXM4-40GB") by pattern, and a pattern matches a
substring, so a typo or another part's name ("a100-40" for the 40 GB A100, "h200-nvl") would run on the
nearest board without a word. A name read so must be made of words that GPU names have: the catalog's
own (its keys, aliases and the boards' printed names), CUDA's (vendor, form factor, memory type) and
memory sizes ("80GB", which the catalog checks against the board)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from archsim.errors import InputError

CUDA_WORDS = frozenset({"nvidia", "tesla", "geforce", "sxm", "sxm2", "sxm3", "sxm4", "sxm5", "pcie",
                        "hbm2", "hbm2e", "hbm3", "hbm3e"})  # CUDA's names besides the catalog's words


def name_words(name: str) -> list[str]:
    """``name``'s words, lower case, split at spaces, ``-``, ``_`` and ``/``; "80 GB" is one word, "80gb"."""
    text = re.sub(r"(\d+)\s*gb\b", r"\1gb", name.lower())
    return [word for word in re.split(r"[\s_\-/]+", text) if word]


def strange_words(name: str, known: Iterable[str]) -> list[str]:
    """``name``'s words that are in no GPU name (``known``: the catalog's names whose words count; CUDA's words
    and memory sizes besides): none for a whole name, ``['a1000']`` for "a1000", which a pattern reads as an A100."""
    words = {word for text in known for word in name_words(text)} | CUDA_WORDS
    return [word for word in name_words(name) if word not in words and not re.fullmatch(r"\d+gb", word)]


def check_whole_name(name: str, known: Iterable[str], catalog: Iterable[str]) -> None:
    """Refuse ``name`` (read by pattern as a catalog board) when a word of it is in no GPU name: ``known``
    are the catalog's names whose words count, ``catalog`` the keys the error lists."""
    strange = strange_words(name, known)
    if strange:
        raise InputError(f"unknown GPU {name!r}: {', '.join(map(repr, strange))} is in no catalog GPU's name nor "
                         f"in CUDA's name of one (a typo, or a part the catalog does not have); "
                         f"the catalog has {', '.join(catalog)}", field="gpu")


__all__ = ["CUDA_WORDS", "check_whole_name", "name_words", "strange_words"]
