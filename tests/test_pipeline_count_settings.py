"""``archsim pipeline --method gpipe|ooo`` says in its ``settings`` meta that it splits the layers by count, with each
stage's count: its table showed stages of very unequal cycles (VGG16's conv layers on 4 processors: 497 M, 441 M,
438 M and 132 M under gpipe) beside the name of GPipe, whose own partitioner balances costs, and said nothing of the
rule, where layerpipe's and pipedream's runs state theirs."""

from __future__ import annotations

import json

import pytest

from archsim.cli import main


@pytest.mark.parametrize("method, counts, rule", [
    ("gpipe", "4,3,3,3", "equal layer counts"),  # 13 conv layers on 4: 13 = 4 + 3 + 3 + 3, the earlier first
    ("ooo", "4,4,4,1", "⌈L/P⌉ consecutive layers a processor"),  # ⌈13 / 4⌉ = 4 a device, the rest last
])
def test_a_split_by_count_says_so_with_its_counts(capsys, method, counts, rule):
    assert main(["pipeline", "vgg16", "--only", "conv", "--processors", "4", "--method", method,
                 "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert meta["settings"] == f"{rule} ({counts}), in order, not balanced by cost"
