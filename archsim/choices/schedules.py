"""The flag choices of ``archsim schedule`` (:mod:`archsim.policies`): the policy names each family answers to."""

from __future__ import annotations

OOO_POLICIES = ("mp", "gpipe", "ooo-pipe1", "ooo-pipe2")  # out-of-order backprop's layer-wise pipelines (ooo.py)
DP_POLICIES = ("dp-wfbp", "dp-priority", "dp-reverse-k")  # data parallel (data_parallel.py)
# published per-stage orders (zero_bubble.py), and their greedy list-scheduled versions
ZB_SCHEDULES = ("1f1b", "interleaved-1f1b", "zb-h1", "zb-h2", "zb-1p", "zb-2p", "interleaved-zb", "zb-v", "dualpipev")
LIST_SCHEDULES = ("list-1f1b", "list-zb-h1", "list-zb-h2")
