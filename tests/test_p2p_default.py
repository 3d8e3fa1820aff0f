"""The pipeline sends' default mode is stated once (choices.training.DEFAULT_P2P): the commands' --p2p, the library's
p2p= and Parallelism read it, and no module writes the mode's name as code again, so changing the default is one
line (it became megatron, as Megatron-LM runs the schedule, on 2026-12-05: docs/training.md)."""

import inspect
import re
from pathlib import Path

import pytest

import archsim
from archsim import cli
from archsim.choices.training import DEFAULT_P2P, P2P_MODES
from archsim.training.parallel import Parallelism

ARCHSIM = Path(archsim.__file__).parent


def test_every_default_reads_the_one_constant():
    assert DEFAULT_P2P in P2P_MODES
    for job in (archsim.train, archsim.search, archsim.train_sweep):
        assert inspect.signature(job).parameters["p2p"].default == DEFAULT_P2P, job.__name__
    assert Parallelism(1, 1, 1, 1, 1, "none").p2p == DEFAULT_P2P
    for command in ("train", "search"):
        parsed = cli.build_parser([command]).parse_args([command, "MODEL", "--cluster", "C.toml", "--global-batch", "8"])
        assert parsed.p2p == DEFAULT_P2P, command


def test_no_module_restates_the_default_as_code():
    code = re.compile(r"""(=|!=|==|default=|or)\s*["']overlapped["']""")
    found = [f"{path.relative_to(ARCHSIM)}:{n}" for path in ARCHSIM.rglob("*.py") if path.name != "training.py"
             or path.parent.name != "choices"
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if code.search(line)]
    assert not found, found


def test_the_help_and_docstrings_name_the_default_the_code_runs(capsys):
    """Failed before: --p2p's help named no default and archsim.search's docstring said rows carry ``p2p`` "when not
    the first" mode (overlapped, the default before 2026-12-05), where its rows carry it when not DEFAULT_P2P."""
    for command in ("train", "search"):
        with pytest.raises(SystemExit):
            cli.main([command, "--help"])
        helps = " ".join(capsys.readouterr().out.split())
        assert f"default {DEFAULT_P2P}; docs/training.md" in helps, command
    said = " ".join(inspect.getdoc(archsim.search).split())
    assert "when not the first" not in said and "carrying ``p2p`` when not the default" in said
    for job in (archsim.train, archsim.search):
        assert f'``"{DEFAULT_P2P}"`` (the default)' in " ".join(inspect.getdoc(job).split()), job.__name__
