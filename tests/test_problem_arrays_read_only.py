"""A result's simulated problem is read-only too (archsim.read_only's rule): ``archsim.train``'s
``result.run.problem.arrays`` and a schedule's ``result.timeline.problem.arrays`` (op durations, processors, pins,
bytes, the dependencies and their CSR edges, the op ids) and a training run's stage order
(``result.run.order.columns``) refuse in-place edits, copied, deep-copied and unpickled alike (numpy unpickles an array
writeable). Before, ``result.run.problem.arrays.duration[0] = 0`` was accepted and changed every report made from
the problem afterwards (its ops, their Gantt chart) with no word. The arrays are read-only views: a caller's own
columns given to ``Problem.from_arrays`` stay writeable, and nothing is copied."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import warnings

import numpy as np
import pytest

import archsim
from archsim.sim.columns import DepColumns, OpColumns
from archsim.sim.problem import Problem, Processor

MODEL = "configs/transformers/gpt_1024h_24l.json"
ONE = "configs/clusters/h100_1gpu.toml"  # one GPU: the cheapest run


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


@pytest.fixture(scope="module")
def runs() -> dict:
    trained, _ = _quiet(archsim.train, MODEL, cluster=ONE, global_batch=2, seq=256)
    scheduled = _quiet(archsim.schedule, "ffnn8", policy="1f1b", processors=2, unit_costs=True)
    return {"train": trained.run, "schedule": scheduled.timeline}


def _held(value):
    return value, copy.copy(value), copy.deepcopy(value), pickle.loads(pickle.dumps(value))


def _arrays_of(arrays) -> dict[str, np.ndarray]:
    """Every numpy array a ProblemArrays holds, by field (the two CSR edge arrays each)."""
    found = {f.name: getattr(arrays, f.name) for f in dataclasses.fields(arrays)
             if isinstance(getattr(arrays, f.name), np.ndarray)}
    for i, edge in enumerate(arrays.edges or ()):
        found[f"edges[{i}]"] = edge
    return found


@pytest.mark.parametrize("name", ["train", "schedule"])
def test_every_array_of_a_results_problem_refuses_edits(runs, name):
    problem = runs[name].problem
    for held in _held(problem):
        arrays = held.arrays
        found = _arrays_of(arrays)
        # the eleven columns the engine reads, and the CSR of the cycle check
        assert {"proc", "duration", "pin", "alloc", "free", "streams", "dep_src", "dep_dst", "dep_link",
                "dep_bytes", "dep_time", "edges[0]", "edges[1]"} <= set(found)
        durations = arrays.duration.tolist()
        for field, array in found.items():
            with pytest.raises(ValueError, match="read-only"):
                array[...] = 0
            assert not array.flags.writeable, field
        assert arrays.duration.tolist() == durations  # nothing changed by the refused edits


@pytest.mark.parametrize("name", ["train", "schedule"])
def test_a_results_op_ids_refuse_edits(runs, name):
    """The ids are a tuple (a schedule's problem, built from objects) or a training run's formatted ids, whose
    columns and key are read-only arrays."""
    for held in _held(runs[name].problem):
        ids = held.arrays.ids
        first = ids[0]
        with pytest.raises(TypeError):
            ids[0] = "renamed"  # type: ignore[index]
        for column in (*getattr(ids, "columns", ()), getattr(ids, "key", None)):
            if isinstance(column, np.ndarray):
                with pytest.raises(ValueError, match="read-only"):
                    column[0] = column[-1]
        assert held.arrays.ids[0] == first


def test_a_training_runs_stage_order_refuses_edits(runs):
    for held in _held(runs["train"].order):
        columns = held.columns
        for field in ("lengths", "stage", "kind", "microbatch"):
            with pytest.raises(ValueError, match="read-only"):
                getattr(columns, field)[0] = 7


def test_a_callers_own_columns_stay_writeable():
    """Problem.from_arrays freezes views of the columns it was given, not the caller's arrays."""
    proc, duration = np.zeros(2, dtype=np.int64), np.array([1.0, 2.0])
    src, dst = np.array([0]), np.array([1])
    problem = Problem.from_arrays([Processor("p")], [], OpColumns(["a", "b"], proc, duration), DepColumns(src, dst))
    assert not problem.arrays.duration.flags.writeable and not problem.arrays.dep_src.flags.writeable
    duration[0] = 5.0  # the caller's array, still theirs
    src[0] = 0
    assert duration.flags.writeable and src.flags.writeable


def test_a_problems_lookups_and_columns_refuse_edits():
    """Its id index refuses edits (TypeError, as every result dict); a priority or tag column held as a numpy array
    is handed out read-only, the caller's own array untouched."""
    priority, stage = np.array([1, 0]), np.array([3, 4])
    ops = OpColumns(["a", "b"], np.zeros(2, dtype=np.int64), np.array([1.0, 2.0]), priority=priority,
                    tags=(("stage", stage),))
    problem = Problem.from_arrays([Processor("p")], [], ops, DepColumns(np.zeros(0, dtype=np.int64),
                                                                        np.zeros(0, dtype=np.int64)))
    with pytest.raises(TypeError, match="read-only"):
        problem.arrays.index["a"] = 1
    for column in (problem.priorities, problem.tag_values("stage")):
        with pytest.raises(ValueError, match="read-only"):
            column[0] = 9
    assert problem.op("b").priority == 0 and problem.op("a").tag("stage") == 3
    assert priority.flags.writeable and stage.flags.writeable
