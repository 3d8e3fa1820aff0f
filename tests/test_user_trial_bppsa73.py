"""A researcher's reproduction of BPPSA and out-of-order backprop: what the pages and outputs disagreed on."""

from __future__ import annotations

import re

from archsim.cli import main

VGG = ["bppsa", "pruned-vgg11", "--width-divisor", "16", "--up-levels", "1", "--compare-levels", "1"]


def test_the_pruned_vgg11_page_names_its_step_columns_as_the_command_prints_them(tmp_path, capsys):
    """The page's table of every step headed its mv/mm/id column ``kind`` where the command's table, csv and json
    say ``product``. Failed before the fix (the page's header had ``kind``)."""
    report = tmp_path / "vgg.html"
    assert main([*VGG, "--report", str(report)]) == 0
    out = capsys.readouterr().out
    printed = next(line for line in out.splitlines() if line.split()[:1] == ["method"]).split()
    heads = [re.findall(r"<th>(.*?)</th>", table) for table in re.findall(r"<table.*?</table>", report.read_text(),
                                                                           re.DOTALL)]
    steps = [head for head in heads if "seq_step" in head]
    assert steps == [printed], (steps, printed)
    assert "product" in printed and "kind" not in printed
