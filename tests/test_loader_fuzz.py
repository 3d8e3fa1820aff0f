"""Topology loaders on malformed and random input: a Network or archsim's InputError, nothing written.

``parse_topology`` (text) and ``load_topology`` (file) must, for any input, either return a
:class:`Network` or raise :class:`InputError` — any other exception is a bug — and an error must
say where: the file always (for files), and the line and field when a row is at fault. The two
geometries (padding, SCALE-Sim's files and output sizes) are tested in test_loader_geometry.py.
"""

import os
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from archsim.errors import InputError
from archsim.workload import Network, load_topology, parse_topology
from archsim.workload.layer_types import KIND_SPELLINGS

FIELDS = ["Layer name", "IFMAP Height", "IFMAP Width", "Filter Height", "Filter Width", "Channels", "Num Filter",
          "Strides", "Padding", "Type", "Inputs", "Bias", "Repeat"]
HEADER = ", ".join(FIELDS) + ","
GOOD = [["c1", "16", "16", "3", "3", "3", "8", "1", "1", "conv", "input", "1", "1"],
        ["c2", "16", "16", "3", "3", "8", "8", "2", "1", "conv", "c1", "0", "1"],
        ["p1", "8", "8", "2", "2", "8", "8", "2", "0", "pool", "c2", "0", "1"],
        ["f1", "4", "4", "4", "4", "8", "10", "1", "0", "fc", "p1", "1", "2"]]
# Spellings the format accepts for Type, taken from the loader's own table (kinds and aliases, deconv's
# included) so that a spelling added there is never drawn as "unknown"; normalised as the loader does.
KNOWN_TYPES = KIND_SPELLINGS
FAST = settings(max_examples=200, deadline=None)
FILES = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
# Text without the characters that change how a CSV row splits (field/row separators, quotes, NUL).
PLAIN = st.text(st.characters(blacklist_characters=',"\n\r\x00', blacklist_categories=("Cs",)), max_size=20)


def csv_text(rows, header=HEADER, newline="\n"):
    return newline.join([header] + [", ".join(row) + "," for row in rows]) + newline


def outcome(text, geometry="archsim"):
    """Parse; return the network or the InputError. Anything else propagates (and fails the test)."""
    try:
        result = parse_topology(text, source="fuzz.csv", geometry=geometry)
    except InputError as error:
        assert error.where.file == "fuzz.csv" and "fuzz.csv" in str(error)
        return error
    assert isinstance(result, Network) and len(result) > 0
    return result


def snapshot(folder: Path):
    """Everything under ``folder`` (and the working directory's listing): names, sizes, mtimes."""
    files = sorted((str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*"))
    return files, sorted(os.listdir("."))


def load_file(tmp_path, data: bytes, geometry="archsim"):
    """Write ``data`` to a file, load it; check that loading wrote nothing and errors name the file."""
    path = tmp_path / "fuzz.csv"
    path.write_bytes(data)
    before = snapshot(tmp_path)
    try:
        result = load_topology(path, geometry=geometry)
    except InputError as error:
        assert error.where.file == str(path) and str(path) in str(error)
        result = error
    assert snapshot(tmp_path) == before
    return result


def test_the_good_rows_load():
    net = parse_topology(csv_text(GOOD))
    assert [layer.name for layer in net] == ["c1", "c2", "p1", "f1"]
    assert [layer.ofmap_h for layer in net] == [16, 8, 4, 1]


# -- random text and bytes -------------------------------------------------------------------------
@FAST
@given(st.text(max_size=400))
def test_random_text_gives_a_network_or_an_input_error(text):
    outcome(text)


CSVISH = st.lists(st.sampled_from(list("0123456789,;| \n\r\"'-+_.xe") + ["conv", "fc", "pool", "input", "c1",
                                                                       "\ufeff", "\x00", "\t", "é"]),
                  max_size=120).map("".join)


@FAST
@given(body=CSVISH, geometry=st.sampled_from(["archsim", "scalesim"]))
def test_random_csv_like_text_after_a_valid_header_gives_a_network_or_an_input_error(body, geometry):
    result = outcome(HEADER + "\n" + body, geometry)
    if isinstance(result, InputError) and "\x00" not in body:
        assert result.where.line is not None  # the header is fine: a row or the row count is at fault


@FILES
@given(data=st.binary(max_size=400))
def test_random_bytes_from_a_file_give_an_input_error_and_write_nothing(tmp_path, data):
    load_file(tmp_path, data)


@FILES
@given(data=st.binary(max_size=200), row=st.integers(0, len(GOOD) - 1))
def test_a_valid_file_with_random_bytes_appended_to_a_row_gives_a_network_or_an_error(tmp_path, data, row):
    lines = csv_text(GOOD).encode().split(b"\n")
    lines[row + 1] += data
    result = load_file(tmp_path, b"\n".join(lines))
    if isinstance(result, InputError) and result.where.line is not None:
        assert result.where.line >= 1


# -- one field of a valid row mutated --------------------------------------------------------------
BAD_NUMBERS = ["x", "", "0", "-3", "1.5", "9" * 5000, "nan", "1e-3", "0x10", "--1", "3 4", "∞"]


@FAST
@given(row=st.integers(0, len(GOOD) - 1), column=st.sampled_from([1, 2, 3, 4, 5, 6, 7, 8, 11, 12]),
       value=st.sampled_from(BAD_NUMBERS))
def test_a_bad_number_names_its_line_and_field(row, column, value):
    rows = [list(r) for r in GOOD]
    rows[row][column] = value
    legal_default = {8: ("0", ""), 11: ("0", ""), 12: ("",)}  # Padding 0, Bias 0, defaults when empty
    assume(value not in legal_default.get(column, ()))
    result = outcome(csv_text(rows))
    assert isinstance(result, InputError), (row, column, value)
    assert (result.where.line, result.where.field) == (row + 2, FIELDS[column])


@FAST
@given(row=st.integers(0, len(GOOD) - 1), column=st.integers(0, len(FIELDS) - 1), value=PLAIN)
def test_any_text_in_any_field_gives_a_network_or_a_located_error(row, column, value):
    rows = [list(r) for r in GOOD]
    rows[row][column] = value
    result = outcome(csv_text(rows))
    if isinstance(result, InputError):
        # The mutated row, or a later row that read the layer the mutation renamed.
        assert result.where.line is not None and result.where.line >= row + 2
        assert result.where.field in FIELDS
        if column != 0 and not result.message.startswith("shape mismatch"):  # those name the consumer's line
            assert result.where.line == row + 2


@FAST
@given(row=st.integers(0, len(GOOD) - 1), keep=st.integers(0, len(FIELDS)), extra=st.lists(PLAIN, max_size=3))
def test_wrong_column_counts_give_a_network_or_an_error_at_that_line(row, keep, extra):
    rows = [list(r) for r in GOOD]
    rows[row] = rows[row][:keep] + extra
    present = len(rows[row])
    while present and not rows[row][present - 1].strip():
        present -= 1  # trailing empty fields are tolerated (SCALE-Sim's trailing comma)
    assume(present > 0)  # an all-empty row is a blank line, skipped
    result = outcome(csv_text(rows))
    if present < 8 or present > len(FIELDS):
        assert isinstance(result, InputError)
        assert result.where.line == row + 2
        if present < 8:
            assert result.where.field == FIELDS[present]
    elif isinstance(result, InputError):
        assert result.where.line >= row + 2


def test_a_short_row_and_a_long_row():
    short = outcome(HEADER + "\nc1, 16, 16, 3, 3, 3, 8,\n")
    assert (short.where.line, short.where.field) == (2, "Strides")
    long = outcome(HEADER + "\nc1, 16, 16, 3, 3, 3, 8, 1, 1, conv, input, 1, 1, 9,\n")
    assert long.where.line == 2 and "header has 13" in long.message


# -- headers -----------------------------------------------------------------------------------------
def _normalised(text):
    return " ".join(text.strip().lower().split())


@FAST
@given(name=st.text(string.ascii_letters + " _-", min_size=1, max_size=12), position=st.integers(8, 13))
def test_an_unknown_header_is_named(name, position):
    assume(_normalised(name) not in {_normalised(f) for f in FIELDS[8:]} and "sparsity" not in _normalised(name))
    assume(name.strip())
    header = FIELDS[:position] + [name] + FIELDS[position:]
    result = outcome(", ".join(header) + ",\n" + "c1, 16, 16, 3, 3, 3, 8, 1,\n")
    assert isinstance(result, InputError)
    assert (result.where.line, result.where.field) == (1, name.strip())


@pytest.mark.parametrize("header, field", [
    (", ".join(FIELDS[:7]) + ",", None),                          # too few columns
    (HEADER + " Type,", "Type"),                                   # a column twice
    (", ".join(FIELDS[:8]) + ", , Type,", "column 9"),             # an empty column name in the middle
])
def test_bad_headers(header, field):
    result = outcome(header + "\nc1, 16, 16, 3, 3, 3, 8, 1,\n")
    assert isinstance(result, InputError) and (result.where.line, result.where.field) == (1, field)


def test_header_names_are_case_and_space_insensitive_and_sparsity_is_ignored():
    header = ", ".join(FIELDS[:8]) + ",  INPUTS , type,Sparsity,"
    net = parse_topology(header + "\nc1, 16, 16, 3, 3, 8, 8, 1, input, pool, 1:4,\n")
    assert net.layers[0].kind == "pool" and net.layers[0].inputs == ("input",)


# -- types and inputs --------------------------------------------------------------------------------
@FAST
@given(row=st.integers(0, len(GOOD) - 1), kind=st.text(string.ascii_letters + "_-0123456789", min_size=1, max_size=15))
def test_an_unknown_type_names_line_and_field(row, kind):
    assume(_kind_key(kind) not in KNOWN_TYPES)
    rows = [list(r) for r in GOOD]
    rows[row][9] = kind
    result = outcome(csv_text(rows))
    assert isinstance(result, InputError)
    assert (result.where.line, result.where.field) == (row + 2, "Type")


def _kind_key(kind: str) -> str:
    return kind.strip().lower().replace("_", "").replace("-", "")


@pytest.mark.parametrize("kind", ["DECONV", "ConvTranspose", "conv_transpose_2d", "Transposed-Conv"])
def test_every_spelling_in_the_table_is_known_to_the_unknown_type_test(kind):
    """The reproducer: ``DECONV`` was drawn as an unknown type, and the loader rightly accepted it."""
    assert _kind_key(kind) in KNOWN_TYPES and _kind_key(kind.upper()) in KNOWN_TYPES
    rows = [list(r) for r in GOOD]
    rows[0][9] = kind
    assert isinstance(outcome(csv_text(rows)), Network)


@pytest.mark.parametrize("kind, canonical", [("CONV", "conv"), ("Linear", "fc"), ("fully_connected", "fc"),
                                             ("max-pool", "pool"), ("AvgPool", "pool"), ("fc", "fc")])
def test_type_spellings(kind, canonical):
    # a 1×1 filter: a row every spelled kind accepts (an fc's filter is 1×1 or the whole input)
    assert parse_topology(HEADER + f"\nc1, 16, 16, 1, 1, 8, 8, 1, 0, {kind}, input,\n").layers[0].kind == canonical


@FAST
@given(row=st.integers(0, len(GOOD) - 1),
       reference=st.one_of(st.sampled_from(["self", "next", "ghost", "c1 ; ghost", "C1", "inputs"]),
                           st.text(string.ascii_letters + "_", min_size=1, max_size=8)))
def test_a_bad_inputs_reference_names_line_and_field(row, reference):
    rows = [list(r) for r in GOOD]
    defined_above = {"input"} | {r[0] for r in GOOD[:row]}
    if reference == "self":
        reference = rows[row][0]
    elif reference == "next":
        reference = GOOD[(row + 1) % len(GOOD)][0]
    names = {part.strip() for part in reference.replace("|", ";").split(";")}
    assume(not names <= defined_above)
    rows[row][10] = reference
    result = outcome(csv_text(rows))
    assert isinstance(result, InputError)
    assert (result.where.line, result.where.field) == (row + 2, "Inputs")


def test_inputs_lists_and_defaults():
    text = HEADER + "\na, 8, 8, 1, 1, 4, 4, 1, 0, conv, ,\nb, 8, 8, 1, 1, 4, 4, 1, 0, conv, ,\n" \
                    "s, 8, 8, 1, 1, 4, 4, 1, 0, add, a; b,\nt, 8, 8, 1, 1, 4, 4, 1, 0, add, input|s,\n"
    net = parse_topology(text)
    assert [layer.inputs for layer in net] == [("input",), ("a",), ("a", "b"), ("input", "s")]
    only_separators = outcome(HEADER + "\na, 8, 8, 1, 1, 4, 4, 1, 0, conv, ;,\n")
    assert (only_separators.where.line, only_separators.where.field) == (2, "Inputs")


@pytest.mark.parametrize("row, field", [
    ("c1, 16, 16, 3, 3, 3, 8, 1, 1, conv, input, 2,", "Bias"),
    ("c1, 4, 4, 9, 9, 3, 8, 1, 1, conv, input,", "Filter Height"),           # filter > padded input
    ("c1, 4, 4, 1, 3, 1, 8, 1, 0, matmul, input,", "Filter Width"),          # not M,K,1,K,1,N
    ("c1, 4, 4, 1, 1, 3, 8, 1, 0, batchnorm, input,", "Num Filter"),        # bn changes channels
    ("input, 4, 4, 1, 1, 3, 8, 1, 0, conv, input,", "Layer name"),           # reserved name
    (", 4, 4, 1, 1, 3, 8, 1, 0, conv, input,", "Layer name"),                # empty name
])
def test_specific_row_errors(row, field):
    result = outcome(HEADER + "\n" + row + "\n")
    assert isinstance(result, InputError) and (result.where.line, result.where.field) == (2, field)


def test_a_duplicate_name_is_located_at_its_second_definition():
    text = csv_text([GOOD[0], GOOD[1], ["c1"] + GOOD[2][1:]])
    result = outcome(text)
    assert (result.where.line, result.where.field) == (4, "Layer name")


@pytest.mark.parametrize("text", ["", " \n\n , ,\n", HEADER + "\n", HEADER + "\n\n \n"])
def test_empty_files_and_header_only(text):
    result = outcome(text)
    assert isinstance(result, InputError) and result.where.field is None


# -- encodings, line endings, NUL bytes ------------------------------------------------------------
@FILES
@given(bom=st.booleans(), newline=st.sampled_from(["\n", "\r\n", "\r"]), blank=st.sampled_from(["", " ", ", , ,"]),
       trailing=st.integers(0, 3))
def test_bom_line_endings_and_blank_lines_do_not_change_the_network(tmp_path, bom, newline, blank, trailing):
    lines = [HEADER] + [", ".join(row) + "," for row in GOOD]
    text = (newline + (blank + newline if blank else "")).join(lines) + newline * (trailing + 1)
    result = load_file(tmp_path, (("\ufeff" if bom else "") + text).encode())
    assert isinstance(result, Network)
    assert result == parse_topology(csv_text(GOOD), name="fuzz")


@FILES
@given(position=st.integers(0, len(csv_text(GOOD))))
def test_a_nul_byte_anywhere_is_an_input_error_naming_the_file(tmp_path, position):
    text = csv_text(GOOD)
    result = load_file(tmp_path, (text[:position] + "\x00" + text[position:]).encode())
    assert isinstance(result, InputError) and "NUL" in result.message
    assert isinstance(outcome(text[:position] + "\x00" + text[position:]), InputError)


def test_files_that_are_not_utf8_or_not_files(tmp_path):
    latin1 = load_file(tmp_path, csv_text([["café"] + GOOD[0][1:]]).encode("latin-1"))
    assert isinstance(latin1, InputError) and "UTF-8" in latin1.message
    utf16 = load_file(tmp_path, csv_text(GOOD).encode("utf-16"))
    assert isinstance(utf16, InputError)
    for path in (tmp_path / "missing.csv", tmp_path):
        with pytest.raises(InputError) as error:
            load_topology(path)
        assert error.value.where.file == str(path)


def test_an_unbalanced_quote_is_located():
    result = outcome(HEADER + '\nc1, "16, 16, 3, 3, 3, 8, 1, 1, conv, input,\n')
    assert isinstance(result, InputError) and result.where.line == 2


@pytest.mark.parametrize("value, needle", [("1_6", "expected an integer"), ("١٦", "expected an integer"),
                                           ("16.5", "expected an integer"), ("2147483648", "at most"),
                                           ("-3", "positive")])
def test_dimensions_are_plain_decimal_integers_within_int32(tmp_path, value, needle):
    from archsim.errors import InputError
    from archsim.workload import load_network

    path = tmp_path / "net.csv"
    path.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
                    f"Strides,\nconv1, 8, 8, 3, 3, {value}, 4, 1,\n", encoding="utf-8")
    with pytest.raises(InputError, match=needle) as error:
        load_network(str(path))
    assert error.value.where.line == 2 and error.value.where.field is not None
