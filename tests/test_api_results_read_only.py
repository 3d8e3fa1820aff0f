"""Every result the API returns is read-only all the way down (archsim.read_only): ``archsim.train``'s breakdown,
ops and document, ``train_runs``' rows, ``train_sweep``'s and the table jobs' documents refuse every edit with a
``TypeError``, so ``to_dict()`` and ``to_frame()`` (made from the document saved when it ran) keep saying what ran;
before, ``result.breakdown["compute"] = 0``, ``result.document["meta"][…] = …`` and ``rows[0]["error"] = …`` were
accepted, the last two changing ``to_dict()``/``to_frame()``. Copy, deep copy and pickle give equal, still read-only
results; ``to_dict()`` is an editable copy."""

from __future__ import annotations

import copy
import json
import pickle
import warnings

import pandas as pd
import pytest

import archsim

MODEL = "configs/transformers/gpt_1024h_24l.json"
ONE = "configs/clusters/h100_1gpu.toml"  # one GPU: the cheapest run
NODE = "configs/clusters/a100_node.toml"


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


@pytest.fixture(scope="module")
def results() -> dict:
    trained, _ = _quiet(archsim.train, MODEL, cluster=ONE, global_batch=2, seq=256)
    runs = pd.DataFrame({"tp": [1, 2], "pp": [1, 1], "dp": [1, 1], "micro_batch": [1, 1], "global_batch": [2, 2],
                         "measured_seconds": [0.5, 0.4]})
    return {"train": trained,
            "runs": _quiet(archsim.train_runs, MODEL, runs=runs, cluster=NODE, seq=256),
            "sweep": _quiet(archsim.train_sweep, MODEL, sweep={"tp": [1, 3]}, cluster=NODE, global_batch=2, seq=256),
            "cost": _quiet(archsim.cost, "layerpipe_sample", array="32x32", batch=8),
            "schedule": _quiet(archsim.schedule, "ffnn8", policy="1f1b", processors=2, unit_costs=True)}


# (result, how to reach a nested value to edit): a dict's item, a list's item, the list of rows itself
EDITS = [
    ("train", lambda r: r.breakdown.__setitem__("compute", 0.0)),
    ("train", lambda r: r.compute_split_seconds.__setitem__("gemm", 0.0)),
    ("train", lambda r: r.ops[0].__setitem__("seconds", 0.0)),
    ("train", lambda r: r.ops.append({})),
    ("train", lambda r: r.post[0].update(optimizer=0.0)),
    ("train", lambda r: r.document["meta"].__setitem__("iteration_seconds", 0.0)),
    ("train", lambda r: r.document["meta"]["breakdown_seconds"].__setitem__("compute", 0.0)),
    ("train", lambda r: r.document["rows"][0].pop("seconds")),
    ("train", lambda r: r.document["rows"].__delitem__(0)),
    ("runs", lambda r: r[0].__setitem__("iteration_seconds", 0.0)),
    ("runs", lambda r: r.append({})),
    ("runs", lambda r: r.__setitem__(0, {})),
    ("runs", lambda r: r.sort(key=len)),
    ("runs", lambda r: r[0]["compute_split_seconds"].__setitem__("gemm", 0.0)),
    ("runs", lambda r: r._document["rows"][1].__setitem__("error", 0.0)),
    ("sweep", lambda r: r.document["rows"][1].__setitem__("error", "")),
    ("sweep", lambda r: r.document["meta"].__setitem__("points", 9)),
    ("sweep", lambda r: r.document["rows"][0]["compute_split_seconds"].clear()),
    ("cost", lambda r: r.document["rows"][-1].__setitem__("cycles", 0)),
    ("cost", lambda r: r.document["meta"].setdefault("network", "other")),
    ("schedule", lambda r: r._row.__setitem__("makespan", 0)),
    ("schedule", lambda r: r._meta.pop("unit")),
]


@pytest.mark.parametrize(("name", "edit"), EDITS)
def test_editing_any_nested_value_is_refused(results, name, edit):
    result = results[name]
    document, frame = result.to_dict(), result.to_frame()
    with pytest.raises(TypeError, match="read-only"):
        edit(result)
    assert result.to_dict() == document
    pd.testing.assert_frame_equal(result.to_frame(), frame)


@pytest.mark.parametrize("name", ["train", "runs", "sweep", "cost", "schedule"])
def test_copied_deep_copied_and_pickled_alike_and_still_read_only(results, name):
    result = results[name]
    for again in (copy.copy(result), copy.deepcopy(result), pickle.loads(pickle.dumps(result))):
        assert json.dumps(again.to_dict()) == json.dumps(result.to_dict())  # NaN (a refused point's) as text
        pd.testing.assert_frame_equal(again.to_frame(), result.to_frame())
        with pytest.raises(TypeError, match="read-only"):
            (again[0] if name == "runs" else again._meta if name == "schedule" else again.document["meta"]
             ).__setitem__("x", 1)


@pytest.mark.parametrize("name", ["train", "runs", "sweep", "cost", "schedule"])
def test_to_dict_is_an_editable_copy(results, name):
    result = results[name]
    mine = result.to_dict()
    mine["meta"]["model"] = "edited"
    mine["rows"][0].clear()
    mine["rows"].append({})
    assert result.to_dict()["meta"].get("model") != "edited" and result.to_dict()["rows"][0]
    assert type(mine["meta"]) is dict and type(mine["rows"]) is list


def test_the_runs_rows_read_as_the_list_they_were(results):
    rows = results["runs"]
    assert isinstance(rows, list) and len(rows) == 2
    assert [{k: v for k, v in row.items() if k not in ("energy_source", "seq")} for row in rows] == rows.to_dict()["rows"]
    mine = list(rows)
    mine.append({})  # an editable copy of the list
    row = dict(rows[0])
    row["tp"] = 8  # of a row
    assert (len(mine), len(rows), rows[0]["tp"]) == (3, 2, 1)


TIMELINE_EDITS = [  # (an edit of a result's timeline, what refuses it: numpy's read-only array, or the immutable table)
    (lambda t: t.slots.start.__setitem__(0, 1.0), ValueError),
    (lambda t: t.slots.end.__iadd__(1.0), ValueError),
    (lambda t: t.slots.op.sort(), ValueError),
    (lambda t: t.slots.processor.fill(0), ValueError),
    (lambda t: setattr(t.slots, "start", t.slots.end), AttributeError),
    (lambda t: t.transfers.end.__setitem__(slice(None), 0.0), ValueError),
    (lambda t: setattr(t.transfers, "link", None), AttributeError),
]


@pytest.mark.parametrize("name", ["train", "schedule"])
@pytest.mark.parametrize("index", range(len(TIMELINE_EDITS)))
def test_a_results_timeline_refuses_edits_copied_or_not(results, name, index):
    """A result's timeline (``archsim.train``'s ``result.run.timeline``, a schedule's ``.timeline``) is read-only too:
    before, ``result.run.timeline.slots.start[0] = …`` and ``slots.end += 1`` changed the run's slots, its makespan
    and its Gantt chart in place, with no word. Its columns refuse edits as a ``LayerProfile``'s arrays do (numpy's
    read-only flag), its tables refuse new attributes as a ``Problem`` does; so do a copy's, a deep copy's and an
    unpickled one's (numpy unpickles an array writeable). The slots and the makespan after the refusal are those
    before."""
    result = results[name]
    timeline = result.run.timeline if name == "train" else result.timeline
    edit, error = TIMELINE_EDITS[index]
    for held in (timeline, copy.deepcopy(timeline), pickle.loads(pickle.dumps(timeline))):
        frame, makespan = held.to_frame(), held.makespan
        assert len(held.slots) > 0
        with pytest.raises(error):
            edit(held)
        pd.testing.assert_frame_equal(held.to_frame(), frame)
        assert held.makespan == makespan
