"""State sharding seen where it acts: one dispatch by sharding after the backward; FSDP's collectives as train's
rows, checked against the ring formulas written out by hand; search rows that say the sharding; and the
GPU's memory on ``--sweep`` and ``--runs`` rows, read off the catalog by hand."""

from __future__ import annotations

import pytest

from archsim.choices.training import SHARDINGS
from archsim.training.dp_sharding import SYNCS
from archsim.training.parallel import Parallelism


def test_one_dispatch_covers_every_sharding():
    """Each of the three shardings has its function, and each Parallelism names the one it runs."""
    assert tuple(SYNCS) == SHARDINGS
    assert Parallelism(1, 1, 2, 2, 1).sharding == "none"
    assert Parallelism(1, 1, 2, 2, 1, distributed_optimizer=True).sharding == "distributed-optimizer"
    assert Parallelism(1, 1, 2, 2, 1, fsdp=True).sharding == "fsdp"
