"""A newcomer reproducing LayerPipe (Unnikrishnan & Parhi) with archsim: what the trial found, each checked
against a hand count or the documented rule."""

from __future__ import annotations

import html
import re

import pandas as pd

from archsim.report.headline import headline


def _text(markup: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


def _rows(speedups: dict[int, dict[str, float]]) -> pd.DataFrame:
    """Results rows of one network on one array and batch: processors → method → speedup."""
    return pd.DataFrame([{"network": "net", "only": "conv", "mode": "exact", "rows": 32, "cols": 32,
                          "dataflow": "ws", "batch": 16, "processors": p, "method": m, "speedup": v}
                         for p, by in speedups.items() for m, v in by.items()])


def test_headline_names_the_methods_that_share_the_top_and_measures_the_lead_over_the_next() -> None:
    """A sweep with borrow = ["paper", "gainful"] on layerpipe_sample: both LayerPipe series give the same
    speedups everywhere, 1.3× PipeDream's; the page said 'no method is fastest in any configuration: all 12 per
    method are tied' and measured the lead over the twin (1× everywhere). By hand: a = a2 = 4, 3; b = 2, 2;
    c = 1, 1 at 2 and 3 processors: a ÷ b = 2, 1.5 (median 1.75, largest on 2 processors), a ÷ c = 4, 3 (3.5)."""
    frame = _rows({2: {"a": 4.0, "a2": 4.0, "b": 2.0, "c": 1.0}, 3: {"a": 3.0, "a2": 3.0, "b": 2.0, "c": 1.0}})
    shown = _text(headline(frame))
    assert "no method is fastest" not in shown
    assert "a and a2 tie as fastest in all 2 configurations per method" in shown
    assert "speedup is a median 1× a2's, 1.75× b's, 3.5× c's" in shown
    assert "over b its lead is largest on 2 processors (median 2×)" in shown
    assert "over a2" not in shown


def test_headline_of_ties_that_change_place_still_names_no_winner() -> None:
    """Ties between different pairs (a = b at 2 processors, a = c at 3): no method shares the top everywhere
    with the same speedups, so the page keeps saying no method is fastest."""
    frame = _rows({2: {"a": 2.0, "b": 2.0, "c": 1.0}, 3: {"a": 3.0, "b": 1.0, "c": 3.0}})
    assert "no method is fastest in any configuration: all 2 per method are tied" in _text(headline(frame))
