"""The flow runs one way: no module imports a stage further down the flow (docs/architecture.md).

Every ``import`` in the library's source, at module level or inside a function, is read with
:mod:`ast`; a package may import only the packages its rules allow above it.
"""

import re

import pytest
from import_graph import ROOT, import_time_imports, imports_of, library, within

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
    "archsim.ring_allreduce": ("archsim.collectives", "archsim.partition", "archsim.spp", *LATER),
    "archsim.torus": ("archsim.partition", "archsim.spp", *LATER),
    "archsim.collective_units": ("archsim.partition", "archsim.spp", *LATER),
    # each algorithm's bytes on the wire sit below the time formulas and the link energy that read them
    "archsim.collective_wire": ("archsim.collectives", "archsim.torus", "archsim.collective_bytes", "archsim.network",
                                "archsim.links", *MODELS, *LATER),
    "archsim.matrix_collectives": ("archsim.partition", "archsim.spp", *LATER),
    "archsim.network": ("archsim.partition", "archsim.spp", *GPU, *LATER),
    "archsim.spp": ("archsim.cluster", "archsim.energy", "archsim.training", "archsim.validation", "archsim.planners",
                    "archsim.policies", "archsim.report", "archsim.sweep", "archsim.commands", "archsim.cli"),
    "archsim.planners": ("archsim.policies", "archsim.report", "archsim.sweep", "archsim.commands", "archsim.cli"),
    # the schedules and the simulator below them see actions and costs, never where the costs came from
    "archsim.policies": ("archsim.spp", "archsim.cluster", "archsim.bppsa", *GPU, "archsim.planners", "archsim.report",
                         "archsim.sweep", "archsim.commands", "archsim.cli"),
    "archsim.sim": (*MODELS, *LATER[:2], *LATER[3:]),
    # each rank's GPipe and 1F1B order, below both the schedules and SPP's PE, which may not import each other
    "archsim.rank_orders": (*MODELS, *LATER, "archsim.collectives", "archsim.network", "archsim.links"),
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
    # the training DFG reads a plan and a profile as plain data: no modelling package, stage or edge
    "archsim.dfg": (*MODELS, *LATER, "archsim.api", "archsim.output_files"),
    "archsim.api": ("archsim.commands", "archsim.cli"),
    "archsim.api_training": ("archsim.commands", "archsim.cli"),
    "archsim.api_search": ("archsim.commands", "archsim.cli"),
    "archsim.api_train_sweep": ("archsim.commands", "archsim.cli"),
    "archsim.api_schedule": ("archsim.commands", "archsim.cli"),
    "archsim.api_sweep": ("archsim.commands", "archsim.cli"),
    "archsim.api_array": ("archsim.commands", "archsim.cli"),
    "archsim.api_plan": ("archsim.commands", "archsim.cli"),
    "archsim.api_validation": ("archsim.commands", "archsim.cli"),
    "archsim.api_cluster": ("archsim.commands", "archsim.cli"),
    "archsim.api_bppsa": ("archsim.commands", "archsim.cli"),
    "archsim.bppsa_run": ("archsim.commands", "archsim.cli", "archsim.api"),
    "archsim.cluster_run": ("archsim.commands", "archsim.cli", "archsim.api"),
    "archsim.validate_gpu_run": ("archsim.commands", "archsim.cli", "archsim.api"),
    "archsim.api_inputs": ("archsim.commands", "archsim.cli"),
    "archsim.api_keywords": ("archsim.commands", "archsim.cli"),
    # an output flag's target is checked when the command line is read; the writer uses the checks, not back
    "archsim.output_targets": ("archsim.output_files", *LATER),
    "archsim.output_inputs": ("archsim.output_files", *LATER),
    "archsim.output_temps": ("archsim.output_files", *LATER),
}

# package → the only packages that may import it: the commands are the CLI's, the API is the commands'
# library face, and pages are drawn by report/, the sweeps, the commands and each package's own page module.
IMPORTED_ONLY_BY = {
    "archsim.cli": ("archsim.__main__",),
    "archsim.commands": ("archsim.cli",),
    "archsim.api": ("archsim.commands",),
    # the face's two halves: its training jobs are reached through archsim.api, its keyword checks are its own
    "archsim.api_training": ("archsim.api",),
    "archsim.api_search": ("archsim.api",),
    "archsim.api_train_sweep": ("archsim.api",),
    "archsim.api_schedule": ("archsim.api",),
    "archsim.api_sweep": ("archsim.api",),
    "archsim.api_array": ("archsim.api",),
    "archsim.api_plan": ("archsim.api",),
    "archsim.api_validation": ("archsim.api",),
    "archsim.api_cluster": ("archsim.api",),
    "archsim.api_collectives": ("archsim.api",),
    "archsim.api_bppsa": ("archsim.api",),
    "archsim.api_inputs": ("archsim.api", "archsim.api_plan", "archsim.api_array", "archsim.api_bppsa",
                           "archsim.api_schedule"),
    "archsim.api_keywords": ("archsim.api", "archsim.api_training", "archsim.api_search", "archsim.api_train_sweep", "archsim.api_schedule", "archsim.api_sweep",
                             "archsim.api_array", "archsim.api_plan", "archsim.api_inputs",
                             "archsim.api_validation", "archsim.api_cluster", "archsim.api_collectives", "archsim.api_bppsa"),
    "archsim.report": ("archsim.commands", "archsim.sweep", "archsim.bppsa.report", "archsim.cluster.report",
                       "archsim.validation.gpu_report"),
    # the top-level glue: each job's run (plan, energy, sparse, BPPSA, cluster, collective, validate-gpu, gemm, cost
    # JSON) is reached from the API and the commands above it, and its parts only from that run; no model package
    # or stage below may import one (``"archsim"``: the package's own lazy names, for a type checker)
    "archsim.plan_run": ("archsim.api_plan", "archsim.commands"),
    "archsim.plan_profile": ("archsim.plan_run", "archsim.commands"),
    "archsim.plan_cluster": ("archsim.plan_run", "archsim.plan_profile"),
    "archsim.plan_pipedream": ("archsim.plan_run",),
    "archsim.plan_spp": ("archsim.plan_run",),
    "archsim.plan_result": ("archsim.plan_run", "archsim.plan_pipedream", "archsim.plan_spp"),
    "archsim.plan_flags": ("archsim.api_plan", "archsim.commands", "archsim.plan_run", "archsim.plan_profile",
                           "archsim.plan_cluster", "archsim.plan_spp"),
    "archsim.bppsa_run": ("archsim.api_bppsa", "archsim.commands"),
    "archsim.cluster_run": ("archsim.api_cluster", "archsim.commands"),
    "archsim.collective_run": ("archsim.api", "archsim.api_collectives", "archsim.commands"),
    "archsim.validate_gpu_run": ("archsim.api_validation", "archsim.commands"),
    "archsim.sparse_run": ("archsim.api_array", "archsim.commands"),
    "archsim.energy_run": ("archsim.api_array", "archsim.commands", "archsim.cost_json"),
    "archsim.gemm_chip": ("archsim.api_array", "archsim.commands"),
    "archsim.cost_json": ("archsim", "archsim.api", "archsim.commands"),
    "archsim.chip_time": ("archsim.cost_json", "archsim.energy_run", "archsim.gemm_chip"),
    "archsim.chip_cycles": ("archsim.chip_time",),
    "archsim.device_toml": ("archsim.api", "archsim.api_array", "archsim.api_inputs", "archsim.api_schedule",
                            "archsim.commands"),
    "archsim.footprint": ("archsim.api", "archsim.commands"),
    # a job's memory check: training's sweeps and runs files ask it too, nothing below them
    "archsim.fits": ("archsim.api", "archsim.api_search", "archsim.api_training", "archsim.commands",
                     "archsim.training"),
    "archsim.table_result": ("archsim", "archsim.api_array", "archsim.api_bppsa", "archsim.api_cluster",
                             "archsim.api_plan", "archsim.api_train_sweep", "archsim.api_validation",
                             "archsim.cost_json"),
}


def is_caller(name: str, caller: str) -> bool:
    """``name`` is ``caller`` or inside it; ``"archsim"`` as a caller is the package's own module only, not all."""
    return name == caller if caller == "archsim" else within(name, caller)

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
    ("archsim", "archsim.api"):
        "the package names the library's jobs for a type checker (TYPE_CHECKING); at run time it loads them lazily",
    ("archsim.output_inputs", "archsim.sweep"):
        "an output flag naming a sweep spec's model, device or network file is refused; the sweep's one resolver "
        "says which files those are",
}

# Packages whose modules load no pandas or plotly when imported: rows first, frames on request (the
# commands and the GPU model print rows; `archsim COMMAND --help` and `cost` stay light).
FRAME_FREE = ("archsim.choices", "archsim.workload", "archsim.lowering", "archsim.sim", "archsim.policies",
              "archsim.planners", "archsim.spp", "archsim.devices", "archsim.training", "archsim.collectives",
              "archsim.commands", "archsim.cli", "archsim.rows", "archsim.outputs", "archsim.seconds",
              "archsim.cost_json", "archsim.json_text")

def excepted(name: str, imported: str) -> bool:
    return any(name == module and within(imported, target) for module, target in EXCEPTIONS)


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
                        and not any(is_caller(name, caller) for caller in callers) and not excepted(name, imported)):
                    broken.append(f"{name} imports {imported}")
    assert not broken, "\n".join(sorted(set(broken)))


def test_each_exception_is_still_needed_and_inside_a_function():
    """A stated exception that no code needs any more is dropped from the list and the page."""
    for module, target in EXCEPTIONS:
        path = ROOT.parent / (module.replace(".", "/") + ".py")
        path = path if path.is_file() else path.with_suffix("") / "__init__.py"  # a package: archsim itself
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


def test_the_package_as_a_caller_is_its_own_module_only():
    """``"archsim"`` among a module's callers lets the package's ``__init__`` name it, not every module below."""
    assert is_caller("archsim", "archsim") and is_caller("archsim.commands.cost", "archsim.commands")
    assert not is_caller("archsim.sweep.device_points", "archsim") and not is_caller("archsim.api_plan", "archsim.api")


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


# docs/architecture.md's map names, per package, the archsim packages it imports; the utilities every layer
# may use are left out there.
UTILITIES = {"errors", "validate", "value_parsers", "choices", "lazy", "progress", "clock", "modes", "split_axis", "units", "jit", "numba_cache",
             "__version__", "toml_errors", "toml_lines", "csv_lines", "count_types"}
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


def map_section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    return text[text.index("## Packages and layering"):text.index("**The rules**")]


def test_every_module_the_map_names_exists():
    """The other direction of the test above: each module or package a row's first cell names, each module a
    package's row names in its job (by its path in the package or in archsim/), and each utility module is in
    archsim/ (a module moved or removed leaves no row behind)."""
    gone = []
    for line in map_section().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3:
            continue
        named = re.findall(r"`([\w./]+)`", cells[0])
        gone += [name for name in named if not (ROOT / name.rstrip("/")).exists()]
        if cells[0] == "utilities" or (len(named) == 1 and named[0].endswith("/")):
            package = ROOT / (named[0] if named else "")
            gone += [f"{cells[0]}: {module}" for module in re.findall(r"`([\w/]+\.py)`", cells[1])
                     if not (package / module).exists() and not (ROOT / module).exists()]
    assert not gone, gone


NUMBERS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def test_the_page_counts_the_exceptions_it_lists():
    """The map's † line and the exceptions' heading both say how many exceptions there are: as many as the page's
    bullets under that heading and as EXCEPTIONS holds."""
    text = PAGE.read_text(encoding="utf-8")
    heading = re.search(r"^\*\*The (\w+) exceptions\*\*", text, re.MULTILINE)
    bullets = re.findall(r"^\* `", text[heading.end():].split("\n## ", 1)[0], re.MULTILINE)
    assert len(bullets) == len(EXCEPTIONS)
    said = re.findall(r"† marks one of the (\w+) exceptions below", text) + [heading.group(1)]
    assert said == [NUMBERS[len(EXCEPTIONS)]] * 2, said


def test_the_page_names_the_utilities_the_map_leaves_out():
    """The map's preamble lists the utilities its import columns leave out: the ones this test leaves out."""
    preamble = map_section().split("the utilities every layer may use — ", 1)[1].split(" — left out", 1)[0]
    assert set(re.findall(r"`(\w+)`", preamble)) == UTILITIES - {"__version__"}
