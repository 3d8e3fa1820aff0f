"""A layers-CSV ``fc`` row is position-wise (1×1 filter, stride 1, no padding) or flattening (filter =
the whole input); anything else is a sliding window the fc lowering would cost wrongly, so it is refused."""

from __future__ import annotations

import pytest

from archsim.cli import main
from archsim.errors import InputError
from archsim.lowering import Gemm, lower_layer
from archsim.workload import parse_topology

HEAD = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, " \
       "Padding, Type,\n"


def _refusal(row: str) -> str:
    """The one-line error a layers CSV holding ``row`` is refused with; it names the file, the line and the row."""
    with pytest.raises(InputError) as caught:
        parse_topology(HEAD + row + "\n", source="net.csv", name="net")
    text = str(caught.value)
    assert "net.csv" in text and "line 2" in text and f"fc layer {row.split(',')[0]!r}" in text and "\n" not in text
    return text


def _cli_refusal(tmp_path, capsys, row: str) -> str:
    """``archsim cost`` on a layers CSV holding ``row``: exit 2 and one line on stderr, naming the row."""
    path = tmp_path / "net.csv"
    path.write_text(HEAD + row + "\n")
    assert main(["cost", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"fc layer {row.split(',')[0]!r}" in err
    return err


@pytest.mark.parametrize("row", ["fc3, 32, 32, 3, 3, 16, 8, 1, 0, fc,",       # a 3×3 window over 32×32
                                 "fc7, 7, 7, 7, 7, 16, 8, 1, 1, fc,",         # the whole map, but padded
                                 "fcw, 4, 8, 4, 4, 16, 8, 1, 0, linear,"])   # full height, not full width
def test_an_fc_row_that_slides_is_refused_naming_its_row(row):
    text = _refusal(row)
    assert "1x1" in text and "whole unpadded input" in text


def test_the_cli_refuses_it_in_one_line_with_exit_2(tmp_path, capsys):
    _cli_refusal(tmp_path, capsys, "fc3, 32, 32, 3, 3, 16, 8, 1, 0, fc,")


def test_the_two_fc_forms_still_load_and_lower_as_dense_products():
    net = parse_topology(HEAD + "flat, 7, 7, 7, 7, 16, 8, 1, 0, fc,\nrows, 5, 1, 1, 1, 8, 4, 1, 0, fc,\n",
                         source="net.csv", name="net")
    flat, rows = net.layers
    # flattening: one output per sample, reducing over 7·7·16 inputs; δ is (N, M, 7·7·16).
    assert [op.gemms for op in lower_layer(flat, 2, "paper").ops if op.kind == "D"] == [(Gemm(2, 8, 7 * 7 * 16),)]
    assert [op.gemms for op in lower_layer(rows, 2, "paper").ops if op.kind == "D"] == [(Gemm(2 * 5, 4, 8),)]


@pytest.mark.parametrize("row", ["pad, 5, 5, 1, 1, 8, 4, 1, 1, fc,",       # zero rows the δ would count as inputs
                                 "step, 6, 6, 1, 1, 8, 4, 2, 0, fc,",      # every other position skipped
                                 "both, 6, 1, 1, 1, 8, 4, 3, 2, linear,"])
def test_a_position_wise_fc_row_that_pads_or_strides_is_refused_naming_its_row(row):
    # a 1×1 fc's δ is one dense product over its output rows (Gemm(N·E·F, M, C)), the input's rows only
    # when E×F is the input's H×W: padding adds rows, a stride drops them
    text = _refusal(row)
    assert "stride 1" in text and "Padding 0" in text


def test_the_cli_refuses_a_strided_fc_in_one_line_with_exit_2(tmp_path, capsys):
    assert "Strides" in _cli_refusal(tmp_path, capsys, "step, 6, 6, 1, 1, 8, 4, 2, 0, fc,")


def test_a_flattening_fc_over_a_single_position_may_still_state_any_stride():
    # a 1×1 input read whole: one output position whatever the stride, the dense product is exact
    net = parse_topology(HEAD + "one, 1, 1, 1, 1, 8, 4, 2, 0, fc,\n", source="net.csv", name="net")
    assert (net.layers[0].ofmap_h, net.layers[0].ofmap_w) == (1, 1)
