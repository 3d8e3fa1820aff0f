"""PipeDream's dynamic program (the optimizer's tables, :mod:`archsim.partition.pipedream` states
the recurrence): per level of the machine hierarchy, A(i, j, m) with its chosen splits and
replications, and the blocks read back from them as the released ``analyze_partitioning`` does."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from archsim.partition import pipedream_dense
from archsim.partition.antichain import AntichainStates
from archsim.partition.pipedream_allreduce import replica_allreduce

DEFAULT_MEMORY_BYTES = 16e9  # the optimizer's --memory_size default


@dataclass(frozen=True)
class Level:
    """One level of the hierarchy: ``machines`` joined at ``bandwidth`` bytes per time unit."""

    machines: int
    bandwidth: float


@dataclass(frozen=True)
class PipeDreamOptions:
    """The optimizer's flags. activation_compression_ratio None: activation transfers ignored."""

    activation_compression_ratio: float | None = None
    memory_constraint: bool = False
    memory_bytes: float = DEFAULT_MEMORY_BYTES
    straight_pipeline: bool = False
    use_fewer_machines: bool = False


@dataclass(frozen=True)
class Block:
    """States [start, end) on ``replicas`` machines of its level; ``compute``: their raw time."""

    start: int
    end: int
    compute: float
    replicas: int


def level_tables(states: AntichainStates, hierarchy: Sequence[Level], options: PipeDreamOptions,
                 solve: Callable[..., LevelTable] | None = None) -> list[LevelTable]:
    """Every level's tables, innermost first; each level above reads the one below's A(·, ·, N − 1).
    ``solve``: one level's solver, :func:`_solve_level` (the tests pass their first-written one)."""
    solve = solve or _solve_level
    compute: _Cumulative | Matrix = _Cumulative(states.compute)
    all_a = []
    within = 1
    for number, level in enumerate(hierarchy):
        final = number == len(hierarchy) - 1
        solved = solve(states, compute, level, within, final, options)
        all_a.append(solved)
        within = level.machines
        if not final:
            compute = Matrix(solved.value[:, :, -1])
    return all_a


@dataclass(frozen=True)
class LevelTable:
    """One level's dynamic-programming tables (a docstring: without one, dataclass asks inspect for a signature)."""

    value: np.ndarray  # (rows, n, machines): A(i, j, m); inf where the released code has None
    split: np.ndarray  # k of the chosen split; −1: the whole range on one replicated stage
    rest: np.ndarray  # m − m′ machines index of the part before the split
    replicas: np.ndarray  # m′ (or m + 1 for the whole range)


class _Cumulative:
    """Level 1's compute_times[i][j] = compute[j] − compute[i − 1] (compute[j] for i = 0), None for j < i."""

    def __init__(self, cumulative: np.ndarray):
        self.cumulative = cumulative
        self.shifted = np.concatenate([[0.0], cumulative])

    def get(self, rows, cols):
        rows, cols = np.asarray(rows), np.asarray(cols)
        value = self.cumulative[cols] - self.shifted[rows]
        return np.where(cols >= rows, value, np.nan)


class Matrix:
    """Upper levels' compute_times (the profile's time unit): the level below's A(i, j, N − 1); None (NaN)
    where it had none. Public: the frozen reference (tests/pipedream_reference.py) shares it rather than copying it."""

    def __init__(self, values: np.ndarray):
        self.values = np.where(np.isinf(values), np.nan, values)
        # lowest[r, j]: the least non-None entry of rows 0..r of column j (inf: none), the kernel's bound
        self.lowest = np.minimum.accumulate(np.where(np.isnan(self.values), np.inf, self.values), axis=0)

    def get(self, rows, cols):
        return self.values[np.asarray(rows), np.asarray(cols)]


def _differences(cumulative: np.ndarray, rows, cols):
    shifted = np.concatenate([[0.0], cumulative])
    return cumulative[np.asarray(cols)] - shifted[np.asarray(rows)]


def one_stage(states: AntichainStates, compute, level: Level, within: int, final: bool,
              options: PipeDreamOptions) -> LevelTable:
    """A level's tables with only the one-stage entries filled: A(i, j, m) for states i..j on one
    stage replicated m + 1 times (inf where the released code has None, or where it would not fit);
    the split entries are the split search's to fill. Times in the profile's unit, memory in bytes.
    Public: the frozen reference (tests/pipedream_reference.py) shares it rather than copying it."""
    n, machines, bandwidth = len(states), level.machines, level.bandwidth
    rows = 1 if final else n + 1
    value = np.full((rows, n, machines), np.inf)
    split = np.full((rows, n, machines), -1, dtype=np.int64)
    rest = np.full((rows, n, machines), -1, dtype=np.int64)
    replicas = np.zeros((rows, n, machines), dtype=np.int64)
    row_index = np.arange(rows)[:, None]
    col_index = np.arange(n)[None, :]
    whole = compute.get(row_index, col_index)  # NaN where None
    activation = _differences(states.activation, row_index, col_index)
    parameters = _differences(states.parameters, row_index, col_index)
    upper = col_index >= row_index
    for m in range(1 if options.straight_pipeline else machines):
        stashed = math.ceil((machines - (m + 1)) / (m + 1)) * (activation + parameters)
        allowed = upper & ~np.isnan(whole)
        if options.memory_constraint:
            allowed &= ~(stashed > options.memory_bytes)
        allreduce = replica_allreduce(m + 1, parameters, bandwidth) / within
        value[:, :, m] = np.where(allowed, (whole + allreduce) / (m + 1), np.inf)
        replicas[:, :, m] = np.where(allowed, m + 1, 0)
    return LevelTable(value, split, rest, replicas)


def _solve_level(states: AntichainStates, compute, level: Level, within: int, final: bool,
                 options: PipeDreamOptions) -> LevelTable:
    n, machines, bandwidth = len(states), level.machines, level.bandwidth
    rows = 1 if final else n + 1
    table = one_stage(states, compute, level, within, final, options)
    value, split, rest, replicas = table.value, table.split, table.rest, table.replicas
    ratio = options.activation_compression_ratio
    use_matrix = isinstance(compute, Matrix)
    arguments = (use_matrix, states.activation, states.parameters, states.crossing, float(bandwidth),
                 options.straight_pipeline, options.use_fewer_machines, -1.0 if ratio is None else float(ratio),
                 float(options.memory_bytes) if options.memory_constraint else -1.0)
    if pipedream_dense.fits(rows, n, machines, options.straight_pipeline):  # small: no numba load
        pipedream_dense.solve_row(value, split, rest, replicas, states.ancestor_runs, states.ancestor_starts,
                                  states.ancestor_ends, np.zeros(1) if use_matrix else compute.cumulative,
                                  compute.values if use_matrix else np.zeros((1, 1)), *arguments)
        return table
    from archsim.partition.pipedream_kernel import solve_splits  # numba loads with the first solve, not on import

    solve_splits(value, split, rest, replicas, states.ancestor_runs, states.ancestor_starts, states.ancestor_ends,
                 np.zeros(1) if use_matrix else compute.cumulative, compute.values if use_matrix else np.zeros((1, 1)),
                 compute.lowest if use_matrix else np.zeros((1, 1)), *arguments)
    return table


def analyze(solved: LevelTable, states: AntichainStates, start: int, end: int, machines: int) -> list[Block]:
    """The released analyze_partitioning: follow the splits of A(start, end − 1, machines − 1)."""
    j, m = end - 1, machines - 1
    cuts, reps = [], []
    while solved.split[start, j, m] >= 0:
        k = int(solved.split[start, j, m])
        cuts.append(k + 1)
        reps.append(int(solved.replicas[start, j, m]))
        j, m = k, int(solved.rest[start, j, m])
    reps.append(int(solved.replicas[start, j, m]))
    bounds = [start, *reversed(cuts), end]
    reps.reverse()
    blocks = []
    for (a, b), r in zip(itertools.pairwise(bounds), reps):
        time = states.compute[b - 1] - (states.compute[a - 1] if a > 0 else 0.0)
        blocks.append(Block(a, b, float(time), r))
    return blocks
