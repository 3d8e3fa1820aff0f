"""Every command's ``--help`` builds its parser from the flag choices of :mod:`archsim.choices` and
the light modules beside them: no numerical or model library is imported (issue #40 asks ≤ 0.3 CPU s
for each ``--help``; a bare interpreter and numpy alone cost ~0.03 s and ~0.1 s of it). Checked by what
the process imported, not by timing: benchmarks/bench_cli_startup.py --help-only times it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from archsim.cli import REGISTRY

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "pandas", "scipy", "numba", "plotly", "networkx", "onnx", "torch")


@pytest.mark.parametrize("name", [name for name, _, _ in REGISTRY])
def test_a_commands_help_imports_no_heavy_package(name):
    """``archsim NAME --help`` in a fresh interpreter, run to its exit: none of HEAVY is in sys.modules."""
    code = (f"import sys\nfrom archsim.cli import main\ntry:\n    main([{name!r}, '--help'])\nexcept SystemExit as stop:\n"
            "    assert stop.code == 0, stop.code\n"
            f"print('LOADED', sorted(m for m in {HEAVY!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.splitlines()[-1] == "LOADED []"
    assert f"archsim {name}" in done.stdout  # the help itself was printed (usage line)


def test_every_parser_at_once_imports_no_heavy_package():
    """All parsers in one process (what the docs' CLI reference builds): still none of HEAVY."""
    code = ("import sys\nfrom archsim.cli import build_parser\nbuild_parser()\n"
            f"print('LOADED', sorted(m for m in {HEAVY!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.splitlines()[-1] == "LOADED []"


def test_choices_modules_import_nothing():
    """A module of archsim.choices imports nothing but ``__future__``, so it stays light whatever is added
    to the packages whose names it holds."""
    for path in sorted((ROOT / "archsim" / "choices").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imports = [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
        assert all(isinstance(node, ast.ImportFrom) and node.module == "__future__" for node in imports), path.name
