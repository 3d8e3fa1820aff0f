"""The flow runs one way: no module imports a stage further down the flow (docs/architecture.md).

Every ``import`` in the library's source, at module level or inside a function, is read with
:mod:`ast`; a package may import only the packages its rules allow above it.
"""

import ast
import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "archsim"

# package → packages it must never import (the later stages of the flow and the edges).
LATER = ("archsim.planners", "archsim.policies", "archsim.sim", "archsim.report", "archsim.sweep",
         "archsim.commands", "archsim.cli")
# the GPU-training half, which the array flow above it never reads
GPU = ("archsim.devices", "archsim.energy", "archsim.training", "archsim.validation")
MODELS = ("archsim.workload", "archsim.lowering", "archsim.array", "archsim.partition", "archsim.spp",
          "archsim.cluster", "archsim.bppsa", *GPU)
FORBIDDEN = {
    "archsim.workload": ("archsim.lowering", "archsim.array", "archsim.partition", "archsim.spp", "archsim.cluster",
                         "archsim.bppsa", *GPU, *LATER),
    "archsim.lowering": ("archsim.array", "archsim.partition", "archsim.spp", "archsim.cluster", *GPU, *LATER),
    "archsim.array": ("archsim.partition", "archsim.spp", "archsim.cluster", *GPU, *LATER),
    "archsim.partition": ("archsim.spp", "archsim.cluster", *GPU, *LATER),
    "archsim.collectives": ("archsim.partition", "archsim.spp", *LATER),
    "archsim.network": ("archsim.partition", "archsim.spp", *GPU, *LATER),
    "archsim.spp": ("archsim.cluster", "archsim.energy", "archsim.training", "archsim.validation", "archsim.planners",
                    "archsim.policies", "archsim.report", "archsim.sweep", "archsim.commands", "archsim.cli"),
    "archsim.planners": ("archsim.policies", "archsim.report", "archsim.sweep", "archsim.commands", "archsim.cli"),
    # the schedules and the simulator below them see actions and costs, never where the costs came from
    "archsim.policies": ("archsim.spp", "archsim.cluster", "archsim.bppsa", *GPU, "archsim.planners", "archsim.report",
                         "archsim.sweep", "archsim.commands", "archsim.cli"),
    "archsim.sim": (*MODELS, *LATER[:2], *LATER[3:]),
    "archsim.cluster": ("archsim.partition", "archsim.spp", "archsim.planners", *GPU, "archsim.commands",
                        "archsim.cli"),
    # the GPU/training half (issue 37): devices → (energy | validation) → training → api; reports draw pages
    "archsim.devices": ("archsim.training", "archsim.validation", "archsim.energy", "archsim.partition",
                        "archsim.spp", "archsim.cluster", *LATER),
    "archsim.energy": ("archsim.training", "archsim.validation", "archsim.partition", "archsim.spp",
                       "archsim.cluster", *LATER),
    "archsim.validation": ("archsim.training", "archsim.energy", "archsim.partition", "archsim.spp",
                           "archsim.cluster", "archsim.planners", "archsim.policies", "archsim.sim",
                           "archsim.sweep", "archsim.commands", "archsim.cli"),
    "archsim.training": ("archsim.validation", "archsim.planners", "archsim.report", "archsim.sweep",
                         "archsim.commands", "archsim.cli"),
    "archsim.report": (*MODELS, "archsim.planners", "archsim.policies", "archsim.sim", "archsim.sweep",
                       "archsim.commands", "archsim.cli"),
    "archsim.api": ("archsim.commands", "archsim.cli"),
    "archsim.api_training": ("archsim.commands", "archsim.cli"),
    "archsim.api_schedule": ("archsim.commands", "archsim.cli"),
    "archsim.api_keywords": ("archsim.commands", "archsim.cli"),
    # an output flag's target is checked when the command line is read; the writer uses the checks, not back
    "archsim.output_targets": ("archsim.output_files", *LATER),
}

# package → the only packages that may import it: the commands are the CLI's, the API is the commands'
# library face, and pages are drawn by report/, the sweeps, the commands and each package's own page module.
IMPORTED_ONLY_BY = {
    "archsim.cli": ("archsim.__main__",),
    "archsim.commands": ("archsim.cli",),
    "archsim.api": ("archsim.commands",),
    # the face's two halves: its training jobs are reached through archsim.api, its keyword checks are its own
    "archsim.api_training": ("archsim.api",),
    "archsim.api_schedule": ("archsim.api",),
    "archsim.api_keywords": ("archsim.api", "archsim.api_training", "archsim.api_schedule"),
    "archsim.report": ("archsim.commands", "archsim.sweep", "archsim.bppsa.report", "archsim.cluster.report",
                       "archsim.validation.gpu_report"),
}

# The exceptions docs/architecture.md states ("Layering"), each an import inside the one function that
# needs it: (module, what it imports) → why.
EXCEPTIONS = {
    ("archsim.array.sparse_network", "archsim.energy.sparse"):
        "the sparse table's optional energy columns are priced by the energy model of the same counts",
    ("archsim.spp.profiles", "archsim.training.iteration"):
        "an SPP profile on a GPU times its ops with training's one op-timing model",
    ("archsim.report.export", "archsim.policies.torch_csv"):
        "--schedule-csv writes torch's CSV layout, written and read once in policies/torch_csv.py",
    ("archsim.sweep.device_points", "archsim.api"):
        "a device sweep's point is archsim.train with the point's keywords, the same code as archsim train",
    ("archsim.output_targets", "archsim.sweep"):
        "an output flag naming a sweep spec's model, device or network file is refused; the sweep's one resolver "
        "says which files those are",
}

# Packages whose modules load no pandas or plotly when imported: rows first, frames on request (the
# commands and the GPU model print rows; `archsim COMMAND --help` and `cost` stay light).
FRAME_FREE = ("archsim.choices", "archsim.workload", "archsim.lowering", "archsim.sim", "archsim.policies",
              "archsim.planners", "archsim.spp", "archsim.devices", "archsim.training", "archsim.collectives",
              "archsim.commands", "archsim.cli", "archsim.rows", "archsim.outputs", "archsim.seconds",
              "archsim.cost_json", "archsim.json_text")

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


def excepted(name: str, imported: str) -> bool:
    return any(name == module and within(imported, target) for module, target in EXCEPTIONS)


def library() -> list[tuple[str, Path]]:
    return [(module_name(path), path) for path in sorted(ROOT.rglob("*.py"))]


@pytest.mark.long
def test_no_module_imports_a_later_stage():
    broken = []
    for name, path in library():
        rules = [bad for package, bad in FORBIDDEN.items() if within(name, package)]
        for imported in imports_of(path):
            for bad in (b for rule in rules for b in rule):
                if within(imported, bad) and not excepted(name, imported):
                    broken.append(f"{name} imports {imported}")
    assert not broken, "\n".join(sorted(set(broken)))


@pytest.mark.long
def test_edge_packages_are_imported_only_by_their_callers():
    broken = []
    for name, path in library():
        for imported in imports_of(path):
            for package, callers in IMPORTED_ONLY_BY.items():
                if (within(imported, package) and not within(name, package)
                        and not any(within(name, caller) for caller in callers) and not excepted(name, imported)):
                    broken.append(f"{name} imports {imported}")
    assert not broken, "\n".join(sorted(set(broken)))


def test_each_exception_is_still_needed_and_inside_a_function():
    """A stated exception that no code needs any more is dropped from the list and the page."""
    for module, target in EXCEPTIONS:
        path = ROOT.parent / (module.replace(".", "/") + ".py")
        assert any(within(i, target) for i in imports_of(path)), f"{module} no longer imports {target}"
        assert not any(within(i, target) for i in import_time_imports(path)), f"{module} imports {target} at import time"


def test_the_choices_import_nothing():
    """A flag's name set is read by `--help` before anything loads: archsim/choices/ imports no module."""
    imported = {f"{p.name}: {i}" for p in (ROOT / "choices").glob("*.py") for i in imports_of(p)
                if not within(i, "__future__")}
    assert not imported, "\n".join(sorted(imported))


@pytest.mark.long
def test_frames_and_pages_load_only_where_they_are_built():
    """pandas loads at import time nowhere in FRAME_FREE; plotly only in report/ and a package's page module."""
    broken = []
    for name, path in library():
        for imported in import_time_imports(path):
            if within(imported, "pandas") and any(within(name, package) for package in FRAME_FREE):
                broken.append(f"{name} imports {imported}")
            if within(imported, "plotly") and not (within(name, "archsim.report") or name.endswith("report")):
                broken.append(f"{name} imports {imported}")
    assert not broken, "\n".join(sorted(set(broken)))


def test_commands_do_not_import_the_cli():
    """The CLI imports the commands; a command takes :class:`archsim.commands.Command` from its package."""
    assert not [p.name for p in (ROOT / "commands").glob("*.py") if any(i.startswith("archsim.cli") for i in imports_of(p))]


def test_the_planner_registry_loads_no_simulator():
    """`archsim pipeline` and sweeps read the registry; SPP's simulator (numba) and networkx load only
    when a cluster planner runs."""
    import subprocess
    import sys

    code = ("import sys, archsim.planners\n"
            "print(sorted(m for m in ('numba', 'networkx', 'archsim.sim') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


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


# `archsim train` walks down: command → run (the iteration) → stage split (the plan) → stages (per-stage
# F/I/W, hops) → pieces (ops → seconds, iteration.py) → the op lists and the machine → devices. A module
# imports only modules after it here.
TRAIN_WALK = ("archsim.training.run", "archsim.training.stage_split", "archsim.training.stages",
              "archsim.training.iteration", "archsim.training.memory", "archsim.training.machine",
              "archsim.training.layer_ops", "archsim.training.parallel")


def training_imports() -> dict[str, set[str]]:
    """Each module of ``archsim.training`` → the modules of ``archsim.training`` it imports, anywhere in it."""
    paths = {module_name(p): p for p in sorted((ROOT / "training").glob("*.py"))}
    return {name: {i for i in imports_of(path) if i in paths and i != name} for name, path in paths.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import cycle of ``graph`` found by a depth-first walk (each as the path that closes it)."""
    found, state = [], {}

    def walk(node: str, path: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                walk(nxt, [*path, nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            walk(node, [node])
    return found


def test_training_modules_never_climb_back():
    """No module of the training package imports one that (through others) imports it back."""
    assert not cycles(training_imports())


def test_cycles_are_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_train_walk_goes_down():
    graph = training_imports()
    up = [f"{low} imports {high}" for k, low in enumerate(TRAIN_WALK) for high in TRAIN_WALK[:k + 1]
          if high in graph.get(low, set())]
    assert not up, "\n".join(up)


# The iteration's energy is priced below the search's objectives: the objectives (and the search that ranks
# by them, with its coster and rows) import the energy, never the other way; both take the GPUs' board power
# from rates.
SEARCH = ("archsim.training.search", "archsim.training.search_cost", "archsim.training.search_row_maker")
BELOW = {"archsim.training.energy": ("archsim.training.objectives", *SEARCH),
         "archsim.training.rates": ("archsim.training.energy", "archsim.training.objectives", *SEARCH)}


def test_energy_does_not_import_the_objectives():
    graph = training_imports()
    up = [f"{low} imports {high}" for low, highs in BELOW.items() for high in highs if high in graph[low]]
    assert not up, "\n".join(up)


# docs/architecture.md's map names, per package, the archsim packages it imports; the utilities every layer
# may use are left out there.
UTILITIES = {"errors", "validate", "choices", "lazy", "progress", "clock", "modes", "jit", "numba_cache",
             "__version__", "toml_errors", "toml_lines"}
PAGE = ROOT.parent / "docs" / "architecture.md"


def map_rows() -> dict[str, set[str]]:
    """Package → the packages its row of the map names (rows naming one package; text after a ';' is a note)."""
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("## Packages and layering"):text.index("**The rules**")]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        names = re.findall(r"`([\w./]+)`", cells[0])
        if len(names) == 1:
            package = names[0].removesuffix("/").removesuffix(".py")
            rows[package] = set(re.findall(r"`([\w.]+)`", cells[2].split(";")[0]))
    return rows


def package_imports(package: str) -> set[str]:
    found = set()
    for name, path in library():
        if within(name, f"archsim.{package}"):
            found |= {i.split(".")[1] for i in imports_of(path) if i.startswith("archsim.")}
    return found - UTILITIES - {package}


@pytest.mark.long
def test_the_map_names_what_each_package_imports():
    rows = map_rows()
    assert len(rows) >= 20 and "training" in rows and "api" in rows
    wrong = [f"{package}: the page says {sorted(said)}, the code imports {sorted(package_imports(package))}"
             for package, said in rows.items() if said != package_imports(package)]
    assert not wrong, "\n".join(wrong)


def test_the_map_names_every_package_and_module():
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("## Packages and layering"):text.index("**The rules**")]
    missing = [p.name for p in ROOT.iterdir() if (p.suffix == ".py" or (p / "__init__.py").exists())
               and p.name != "__init__.py" and f"`{p.name}{'/' if p.is_dir() else ''}`" not in section]
    assert not missing, missing
