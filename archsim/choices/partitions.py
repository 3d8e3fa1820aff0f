"""Defaults of the partitioners' flags (``archsim pipeline``, sweep specs; :mod:`archsim.partition`)."""

from __future__ import annotations

MAX_ALPHA = 1e6  # Algorithm 1's largest relaxation factor: beyond it the first target is the whole network
LAYERPIPE_ALPHA = 1.001  # LayerPipe's Algorithm 1: the factor its per-processor target grows by per relaxation
# Micro-batch schedules of a partition (``archsim pipeline --schedule``, ``archsim.simulate``;
# :mod:`archsim.policies.pipeline` says what each runs): torch's GPipe and 1F1B, LayerPipe's δ-first,
# archsim's earlier list schedules, and 1F1B with each layer's δ before its G inside a backward action.
PARTITION_SCHEDULES = ("gpipe", "1f1b", "layerpipe", "gpipe-newest-first", "1f1b-window", "1f1b-delta-before-g")
# The schedules that flush between iterations: every processor keeps one weight version (no stash).
FLUSHED_SCHEDULES = ("gpipe", "gpipe-newest-first")
# The list schedules that bound each stage's micro-batches in flight by 1F1B's window (a lender's counts the
# δ parts it lends, so these bound the processors that run them too).
WINDOWED_SCHEDULES = ("1f1b-window", "layerpipe")
# The schedule each partitioner's plan runs when none is chosen.
METHOD_SCHEDULES = {"layerpipe": "layerpipe", "pipedream": "1f1b", "gpipe": "gpipe"}
