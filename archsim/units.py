"""Byte units named once: every module that turns bytes into GiB (memory capacities, peaks, headroom) reads
:data:`GIB` here, so a capacity stated in GiB and a peak printed in GiB are one unit (2**30 bytes, not 10**9)."""

from __future__ import annotations

GIB = 2**30  # bytes in a gibibyte

__all__ = ["GIB"]
