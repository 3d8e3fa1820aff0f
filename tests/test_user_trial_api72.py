"""A notebook user's trial of the library, follow-ups (2026-12-05): each test failed before its fix. References:
the documented rule (``True`` is ``"on"``), the closed form of docs (a GEMM's cycles), a hand-built timeline, and
what mypy says of a file of notebook calls (tests/data/typing/api_calls.py)."""

from __future__ import annotations

import inspect
import re
import typing

import numpy as np
import pytest
from api_parity_helpers import MODEL, NODE
from test_docs import ROOT

import archsim
from archsim.errors import InputError

# --- search takes train's switch for sequence_parallel ---------------------------------------------------------------
# Failed before: archsim.search(sequence_parallel=True) was refused ("expected one of both, on, off") though
# archsim.train takes True under the same keyword and a search's row says sequence_parallel as a bool.

SMALL_SEARCH = {"global_batch": 8, "gpus": 2, "top": 4, "schedule": "1f1b", "max_micro_batch": 1, "refine": 0,
                "recompute": "full", "progress": False}


@pytest.mark.parametrize(("switch", "mode"), [(True, "on"), (False, "off")])
def test_search_takes_trains_switch_for_sequence_parallel(switch, mode, monkeypatch):
    monkeypatch.chdir(ROOT)
    given = archsim.search(MODEL, cluster=NODE, sequence_parallel=switch, **SMALL_SEARCH)
    said = archsim.search(MODEL, cluster=NODE, sequence_parallel=mode, **SMALL_SEARCH)
    assert len(given) and given.to_frame().equals(said.to_frame())  # NaN (uneven_gain) equal to NaN
    assert {row["sequence_parallel"] for row in given} == {mode == "on"}


def test_search_still_refuses_a_sequence_parallel_no_flag_gives(monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(InputError) as refused:
        archsim.search(MODEL, cluster=NODE, sequence_parallel="yes", **SMALL_SEARCH)
    assert refused.value.where.field == "sequence-parallel" and "'yes'" in str(refused.value)


# --- a search result is the sequence of its rows ---------------------------------------------------------------------
# Failed before: len(found) was its rows' count, but found[0] and `for row in found` were TypeErrors.


def _result() -> archsim.SearchResult:
    rows = [{"tp": 1, "iteration_seconds": 1.0}, {"tp": 2, "iteration_seconds": 2.0}, {"tp": 4, "iteration_seconds": 3.0}]
    return archsim.SearchResult(rows=rows, rejected={}, enumerated=3, costed=3, pareto=rows[:1])


def test_a_search_result_is_indexed_and_iterated_as_its_rows():
    found = _result()
    assert found[0] == {"tp": 1, "iteration_seconds": 1.0} and found[-1]["tp"] == 4
    assert found[1:] == (found.rows[1], found.rows[2]) and isinstance(found[1:], tuple)
    assert [row["tp"] for row in found] == [1, 2, 4] and list(found) == list(found.rows)
    with pytest.raises(IndexError):
        found[3]


def test_a_row_read_by_index_is_read_only():
    found = _result()
    with pytest.raises(TypeError, match="read-only"):
        found[0]["tp"] = 8
    for row in found:
        with pytest.raises(TypeError, match="read-only"):
            row.update(tp=8)
    assert found.rows[0]["tp"] == 1


# --- the annotations say what the run takes --------------------------------------------------------------------------
# Failed before: counts were hinted `int | str`, so mypy refused np.int64(8) and 8.0, which the run reads as 8;
# model, cluster, network, array and spec were unannotated, so mypy took cluster=8; gemm_cost took no ArrayConfig
# and a SearchResult could not be indexed (tests/data/typing/api_calls.py: `# refused` marks what mypy must refuse).


@pytest.mark.long
def test_mypy_takes_the_calls_the_run_takes_and_refuses_the_rest(tmp_path):
    from mypy import api

    script = ROOT / "tests" / "data" / "typing" / "api_calls.py"
    out, err, _ = api.run([str(script), "--no-error-summary", "--cache-dir", str(tmp_path / "cache"),
                           "--follow-imports", "silent", "--ignore-missing-imports", "--python-version", "3.11"])
    lines = script.read_text(encoding="utf-8").splitlines()
    refused = {number for number, line in enumerate(lines, 1) if line.endswith("# refused")}
    flagged = {int(found) for found in re.findall(r"api_calls\.py:(\d+): error", out)}
    assert refused and flagged == refused, out + err


def test_a_count_is_one_alias_that_takes_numpy_and_whole_floats():
    from archsim import count_types

    taken = typing.get_args(count_types.Count)
    assert {int, float, str, np.integer, np.floating} == set(taken)
    # the run's one reader takes each: a numpy integer, a numpy float and a float that are whole, the flag's text
    from archsim.api_keywords import positive_int

    assert [positive_int(v, "tp") for v in (np.int64(8), np.float32(8.0), 8.0, "8", np.uint8(8))] == [8] * 5


PUBLIC_INPUTS = {  # job → parameters that take an input, not a count (model, cluster, network, array, spec)
    "train": ("model", "cluster"), "search": ("model", "cluster"), "collective": ("cluster",),
    "train_runs": ("model", "cluster"), "train_sweep": ("model", "cluster"),
    "schedule": ("network", "array"), "run_sweep": ("spec",), "sweep_cache": ("spec",), "write_report": ("spec",),
}


@pytest.mark.parametrize("job", sorted(PUBLIC_INPUTS))
def test_the_inputs_of_each_job_are_annotated(job):
    parameters = inspect.signature(getattr(archsim, job)).parameters
    bare = [name for name in PUBLIC_INPUTS[job] if parameters[name].annotation is inspect.Parameter.empty]
    assert not bare, f"archsim.{job}: {bare} unannotated: a type checker takes any value there"


@pytest.mark.parametrize("job", ["train", "search", "train_runs", "train_sweep"])
def test_no_training_job_hints_a_count_narrower_than_the_run_reads(job):
    """Failed before for train_runs and train_sweep: their counts (``global_batch``, ``tp``, ``seq``, ``max_ops``)
    were hinted ``int | str``, so mypy refused ``np.int64(8)`` and ``8.0``, which positive_int reads as 8."""
    parameters = inspect.signature(getattr(archsim, job)).parameters
    narrow = [name for name, p in parameters.items() if re.search(r"\bint \| str\b|\bfloat \| str\b", str(p.annotation))]
    assert not narrow, f"archsim.{job}: {narrow} hinted narrower than archsim.api_types.Count / Number"


@pytest.mark.parametrize("kb", [[64.0, 32.0, 16.0], np.array([64.0, 32.0, 16.0]), [np.int64(64), 32, "16"]])
def test_sram_kb_reads_whole_floats_and_numpy_counts_as_every_count_does(kb):
    """Failed before: ``sram_kb=[64.0, 32.0, 16.0]`` (a pandas float column's) was refused, where every other count
    keyword reads a whole float as its integer (docs/api.md)."""
    array = archsim.array_config(sram_kb=kb)
    assert (array.ifmap_sram_kb, array.filter_sram_kb, array.ofmap_sram_kb) == (64, 32, 16)
    with pytest.raises(InputError, match="sram_kb"):
        archsim.array_config(sram_kb=[64.5, 32, 16])


# --- help(archsim.train) states the units of its counts --------------------------------------------------------------
# Failed before: the docstring named global_batch as a flag without saying it counts sequences.


@pytest.mark.parametrize("job", ["train", "search"])
def test_help_says_global_batch_is_in_sequences(job):
    doc = " ".join(inspect.getdoc(getattr(archsim, job)).split())
    assert "``global_batch`` in sequences per iteration" in doc or "``global_batch`` is in sequences per iteration" in doc
    assert "``seq`` in tokens per sequence" in doc


# --- gemm_cost takes an ArrayConfig ----------------------------------------------------------------------------------
# Failed before: gemm_cost(m, k, n, ArrayConfig(...)) was "missing 1 required positional argument: 'cols'", and
# array= an unexpected keyword.


def test_gemm_cost_takes_an_array_config():
    array = archsim.ArrayConfig(rows=16, cols=8, dataflow="os")
    # os on 16 × 8: Sr = M = 64, Sc = N = 64, T = K = 64; folds ⌈64/16⌉·⌈64/8⌉ = 32, each R + C + T − 2 = 86
    # cycles; SCALE-Sim counts the last cycle's index: 32 · 86 − 1 (the closed form in archsim.array.analytic)
    hand = 32 * 86 - 1
    assert archsim.gemm_cost(64, 64, 64, array=array).scalar("cycles") == hand
    assert archsim.gemm_cost(64, 64, 64, array).scalar("cycles") == hand
    # a dataflow given beside it takes the place of its own: ws streams T = M over Sr = K, Sc = N, 2R + C + T − 2
    assert archsim.gemm_cost(64, 64, 64, array=array, dataflow="ws").scalar("cycles") == 32 * (32 + 8 + 64 - 2) - 1


@pytest.mark.parametrize(("call", "field"), [
    (lambda a: archsim.gemm_cost(64, 64, 64, 16), "cols"),
    (lambda a: archsim.gemm_cost(64, 64, 64, a, 8), "array"),
    (lambda a: archsim.gemm_cost(64, 64, 64, a, array=a), "array"),
    (lambda a: archsim.gemm_cost(64, 64, 64, array="16x8"), "array"),
])
def test_gemm_cost_refuses_an_array_given_twice_or_half_in_one_line(call, field):
    with pytest.raises(InputError) as refused:
        call(archsim.ArrayConfig(rows=16, cols=8))
    assert refused.value.where.field == field


# --- a timeline's repr says its makespan -----------------------------------------------------------------------------
# Failed before: repr(timeline) was the dataclass's fields (slots, transfers, problem, …), no makespan, no unit.


def test_a_timelines_repr_shows_its_makespan_and_unit():
    from archsim.sim.timeline import Slot, Timeline

    slots = (Slot("f0", "p0", 0, 0.0, 3.0), Slot("f1", "p1", 0, 3.0, 7.5))
    said = repr(Timeline(slots, (), policy="gpipe", unit="seconds"))
    assert "makespan 7.5 seconds" in said and "2 slots" in said and "gpipe" in said
    cycles = repr(Timeline((Slot("f0", "p0", 0, 0.0, 1971120.0),), (), unit="cycles"))
    assert "makespan 1,971,120 cycles" in cycles
    assert "unit not stated" in repr(Timeline(slots, ()))

