"""The flow runs one way: no module imports a stage further down the flow (docs/architecture.md).

Every ``import`` in the library's source, at module level or inside a function, is read with
:mod:`ast`; a package may import only the packages its rules allow above it.
"""

import ast
from pathlib import Path

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
