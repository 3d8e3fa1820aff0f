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
    """Every column but recompute and what is built from it (NaN equal to NaN)."""
    return tuple(("nan" if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()
                 if k not in ("recompute", "megatron_args", "command"))


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
