"""The flag choices of ``archsim cluster`` (:mod:`archsim.cluster`)."""

from __future__ import annotations

POLICIES = ("jigsaw", "gandiva", "tiresias", "jigsaw-nospb")
MAIN_POLICIES = ("jigsaw", "gandiva", "tiresias")
