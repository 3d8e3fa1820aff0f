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


@pytest.mark.parametrize(("old", "new", "field"), [
    ("access_bits = 64", "access_bits = 0", "sram.access_bits"),
    ("area_efficiency = 0.7", "area_efficiency = 0", "sram.area_efficiency"),
    ("area_efficiency = 0.7", "area_efficiency = 7", "sram.area_efficiency"),
])
def test_a_figure_is_never_replaced_by_another(tmp_path, old, new, field) -> None:
    """Until 2026-12-05 access_bits = 0 was read as 64 and area_efficiency = 0 as 1, without a word, and a share
    above 1 (7 for 0.7) priced an SRAM smaller than its own cells."""
    path = _table(tmp_path, old, new)
    with pytest.raises(InputError, match=rf"line {_line(path, new)}, field '{field}'"):
        load_table(path)


def test_the_sram_area_divides_the_cells_by_the_stated_share(tmp_path) -> None:
    """Hand count: 64 KiB of 0.346 µm² cells at a share of 0.5 is 64 · 1024 · 8 · 0.346 / 0.5 µm²."""
    from archsim.array.config import ArrayConfig
    from archsim.energy.area import array_area

    table = load_table(_table(tmp_path, "area_efficiency = 0.7", "area_efficiency = 0.5"))
    array = ArrayConfig(rows=32, cols=32, dataflow="ws", ifmap_sram_kb=64, filter_sram_kb=64, ofmap_sram_kb=64)
    assert array_area(array, table).ifmap_sram_mm2 == pytest.approx(64 * 1024 * 8 * 0.346 / 0.5 / 1e6, rel=1e-12)


@pytest.mark.parametrize(("old", "new", "field"), [
    ('"2" = { pj = 2.0,', '"2" = { pj = "2.0",', "mac.2"),
    ('"4" = 0.9', '"4" = "0.9"', "vector.4"),
    ("per_pe = 3", 'per_pe = "3"', "register.per_pe"),
    ("write_factor = 1.0", 'write_factor = "1.0"', "sram.write_factor"),
    ("lane_pj = 4.6", 'lane_pj = "4.6"', "fused.lane_pj"),
])
def test_a_quoted_figure_is_refused_as_a_device_files_energy_section_refuses_it(tmp_path, old, new, field) -> None:
    """Until 2026-12-05 a table took "2.0" as 2.0 where a device file's [energy] refuses it (docs/formats.md)."""
    path = _table(tmp_path, old, new)
    with pytest.raises(InputError, match=rf"line {_line(path, new)}, field '{field}': expected an? \w+ without quotes"):
        load_table(path)


@pytest.mark.parametrize("new", ['node_nm = "7nm"', "node_nm = -7", "node_nm = 0", "node_nm = true"])
def test_a_node_that_is_no_positive_number_is_refused(tmp_path, new) -> None:
    """Until 2026-12-05 node_nm took any value; it is a label (no figure scales with it), so a slip is refused."""
    path = _table(tmp_path, "node_nm = 45", new)
    with pytest.raises(InputError, match=rf"line {_line(path, new)}, field 'node_nm': expected the process node in nm"):
        load_table(path)


def test_node_nm_scales_no_figure(tmp_path) -> None:
    """The documented rule: a table stating node_nm = 7 beside the 45 nm figures prices every figure as written
    (hand reference: the shipped file's fp16 MAC, 2.0 pJ, and DRAM, 20.3125 pJ a bit)."""
    table = load_table(_table(tmp_path, "node_nm = 45", "node_nm = 7"))
    assert (table.mac_pj[2], table.dram_pj_per_bit) == (2.0, 20.3125)
