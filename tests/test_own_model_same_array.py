"""docs/own-model.md's `cost`, `pipeline` and `schedule` lines and its Python example cost one array: a newcomer
who runs the page's commands and then its Python compares like with like. Before, `cost` named `--array 64x64`
and the Python `array="64x64"`, while `pipeline` and `schedule` left it out and planned the default 32×32 array's
costs (198,660 cycles an iteration against the Python's 134,956)."""

from __future__ import annotations

import re
import shlex

from test_docs import ROOT

import archsim
from archsim.cli import main

EXAMPLE = ROOT / "docs" / "examples" / "tiny_resnet.csv"


def page_lines(command: str) -> list[list[str]]:
    """The page's `archsim COMMAND docs/examples/tiny_resnet.csv …` lines, as argv (the first word dropped)."""
    text = (ROOT / "docs" / "own-model.md").read_text(encoding="utf-8")
    return [shlex.split(line)[1:] for line in text.splitlines()
            if line.startswith(f"archsim {command} docs/examples/tiny_resnet.csv ")]


def test_the_array_commands_name_the_python_examples_array():
    for command in ("cost", "pipeline", "schedule"):
        lines = page_lines(command)
        assert lines, command
        for argv in lines:
            named = argv[argv.index("--array") + 1] if "--array" in argv else None
            assert named == "64x64" or "--config" in argv, (command, argv)


def test_the_pipeline_line_gives_the_python_examples_plan(monkeypatch, capsys):
    """The pipeline line's cycles per iteration are the Python example's `plan.max_stage_cost`, and the page states
    that figure."""
    (argv,) = page_lines("pipeline")
    monkeypatch.chdir(ROOT)
    capsys.readouterr()
    assert main(argv) == 0
    out = capsys.readouterr().out
    found = re.search(r"^# iteration_cycles: (\d+)$", out, re.MULTILINE)
    assert found is not None, out
    cycles = int(found.group(1))
    net = archsim.load_network(str(EXAMPLE))
    profile = archsim.profile(net, array="64x64", batch=8, mode="exact")
    plan = archsim.pipeline(profile, processors=2, method="pipedream")
    assert cycles == plan.max_stage_cost
    page = " ".join((ROOT / "docs" / "own-model.md").read_text(encoding="utf-8").split())
    assert f"gives {cycles:,} cycles per iteration" in page
