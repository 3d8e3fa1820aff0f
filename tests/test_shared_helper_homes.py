"""One concept, one implementation (docs/architecture.md): each helper that ``cost``, ``energy`` and the other array
commands share is defined in one module, the one its job names, and in no other under the same name (a
pass-through of the same name, or a second function of that name returning another thing, is a second home).
Every module's top-level ``def`` read with :mod:`ast` (tests/import_graph.py)."""

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
}


def top_level_functions(tree: ast.Module) -> set[str]:
    return {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


@pytest.mark.parametrize("name", sorted(HOMES))
def test_each_shared_helper_is_defined_in_its_one_home(name):
    homes = [module for module, path in library() if name in top_level_functions(parsed(path))]
    assert homes == [HOMES[name]]


def test_a_second_definition_is_found():
    """The scan sees a pass-through of the same name as a definition."""
    tree = ast.parse("def static_power_mw(energies, array):\n    return of_array(energies, array)\n")
    assert top_level_functions(tree) == {"static_power_mw"}
