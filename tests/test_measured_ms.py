"""A measured kernel time in ms is read by one rule (archsim.validation.gpu_csv.measured_ms) in archsim's kernel CSV
and NeuSight's ``Latency`` column: a positive finite real in ASCII digits. ``1_0``, ``١٠`` and ``１０``, which Python's
float() reads as 10, were taken by both before."""

from __future__ import annotations

import pytest

from archsim.errors import InputError
from archsim.validation.gpu_csv import parse_kernel_csv
from archsim.validation.neusight import parse_neusight_csv

KERNELS = "network,layer,kind,batch,op,measured_ms\nvgg16,conv1,fc,8,F,{ms}\n"
NEUSIGHT = "OPName,Latency,Device,B,M,N,K\nLinear,{ms},Tesla T4,1,64,128,256\n"


def _kernel_ms(ms: str) -> float | None:
    try:
        return float(parse_kernel_csv(KERNELS.format(ms=ms)).frame["measured_ms"].iloc[0])
    except InputError:
        return None


def _neusight_ms(ms: str) -> float | None:
    try:
        return float(parse_neusight_csv(NEUSIGHT.format(ms=ms)).frame["measured_seconds"].iloc[0]) * 1e3
    except InputError:
        return None


@pytest.mark.parametrize("ms", ["1_0", "١٠", "１０"])
def test_a_time_cell_is_ascii_digits(ms):
    with pytest.raises(InputError, match=r"field 'measured_ms': expected a positive finite time in ms"):
        parse_kernel_csv(KERNELS.format(ms=ms))
    with pytest.raises(InputError, match=r"field 'Latency': expected a positive finite time in ms"):
        parse_neusight_csv(NEUSIGHT.format(ms=ms))


@pytest.mark.parametrize(("ms", "value"), [("0.5", 0.5), ("+2", 2.0), ("1e-1", 0.1), ("0", None), ("-1", None),
                                           ("inf", None), ("nan", None), ("x", None), ("1_0", None)])
def test_the_two_kernel_tables_read_a_time_alike(ms, value):
    for read in (_kernel_ms, _neusight_ms):
        got = read(ms)
        assert got is None if value is None else got == pytest.approx(value)
