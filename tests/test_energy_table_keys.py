"""An energy table's figures are read as written or refused in one line naming the key and its line: none is
silently replaced, and a bad figure's error is the figure's own (configs/energy/README.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from archsim.energy.table import load_table
from archsim.errors import InputError

SHIPPED = Path(__file__).resolve().parents[1] / "configs" / "energy" / "horowitz45.toml"


def _table(tmp_path: Path, old: str, new: str) -> Path:
    """A copy of the shipped table with one line edited."""
    text = SHIPPED.read_text()
    assert old in text
    path = tmp_path / "edited.toml"
    path.write_text(text.replace(old, new, 1))
    return path


def _line(path: Path, start: str) -> int:
    """The 1-based line of ``path`` that starts with ``start`` (the reference the error must name)."""
    return next(i for i, text in enumerate(path.read_text().splitlines(), 1) if text.startswith(start))


@pytest.mark.parametrize(("old", "new", "field"), [
    ('"2" = { pj = 2.0,', '"2" = { pj = -2.0,', "mac.2"),
    ('"4" = 0.9', '"4" = 1e99', "vector.4"),
])
def test_a_bad_width_figure_is_refused_at_its_line_as_a_figure(tmp_path, old, new, field) -> None:
    """Until 2026-12-05 a bad [mac] or [vector] figure was told as a bad key ('as a key'), the file named twice
    and no line."""
    path = _table(tmp_path, old, new)
    with pytest.raises(InputError) as caught:
        load_table(path)
    text = str(caught.value)
    assert f"line {_line(path, new)}, field '{field}'" in text
    assert "as a key" not in text and text.count(str(path)) == 1
    assert re.search(r"non-negative number <= 1e\+15", text)
