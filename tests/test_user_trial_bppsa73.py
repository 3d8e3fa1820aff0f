"""A researcher's reproduction of BPPSA and out-of-order backprop: what the pages and outputs disagreed on."""

from __future__ import annotations

import json
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


def test_a_mistyped_network_name_is_told_the_nearest_shipped_one(capsys):
    """``bppsa network vgg17`` listed the shipped networks but named none, where a mistyped ``--policy`` is told
    the nearest; a name like none of them (``passwd``) still gets the list alone. Failed before the fix."""
    assert main(["bppsa", "network", "vgg17"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no shipped network named 'vgg17' (did you mean 'vgg16'?); shipped: " in err[0], err
    assert main(["schedule", "resnet", "--policy", "gpipe", "--processors", "2"]) == 2
    assert "named 'resnet' (did you mean 'resnet50'?); shipped: " in capsys.readouterr().err
    assert main(["cost", "passwd"]) == 2
    assert "no shipped network named 'passwd'; shipped: " in capsys.readouterr().err


def test_compare_levels_says_that_depth_zero_is_always_compared(capsys):
    """``--compare-levels 2`` prints depths 0 and 2 (BP's linear scan is the baseline of every comparison); the help
    said only "up-sweep depths (0…4) to summarize side by side". Failed before the fix (the help)."""
    assert main(["bppsa", "pruned-vgg11", "--width-divisor", "16", "--up-levels", "1", "--compare-levels", "2",
                 "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert [row["up_levels"] for row in meta["steps_by_up_levels"]] == [0, 2]
    try:
        main(["bppsa", "pruned-vgg11", "--help"])
    except SystemExit:
        pass
    text = " ".join(capsys.readouterr().out.split())
    assert "depth 0 (the linear scan: BP's steps) always among them" in text
