"""Shape checks: a layer fed a tensor of the wrong shape is an error naming both layers and shapes."""

from __future__ import annotations

import pytest

from archsim.cli import main
from archsim.errors import InputError
from archsim.workload import load_network, parse_topology, shipped_networks
from archsim.workload.shapes import check_shapes

HEAD = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, "
        "Padding, Type, Inputs,\n")


@pytest.mark.parametrize("name", shipped_networks())
def test_every_shipped_network_is_consistent(name):
    check_shapes(load_network(name, shapes="check"))


def test_conv_declaring_16_channels_after_a_32_channel_conv():
    text = HEAD + "c1, 32, 32, 3, 3, 3, 32, 1, 1, conv, input,\nc2, 32, 32, 3, 3, 16, 64, 1, 1, conv, c1,\n"
    with pytest.raises(InputError) as err:
        parse_topology(text, source="net.csv")
    assert (err.value.where.file, err.value.where.line, err.value.where.field) == ("net.csv", 3, "Inputs")
    assert ("'c1' gives 32×32×32 (32,768 elements), but 'c2' (conv) expects 32×32×16 (16,384 elements)"
            in str(err.value))


def test_fc_with_999_inputs_after_a_25088_element_map():
    text = HEAD + "p5, 14, 14, 2, 2, 512, 512, 2, 0, pool, input,\nfc6, 1, 1, 1, 1, 999, 4096, 1, 0, fc, p5,\n"
    with pytest.raises(InputError, match="'p5' gives 7×7×512 \\(25,088 elements\\), but 'fc6' \\(fc\\) expects "
                                         "1×1×999"):
        parse_topology(text)
    fine = HEAD + "p5, 14, 14, 2, 2, 512, 512, 2, 0, pool, input,\nfc6, 1, 1, 1, 1, 25088, 4096, 1, 0, fc, p5,\n"
    assert parse_topology(fine).layers[1].macs == 25088 * 4096


def test_concatenated_producers_add_their_channels():
    base = HEAD + "a, 8, 8, 1, 1, 4, 6, 1, 0, conv, input,\nb, 8, 8, 1, 1, 4, 10, 1, 0, conv, input,\n"
    assert parse_topology(base + "c, 8, 8, 3, 3, 16, 8, 1, 1, conv, a;b,\n").layers[2].channels == 16
    with pytest.raises(InputError, match="'a' gives 8×8×6 .*; 'b' gives 8×8×10"):
        parse_topology(base + "c, 8, 8, 3, 3, 12, 8, 1, 1, conv, a;b,\n")


def test_elementwise_broadcast_and_mismatch():
    base = HEAD + "a, 8, 8, 1, 1, 4, 4, 1, 0, conv, input,\ns, 8, 8, 8, 8, 4, 4, 1, 0, pool, a,\n"
    parse_topology(base + "m, 8, 8, 1, 1, 4, 4, 1, 0, elementwise, a;s,\n")  # a 1×1×4 scale broadcast
    with pytest.raises(InputError, match="'a' gives 8×8×4"):
        parse_topology(base + "m, 8, 8, 1, 1, 3, 3, 1, 0, elementwise, a,\n")


def test_raw_scalesim_chain_is_unchecked_unless_asked(tmp_path, capsys):
    path = tmp_path / "raw.csv"
    path.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
                    "Strides,\nc1, 16, 16, 3, 3, 3, 8, 1,\nunrelated, 40, 40, 5, 5, 64, 64, 1,\n")
    assert len(load_network(path)) == 2
    with pytest.raises(InputError, match="'c1' gives 14×14×8 .*'unrelated' \\(conv\\) expects 40×40×64"):
        load_network(path, shapes="check", geometry="scalesim")
    assert main(["cost", str(path), "--shapes", "check"]) == 2
    assert "shape mismatch" in capsys.readouterr().err
    assert main(["cost", str(path), "--shapes", "off", "--format", "csv"]) == 0
