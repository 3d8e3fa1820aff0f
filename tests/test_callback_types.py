"""A run's callbacks are typed once: how a run says a line (``console.Speak``), its progress phases
(``progress.Phases``) and the phases that draw nothing (``progress.quiet_phases``). Two modules that each write
``Callable[[str, str], None]`` under a name of their own can drift apart unseen; the scan reads every module
with :mod:`ast`, so a new copy fails here."""

import ast
import collections
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "archsim"

# copies in modules whose owners change them separately; each goes when its module takes the shared name
KNOWN = {("archsim/cluster_run.py", "Speak"), ("archsim/validate_gpu_run.py", "Speak"),
         ("archsim/validate_gpu_run.py", "Phases"), ("archsim/devices/array_dram.py", "DramWords"),
         ("archsim/validate_gpu_run.py", "_quiet")}


@functools.cache
def _modules() -> tuple[tuple[str, ast.Module], ...]:
    """The modules that write a ``Callable`` alias or yield a lambda (only those are parsed: the scan stays cheap)."""
    texts = ((path, path.read_text(encoding="utf-8")) for path in sorted(ROOT.rglob("*.py")))
    return tuple((path.relative_to(ROOT.parent).as_posix(), ast.parse(text)) for path, text in texts
                 if "= Callable[" in text or "yield lambda" in text)


def test_each_callable_alias_is_written_in_one_module():
    homes = collections.defaultdict(list)
    for name, tree in _modules():
        for node in tree.body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and isinstance(node.value, ast.Subscript) and ast.unparse(node.value.value) == "Callable"
                    and (name, node.targets[0].id) not in KNOWN):
                homes[ast.unparse(node.value)].append(f"{name}:{node.targets[0].id}")
    assert {text: places for text, places in homes.items() if len(places) > 1} == {}


def _draws_nothing(node: ast.AST) -> bool:
    """A generator whose whole body (its docstring aside) is ``yield lambda name: None``."""
    if not isinstance(node, ast.FunctionDef):
        return False
    body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return (len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Yield)
            and isinstance(body[0].value.value, ast.Lambda)
            and ast.unparse(body[0].value.value.body) == "None")


def test_the_phases_that_draw_nothing_are_written_once():
    places = [f"{name}:{node.name}" for name, tree in _modules() for node in tree.body
              if _draws_nothing(node) and (name, node.name) not in KNOWN]
    assert places == ["archsim/progress.py:quiet_phases"]


def test_the_known_copies_are_still_there():
    """An entry of KNOWN whose copy is gone is dropped from it, so the list stays the debt it names."""
    present = {(name, node.targets[0].id if isinstance(node, ast.Assign) else node.name)
               for name, tree in _modules() for node in tree.body
               if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name))
               or isinstance(node, ast.FunctionDef)}
    assert KNOWN <= present
