"""The partitioner and the schedule policies reach the lowering and the array model only through the
coster and the profile (docs/architecture.md, "The coster"): which of their modules import either, read
from the source (imports under ``if TYPE_CHECKING:`` are annotations and do not count); and what the
moved byte counts and per-op rates give, against hand counts.

References: the architecture page's rule (the allowed modules below, each with its reason), hand
counts of a conv's weight slices and an fc layer's tensors, the cost model's documented utilization
(MACs / (cycles · PEs))."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from archsim.array.config import ArrayConfig
from archsim.partition.coster import op_weight_bytes
from archsim.partition.profile import build_profile, op_rates, profile_from_costs
from archsim.workload.layer import Layer, Network

ROOT = Path(__file__).resolve().parents[1]

# module → the packages it may import at run time, and why
ALLOWED = {
    "archsim/partition/coster.py": {"array", "lowering"},  # the one narrow door
    "archsim/partition/profile.py": {"array", "lowering"},  # a network lowered and costed into a profile
    "archsim/partition/split_search.py": {"array", "lowering"},  # the coster's split searches
    "archsim/policies/schedule_array.py": {"array"},  # the schedule command's array flags
    "archsim/policies/schedule_run.py": {"array"},  # a device file's array count, for a note
}


def _runtime_imports(path: Path) -> set[str]:
    """The packages among archsim.lowering and archsim.array that ``path`` imports outside TYPE_CHECKING blocks."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
               and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
               for statement in block.body for node in ast.walk(statement)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        for name in names:
            parts = name.split(".")
            if parts[0] == "archsim" and len(parts) > 1 and parts[1] in ("lowering", "array"):
                found.add(parts[1])
    return found


def test_partition_and_policies_reach_the_lowering_and_the_array_only_where_allowed():
    found = {}
    for package in ("partition", "policies"):
        for path in sorted((ROOT / "archsim" / package).rglob("*.py")):
            imports = _runtime_imports(path)
            if imports:
                found[path.relative_to(ROOT).as_posix()] = imports
    assert found == ALLOWED


def test_a_type_checking_import_does_not_count(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from archsim.lowering import Mode\n"
                      "def f():\n    from archsim.array.costing import op_costs\n", encoding="utf-8")
    assert _runtime_imports(source) == {"array"}


def test_op_weight_bytes_by_hand():
    """conv2 (5 × 5, 32 → 64 channels, 1-byte elements): a borrowed whole δ receives every weight; a
    channels piece R·S·K per unit of δ's 32 output channels (D2 its part, D1 the rest)."""
    first = Layer("conv1", "conv", 224, 224, 5, 5, 3, 32, stride=2, padding=2)
    conv2 = Layer("conv2", "conv", 112, 112, 5, 5, 32, 64, stride=2, padding=2, inputs=("conv1",))
    profile = build_profile(Network("two", (first, conv2)), ArrayConfig(32, 32), batch=8, mode="paper")
    assert op_weight_bytes(profile, 1, "D") == 5 * 5 * 32 * 64
    assert op_weight_bytes(profile, 1, "D2", "channels", 3) == 5 * 5 * 64 * 3
    assert op_weight_bytes(profile, 1, "D1", "channels", 3) == 5 * 5 * 64 * (32 - 3)
    assert op_weight_bytes(profile, 1, "D2", "reduction", 5) == 5 * 5 * 32 * 5
    assert op_weight_bytes(profile, 1, "D1", "rows", 7) == 5 * 5 * 32 * 64  # every row needs all the weights
    assert op_weight_bytes(profile, 1, "D2", None) == 0  # no split: nothing borrowed as a piece
    assert op_weight_bytes(profile_from_costs(["a"], [1.0], [1.0], [1.0]), 0, "D") == 0  # no shapes


def test_op_rates_by_hand():
    """Two fc layers (6 → 10 → 4) at batch 3 on an 8 × 8 array: each op's utilization is its MACs over
    cycles × 64 PEs; the first layer computes no δ; inputs and outputs are batch × features bytes."""
    l0 = Layer(name="l0", kind="fc", ifmap_h=1, ifmap_w=1, filter_h=1, filter_w=1, channels=6, filters=10,
               inputs=("input",))
    l1 = Layer(name="l1", kind="fc", ifmap_h=1, ifmap_w=1, filter_h=1, filter_w=1, channels=10, filters=4,
               inputs=("l0",))
    rates = op_rates(Network("fc2", (l0, l1)), ArrayConfig(8, 8), batch=3)
    macs = {"F": (3 * 6 * 10, 3 * 10 * 4), "G": (3 * 6 * 10, 3 * 10 * 4), "D": (0, 3 * 10 * 4)}
    for kind, per_layer in macs.items():
        for layer, count in enumerate(per_layer):
            cycles, utilization = rates.cycles[kind][layer], rates.utilization[kind][layer]
            assert (cycles > 0) == (count > 0)
            assert utilization * cycles * 64 == pytest.approx(count)
    assert rates.input_bytes == (3 * 6, 3 * 10) and rates.output_bytes == (3 * 10, 3 * 4)
