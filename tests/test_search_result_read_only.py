"""A search result cannot be edited: its rows, its Pareto front and its rejected counts refuse assignment, so a
result keeps saying what the search found (a review found ``found.rows[0]["tp"] = 99`` accepted, and the list
open to ``append``). What the documented API reads of them still works: ``len``, iteration, indexing, ``==``
with plain dicts, JSON, pandas, copy and pickle, and ``dict(row)`` as an editable copy. The document ``to_dict()``
and ``to_frame()`` are made of is read-only too (archsim.read_only: every API result's rule, one implementation)."""

from __future__ import annotations

import copy
import json
import pickle
import warnings

import pytest

import archsim
from archsim.read_only import ResultDict, ResultList
from archsim.training import search_result
from archsim.training.search_result import SearchResult

ROWS = [{"tp": 1, "pp": 2, "iteration_seconds": 1.5, "stages": [3, 3]},
        {"tp": 2, "pp": 1, "iteration_seconds": 2.5, "stages": [6]}]


def _result() -> SearchResult:
    given = [dict(row) for row in ROWS]
    result = SearchResult(given, {"out-of-memory": 3}, 6, 2, [given[0]])
    given[0]["tp"] = 99  # the caller's list, edited after: the result kept its own copy
    given.append({"tp": 4})
    return result


@pytest.mark.parametrize("edit", [
    lambda r: r.rows[0].__setitem__("tp", 99),
    lambda r: r.rows[0].__delitem__("tp"),
    lambda r: r.rows[0].update(tp=99),
    lambda r: r.rows[0].pop("tp"),
    lambda r: r.rows[0].popitem(),
    lambda r: r.rows[0].clear(),
    lambda r: r.rows[0].setdefault("new", 1),
    lambda r: r.pareto[0].__setitem__("tp", 99),
    lambda r: r.rejected.__setitem__("out-of-memory", 0),
])
def test_rows_front_and_counts_refuse_edits(edit):
    result = _result()
    with pytest.raises(TypeError, match="read-only"):
        edit(result)
    assert [dict(row) for row in result.rows] == ROWS and result.rejected == {"out-of-memory": 3}


def test_the_row_list_takes_no_new_row():
    result = _result()
    with pytest.raises(AttributeError):
        result.rows.append({"tp": 4})  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        result.rows[0] = {"tp": 4}  # type: ignore[index]
    assert len(result) == len(result.rows) == 2


def test_what_the_documented_api_reads_still_works():
    result = _result()
    assert len(result) == 2 and [row["tp"] for row in result.rows] == [1, 2]  # docs/api.md's loop and len
    assert result.rows[0]["iteration_seconds"] == 1.5 and result.rows[0] == ROWS[0] and result.pareto[0] == ROWS[0]
    assert json.loads(json.dumps(list(result.rows))) == ROWS
    mine = dict(result.rows[0])
    mine["tp"] = 8  # an editable copy
    assert (mine["tp"], result.rows[0]["tp"]) == (8, 1)
    assert "{'out-of-memory': 3}" in repr(result)  # the one line names the counts as a dict's repr does


def test_copied_and_pickled_as_the_same_result():
    result = _result()
    for again in (copy.copy(result), copy.deepcopy(result), pickle.loads(pickle.dumps(result))):
        assert again == result and [dict(row) for row in again.rows] == ROWS
        with pytest.raises(TypeError):
            again.rows[0]["tp"] = 99


def test_pandas_reads_the_rows():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(list(_result().rows))
    assert frame["tp"].tolist() == [1, 2] and frame["iteration_seconds"].tolist() == [1.5, 2.5]


NESTED = [{"tp": 1, "iteration_seconds": 1.5, "stages": [3, 3], "split": {"gemm": 1.0, "other": [0.5]}}]


@pytest.mark.parametrize("edit", [
    lambda r: r.rows[0]["stages"].append(4),
    lambda r: r.rows[0]["stages"].__setitem__(0, 9),
    lambda r: r.rows[0]["stages"].extend([4]),
    lambda r: r.rows[0]["stages"].sort(reverse=True),
    lambda r: r.rows[0]["stages"].__iadd__([4]),
    lambda r: r.rows[0]["split"].__setitem__("gemm", 0.0),
    lambda r: r.rows[0]["split"]["other"].append(1.0),
    lambda r: r.pareto[0]["split"].pop("gemm"),
])
def test_a_rows_nested_lists_and_dicts_refuse_edits_too(edit):
    """The rows were frozen one level deep: ``found[0]["compute_split_seconds"]["gemm"] = 0`` was accepted, and the
    nested dict was the document's own, so ``to_dict()`` and ``to_frame()`` changed with it."""
    given = [{**row, "stages": list(row["stages"]), "split": {**row["split"], "other": [0.5]}} for row in NESTED]
    result = SearchResult(given, {}, 1, 1, [given[0]], document={"meta": {}, "rows": given})
    with pytest.raises(TypeError, match="read-only"):
        edit(result)
    assert result.rows == tuple(NESTED) and result.to_dict()["rows"] == NESTED


def test_nested_values_read_copy_and_pickle_as_plain_ones():
    result = SearchResult([dict(row) for row in NESTED], {}, 1, 1, [])
    row = result.rows[0]
    assert row["stages"] == [3, 3] and row["split"] == {"gemm": 1.0, "other": [0.5]}
    assert json.loads(json.dumps(row)) == NESTED[0]
    for again in (copy.copy(row), copy.deepcopy(row), pickle.loads(pickle.dumps(row))):
        assert again == NESTED[0]
        with pytest.raises(TypeError):
            again["stages"].append(4)
    mine = list(row["stages"])
    mine.append(4)  # an editable copy
    assert (mine, row["stages"]) == ([3, 3, 4], [3, 3])


# the document archsim.search keeps (what to_dict() and to_frame() are made of) follows the API results' one rule
@pytest.fixture(scope="module")
def found() -> SearchResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return archsim.search("configs/transformers/gpt_1024h_24l.json", cluster="configs/clusters/h100_1gpu.toml",
                              global_batch=2, seq=256)


@pytest.mark.parametrize("edit", [
    lambda r: r.document["meta"].__setitem__("global_batch", 9),
    lambda r: r.document["meta"]["rejected"].clear(),
    lambda r: r.document["rows"][0].__setitem__("iteration_seconds", 0.0),
    lambda r: r.document["rows"][0]["compute_split_seconds"].__setitem__("gemm", 0.0),
    lambda r: r.document["rows"].append({}),
    lambda r: r.document.pop("meta"),
])
def test_the_document_refuses_edits(found, edit):
    """The document was a plain dict: ``found.document["meta"][…] = …`` was accepted and changed ``to_dict()`` and
    ``to_frame()``, where every other API result refuses it."""
    document, frame = found.to_dict(), found.to_frame()
    with pytest.raises(TypeError, match="read-only"):
        edit(found)
    assert found.to_dict() == document
    pd = pytest.importorskip("pandas")
    pd.testing.assert_frame_equal(found.to_frame(), frame)


def plain_all_the_way(value) -> bool:
    """Whether every dict and list in ``value`` is a plain one (what ``json.loads`` makes)."""
    if isinstance(value, dict):
        return type(value) is dict and all(plain_all_the_way(item) for item in value.values())
    if isinstance(value, list):
        return type(value) is list and all(plain_all_the_way(item) for item in value)
    return True


def test_to_dict_is_a_plain_editable_copy(found):
    document = found.to_dict()
    assert plain_all_the_way(document) and document == found.document  # (its NaN the document's own floats)
    document["meta"]["global_batch"] = 9
    document["rows"][0]["compute_split_seconds"]["gemm"] = 0.0
    document["rows"].append({})
    again = found.to_dict()
    assert again["meta"]["global_batch"] == 2 and len(again["rows"]) == len(found)
    assert again["rows"][0]["compute_split_seconds"]["gemm"] > 0


def test_one_implementation_of_the_rule(found):
    """The search's rows, front, counts and document are archsim.read_only's classes, the search's own are gone."""
    assert isinstance(found[0], ResultDict) and isinstance(found.pareto[0], ResultDict)
    assert isinstance(found.rejected, ResultDict) and isinstance(found.document, ResultDict)
    assert isinstance(found.document["rows"], ResultList) and isinstance(found[0]["compute_split_seconds"], ResultDict)
    assert not {"ReadOnlyDict", "ReadOnlyList"} & set(vars(search_result))


def test_a_copied_or_unpickled_search_keeps_its_document_read_only(found):
    for again in (copy.copy(found), copy.deepcopy(found), pickle.loads(pickle.dumps(found))):
        # compared as JSON: a row's uneven_gain is NaN, and a copied NaN is not equal to itself
        assert json.dumps(again.to_dict()) == json.dumps(found.to_dict()) and again.enumerated == found.enumerated
        assert json.dumps([again.rows, again.pareto, again.rejected]) == json.dumps([found.rows, found.pareto,
                                                                                     found.rejected])
        assert again.train_keywords(0) == found.train_keywords(0)
        with pytest.raises(TypeError, match="read-only"):
            again.document["meta"]["global_batch"] = 9
        with pytest.raises(TypeError, match="read-only"):
            again[0]["tp"] = 9
