"""The first eight topology columns are read by position (as SCALE-Sim reads them), so a header that drops or
moves one of them shifts every value after it. A header naming another column in a positional slot is refused,
one line naming the column; spellings SCALE-Sim's own files use still load."""

from __future__ import annotations

import pytest

from archsim.errors import InputError
from archsim.workload.csv_loader import parse_topology

NO_CHANNELS = """Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Num Filter, Strides, Padding,
c1, 32, 32, 3, 3, 32, 1, 1,
c2, 32, 32, 3, 3, 64, 2, 1,
"""


def test_a_header_without_channels_is_refused_not_read_shifted():
    """A user's CSV without its `Channels` column: the reader once took Num Filter (32) as Channels, Strides (1) as
    Num Filter and Padding (1) as Strides, and costed c1 as a 32-channel layer of one filter with no padding
    (exit 0, wrong numbers). Fails before the fix: no error was raised."""
    with pytest.raises(InputError) as caught:
        parse_topology(NO_CHANNELS, source="mine.csv")
    text = str(caught.value)
    assert "line 1" in text and "'Num Filter'" in text and "'Channels'" in text and "position" in text


@pytest.mark.parametrize("header", [
    "Layer name, Type, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,",
    "Layer name, IFMAP Width, IFMAP Height, Filter Height, Filter Width, Channels, Num Filter, Strides,",
    "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Strides, Num Filter,",
])
def test_a_column_in_another_columns_slot_is_refused(header):
    """A moved column (an archsim column among the eight, or two swapped) is refused: swapped height and width
    or filters and strides would load with wrong numbers (fails before the fix)."""
    with pytest.raises(InputError, match="position"):
        parse_topology(header + "\nc1, 8, 8, 3, 3, 3, 4, 1,\n", source="mine.csv")


@pytest.mark.parametrize("header", [
    "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,",
    "Layer name,Ifmap height,ifmap width,filter height,filter width,channels,num filters,strides,",
    "Layer, H, W, R, S, C, M, stride,",
])
def test_positional_spellings_still_load(header):
    """SCALE-Sim ignores the header's names: its own spellings (`num filters`, `strides`) and names archsim does
    not know load by position, as there."""
    network = parse_topology(header + "\nc1, 8, 8, 3, 3, 3, 4, 1,\n", source="mine.csv")
    layer = network.layers[0]
    assert (layer.channels, layer.filters, layer.stride) == (3, 4, 1)
