"""How a benchmark tries a variant of the training model without changing the library: a module-level
name is swapped for the variant's while in force, on every module that looks it up by its own name,
and the model-piece cache (whose key holds no variant) is cleared on the way in and out."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from archsim.training import iteration


@contextmanager
def swapped(modules: tuple[ModuleType, ...], name: str, value: Any) -> Iterator[None]:
    originals = [getattr(module, name) for module in modules]
    for module in modules:
        setattr(module, name, value)
    iteration._model_pieces.cache_clear()
    try:
        yield
    finally:
        for module, original in zip(modules, originals):
            setattr(module, name, original)
        iteration._model_pieces.cache_clear()
