"""Defaults of the partitioners' flags (``archsim pipeline``, sweep specs; :mod:`archsim.partition`)."""

from __future__ import annotations

LAYERPIPE_ALPHA = 1.001  # LayerPipe's Algorithm 1: the factor its per-processor target grows by per relaxation
