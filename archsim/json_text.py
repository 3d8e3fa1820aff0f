"""JSON text every reader accepts (RFC 8259): the one writer of archsim's JSON results and files.

Python's ``json`` writes a NaN as ``NaN`` and infinities as ``Infinity``, which RFC 8259 has no
number for: JavaScript's ``JSON.parse``, jq, Go and Rust refuse such a file. Here a non-finite
float (a "no value" cell: a device without a price, a search row with no split) becomes ``null``,
numpy scalars become Python's, and :func:`dumps` encodes with ``allow_nan=False``, so a value that
slipped past :func:`strict` raises instead of writing invalid JSON.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np


def strict(value: Any) -> Any:
    """``value`` with every non-finite float (numpy's too), in nested dicts, lists and tuples, as None
    and numpy scalars and arrays as Python's; anything else is returned as is. Exact str, int, None and
    float come first: a sweep's cache files are such cells, and the isinstance chain below was 70% of
    the CPU time of writing them."""
    kind = type(value)
    if kind is str or kind is int or value is None:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: strict(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict(item) for item in value]
    if isinstance(value, np.ndarray):
        return strict(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (float, np.floating)):
        number = float(value)
        return number if math.isfinite(number) else None
    return value


def dumps(value: Any, **options: Any) -> str:
    """``json.dumps`` of :func:`strict` ``(value)``, refusing any NaN or infinity left (``options``:
    json.dumps' own, e.g. ``indent``, ``sort_keys``)."""
    return json.dumps(strict(value), allow_nan=False, **options)
