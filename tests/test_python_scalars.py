"""numpy's scalars are written as Python's by one rule (``rows.python_scalar``), whether a row's cell, a meta
entry carried as a CSV column (``outputs.meta_columns``) or a plan's meta and rows (``plan_run.plain_numbers``):
an ``np.bool_`` flag is Python's ``True``, as a cell is, and the numbers keep their values."""

import numpy as np
import pytest

from archsim.outputs import csv_number, format_number, meta_columns
from archsim.plan_run import plain_numbers
from archsim.rows import python_scalar


@pytest.mark.parametrize(("value", "expected"), [(np.True_, True), (np.False_, False), (np.int64(7), 7),
                                                 (np.float64(0.25), 0.25), (np.float32(0.5), 0.5), ("x", "x"), (None, None)])
def test_python_scalar_is_the_same_value_as_python_s_own_type(value, expected):
    got = python_scalar(value)
    assert got == expected and type(got) is type(expected)


def test_a_meta_flag_from_numpy_is_a_python_bool_in_the_csv_columns():
    extra = meta_columns({"converged": np.True_, "steps": np.int64(3), "rows": [1, 2]}, set())
    assert extra == {"converged": True, "steps": 3}
    assert type(extra["converged"]) is bool and type(extra["steps"]) is int


@pytest.mark.parametrize(("value", "table", "csv"), [(np.True_, "True", "True"), (np.int64(12), "12", "12"),
                                                     (np.float64(0.1), "0.1", "0.1")])
def test_a_numpy_scalar_prints_as_python_s(value, table, csv):
    assert (format_number(value), csv_number(value)) == (table, csv)


def test_a_plan_s_meta_holds_python_s_scalars_at_every_depth():
    meta = plain_numbers({"fits": np.True_, "stages": [np.int64(2), (np.float64(0.5), "x")], "seed": None})
    assert meta == {"fits": True, "stages": [2, (0.5, "x")], "seed": None}
    assert [type(v) for v in (meta["fits"], meta["stages"][0], meta["stages"][1][0])] == [bool, int, float]
    assert type(meta["stages"][1]) is tuple
