"""One concept, one import path, and private names kept private: a name is imported from the module that
defines it (the faces re-export on purpose), and a name with a leading underscore is its own module's.
Every ``import`` and attribute read with :mod:`ast` (tests/import_graph.py)."""

import ast
import functools
from pathlib import Path

import pytest
from import_graph import ROOT, library, module_name, parsed, private_imports

# One concept, one import path: a name lives in one module and is imported from there, never through a module
# that imported it. The public faces re-export on purpose: the top-level package and api.py (the library's
# face) and each package's __init__.py (the names docs/api.md and the package's docstring give).
FACADES = ("archsim", "archsim.api")
USERS = (ROOT, ROOT.parent / "tests", ROOT.parent / "benchmarks")


def facade(name: str, path: Path) -> bool:
    return name in FACADES or path.name == "__init__.py"


def exported(path: Path) -> list[str]:
    """The names a module's ``__all__`` spells out as string literals (empty without one)."""
    for node in parsed(path).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return [n.value for n in ast.walk(node.value) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return []


@functools.cache
def defined(path: Path) -> set[str]:
    """The names a module binds at its top level (also inside a top-level ``if``/``try``) by ``def``, ``class``
    or assignment, not by import."""
    found, todo = set(), list(parsed(path).body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, (ast.If, ast.Try)):
            todo += node.body + node.orelse + getattr(node, "finalbody", [])
            todo += [s for handler in getattr(node, "handlers", []) for s in handler.body]
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
        found |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return found


def foreign_exports(path: Path) -> list[str]:
    """Names ``__all__`` lists that the module does not define: re-exports."""
    return [name for name in exported(path) if name not in defined(path)]


def borrowed_imports(path: Path, modules: dict[str, Path]) -> list[str]:
    """``from M import N`` in ``path`` where M is a non-facade archsim module that does not define N (N came
    into M by an import): the name is reached through a module that is not its home."""
    found = []
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in modules:
            home = modules[node.module]
            if not facade(node.module, home):
                found += [f"{node.module}.{a.name}" for a in node.names if a.name not in defined(home)]
    return found


def reexport_violations(root: Path, users: tuple[Path, ...]) -> list[str]:
    """Every re-export listed in a non-facade module's ``__all__`` and every import of a name through a
    non-facade module that is not its home, for the modules under ``root`` and the files under ``users``."""
    modules = {module_name(path, root): path for path in sorted(root.rglob("*.py"))}
    broken = [f"{name} exports {key}" for name, path in modules.items() if not facade(name, path)
              for key in foreign_exports(path)]
    for path in sorted({p for folder in users for p in folder.rglob("*.py")}):
        broken += [f"{path.relative_to(root.parent)} imports {name}" for name in borrowed_imports(path, modules)]
    return broken


def test_foreign_exports_are_found(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from a import B, C\nD = 1\ndef e(): pass\nif D:\n    F = 2\n__all__ = ['B', 'D', 'e', 'F']\n",
                      encoding="utf-8")
    assert foreign_exports(module) == ["B"]


def test_reexports_and_borrowed_imports_are_found(tmp_path):
    """A re-export in a module's ``__all__``, and an import through a module that only imported the name, are
    both reported; the same through a package's ``__init__.py`` is not."""
    package = tmp_path / "archsim"
    (package / "pkg").mkdir(parents=True)
    (package / "home.py").write_text("X = 1\nY = 2\n", encoding="utf-8")
    (package / "relay.py").write_text("from archsim.home import X, Y\n__all__ = ['X']\n", encoding="utf-8")
    (package / "pkg" / "__init__.py").write_text("from archsim.home import X\n__all__ = ['X']\n", encoding="utf-8")
    (package / "user.py").write_text("from archsim.relay import Y\nfrom archsim.pkg import X\n"
                                     "from archsim.home import X as Z\n", encoding="utf-8")
    found = reexport_violations(package, (package,))
    assert sorted(found) == ["archsim.relay exports X", "archsim/user.py imports archsim.relay.Y"]


@pytest.mark.long
def test_each_name_is_imported_from_its_one_home():
    """No non-facade module re-exports a name, and the library, tests and benchmarks import each name from the
    module that defines it."""
    broken = reexport_violations(ROOT, USERS)
    assert not broken, "\n".join(sorted(set(broken)))


def test_private_imports_are_found(tmp_path):
    """A private name imported from an archsim module (also in a function, also relatively) is reported; a
    dunder, a public name under a private alias and a private name from outside archsim are not."""
    module = tmp_path / "m.py"
    module.write_text("from archsim.a import _b, c as _c, __version__\nfrom os import _exit\n"
                      "def f():\n    from archsim.d import _E\n    from .g import _h\n", encoding="utf-8")
    assert sorted(private_imports(module)) == [".g._h", "archsim.a._b", "archsim.d._E"]


def test_private_attributes_of_imported_modules_are_found(tmp_path):
    """``m._n`` with ``m`` an archsim module bound by ``import … as`` or ``from … import`` is reported, once;
    a dunder, a public attribute, a non-module name's attribute and another package's module's are not."""
    module = tmp_path / "m.py"
    module.write_text("import os\nimport archsim.api as api\nfrom archsim.workload import onnx_ops as ops\n"
                      "from archsim.workload.onnx_ops import MAX_WINDOW\nimport os.path as osp\n"
                      "ops._a(); ops._a(); api._b; ops.__doc__; ops.c; MAX_WINDOW._d; os._exit; osp._e\n"
                      "def f():\n    from archsim import sweep\n    return sweep._g\n", encoding="utf-8")
    assert sorted(private_imports(module)) == ["archsim.api._b", "archsim.sweep._g", "archsim.workload.onnx_ops._a"]


@pytest.mark.long
def test_no_module_imports_a_private_name():
    broken = [f"{name} imports {imported}" for name, path in library() for imported in private_imports(path)]
    assert not broken, f"{len(broken)} imports of private names:\n" + "\n".join(sorted(broken))


