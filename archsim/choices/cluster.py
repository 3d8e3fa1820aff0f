"""The flag choices of ``archsim cluster`` (:mod:`archsim.cluster`)."""

from __future__ import annotations

POLICIES = ("jigsaw", "gandiva", "tiresias", "jigsaw-nospb")
MAIN_POLICIES = ("jigsaw", "gandiva", "tiresias")
# what a migration is (SimConfig.migration_cost): a change of device (the default) or of machine
MIGRATION_COSTS = ("gpu", "machine")
