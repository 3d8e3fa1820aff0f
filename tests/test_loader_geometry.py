"""Topology loaders' two geometries (archsim's padded one and SCALE-Sim's): padding refused and located
in SCALE-Sim geometry, SCALE-Sim's own files loaded unchanged, output sizes by hand, by SCALE-Sim's
formula and by the scalesim package, and huge dimensions exact or an input error. Split from
test_loader_fuzz.py, whose helpers it reads."""

import math
from fractions import Fraction

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from test_loader_fuzz import FAST, FIELDS, GOOD, csv_text, load_file, outcome

from archsim.errors import InputError
from archsim.workload import Network, load_topology, parse_topology


@FAST
@given(padding=st.integers(0, 3), row=st.integers(0, len(GOOD) - 1))
def test_padding_is_rejected_in_scalesim_geometry_and_located(padding, row):
    rows = [list(r) for r in GOOD]
    for r in rows:
        r[8] = "0"
    rows[row][8] = str(padding)
    result = outcome(csv_text(rows), geometry="scalesim")
    if padding:
        assert isinstance(result, InputError)
        assert (result.where.line, result.where.field) == (row + 2, "Padding")
    else:
        assert isinstance(result, Network)


def test_an_unknown_geometry_is_an_input_error():
    with pytest.raises(InputError) as error:
        parse_topology(csv_text(GOOD), geometry="torch")
    assert error.value.where.field == "geometry"


# SCALE-Sim's own file, byte for byte (scale-sim-v2, topologies/conv_nets/alexnet.csv): padded
# columns, a trailing comma, no optional columns.
SCALESIM_ALEXNET = (
    "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
    "Conv1     ,224         ,224        ,11           ,11          ,3       ,96        ,4      ,\n"
    "Conv2     ,27         ,27        ,5            ,5           ,96      ,256       ,1      ,\n"
    "Conv3     ,13          ,13         ,3            ,3           ,256     ,384       ,1      ,\n"
    "Conv4     ,13          ,13         ,3            ,3           ,384     ,384       ,1      ,\n"
    "Conv5     ,13          ,13         ,3            ,3           ,384     ,256       ,1      ,\n")
SCALESIM_SMALL = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\r\n"
                  "Conv1,230,230,7,7,3,64,2,\r\nConv2,10,10,3,3,64,32,2,\r\n")


def test_a_scalesim_topology_loads_unchanged(tmp_path):
    net = load_file(tmp_path, SCALESIM_ALEXNET.encode(), geometry="scalesim")
    assert isinstance(net, Network) and net.name == "fuzz"
    assert [(l.name, l.ifmap_h, l.ifmap_w, l.filter_h, l.filter_w, l.channels, l.filters, l.stride) for l in net] == [
        ("Conv1", 224, 224, 11, 11, 3, 96, 4), ("Conv2", 27, 27, 5, 5, 96, 256, 1),
        ("Conv3", 13, 13, 3, 3, 256, 384, 1), ("Conv4", 13, 13, 3, 3, 384, 384, 1),
        ("Conv5", 13, 13, 3, 3, 384, 256, 1)]
    assert all(l.kind == "conv" and l.padding == 0 and not l.bias and l.repeat == 1 for l in net)
    assert [l.inputs for l in net] == [("input",), ("Conv1",), ("Conv2",), ("Conv3",), ("Conv4",)]
    # SCALE-Sim: E = ceil((H − fh + s)/s): (224−11+4)/4 = 54.25 → 55; (27−5+1)/1 = 23; (13−3+1) = 11.
    assert [l.ofmap_h for l in net] == [55, 23, 11, 11, 11] == [l.ofmap_w for l in net]
    # archsim geometry (no padding): floor((H − fh)/s) + 1 = 54, 23, 11.
    assert [l.ofmap_h for l in load_file(tmp_path, SCALESIM_ALEXNET.encode())] == [54, 23, 11, 11, 11]


def test_scalesim_geometry_output_sizes_by_hand(tmp_path):
    scalesim = load_file(tmp_path, SCALESIM_SMALL.encode(), geometry="scalesim")
    archsim = load_file(tmp_path, SCALESIM_SMALL.encode())
    # SCALE-Sim: ceil((230 − 7 + 2)/2) = ceil(112.5) = 113; ceil((10 − 3 + 2)/2) = ceil(4.5) = 5.
    assert [layer.ofmap_h for layer in scalesim] == [113, 5]
    # archsim (no padding): floor((230 − 7)/2) + 1 = 112; floor((10 − 3)/2) + 1 = 4.
    assert [layer.ofmap_h for layer in archsim] == [112, 4]
    assert scalesim.layer("Conv2").inputs == ("Conv1",)


@pytest.mark.parametrize("text", [SCALESIM_ALEXNET, SCALESIM_SMALL])
def test_scalesim_geometry_agrees_with_the_scalesim_package(tmp_path, text):
    """SCALE-Sim's own topology reader gives the same output sizes and MACs for the same file."""
    topology_utils = pytest.importorskip("scalesim.topology_utils")
    path = tmp_path / "topology.csv"
    path.write_text(text)
    reference = topology_utils.topologies()
    reference.load_arrays(topofile=str(path))
    reference.topo_calc_hyperparams()
    net = load_topology(path, geometry="scalesim")
    assert [(l.ofmap_h, l.ofmap_w, l.macs) for l in net] == [
        (int(e[0]), int(e[1]), int(e[2])) for e in reference.layers_calculated_hyperparams]


@FAST
@given(h=st.integers(1, 600), fh=st.integers(1, 15), s=st.integers(1, 8), p=st.integers(0, 4))
def test_output_size_rules(h, fh, s, p):
    assume(fh <= h)
    row = f"c, {h}, {h}, {fh}, {fh}, 3, 4, {s},"
    header = ", ".join(FIELDS[:9]) + ","
    scalesim = parse_topology(header + "\n" + row + "\n", geometry="scalesim").layers[0]
    assert scalesim.ofmap_h == math.ceil(Fraction(h - fh + s, s))
    archsim = parse_topology(header + "\n" + row + f" {p},\n").layers[0]
    assert archsim.ofmap_h == (h + 2 * p - fh) // s + 1


def test_huge_numbers_are_exact_or_an_input_error():
    header = ", ".join(FIELDS[:8]) + ","
    limit = 2**31 - 1  # the loader's bound: beyond int32 a dimension is a typo
    row = f"c, {limit}, 16, 3, 3, 3, 8, 2,"
    assert parse_topology(header + "\n" + row + "\n", geometry="scalesim").layers[0].ofmap_h == -(-(limit - 3 + 2) // 2)
    assert parse_topology(header + "\n" + row + "\n").layers[0].ofmap_h == (limit - 3) // 2 + 1
    for big in (limit + 1, 10**400):  # 10**400 is beyond a float (SCALE-Sim geometry once overflowed on it)
        error = outcome(header + f"\nc, {big}, 16, 3, 3, 3, 8, 2,\n")
        assert (error.where.line, error.where.field) == (2, "IFMAP Height") and "at most" in str(error)
    too_long = outcome(header + "\nc, " + "9" * 5000 + ", 16, 3, 3, 3, 8, 2,\n")  # past int()'s digit limit
    assert (too_long.where.line, too_long.where.field) == (2, "IFMAP Height")
