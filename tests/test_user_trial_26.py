"""Two researchers reproduce BPPSA (``archsim bppsa``) and SPB + Jigsaw (``archsim cluster``) from the CLI.

Each test is a defect that trial found and failed on the code before its fix. Expected values come from
the command line the test gives or from a hand computation written out here, never from archsim's output.
"""

from __future__ import annotations

import re

from archsim.cli import main

VGG = ["bppsa", "pruned-vgg11", "--width-divisor", "16"]


def test_pruned_vgg11_report_command_reproduces_the_width_it_was_run_at(tmp_path, capsys):
    """The page's command line left out ``--width-divisor``: run at width/16, it printed a command that
    reruns the full-width network (another study, ten times slower). Failed before the fix."""
    report = tmp_path / "vgg.html"
    assert main([*VGG, "--up-levels", "1", "--compare-levels", "1", "--out", str(tmp_path / "v.txt"),
                 "--report", str(report)]) == 0
    capsys.readouterr()
    command = re.search(r"archsim bppsa pruned-vgg11 [^<\n]*", report.read_text()).group(0)
    assert "--width-divisor 16" in command, command
