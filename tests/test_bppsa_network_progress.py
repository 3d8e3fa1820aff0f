"""``archsim bppsa network`` draws a bar on a terminal, as ``pruned-vgg11`` does: a dense chain's FLOP count and
gradient check take seconds each (ffnn8: about 20 s in all) and drew nothing before. The bar's total and its
updates are the ◇ operations counted by hand from Algorithm 1's levels."""

from __future__ import annotations

from pathlib import Path

from recorded_bars import record_bars

from archsim.cli import main

ROOT = Path(__file__).resolve().parent.parent


def test_the_network_study_counts_every_scan_step(monkeypatch, capsys):
    bars = record_bars(monkeypatch)
    assert main(["bppsa", "network", str(ROOT / "docs" / "examples" / "bppsa_chain.csv"), "--format", "json"]) == 0
    capsys.readouterr()
    # 7 operators, 8 elements, K = ⌈log₂ 8⌉ = 3: up-sweep levels d = 0, 1 hold 4 and 2 pairs, the down-sweep
    # d = 2, 1, 0 holds 1, 2 and 4 (moves included): 13 ◇. BP's linear scan: 7. Counted on patterns (13 + 7),
    # then the gradient check's scan on values (13).
    assert [bar.total for bar in bars] == [13 + 7 + 13]
    assert bars[0].updates == [1] * 33
