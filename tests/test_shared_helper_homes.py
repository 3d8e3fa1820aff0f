"""One concept, one implementation (docs/architecture.md): each helper that ``cost``, ``energy`` and the other array
commands share is defined in one module, the one its job names, and in no other under the same name (a
pass-through of the same name, or a second function of that name returning another thing, is a second home).
A rule written once is applied in one module, its callers asking that module's function. Every module's top-level
``def`` and call read with :mod:`ast` (tests/import_graph.py)."""

import ast

import pytest
from import_graph import library, parsed

# name → the one module that defines it
HOMES = {
    # a device TOML given as --config, read once for cost, energy, gemm, pipeline and schedule
    "device_toml_dtype": "archsim.device_toml",
    "device_toml_array": "archsim.device_toml",
    "device_toml_notes": "archsim.device_toml",
    # one array's leakage with its SRAMs (mW), which energy and cost --energy add to a chip's static_watts
    "static_power_mw": "archsim.energy.model",
    # the chip a device file states: a catalog GPU's spec (devices) is not a --config file's chip of arrays (chip_time)
    "chip_of": "archsim.devices.catalog",
    "several_array_chip": "archsim.chip_time",
    "one_array_chip": "archsim.chip_time",
    "timed_chip": "archsim.chip_time",
    # a device file's hbm_gbps as the cycle engine's words/cycle: apart from the array flags (array/options.py)
    "device_dram_rate": "archsim.array.device_rate",
    "with_device_bandwidth": "archsim.array.device_rate",
    # a .cfg's text parsed by one rule (configparser's, as SCALE-Sim's), and its clock, Bandwidth and interface mode
    # read as the main reader reads them, for the cycle engine's DRAM rate and notes and the sweep's checks
    "cfg_parser": "archsim.array.cfg_lines",
    "cfg_stated": "archsim.array.cfg_lines",
    # where a key sits in a .cfg, for an error's line: one search, whichever reader refuses the key
    "cfg_key_line": "archsim.array.cfg_lines",
    # nccl-tests' bus bandwidth over algorithm bandwidth, read by archsim.collective and the cited runs' check
    "bus_bandwidth_factor": "archsim.collective_units",
    # PipeDream's replica all-reduce 4(r − 1)·P / (B·r): the tables, the dense search and a plan's stages (the
    # compiled search keeps its own copy, held equal by tests/test_pipedream_kernel.py)
    "replica_allreduce": "archsim.partition.pipedream_allreduce",
    # the Pareto rule of the search's front and the sweeps' (the tie rule each caller's argument; until 2026-12-05 a
    # 2-D sweep in training/search_front.py and an n-D mask in report/pareto.py, each with its own ties)
    "front_indices": "archsim.pareto_rule",
    "pareto_mask": "archsim.pareto_rule",
}


def top_level_functions(tree: ast.Module) -> set[str]:
    return {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


@pytest.mark.long  # reads every module (a few seconds)
def test_each_shared_helper_is_defined_in_its_one_home():
    homes = {name: [module for module, path in library() if name in top_level_functions(parsed(path))]
             for name in HOMES}
    assert homes == {name: [home] for name, home in HOMES.items()}


# class name → the one module that defines it: ``archsim.Network`` is the DNN (its layers); the links between servers
# are ``archsim.network.ServerNetwork`` (until 2026-12-05 a second class named ``Network``, in ``archsim.network``)
CLASS_HOMES = {"Network": "archsim.workload.layer", "ServerNetwork": "archsim.network"}


@pytest.mark.long  # reads every module (a few seconds)
def test_each_class_name_has_its_one_home():
    homes = {name: [module for module, path in library()
                    if any(isinstance(node, ast.ClassDef) and node.name == name for node in parsed(path).body)]
             for name in CLASS_HOMES}
    assert homes == {name: [home] for name, home in CLASS_HOMES.items()}


# name → the one module that calls it: a rule written once, its callers asking the function that applies it
CALLED_IN = {
    # a chip of one array stating static_watts is timed where static power is priced: chip_time.timed_chip
    "one_array_chip": "archsim.chip_time",
    # every .cfg is parsed by cfg_parser: no second reading of one file by other rules
    "ConfigParser": "archsim.array.cfg_lines",
}


def called(tree: ast.Module) -> set[str]:
    return {node.func.id if isinstance(node.func, ast.Name) else node.func.attr for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute))}


@pytest.mark.long  # reads every module (a few seconds)
def test_each_rule_is_applied_in_its_one_module():
    callers = {name: [module for module, path in library() if name in called(parsed(path))] for name in CALLED_IN}
    assert callers == {name: [home] for name, home in CALLED_IN.items()}


def test_a_second_definition_is_found():
    """The scan sees a pass-through of the same name as a definition."""
    tree = ast.parse("def static_power_mw(energies, array):\n    return of_array(energies, array)\n")
    assert top_level_functions(tree) == {"static_power_mw"}


def test_a_call_is_found_by_name_or_attribute():
    assert called(ast.parse("x = a(b) or chip_time.one_array_chip(c, d)\n")) == {"a", "one_array_chip"}


# A GiB is written once: archsim.units.GIB, read by every module that turns bytes into GiB or back.
GIB_HOME = "archsim.units"
# modules that still write 2**30 themselves: a count of words, not bytes (the search's rows read GIB since 2026-12-05)
WRITES_2_POW_30 = {"archsim.array.layout"}


def is_two_pow_30(node: ast.AST) -> bool:
    """``2**30`` or ``1 << 30`` written as numbers."""
    pairs = {(ast.Pow, 2, 30), (ast.LShift, 1, 30)}
    return (isinstance(node, ast.BinOp) and isinstance(node.left, ast.Constant) and isinstance(node.right, ast.Constant)
            and (type(node.op), node.left.value, node.right.value) in pairs)


def assigned_names(tree: ast.Module) -> set[str]:
    return {target.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(target, ast.Name)}


@pytest.mark.long  # reads every module (a few seconds)
def test_the_gib_constant_has_one_home():
    assert [module for module, path in library() if "GIB" in assigned_names(parsed(path))] == [GIB_HOME]
    writers = {module for module, path in library() if any(is_two_pow_30(node) for node in ast.walk(parsed(path)))}
    assert writers == {GIB_HOME} | WRITES_2_POW_30


def test_two_pow_30_is_found_however_written():
    found = [is_two_pow_30(node) for node in ast.walk(ast.parse("a = 2**30\nb = 1 << 30\nc = 2**20\n"))]
    assert found.count(True) == 2
