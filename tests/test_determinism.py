"""The default test run draws nothing afresh: the CI check that keeps the suite deterministic.

Three ways a test can differ from one run to the next, each checked here and each check shown to fail
on a planted offender:

* hypothesis drawing new examples: the default profile must be derandomized with no example database,
  and no test may undo that in its own ``@settings`` (``derandomize=False``, a ``database=``);
  ``conftest.py`` also refuses a default-profile session whose collected tests would draw randomly;
* an unseeded random-number generator in a test module or helper: Python's global ``random``,
  ``random.Random()``, numpy's legacy global functions, ``default_rng()`` / ``RandomState()`` with no
  seed, and torch's random tensors in a function that never calls ``torch.manual_seed``;
* the slow fuzz tier (``tests/test_fuzz_acceptance.py``) seeds through the same profile, so its CI run
  replays the same cases.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest
from conftest import DEFAULT_PROFILE, PROFILE_VARIABLE, draws_randomly, random_drawing_tests
from hypothesis import given, settings
from hypothesis import strategies as st

TESTS = Path(__file__).resolve().parent
EXPLORING = os.environ.get(PROFILE_VARIABLE, DEFAULT_PROFILE) != DEFAULT_PROFILE or draws_randomly(settings.default)

# Module-level functions of Python's ``random`` that use its global, unseeded generator.
PY_GLOBAL = {"random", "randint", "randrange", "choice", "choices", "shuffle", "sample", "uniform", "gauss",
             "normalvariate", "lognormvariate", "expovariate", "betavariate", "gammavariate", "triangular",
             "vonmisesvariate", "paretovariate", "weibullvariate", "getrandbits", "randbytes", "binomialvariate"}
# numpy.random names that are seedable objects (need a seed argument); everything else there is global state.
NP_SEEDED = {"default_rng", "RandomState", "Generator", "PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64",
             "SeedSequence", "BitGenerator"}
TORCH_RANDOM = {"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal",
                "bernoulli", "multinomial", "poisson"}


def _dotted(node) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _unseeded(call: ast.Call) -> bool:
    """No seed given: no positional argument and no ``seed=``, or the seed is the literal ``None``."""
    seed = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg in ("seed", "x")), None)
    return seed is None or (isinstance(seed, ast.Constant) and seed.value is None)


def unseeded_randomness(source: str, filename: str = "<test>") -> list[str]:
    """Each place in ``source`` that draws from an unseeded generator or undoes the derandomized profile."""
    tree = ast.parse(source, filename)
    found = []

    def report(node, what):
        found.append(f"{filename}:{node.lineno}: {what}")

    profiles = {id(k) for n in ast.walk(tree) if isinstance(n, ast.Call) and _dotted(n.func).endswith("register_profile")
                for k in n.keywords}  # the explore profile draws afresh by design; loading it is a choice

    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and id(node) in profiles:
            continue
        if isinstance(node, ast.ImportFrom) and node.module in ("random", "numpy.random"):
            for alias in node.names:
                if alias.name not in NP_SEEDED | {"Random"}:
                    report(node, f"from {node.module} import {alias.name} (a global generator)")
        if isinstance(node, ast.keyword) and node.arg == "derandomize" and not (
                isinstance(node.value, ast.Constant) and node.value.value is True):
            report(node.value, "derandomize is not True")
        if isinstance(node, ast.keyword) and node.arg == "database" and not (
                isinstance(node.value, ast.Constant) and node.value.value is None):
            report(node.value, "a hypothesis example database")
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        head, _, last = name.rpartition(".")
        if head == "random" and last in PY_GLOBAL:
            report(node, f"{name}() uses the global generator")
        elif name in ("random.Random", "Random") and _unseeded(node):
            report(node, f"{name}() without a seed")
        elif name == "random.SystemRandom":
            report(node, "random.SystemRandom() cannot be seeded")
        elif head in ("np.random", "numpy.random"):
            if last not in NP_SEEDED:
                report(node, f"{name}() uses numpy's global generator")
            elif last != "Generator" and _unseeded(node):
                report(node, f"{name}() without a seed")
    for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        calls = [n for n in ast.walk(function) if isinstance(n, ast.Call)]
        seeded = any(_dotted(c.func) == "torch.manual_seed" for c in calls)
        for call in calls:
            name = _dotted(call.func)
            if name.startswith("torch.") and name.rpartition(".")[2] in TORCH_RANDOM and not seeded \
                    and not any(k.arg == "generator" for k in call.keywords):
                report(call, f"{name}() in {function.name}() which never calls torch.manual_seed")
    return found


def _python_sources():
    return sorted(TESTS.glob("*.py"))


@pytest.mark.skipif(EXPLORING, reason="the explore profile draws afresh by design")
def test_the_default_profile_is_derandomized_with_no_database():
    assert settings.default.derandomize is True
    assert settings.default.database is None
    assert not draws_randomly(settings.default)


@pytest.mark.long
def test_no_test_module_draws_from_an_unseeded_generator():
    found = [line for path in _python_sources()
             for line in unseeded_randomness(path.read_text(encoding="utf-8"), path.name)]
    assert found == []


@pytest.mark.parametrize("source, count", [
    ("import random\nx = random.randint(0, 9)\n", 1),
    ("import random\nr = random.Random()\nr2 = random.Random(None)\nok = random.Random(3)\n", 2),
    ("from random import shuffle\n", 1),
    ("import numpy as np\nnp.random.seed(1)\nx = np.random.rand(3)\n", 2),
    ("import numpy as np\nrng = np.random.default_rng()\nok = np.random.default_rng(7)\n", 1),
    ("import numpy\nrs = numpy.random.RandomState()\n", 1),
    ("import torch\ndef f():\n    return torch.randn(3)\n", 1),
    ("import torch\ndef f():\n    torch.manual_seed(0)\n    return torch.randn(3)\n", 0),
    ("from hypothesis import settings\nS = settings(derandomize=False)\n", 1),
    ("from hypothesis import settings\nS = settings(database=object())\nT = settings(database=None)\n", 1),
    ("import random\nrng = random.Random(seed)\nx = rng.random()\n", 0),
    ("from hypothesis import settings\nsettings.register_profile('explore', derandomize=False)\n", 0),
])
def test_the_audit_finds_each_kind_of_unseeded_draw(source, count):
    assert len(unseeded_randomness(source)) == count


def test_a_test_that_undoes_the_profile_is_caught_at_collection():
    @settings(settings.get_profile("explore"))  # as a test's own @settings(derandomize=False) would
    @given(st.integers())
    def explores(x):
        pass

    @settings(max_examples=5)
    @given(st.integers())
    def replays(x):
        pass

    class Item:
        def __init__(self, function, nodeid):
            self.function, self.nodeid = function, nodeid

    assert random_drawing_tests([Item(explores, "explores"), Item(replays, "replays")]) == (
        ["explores", "replays"] if EXPLORING else ["explores"])


@pytest.mark.skipif(EXPLORING, reason="the explore profile draws afresh by design")
def test_the_same_examples_are_drawn_twice():
    """Derandomized means replayed: two runs of one property test see the same examples, in order."""
    def run():
        seen = []

        @settings(max_examples=20)
        @given(st.integers(), st.integers())
        def record(a, b):
            seen.append((a, b))

        record()
        return seen

    runs = [run(), run()]
    assert runs[0] == runs[1] and len(set(runs[0])) > 5
