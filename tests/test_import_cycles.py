"""The layering holds through every chain of imports, not only through each module's own (tests/test_layering.py
reads those): a package reaches no package its rule forbids by way of other modules, and no modules import each
other round a loop but the ones listed below. Every import counts, at module level, inside a function or under
``TYPE_CHECKING`` (:func:`import_graph.module_graph`): each is an edge a reader, a type checker or a later
refactor follows. A stated exception's import (``test_layering.EXCEPTIONS``) is not followed, nor, in the chains
of the layering rules, a type-only import listed in ``TYPE_ONLY``."""

import ast

import networkx as nx
import pytest
from import_graph import ROOT, import_time_imports, module_graph, names_of, parsed, within
from test_layering import FORBIDDEN, excepted

# (module, a module it imports only under TYPE_CHECKING) → why the chains do not follow it: a type named in
# signatures, never loaded (the test below checks that it stays type-only).
TYPE_ONLY = {
    ("archsim.links", "archsim.devices.device"):
        "one GPU pair's price reads a Device's link figures; links sits below network, collectives and the "
        "schedules that read them, which the GPU half may not reach",
}

# (package, a module its rule forbids) → why the package still reaches it by way of other modules.
REACHES = {
    ("archsim.output_inputs", "archsim.output_files"):
        "by way of workload/: builders.main, the script that regenerates layers/*.csv, writes with output_files",
}

# The loops left, each a set of modules that import one another (a strongly connected component of the graph),
# each closed by an import inside a function (or a TYPE_CHECKING block) → why. A new loop, or a module joining
# one of these, fails the test; a loop that is broken is dropped from the list.
CYCLES = {
    frozenset({"archsim.workload.hf_config", "archsim.workload.hf_deepseek"}):
        "hf_config dispatches a DeepSeek file to hf_deepseek, whose reader takes hf_config's field rules in a function",
    frozenset({"archsim.workload.model_files", "archsim.workload.shipped"}):
        "shipped.load_network reads a model file and model_files lists the shipped names, each in a function",
    frozenset({"archsim.workload.config_checks", "archsim.workload.layer_kinds", "archsim.workload.layer_parameters",
               "archsim.workload.mla", "archsim.workload.transformer", "archsim.workload.transformer_network"}):
        "TransformerConfig.parameter_count and .network delegate in functions to the modules that type the config",
    frozenset({"archsim.array.cfg_refusals", "archsim.array.config", "archsim.array.device_sections",
               "archsim.array.sram_sizes"}):
        "sram_sizes types an ArrayConfig and its .cfg warning reads the reader, in a function, whose module imports it "
        "(and the reader's refusals, which read a device TOML's sections)",
    frozenset({"archsim.devices.catalog", "archsim.devices.device", "archsim.devices.gpu_lookup",
               "archsim.devices.kernel_constants", "archsim.devices.nonmatmul"}):
        "the catalog is built of Device values; Device looks a catalog name up in a function",
    frozenset({"archsim.collectives", "archsim.links", "archsim.nccl_protocols", "archsim.network", "archsim.torus"}):
        "a collective's cost takes a Network, typed only (TYPE_CHECKING); the network and the links price with it; "
        "the torus's collectives type the link class that hands them over (TYPE_CHECKING), and NCCL's protocols the "
        "link class each runs as (TYPE_CHECKING)",
    frozenset({"archsim.partition.coster", "archsim.partition.split_search"}):
        "the split search types the coster that calls it (TYPE_CHECKING)",
    frozenset({"archsim.sweep.spec", "archsim.sweep.spec_arrays"}):
        "a sweep spec's array list types the spec it is read into (TYPE_CHECKING)",
    frozenset({"archsim.validation.gpu", "archsim.validation.gpu_algorithms"}):
        "the GPU validation's algorithms type the arrays gpu.py holds (TYPE_CHECKING)",
    frozenset({"archsim.sweep.design", "archsim.sweep.results", "archsim.sweep.units"}):
        "a sweep's unit runs a design point, whose rows and columns read the unit's options, each in a function",
    frozenset({"archsim.sweep.device_report", "archsim.sweep.report", "archsim.sweep.report_sections"}):
        "the sweep page draws its sections and a device sweep's page in a function; they read its readers",
}


def _graph(type_only: bool = True) -> nx.DiGraph:
    """The module graph without the stated exceptions' imports (and without TYPE_ONLY's unless ``type_only``)."""
    graph = nx.DiGraph()
    for name, imported in module_graph().items():
        graph.add_node(name)
        graph.add_edges_from((name, other) for other in imported
                             if not excepted(name, other) and (type_only or (name, other) not in TYPE_ONLY))
    return graph


def _path(parents: dict[str, str | None], end: str) -> str:
    chain = [end]
    while (parent := parents[chain[-1]]) is not None:
        chain.append(parent)
    return " → ".join(reversed(chain))


def entries(graph: nx.DiGraph, package: str, bad: tuple[str, ...]) -> dict[str, str]:
    """Each module of ``bad`` that ``package``'s modules reach first (from a module outside ``bad``) → one chain of
    imports that reaches it; the modules beyond it are not followed (one line per way in)."""
    parents: dict[str, str | None] = {name: None for name in graph if within(name, package)}
    todo, found = list(parents), {}
    while todo:
        name = todo.pop()
        for other in graph.successors(name):
            if other in parents:
                continue
            parents[other] = name
            if any(within(other, b) for b in bad):
                found[other] = _path(parents, other)
            else:
                todo.append(other)
    return found


@pytest.mark.long
def test_no_package_reaches_a_forbidden_one_through_others():
    graph, broken, used = _graph(type_only=False), [], set()
    for package, bad in FORBIDDEN.items():
        for name, chain in entries(graph, package, bad).items():
            if (package, name) in REACHES:
                used.add((package, name))
            else:
                broken.append(chain)
    assert not broken, "\n".join(sorted(broken))
    assert used == set(REACHES), f"listed but no longer reached: {sorted(set(REACHES) - used)}"


@pytest.mark.long
def test_no_import_cycles_but_the_listed_ones():
    found = {frozenset(c) for c in nx.strongly_connected_components(_graph()) if len(c) > 1}
    assert sorted(map(sorted, found - set(CYCLES))) == [], "new import loops"
    assert sorted(map(sorted, set(CYCLES) - found)) == [], "listed loops that are gone or changed"


def test_each_type_only_import_is_one():
    """A TYPE_ONLY import sits under ``TYPE_CHECKING`` and nowhere else: not at import time, not in a function."""
    for module, target in TYPE_ONLY:
        path = ROOT.parent / (module.replace(".", "/") + ".py")
        checked = {name for node in ast.walk(parsed(path)) if isinstance(node, ast.If)
                   and "TYPE_CHECKING" in ast.dump(node.test) for child in node.body for name in names_of(child)}
        assert target in checked, f"{module} no longer imports {target} under TYPE_CHECKING"
        assert target not in import_time_imports(path), f"{module} imports {target} at import time"
        functions = [node for node in ast.walk(parsed(path)) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
        assert not any(target in names_of(n) for f in functions for n in ast.walk(f)), f"{module} imports {target} in a function"
