"""Topology loaders on malformed and random input: only archsim's InputError, nothing written."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archsim.errors import InputError
from archsim.workload import load_topology, parse_topology

HEADER = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, Padding, Type, Inputs,"
GOOD_ROWS = ["c1, 16, 16, 3, 3, 3, 8, 1, 1, conv, input,", "c2, 16, 16, 3, 3, 8, 8, 2, 1, conv, c1,",
             "p1, 8, 8, 2, 2, 8, 8, 2, 0, pool, c2,"]
FIELDS = ["Layer name", "IFMAP Height", "IFMAP Width", "Filter Height", "Filter Width", "Channels", "Num Filter",
          "Strides", "Padding", "Type", "Inputs"]


def outcome(text, tmp_path=None):
    """Parse; return the network or the InputError. Anything else propagates (and fails the test)."""
    try:
        if tmp_path is None:
            return parse_topology(text, source="fuzz.csv")
        path = tmp_path / "fuzz.csv"
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
        return load_topology(path)
    except InputError as error:
        return error


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_random_text_gives_a_network_or_an_input_error(text):
    outcome(text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=400))
def test_random_bytes_from_a_file_give_an_input_error_and_write_nothing(tmp_path, data):
    before = sorted(p.name for p in tmp_path.iterdir())
    result = outcome(data, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(set(before) | {"fuzz.csv"})
    if isinstance(result, InputError):
        assert result.where.file is not None and result.where.file.endswith("fuzz.csv")


BAD_VALUES = ["x", "", "0", "-3", "1.5", "9" * 5000, "nan", "1e3"]


@settings(max_examples=200, deadline=None)
@given(row=st.integers(0, 2), column=st.integers(1, 8), value=st.sampled_from(BAD_VALUES))
def test_a_bad_number_names_line_and_field(row, column, value):
    rows = [r.split(",") for r in GOOD_ROWS]
    rows[row][column] = f" {value}"
    if column == 8 and value in ("0", ""):  # zero (or default) padding is legal
        return
    text = "\n".join([HEADER] + [",".join(r) for r in rows]) + "\n"
    result = outcome(text)
    assert isinstance(result, InputError)
    assert result.where.line == row + 2
    assert result.where.field in FIELDS


@pytest.mark.parametrize("text, line, field", [
    (HEADER + "\nc1, 16, 16, 3, 3, 3, 8,\n", 2, "Strides"),                         # short row
    (HEADER + "\nc1, 16, 16, 3, 3, 3, 8, 1, 1, conv, input, 7, 8, 9,\n", 2, None),    # long row
    (HEADER + "\nc1, 16, 16, 3, 3, 3, 8, 1, 1, tensor, input,\n", 2, "Type"),         # unknown type
    (HEADER + "\nc1, 16, 16, 3, 3, 3, 8, 1, 1, conv, ghost,\n", 2, "Inputs"),         # unknown producer
    (HEADER + "\nc1, 4, 4, 9, 9, 3, 8, 1, 1, conv, input,\n", 2, "Filter Height"),   # filter > padded input
    (HEADER + "\nc1, 16, 16, 3, 3, 3, 8, 1, 1, conv, input,\nc1, 16, 16, 3, 3, 8, 8, 1, 1, conv, c1,\n", 3,
     "Layer name"),                                                                   # duplicate name
    (HEADER.replace("Inputs,", "Inputs, Colour,") + "\nc1, 16, 16, 3, 3, 3, 8, 1, 1, conv, input, red,\n", 1,
     "Colour"),                                                                       # unknown column
    ("", None, None),                                                                 # empty file
    ("a\x00b", None, None),                                                           # NUL byte
])
def test_specific_malformations(text, line, field):
    result = outcome(text)
    assert isinstance(result, InputError)
    assert result.where.line == line and result.where.field == field


def test_scalesim_topology_loads_unchanged_with_scalesim_geometry(tmp_path):
    path = tmp_path / "alexnet_like.csv"
    path.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
                    "Conv1,230,230,7,7,3,64,2,\r\nConv2,10,10,3,3,64,32,2,\r\n")
    scalesim = load_topology(path, geometry="scalesim")
    archsim = load_topology(path)
    # SCALE-Sim: E = ceil((H - fh + s)/s): (230-7+2)/2 = 112.5 → 113; (10-3+2)/2 = 4.5 → 5.
    assert [layer.ofmap_h for layer in scalesim] == [113, 5]
    # archsim (no padding): floor((H - fh)/s) + 1 = 112 and 4.
    assert [layer.ofmap_h for layer in archsim] == [112, 4]
    assert scalesim.layer("Conv2").inputs == ("Conv1",)


def test_padding_is_rejected_in_scalesim_geometry():
    text = HEADER + "\nc1, 16, 16, 3, 3, 3, 8, 1, 1, conv, input,\n"
    with pytest.raises(InputError) as error:
        parse_topology(text, source="t.csv", geometry="scalesim")
    assert error.value.where.line == 2 and error.value.where.field == "Padding"


def test_bom_and_crlf_are_fine(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(("\ufeff" + HEADER + "\r\n" + "\r\n".join(GOOD_ROWS) + "\r\n").encode("utf-8"))
    assert len(load_topology(path)) == 3
