"""conftest's incremental scan of ``sys.modules`` (:func:`conftest.archsim_modules`) finds the archsim modules
a full scan does: the modules whose ``simulate`` every test wraps in the timeline validator."""

import sys
import types

from conftest import archsim_modules


def full_scan() -> set[int]:
    """The ids of the archsim modules, by a look at every entry of ``sys.modules``."""
    return {id(module) for name, module in list(sys.modules.items())
            if name.startswith("archsim") and module is not None}


def by_id(modules) -> set[int]:
    return {id(module) for module in modules}


def test_the_scan_finds_what_a_full_scan_finds(monkeypatch):
    assert by_id(archsim_modules()) == full_scan()
    added = types.ModuleType("archsim._scan_probe")
    monkeypatch.setitem(sys.modules, "archsim._scan_probe", added)
    assert by_id(archsim_modules()) == full_scan()
    assert added in archsim_modules()


def test_a_module_re_imported_or_dropped_since_is_taken_anew_or_forgotten(monkeypatch):
    first = types.ModuleType("archsim._scan_probe2")
    monkeypatch.setitem(sys.modules, "archsim._scan_probe2", first)
    assert first in archsim_modules()
    second = types.ModuleType("archsim._scan_probe2")
    monkeypatch.setitem(sys.modules, "archsim._scan_probe2", second)
    found = archsim_modules()
    assert second in found and first not in found
    monkeypatch.delitem(sys.modules, "archsim._scan_probe2")
    found = archsim_modules()
    assert second not in found and by_id(found) == full_scan()
