"""Which chip ``cost`` and ``energy`` time a run on is one rule (:func:`archsim.chip_time.timed_chip`): a device file
of several arrays always (cost's chip columns); one of one array stating ``[device] static_watts`` only where the run
prices the chip's static power over its seconds (``energy``, ``cost --energy``); no chip for a plain SCALE-Sim
``.cfg``, no file, or one array without static power. The chip's arrays take the costed array's shape and clock.
References: the device files as written (tests/device_files.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from device_files import scalesim_chip_cfg, write_file

from archsim.array.config import ArrayConfig
from archsim.chip_time import timed_chip

PLAIN_CFG = Path(__file__).parents[1] / "configs" / "arrays" / "scalesim_32x32_ws.cfg"  # SCALE-Sim's: no [device]
ARRAY = ArrayConfig(rows=32, cols=16, dataflow="os", clock_hz=2e9)


@pytest.mark.parametrize(("arrays", "watts", "static_power", "count"), [
    (4, None, False, 4), (4, None, True, 4), (4, 20, False, 4),  # several arrays: always the chip
    (1, 20, True, 1), (1, 20, False, None),  # one array stating static_watts: only where static power is priced
    (1, None, True, None), (1, None, False, None),  # one array without it: its cycles are the chip's time
])
def test_the_chip_a_run_is_timed_on(tmp_path, arrays, watts, static_power, count):
    path = write_file(tmp_path, "chip.cfg", scalesim_chip_cfg(arrays, static_watts=watts))
    chip = timed_chip(path, ARRAY, static_power=static_power)
    if count is None:
        assert chip is None
    else:
        assert chip is not None and chip.arrays.count == count and chip.static_watts == (watts or 0)
        assert (chip.arrays.rows, chip.arrays.cols, chip.arrays.dataflow, chip.arrays.clock_hz) == (32, 16, "os", 2e9)


@pytest.mark.parametrize("static_power", [False, True])
def test_no_chip_without_a_device_file(static_power):
    assert timed_chip(None, ARRAY, static_power=static_power) is None
    assert timed_chip(PLAIN_CFG, ARRAY, static_power=static_power) is None
