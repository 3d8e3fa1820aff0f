"""``archsim search`` under FlashAttention: selective recompute has nothing left to rerun, so a
configuration with ``selective`` prices exactly as the same one with ``none``. Those twins took half the
top rows; the search lists one of each (the first in ``--recompute``'s order), ``--top N`` means N
distinct configurations, and ``identical_rows_dropped`` counts the twins it left out."""

from __future__ import annotations

import math

from test_docs import ROOT

import archsim

MODEL = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
NODE = str(ROOT / "configs" / "clusters" / "a100_node.toml")
SMALL = {"global_batch": 32, "schedule": "1f1b", "max_micro_batch": 4, "sequence_parallel": "off",
         "progress": False}


def _printed(row: dict) -> tuple:
    """Every column but recompute and what is built from it (NaN equal to NaN; the compute split's parts as pairs)."""
    return tuple(("nan" if isinstance(v, float) and math.isnan(v) else tuple(v.items()) if isinstance(v, dict) else v)
                 for k, v in row.items() if k not in ("recompute", "megatron_args", "command"))


def test_flash_rows_are_distinct_and_the_twins_are_counted():
    """Before: of the top 10, 5 pairs none/selective alike in every column. Now 10 distinct rows; each
    ``none`` row's time is what a selective-only search gives that configuration (the twin exists), and
    the count of dropped twins is in the result and its JSON meta."""
    result = archsim.search(MODEL, cluster=NODE, top=10, **SMALL)
    assert len(result.rows) == 10
    assert len({_printed(row) for row in result.rows}) == 10
    assert result.identical_rows_dropped >= 5
    assert result.to_dict()["meta"]["identical_rows_dropped"] == result.identical_rows_dropped
    selective = archsim.search(MODEL, cluster=NODE, top=50, recompute="selective", **SMALL)
    twins = {_printed(row) for row in selective.rows}
    assert sum(_printed(row) in twins for row in result.rows if row["recompute"] == "none") >= 5
    longer = archsim.search(MODEL, cluster=NODE, top=20, **SMALL).rows[:10]  # top N: the first N distinct
    assert [(_printed(r), r["recompute"]) for r in result.rows] == [(_printed(r), r["recompute"]) for r in longer]


def test_standard_attention_keeps_both_recomputes():
    """Standard attention keeps the s² scores unless selective recompute reruns them: the two differ in
    time and memory, so nothing is dropped."""
    result = archsim.search(MODEL, cluster=NODE, top=10, attention="standard", **SMALL)
    assert result.identical_rows_dropped == 0
    assert len({_printed(row) for row in result.rows}) == len(result.rows)


CONFIG = ("tp", "pp", "dp", "micro_batch", "schedule", "interleave", "sequence_parallel", "stage_layers")


def _twinned(rows: list[dict], selective_rows: list[dict]) -> int:
    """How many of ``rows`` (recompute none) have a twin: the same configuration costed with selective."""
    selective = {tuple(repr(r[k]) for k in CONFIG) for r in selective_rows}
    return sum(r["recompute"] == "none" and tuple(repr(r[k]) for k in CONFIG) in selective for r in rows)


def test_the_count_is_the_twins_of_the_rows_listed():
    """``--top N`` with ``--refine`` 2N (the default): the twins counted were those of the first 2N rows
    re-timing reads, 13, where the 10 rows listed have 7; and the last row's twin, past the rows, was not
    counted (``--top 1``: 0). The count is now the listed rows' twins: each listed ``none`` row whose
    configuration a selective-only search costs too."""
    selective = archsim.search(MODEL, cluster=NODE, top=200, refine=0, recompute="selective", **SMALL)
    assert len(selective.rows) == selective.costed  # every selective configuration costed
    for top, refine in ((10, None), (10, 0), (1, 0), (3, 0)):
        result = archsim.search(MODEL, cluster=NODE, top=top, refine=refine, **SMALL)
        expected = _twinned(result.rows, selective.rows)
        assert expected >= 1
        assert result.identical_rows_dropped == expected, (top, refine)


def test_a_re_timed_last_rows_twin_past_the_rows_is_counted():
    """--top 1 --refine 1 under FlashAttention: the one row (none, ZB-V) is re-timed by the event simulator; its
    selective twin, just past the rows, was left out of the front but not counted."""
    from dataclasses import replace

    from test_training_search import TINY

    from archsim.training.cluster_file import single_node
    from archsim.training.search import search

    c, node = replace(TINY, layers=12), single_node("a100-80gb", 8)
    options = {"micro_batches": (1, 2), "schedules": ("zb-v", "zb-h1"), "attention": "flash"}
    result = search(c, node, 32, top=1, refine=1, **options)
    assert result.rows[0]["timing"] == "event"
    selective = search(c, node, 32, top=100, refine=0, recomputes=("selective",), **options)
    assert _twinned(result.rows, selective.rows) == 1
    assert result.identical_rows_dropped == 1
