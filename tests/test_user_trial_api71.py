"""A notebook author's trial of the library (2026-12-05): what a user importing archsim met, each test failing before
its fix."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# --- the package tells a type checker it is typed (PEP 561) ----------------------------------------------------------
# Failed before: no archsim/py.typed, so mypy on a notebook's script skipped an installed archsim ("module is
# installed, but missing library stubs or py.typed marker") and every archsim.train(...) result was Any, where
# docs/api.md says a type checker sees a (TrainResult, Throughput) pair.


def test_the_py_typed_marker_is_in_the_package_and_in_its_data():
    assert (ROOT / "archsim" / "py.typed").is_file()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    assert "py.typed" in data.get("archsim", []), "a wheel ships only the package data pyproject.toml lists"
