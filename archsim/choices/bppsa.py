"""The flag choices of ``archsim bppsa`` (:mod:`archsim.bppsa`)."""

from __future__ import annotations

ZEROS = ("pattern", "values")  # pruned VGG-11's input-dependent zeros: kept as stored entries, or dropped (vgg_flops)
