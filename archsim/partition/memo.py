"""Values derived once per profile (PipeDream's states, LayerPipe's placed ops), kept beside the
profile rather than inside it, so :class:`~archsim.partition.profile.LayerProfile` stays plain
data and each planner owns what it derives. A derived value lives as long as its profile."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def per_profile(derive: Callable[..., T]) -> Callable[..., T]:
    """``derive(profile)``, computed once per profile object (profiles are immutable). Keyed by the
    object's id, dropped when the profile is collected (before its id can be reused): a plain dict
    lookup, as cheap as an attribute, on the walks' hot path. Calls with further arguments are not cached."""
    cache: dict[int, T] = {}

    @functools.wraps(derive)
    def cached(profile, *args, **kwargs):
        if args or kwargs:
            return derive(profile, *args, **kwargs)
        key = id(profile)
        try:
            return cache[key]
        except KeyError:
            value = cache[key] = derive(profile)
            weakref.finalize(profile, cache.pop, key, None)
            return value

    return cached


__all__ = ["per_profile"]
