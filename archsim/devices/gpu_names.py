"""Whether a GPU name that is no catalog key or alias is a whole name of the board it matched.

Why: the catalog reads CUDA's names ("NVIDIA A100-SXM4-40GB") by pattern, and a pattern matches a
substring, so a typo or another part's name ("a100-40" for the 40 GB A100, "h200-nvl") would run on the
nearest board without a word. A name read so must be made of words that GPU names have: the catalog's
own (its keys, aliases and the boards' printed names), CUDA's (vendor, form factor, memory type) and
memory sizes ("80GB", which the catalog checks against the board)."""

from __future__ import annotations

import re
from collections.abc import Iterable

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


def strange_reason(name: str, known: Iterable[str]) -> str:
    """Why ``name`` is no whole GPU name (one clause: its words that are in no GPU name, :func:`strange_words`), or
    ``""`` where every word is in one."""
    strange = strange_words(name, known)
    return (f"{', '.join(map(repr, strange))} is in no catalog GPU's name nor in CUDA's name of one (a typo, or a "
            "part the catalog does not have)") if strange else ""


def form_factors(name: str) -> frozenset[str]:
    """The form factors ``name`` states, as CUDA writes them: ``pcie``, ``sxm`` or ``sxmN`` (the module's
    generation); none for "a100-80gb"."""
    return frozenset(word for word in name_words(name) if word == "pcie" or re.fullmatch(r"sxm\d?", word))


def form_factor_of(part_name: str) -> str:
    """A catalog part's form factor, from its printed name: its SXM module's word (``sxm2``, ``sxm4``, ``sxm5``;
    ``sxm`` where the name gives no generation, the H200 SXM), else ``pcie``: every other GPU of the catalog is a
    PCIe card (T4, L4, P4 and the GTX 1080 Ti among them, whose names say no form factor)."""
    return next((word for word in sorted(form_factors(part_name)) if word != "pcie"), "pcie")


def fits_form(stated: str, part: str) -> bool:
    """Whether a name stating form factor ``stated`` names a part of form factor ``part``: ``sxm`` without a
    generation on either side fits every SXM module."""
    return stated == part or (stated.startswith("sxm") and part.startswith("sxm") and "sxm" in (stated, part))


__all__ = ["CUDA_WORDS", "fits_form", "form_factor_of", "form_factors", "name_words", "strange_reason", "strange_words"]
