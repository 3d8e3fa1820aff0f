"""Plain rows render the same bytes as the same records in a DataFrame (archsim/rows.py), in every
format, with and without meta and precision — on random records of every column kind pandas makes
(int64, float64 incl. nan/inf/huge/tiny, ints mixed with floats, bool, text with commas, quotes and
non-ASCII) and on the kinds that must fall back to pandas (None, mixed types, missing keys, no rows)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from archsim.choices.outputs import FORMATS
from archsim.outputs import render
from archsim.rows import Rows, columns

NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=6)
FLOATS = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.1, 1e15, 1e16, 1e-7, -0.0, 2.5, 3.0])
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8) | st.sampled_from(
    ["a,b", 'say "hi"', "", " lead", "é", "nan"])
COLUMN = {
    "int": st.integers(-(2**63), 2**63 - 1) | st.integers(-5, 5),
    "float": FLOATS,
    "mixed": st.integers(-1000, 1000) | FLOATS,
    "bool": st.booleans(),
    "str": TEXT,
    "numpy": st.integers(-5, 5).map(np.int64) | st.floats(-3, 3).map(np.float64),
    "odd": st.none() | st.integers(0, 3) | TEXT,
}
META = st.dictionaries(NAMES, st.none() | st.integers(-5, 2**70) | FLOATS | st.booleans() | TEXT, max_size=3)


@st.composite
def records(draw):
    names = draw(st.lists(NAMES, min_size=1, max_size=4, unique=True))
    kinds = [draw(st.sampled_from(sorted(COLUMN))) for _ in names]
    count = draw(st.integers(0, 5))
    return [{n: draw(COLUMN[k]) for n, k in zip(names, kinds)} for _ in range(count)]


def both(rows, fmt, meta, precision):
    return (render(Rows.of(rows), fmt, meta=meta, precision=precision),
            render(pd.DataFrame(rows), fmt, meta=meta, precision=precision))


@pytest.mark.long
@settings(max_examples=600, deadline=None)
@given(rows=records(), meta=META | st.none(), precision=st.none() | st.integers(1, 6))
@example(rows=[{"a": 1, "b": 2.5}], meta=None, precision=None)
@example(rows=[{"longheader": True}, {"longheader": False}], meta={"x": 1.5}, precision=None)
def test_plain_rows_render_as_the_dataframe(rows, meta, precision):
    for fmt in FORMATS:
        ours, theirs = both(rows, fmt, meta, precision)
        assert ours == theirs, fmt


def test_the_plain_path_is_taken_for_plain_columns_and_not_for_odd_ones():
    assert columns(Rows.of([{"a": 1, "b": "x", "c": 2.0, "d": True}, {"a": 2, "b": "y", "c": 3, "d": False}]))
    assert columns(Rows.of([{"a": None}])) is None
    assert columns(Rows.of([{"a": 1}, {"b": 1}])) is None
    assert columns(Rows.of([{"a": "x"}, {"a": 1}])) is None
    assert columns(Rows.of([])) is None


@pytest.mark.long
@settings(max_examples=200, deadline=None)
@given(rows=records(), clock=st.sampled_from([1e9, 7e8, 3.3e-6]))
@example(rows=[{"assigned_cycles": 3, "total_cycles": 2.5, "total_seconds": 1.0, "n": "x"}], clock=1e9)
@example(rows=[{"cycles": 1, "x": 2}, {"cycles": 2**62, "x": 3}], clock=7e8)
def test_seconds_beside_cycles_on_plain_rows_as_on_the_dataframe(rows, clock):
    """add_seconds on plain rows gives the bytes pandas' path gives (the reference), in every format."""
    from archsim.seconds import add_seconds

    rows = [{(f"{k}_cycles" if i % 2 == 0 else k): v for i, (k, v) in enumerate(r.items())} for r in rows]
    for fmt in FORMATS:
        ours = render(add_seconds(Rows.of(rows), clock), fmt)
        theirs = render(add_seconds(pd.DataFrame(rows), clock), fmt) if rows else render(Rows.of(rows), fmt)
        assert ours == theirs, fmt


def test_no_value_is_nan_in_a_table_as_in_json_null():
    """A value that is not there (None; JSON's null, csv's empty cell) showed as "None" in a table where
    its column had nothing else (`train --runs` without measured times: measured_seconds, error and the
    meta's mape) but as "nan" beside numbers; the table shows "nan" for both (docs/formats.md)."""
    rows = [{"run": 1, "measured": None, "fits": None}, {"run": 2, "measured": None, "fits": True}]
    for frame in (Rows.of(rows), pd.DataFrame(rows)):
        text = render(frame, "table", meta={"mape": None})
        assert "None" not in text and text.startswith("# mape: nan\n")
        assert [line.split() for line in text.splitlines()[2:]] == [["1", "nan", "nan"], ["2", "nan", "True"]]


def test_a_table_without_rows_is_its_header_not_pandas_repr():
    """A search where nothing can run (every candidate rejected) printed pandas' "Empty DataFrame /
    Columns: [tp, pp, …] / Index: []" as its table; a table with no rows is its column names, as csv's."""
    empty = pd.DataFrame(columns=["tp", "pp", "iteration_seconds"])
    text = render(empty, "table", meta={"costed": 0})
    assert text == "# costed: 0\ntp pp iteration_seconds\n"
    assert render(empty, "csv") == "tp,pp,iteration_seconds\n"


def test_a_column_empty_in_every_row_is_left_out_of_the_table():
    """search's ``cp_comm`` at CP 1 printed a header over blank cells, so the numbers after it read as shifted one
    column; a table leaves such a column out, as optional columns are absent where no row sets them. A column with
    one value keeps its blank cells; csv and json keep the column."""
    rows = [{"tp": 2, "cp_comm": "", "split": "", "pp": 4}, {"tp": 4, "cp_comm": "", "split": "6,6", "pp": 2}]
    for frame in (Rows.of(rows), pd.DataFrame(rows)):
        assert render(frame, "table") == " tp split  pp\n  2         4\n  4   6,6   2\n"
        assert render(frame, "csv").splitlines()[0] == "tp,cp_comm,split,pp"
        assert '"cp_comm": ""' in render(frame, "json")


def test_a_column_of_cycles_reads_alike_whole_or_not():
    """Defect: `schedule`'s makespan printed `2069069393` for one policy and `2.069e+09` for another, whose
    makespan ends half a cycle in: a number 4 significant digits would write with an exponent is shown to the
    unit, as a whole one is (and as the HTML pages show numbers); smaller ones keep their 4 digits."""
    rows = [{"makespan": 4445021220.0, "bubble": 0.08664}, {"makespan": 3903412610.7, "bubble": 1.957e-08},
            {"makespan": 12345.25, "bubble": 0.5}, {"makespan": 9999.25, "bubble": 2.0}]
    for frame in (Rows.of(rows), pd.DataFrame(rows)):
        cells = [line.split() for line in render(frame, "table", meta={"energy_j": 18596.4}).splitlines()[2:]]
        assert cells == [["4445021220", "0.08664"], ["3903412611", "1.957e-08"], ["12345", "0.5"], ["9999", "2"]]
        assert render(frame, "table", meta={"energy_j": 18596.4}).startswith("# energy_j: 18596\n")
    # --precision 2: 123.5 would be 1.2e+02; to the unit, 124 (no fewer digits than asked, never an exponent)
    assert render(Rows.of([{"x": 123.5}, {"x": 0.123456}]), "table", precision=2).split() == ["x", "124", "0.12"]
