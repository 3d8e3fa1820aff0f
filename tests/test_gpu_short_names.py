"""docs/formats.md's table of GPU short names against the names a cluster file's ``gpu`` reads: every short name
that resolves to one board is listed with the board and the part it means, and each row reads as it says (issue
#40: ``gpu = "a100"`` meant the 80 GB SXM4 part with no word where a user would look)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from archsim.devices.catalog import GPUS, KNOWN_GPUS
from archsim.devices.gpu_lookup import SHORT_NAMES, gpu
from archsim.errors import InputError
from archsim.units import GIB

ROOT = Path(__file__).resolve().parents[1]


def _documented() -> dict[str, tuple[str, str, list[str]]]:
    """The ``### GPU names`` table: short name → (catalog name, the part, the other parts it names)."""
    text = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    section = text.split("\n### GPU names\n", 1)[1].split("\n#", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = (cells[1].strip("`"), cells[2], re.findall(r"`([a-z0-9-]+)`", cells[3]))
    return rows


def test_the_table_lists_every_short_name_and_only_those():
    """Failed before: the docs named five aliases inline; t4, l4, p4, v100-pcie, h100-pcie and p100-pcie read too."""
    assert {name: board for name, (board, _, _) in _documented().items()} == SHORT_NAMES


@pytest.mark.parametrize("name", sorted(_documented()))
def test_each_row_reads_as_it_says(name):
    board, part, others = _documented()[name]
    assert gpu(name) is GPUS[board] and gpu(name.upper()) is GPUS[board]
    assert GPUS[board].name == part  # the part's full name, as outputs print it
    for other in others:  # another board of the same chip family, itself a catalog name
        assert other in GPUS and other != board and other.split("-")[0] == board.split("-")[0]


def test_a100_is_the_80_gb_part_as_the_docs_say():
    """By hand: the A100's boards hold 40 and 80 GB; the short name takes the 80 GB SXM4 one."""
    assert gpu("a100").memory_bytes == 80 * GIB and "SXM4" in gpu("a100").name
    assert gpu("a100-40gb").memory_bytes == 40 * GIB


def test_every_other_chip_name_is_a_catalog_name_or_refused():
    """The table's closure: a chip's name is its board's key, a listed short name, or no GPU gpu() reads (the chips
    with no board: the A10, Titan Xp, M40, MI25 …)."""
    for chip in KNOWN_GPUS:
        if chip in GPUS or chip in SHORT_NAMES:
            continue
        with pytest.raises(InputError, match="unknown GPU"):
            gpu(chip)
