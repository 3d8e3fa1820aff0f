"""What archsim's modules import, read with :mod:`ast` (every ``import``, at module level or inside a function):
the helpers the layering tests share (tests/test_layering.py, test_layering_names.py, test_layering_training.py)
and tests/test_test_imports.py."""

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "archsim"


@functools.cache
def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def names_of(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        return {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return set()


def imports_of(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(parsed(path)):
        found |= names_of(node)
    return found


def import_time_imports(path: Path) -> set[str]:
    """What importing the module runs: every import outside a function body and a ``TYPE_CHECKING`` block."""
    found, todo = set(), list(parsed(path).body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
            todo.extend(node.orelse)
            continue
        found |= names_of(node)
        todo.extend(ast.iter_child_nodes(node))
    return found


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def library() -> list[tuple[str, Path]]:
    return [(module_name(path), path) for path in sorted(ROOT.rglob("*.py"))]


# A name with a leading underscore is its own module's: a name another module imports, or reads as an attribute
# of an archsim module it imported (``ops._n``), is part of its home module's interface, so it is public (no
# underscore, a docstring). Dunders (``__version__``) are public.
def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def is_module(name: str, root: Path = ROOT) -> bool:
    """Whether ``name`` (dotted, under archsim) is a module or package of ``root``, not a name inside one."""
    path = root.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def module_aliases(tree: ast.Module) -> dict[str, str]:
    """Each local name bound to an archsim module by ``import archsim.x as m`` or ``from archsim.y import x``
    (anywhere in ``tree``) → that module's dotted name."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {alias.asname: alias.name for alias in node.names
                        if alias.asname and within(alias.name, "archsim")}
        elif isinstance(node, ast.ImportFrom) and not node.level and within(node.module or "", "archsim"):
            aliases |= {alias.asname or alias.name: f"{node.module}.{alias.name}" for alias in node.names
                        if is_module(f"{node.module}.{alias.name}")}
    return aliases


def private_imports(path: Path) -> list[str]:
    """``from M import _n`` in ``path`` with M an archsim module (absolute or relative) and ``_n`` not a dunder,
    at module level or inside a function, and ``m._n`` with ``m`` an imported archsim module, each as ``M._n``
    (an attribute once however often it is read)."""
    tree, found = parsed(path), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or within(node.module or "", "archsim")):
            found += [f"{'.' * node.level}{node.module or ''}.{alias.name}" for alias in node.names
                      if is_private(alias.name)]
    aliases = module_aliases(tree)
    found += dict.fromkeys(f"{aliases[node.value.id]}.{node.attr}" for node in ast.walk(tree)
                           if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                           and node.value.id in aliases and is_private(node.attr))
    return found


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The archsim modules ``path``'s imports name (every ``import``, at module level, in a function or under
    ``TYPE_CHECKING``), each resolved to a module of ``modules``: ``from P import m`` names ``P.m`` where that is a
    module, ``P`` where it imports a name defined in ``P``."""
    found = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = {f"{node.module}.{alias.name}" for alias in node.names}
            found |= (subs & modules) | ({node.module} if subs - modules else set())
    return found & modules


@functools.cache
def module_graph() -> dict[str, frozenset[str]]:
    """Each archsim module → the archsim modules it imports (:func:`imported_modules`), itself left out."""
    modules = dict(library())
    return {name: frozenset(imported_modules(path, set(modules)) - {name}) for name, path in modules.items()}
