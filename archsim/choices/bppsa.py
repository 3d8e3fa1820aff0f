"""The flag choices and defaults of ``archsim bppsa`` (:mod:`archsim.bppsa`): one home for the command and the API."""

from __future__ import annotations

ZEROS = ("pattern", "values")  # pruned VGG-11's input-dependent zeros: kept as stored entries, or dropped (vgg_flops)
# `pruned-vgg11 --max-mflops`'s default, in millions of scan FLOPs (archsim.bppsa.vgg.scan_work_estimate): --sparsity
# 0.7 at full width is about 44,000 (91 s, 3.2 GB measured), 0 about 450,000 (unfinished after 2 min at 5 GB).
DEFAULT_MAX_SCAN_MFLOPS = 100_000
# `network --max-mflops`'s default, in millions of FLOPs (BP's estimate, then the scan's count): about a minute.
NETWORK_MAX_MFLOPS = 10_000
