"""Defaults of the partitioners' flags (``archsim pipeline``, sweep specs; :mod:`archsim.partition`)."""

from __future__ import annotations

MAX_ALPHA = 1e6  # Algorithm 1's largest relaxation factor: beyond it the first target is the whole network
LAYERPIPE_ALPHA = 1.001  # LayerPipe's Algorithm 1: the factor its per-processor target grows by per relaxation
# Which δ moves Algorithm 1's plan keeps (--borrow): paper, every move the printed walk makes (default); gainful,
# a moved δ goes back to its layer's processor wherever that does not raise the iteration (docs/concepts.md).
BORROW_PAPER, BORROW_GAINFUL = "paper", "gainful"
LAYERPIPE_BORROW = (BORROW_PAPER, BORROW_GAINFUL)  # the default first
# (the micro-batch schedules of a partition, PARTITION_SCHEDULES, are archsim/choices/schedules.py's, with every other)
# The schedules that flush between iterations: every processor keeps one weight version (no stash).
FLUSHED_SCHEDULES = ("gpipe", "gpipe-newest-first")
# The list schedules that bound each stage's micro-batches in flight by 1F1B's window (a lender's counts the
# δ parts it lends, so these bound the processors that run them too).
WINDOWED_SCHEDULES = ("1f1b-window", "layerpipe")
# The schedule each partitioner's plan runs when none is chosen.
METHOD_SCHEDULES = {"layerpipe": "layerpipe", "pipedream": "1f1b", "gpipe": "gpipe"}
# --optimizer's names (pipeline --memory, archsim.footprint) → its state per parameter, in weights' bytes: sgd none,
# momentum one velocity, adam two moments (the one list: the flag's choices are its keys)
OPTIMIZER_STATES = {"sgd": 0, "momentum": 1, "adam": 2}
