"""A Conv whose weight does not take the input's channels (W of shape (M, C / group, kH, kW) beside an input of
another C; a ConvTranspose's (C, M / group, kH, kW), checked alike, though ONNX's own inference catches that one): ONNX's checker and shape inference pass it, as a Gemm's
mismatch would not, so archsim costed the layer on the input's channels, with weights the file does not hold (a
(16, 3, 3, 3) weight beside 4 input channels gave ``weight_bytes`` 576, not 432, and F 16,571 cycles, not 8,285).
Now it is one line naming the node, the two channel counts and the weight's shape."""

from __future__ import annotations

import onnx
import pytest
from conftest import USAGE
from onnx import helper

from archsim.cli import main
from archsim.errors import InputError
from archsim.workload import load_onnx
from tests.onnx_models import model, value, weight


def conv(channels: int, w: tuple[int, ...], group: int = 1, op: str = "Conv", out: tuple[int, ...] = (16, 8, 8)):
    node = helper.make_node(op, ["x", "w"], ["y"], name="c", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=group)
    return model([node], [value("x", [1, channels, 8, 8])], [value("y", [1, *out])], [weight("w", *w)])


@pytest.mark.parametrize("made, said", [
    (conv(4, (16, 3, 3, 3)), "input has 4 channels, the weight [16, 3, 3, 3] expects 3"),
    (conv(16, (16, 2, 3, 3), group=4), ("input has 16 channels, the weight [16, 2, 3, 3] expects 8 "
                                        "(2 per group × 4 groups)")),
])
def test_a_weight_of_other_input_channels_is_refused_naming_both(made, said):
    onnx.checker.check_model(made, full_check=True)  # what ONNX itself lets through
    with pytest.raises(InputError) as error:
        load_onnx(made)
    assert said in error.value.message and "'c'" in error.value.message


def test_the_command_says_it_in_one_line(tmp_path, capsys):
    (tmp_path / "m.onnx").write_bytes(conv(4, (16, 3, 3, 3)).SerializeToString())
    assert main(["cost", str(tmp_path / "m.onnx")]) == 2
    err = capsys.readouterr().err
    assert USAGE.match(err) and err.count("\n") == 1 and "expects 3" in err


@pytest.mark.parametrize("channels, w, group, op, out, params", [
    (3, (16, 3, 3, 3), 1, "Conv", (16, 8, 8), 16 * 3 * 9),
    (16, (16, 4, 3, 3), 4, "Conv", (16, 8, 8), 16 * 4 * 9),  # 4 groups of 4 input channels
    (8, (8, 2, 3, 3), 1, "ConvTranspose", (2, 8, 8), 8 * 2 * 9),
])
def test_matching_weights_load_with_the_files_parameters(channels, w, group, op, out, params):
    layer = load_onnx(conv(channels, w, group, op, out)).layer("c")
    assert (layer.channels, layer.parameter_count) == (channels, params)  # by hand: the weight's elements
