"""The two ways every command may cost training (``--mode``): ``exact``, real training, or ``paper``,
LayerPipe's simplifications (see :mod:`archsim.lowering`). Kept apart so a command can offer the
choice without loading the lowering it may never run (``plan`` on a PipeDream profile)."""

from __future__ import annotations

from typing import Literal

Mode = Literal["paper", "exact"]
MODES: tuple[str, ...] = ("paper", "exact")

__all__ = ["MODES", "Mode"]
