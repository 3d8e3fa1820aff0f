"""The flow runs one way: no module imports a stage further down the flow (docs/architecture.md).

Every ``import`` in the library's source, at module level or inside a function, is read with
:mod:`ast`; a package may import only the packages its rules allow above it.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "archsim"

# package → packages it must never import (the later stages of the flow and the edges).
LATER = ("archsim.planners", "archsim.policies", "archsim.sim", "archsim.report", "archsim.sweep",
         "archsim.commands", "archsim.cli")
FORBIDDEN = {
    "archsim.array": ("archsim.partition", "archsim.spp", "archsim.cluster", *LATER),
    "archsim.lowering": ("archsim.partition", "archsim.spp", "archsim.cluster", *LATER),
    "archsim.partition": ("archsim.spp", "archsim.cluster", *LATER),
    "archsim.collectives": ("archsim.partition", "archsim.spp", *LATER),
    "archsim.spp": ("archsim.cluster", "archsim.planners", "archsim.policies", "archsim.report", "archsim.sweep",
                    "archsim.commands", "archsim.cli"),
    "archsim.planners": ("archsim.policies", "archsim.report", "archsim.sweep", "archsim.commands", "archsim.cli"),
    "archsim.cluster": ("archsim.partition", "archsim.spp", "archsim.planners", "archsim.commands", "archsim.cli"),
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
    "archsim.report": ("archsim.devices", "archsim.training", "archsim.validation", "archsim.energy",
                       "archsim.partition", "archsim.spp", "archsim.cluster", "archsim.planners", "archsim.sim",
                       "archsim.sweep", "archsim.commands", "archsim.cli"),
    "archsim.api": ("archsim.commands", "archsim.cli"),
    # an output flag's target is checked when the command line is read; the writer uses the checks, not back
    "archsim.output_targets": ("archsim.output_files", *LATER),
}


def imports_of(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@pytest.mark.long
def test_no_module_imports_a_later_stage():
    broken = []
    for path in sorted(ROOT.rglob("*.py")):
        name = module_name(path)
        rules = [bad for package, bad in FORBIDDEN.items() if name == package or name.startswith(package + ".")]
        for imported in imports_of(path):
            for bad in (b for rule in rules for b in rule):
                if imported == bad or imported.startswith(bad + "."):
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
# by them) import the energy, never the other way; both take the GPUs' board power from rates.
BELOW = {"archsim.training.energy": ("archsim.training.objectives", "archsim.training.search"),
         "archsim.training.rates": ("archsim.training.energy", "archsim.training.objectives",
                                    "archsim.training.search")}


def test_energy_does_not_import_the_objectives():
    graph = training_imports()
    up = [f"{low} imports {high}" for low, highs in BELOW.items() for high in highs if high in graph[low]]
    assert not up, "\n".join(up)
