"""How a command writes its result (``--format``; :mod:`archsim.outputs` renders it)."""

from __future__ import annotations

FORMATS = ("table", "csv", "json")
