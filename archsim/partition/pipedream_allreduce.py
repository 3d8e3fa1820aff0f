"""PipeDream's all-reduce of a stage replicated r times (SOSP'19 §3.1): 4(r − 1)·P / (B·r), each replica
sending and receiving its 2(r − 1)/r share of the P parameter bytes twice at bandwidth B (bytes per unit of
the profile's time). Written once, for the one-stage tables, the dense split search and a plan's stage
times; the compiled split search (:mod:`archsim.partition.pipedream_kernel`) keeps its own copy of the same
expression, held equal to this one by tests/test_pipedream_kernel.py."""

from __future__ import annotations

from typing import TypeVar

import numpy as np

Bytes = TypeVar("Bytes", float, np.ndarray)


def replica_allreduce(replicas: int, parameters: Bytes, bandwidth: float) -> Bytes:
    """The all-reduce time of ``parameters`` bytes over ``replicas`` copies of a stage, in the released code's
    order of operations ((4(r − 1)·P) / (B·r)); ``parameters`` a number or an array of them."""
    return (4 * (replicas - 1) * parameters) / (bandwidth * replicas)
