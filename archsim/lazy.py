"""Lazy package exports (PEP 562), written once: a package names what it exports and where, and a
module loads only when one of its names is first used, so ``import archsim`` and small commands do
not pay for numpy, pandas or numba they never touch."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def lazy_exports(package: str, exports: Mapping[str, str], namespace: dict) -> tuple[Callable, Callable]:
    """``__getattr__`` and ``__dir__`` for ``package``; ``exports`` maps a name to ``module`` or
    ``module:attribute``, and a loaded value is kept in ``namespace`` (the package's globals)."""

    def __getattr__(name: str):
        target = exports.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = target.partition(":")
        value = getattr(importlib.import_module(module), attribute or name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        """The public names (``__all__``) and the module's dunders: not what only builds the package
        (``annotations``, ``lazy_exports``, ``TYPE_CHECKING``, ``_EXPORTS``, this ``lazy`` module), which a
        user's tab-completion listed as if it were API."""
        dunders = {name for name in namespace if name.startswith("__") and name.endswith("__")}
        return sorted(set(namespace.get("__all__", ())) | dunders)

    return __getattr__, __dir__


__all__ = ["lazy_exports"]
