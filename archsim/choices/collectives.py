"""The flag choices of ``archsim collective`` (:func:`archsim.collective`): the four NCCL collectives a group runs."""

from __future__ import annotations

GROUP_KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")
# nccl-tests' usual sweep, 1 MiB … 4 GiB by ×4 (its -b 1M -e 4G -f 4): collective's sizes when --nbytes is not given
DEFAULT_NBYTES = tuple(2**p for p in range(20, 33, 2))

__all__ = ["DEFAULT_NBYTES", "GROUP_KINDS"]
