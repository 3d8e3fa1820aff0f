"""A device's DRAM rate the cycle engine cannot take (more words per cycle than an array's bandwidth holds, or a
quotient that overflows) is one line naming the rate's field, never a traceback nor a line about ``bandwidth``
(a key the user never wrote)."""

import pytest
from conftest import USAGE

from archsim.array.config import ArrayConfig
from archsim.cli import main
from archsim.errors import InputError
from archsim.validate import INT32_MAX

DEVICE_CFG = """[general]
run_name = fast_hbm

[architecture_presets]
ArrayHeight: 8
ArrayWidth: 8
IfmapSramSzkB: 64
FilterSramSzkB: 64
OfmapSramSzkB: 64
Dataflow : ws

[archsim]
ClockGHz = 1.0

[device]
name = fast_hbm
arrays = 16

[memory]
hbm_gib = 16
hbm_gbps = 1e12

[links]
intra_gbps = 100
"""
TINY_NET = ("Layer name,IFMAP Height,IFMAP Width,Filter Height,Filter Width,Channels,Num Filter,Strides,Type\n"
            "fc1,1,1,1,1,16,16,1,fc\n")


@pytest.mark.parametrize("rate", [(1e308, 1e-308), (1e300, 1e-10)])
def test_an_overflowing_rate_is_the_dram_rate_field_not_an_overflow(rate):
    # 1e308 / 1e-308 is inf words/cycle: before, math.floor(inf) raised OverflowError
    with pytest.raises(InputError) as caught:
        ArrayConfig(dram_rate=rate)
    assert caught.value.where.field == "dram_rate"


def test_a_rate_past_the_bandwidth_limit_names_dram_rate():
    # 1e12 GB/s at 1 GHz in 1-byte words: 1e12 words/cycle > 2**31 - 1; before, "bandwidths must be positive"
    with pytest.raises(InputError, match=r"above the 2147483647") as caught:
        ArrayConfig(dram_rate=(1e12, 1.0))
    assert caught.value.where.field == "dram_rate"
    # just under the limit is taken: (2**31 - 2) GB/s at 1 GHz, 1 byte a word
    assert ArrayConfig(dram_rate=(float(INT32_MAX - 1), 1.0)).bandwidth == (INT32_MAX - 1,)


def _one_line(capsys, argv) -> str:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if ": note:" not in line]
    assert code == 2 and out == "", (code, err[-300:])
    assert len(lines) == 1 and USAGE.match(lines[0]) and "Traceback" not in err, err
    return lines[0]


def test_a_device_file_too_fast_for_the_cycle_engine_names_hbm_gbps(tmp_path, capsys):
    path = tmp_path / "fast.cfg"
    path.write_text(DEVICE_CFG)
    line = _one_line(capsys, ["cost", "layerpipe_sample", "--engine", "cycle", "--config", path])
    assert str(path) in line and "memory.hbm_gbps" in line and "'bandwidth'" not in line, line


def test_the_chip_columns_share_of_a_too_fast_rate_names_hbm_gbps(tmp_path, capsys):
    # --bandwidth sets the array's own words, but the chip columns deal hbm_gbps over 16 arrays:
    # 1e12 / 16 / (4 bytes × 1 GHz) = 1.56e10 words/cycle each, past 2**31 - 1
    path, net = tmp_path / "fast.cfg", tmp_path / "one_fc.csv"
    path.write_text(DEVICE_CFG)
    net.write_text(TINY_NET)
    line = _one_line(capsys, ["cost", net, "--engine", "cycle", "--config", path, "--dtype", "fp32",
                              "--bandwidth", "10"])
    assert "memory.hbm_gbps" in line and "'bandwidth'" not in line, line
