"""Each set of layer kinds a layer's kind is tested against is written once, in ``workload/layer_types.py`` beside the
kinds themselves (``GEMM_KINDS``, ``FILTER_KINDS``, ``CONV_FC_KINDS``, ``CONV_KINDS``): no module writes one of them
out again as a literal, where a kind added to the set would be missed. ``Layer.kind`` and ``Layer.geometry`` are
typed by their Literals, so mypy checks every kind and geometry written in the library."""

import ast
import typing

import pytest
from import_graph import ROOT, parsed

from archsim.workload import layer as layer_module
from archsim.workload.layer import GEOMETRIES, Geometry, Layer
from archsim.workload.layer_types import CONV_FC_KINDS, CONV_KINDS, FILTER_KINDS, GEMM_KINDS, LAYER_KINDS, LayerKind

SETS = {"GEMM_KINDS": GEMM_KINDS, "FILTER_KINDS": FILTER_KINDS, "CONV_FC_KINDS": CONV_FC_KINDS,
        "CONV_KINDS": CONV_KINDS}
HOME = ROOT / "workload" / "layer_types.py"


def _definitions() -> set[int]:
    """The literals that define the sets: ``NAME: ... = frozenset({...})`` in the home module."""
    found = set()
    for node in parsed(HOME).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id in SETS:
            found |= {id(n) for n in ast.walk(node.value)}
    return found


@pytest.mark.long
def test_no_module_writes_a_kind_set_out_again():
    home, copies = _definitions(), []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(parsed(path)):
            if not isinstance(node, (ast.Tuple, ast.List, ast.Set)) or id(node) in home or len(node.elts) < 2:
                continue
            if not all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
                continue
            words = frozenset(e.value for e in node.elts)
            copies += [f"{path.relative_to(ROOT)}:{node.lineno} writes {name}" for name, kinds in SETS.items()
                       if words == kinds]
    assert not copies, "\n".join(copies)


def test_the_sets_are_what_their_names_say():
    """By the layer types docs/formats.md lists: matmul multiplies two activations (no filter); conv and fc slide
    a filter forward; deconv is the transposed convolution."""
    assert LAYER_KINDS == ("conv", "fc", "matmul", "pool", "elementwise", "batchnorm", "layernorm", "deconv")  # messages' order
    assert FILTER_KINDS == GEMM_KINDS - {"matmul"} == CONV_FC_KINDS | CONV_KINDS
    assert CONV_FC_KINDS & CONV_KINDS == {"conv"} and GEMM_KINDS <= set(LAYER_KINDS)
    assert not GEMM_KINDS & {"pool", "elementwise", "batchnorm"}  # the vector unit's
    assert GEOMETRIES == ("archsim", "scalesim")


def test_layer_kind_and_geometry_are_typed_by_their_literals():
    hints = typing.get_type_hints(Layer, vars(layer_module))
    assert hints["kind"] == LayerKind and hints["geometry"] == Geometry
