"""The tests reach archsim through its public names, as archsim's modules reach each other
(tests/test_layering_names.py's private-import rule, read with the same helper, tests/import_graph.py)."""

from pathlib import Path

import pytest
from import_graph import ROOT, private_imports

# The tests reach archsim through its public names too: a test that needs a private name either checks an
# implementation detail (it goes through the public function instead) or has found a concept (made public
# where it lives). Any left: (test file, name) → why it stays private for now; none is.
TESTS = ROOT.parent / "tests"
TESTS_PRIVATE: dict[tuple[str, str], str] = {}


def private_names_in(folder: Path) -> set[tuple[str, str]]:
    """(file relative to the repository, ``M._n``) for each private archsim name a file under ``folder``
    imports or reads from an imported archsim module."""
    return {(path.relative_to(folder.parent).as_posix(), imported) for path in sorted(folder.rglob("*.py"))
            for imported in private_imports(path)}


def test_private_names_in_a_folder_are_found(tmp_path):
    """Each file's private archsim names are reported against the file's path from the folder's parent; a
    public name, and a private name of a sibling test helper, are not."""
    (tmp_path / "tests" / "sub").mkdir(parents=True)
    (tmp_path / "tests" / "a.py").write_text("from archsim.sim.engine import ranks, _x\n", encoding="utf-8")
    (tmp_path / "tests" / "sub" / "b.py").write_text("from archsim import cli\nfrom helper import _y\ncli._z()\n",
                                                    encoding="utf-8")
    assert private_names_in(tmp_path / "tests") == {("tests/a.py", "archsim.sim.engine._x"),
                                                     ("tests/sub/b.py", "archsim.cli._z")}


@pytest.mark.long
def test_no_test_imports_a_private_name():
    found = private_names_in(TESTS)
    broken = [f"{file} imports {name}" for file, name in sorted(found - TESTS_PRIVATE.keys())]
    assert not broken, f"{len(broken)} imports of private names by tests:\n" + "\n".join(broken)
    stale = sorted(f"{file}: {name}" for file, name in TESTS_PRIVATE.keys() - found)
    assert not stale, "listed in TESTS_PRIVATE but no longer imported:\n" + "\n".join(stale)
