"""A count cell is read by one rule (archsim.value_parsers.stated_integer) in a runs file and in NeuSight's kernel
tables: ASCII digits or a real written as exactly a whole number; ``1_6`` and ``١٦``, which Python's float() reads as
16, were taken by NeuSight's reader and refused by the runs file's."""

from __future__ import annotations

import pytest

from archsim.errors import InputError
from archsim.training.runs import read_runs
from archsim.validation.neusight import parse_neusight_csv
from archsim.value_parsers import stated_integer

NEUSIGHT = "OPName,Latency,Device,B,M,N,K\nLinear,0.5,Tesla T4,1,{m},128,256\n"


@pytest.mark.parametrize(("text", "value"), [
    ("8", 8), (" +16 ", 16), ("16.0", 16), ("1e3", 1000), ("-3", -3), ("0", 0),
    ("8.5", None), ("1_6", None), ("１６", None), ("١٦", None), ("x", None), ("", None), ("1e300", None), ("inf", None),
])
def test_stated_integer(text, value):
    assert stated_integer(text) == value


@pytest.mark.parametrize("cell", ["1_6", "١٦", "１６"])
def test_a_neusight_shape_cell_is_ascii_digits(cell):
    with pytest.raises(InputError, match=r"field 'M': must be a positive integer up to 2147483647"):
        parse_neusight_csv(NEUSIGHT.format(m=cell))


def _runs_global_batch(tmp_path, cell: str) -> int | None:
    path = tmp_path / "runs.csv"
    path.write_text(f"tp,pp,dp,micro_batch,global_batch,measured_seconds\n1,1,1,1,{cell},1\n", encoding="utf-8")
    try:
        return read_runs(str(path))[0].par.global_batch
    except InputError:
        return None


def _neusight_m(cell: str) -> int | None:
    try:
        return int(parse_neusight_csv(NEUSIGHT.format(m=cell)).frame["M"].iloc[0])
    except InputError:
        return None


@pytest.mark.parametrize("cell", ["64", "64.0", "+64", "6.4e1", "64.5", "1_6", "١٦", "0", "-64", "2147483648"])
def test_the_runs_file_and_neusight_read_a_count_cell_alike(tmp_path, cell):
    assert _runs_global_batch(tmp_path, cell) == _neusight_m(cell)
