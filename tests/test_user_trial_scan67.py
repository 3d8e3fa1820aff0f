"""A user trial of the BPPSA, out-of-order backprop and LayerPipe routes (docs/papers/bppsa.md, docs/api.md):
each check failed before its fix."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from importlib import import_module

import pytest

from archsim.errors import InputError

LAZY_PACKAGES = ("archsim", "archsim.bppsa", "archsim.partition", "archsim.validation", "archsim.workload")


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_no_lazy_export_is_named_as_a_submodule(package):
    """Importing a submodule binds its name on the package, over a lazy export of that name: with
    ``archsim/bppsa/backprop.py`` beside the export ``backprop``, ``from archsim.bppsa import scan_input, backprop``
    gave the module, not the function (``TypeError: 'module' object is not callable``)."""
    module = import_module(package)
    submodules = {info.name for info in pkgutil.iter_modules(module.__path__)}
    assert not submodules & set(module._EXPORTS), package


def test_bppsa_backprop_is_the_function_after_the_jacobians_load():
    """The documented order of a user's script: the scan's inputs first, then the reference BP (a fresh
    interpreter: the test session may have bound either already)."""
    code = ("from archsim.bppsa import scan_input, backprop\n"
            "import types\n"
            "assert callable(backprop) and not isinstance(backprop, types.ModuleType), backprop\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr[-600:]


@pytest.mark.parametrize("sparsity", [1.5, -0.1, 1.0])
def test_api_sparsity_out_of_range_is_the_commands_line(sparsity):
    """``archsim bppsa pruned-vgg11 --sparsity 1.5`` says ``must be in [0, 1), got 1.5``; the function said
    ``expected a sparsity in [0, 1) >= 0 and <= 1`` (two ranges, one of them wrong: 1 is refused)."""
    import archsim

    with pytest.raises(InputError) as caught:
        archsim.bppsa_pruned_vgg11(sparsity=sparsity, width_divisor=64)
    text = str(caught.value)
    assert text == f"field 'sparsity': must be in [0, 1), got {float(sparsity)!r}", text
