"""Every archsim subpackage is listed in pyproject.toml, so a wheel install is complete."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_pyproject_lists_every_subpackage():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "archsim").rglob("__init__.py")}
    assert found <= listed, sorted(found - listed)
