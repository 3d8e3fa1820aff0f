"""SRAM bank counts and ports as SCALE-Sim 3.0.0 runs them with custom layouts off: they change no
cycle, stall or DRAM count (its bank-conflict model runs only with a custom layout), and a bank count
that does not divide the bank bandwidth is refused in USER mode, where SCALE-Sim's read buffer asserts.

Every expected value comes from running the scalesim package (``scalesim_reference``) at each bank
setting; archsim's cycle engine (which has no bank parameter) must equal each of them. The GEMM
overflows 1 KiB SRAMs, so the array really stalls (ws and is; os does not at these rates). A few settings run by default, all in the slow tier.
"""

from __future__ import annotations

import pytest

from archsim.array.config import read_scalesim_cfg
from archsim.array.cycle import simulate_gemm
from archsim.errors import InputError

pytest.importorskip("scalesim")
from scalesim_reference import config_text, scalesim_gemm  # noqa: E402

READ_BANDWIDTH = 12
# (banks, ports per bank): every divisor of 12 and ports 1–4
SETTINGS = [(1, 1), (1, 2), (2, 1), (2, 2), (3, 2), (4, 1), (4, 4), (6, 2), (6, 3), (12, 1), (12, 2), (3, 4)]
SMALL = [(1, 2), (4, 1), (12, 2)]


def check(banks, dataflow):
    reference = scalesim_gemm(64, 40, 48, 8, 8, dataflow, ifmap_kb=1, filter_kb=1, ofmap_kb=1, bandwidth=2,
                              read_bandwidth=READ_BANDWIDTH, banks=banks)
    assert reference.stall_cycles > 0 or dataflow == "os"  # os reads each operand once per fold here: no stall
    ours = simulate_gemm(64, 40, 48, 8, 8, dataflow, sram_words=(1024,) * 3, bandwidth=(READ_BANDWIDTH,) * 2 + (2,))
    assert (ours.cycles, ours.stall_cycles, ours.ifmap_dram_reads, ours.filter_dram_reads, ours.ofmap_dram_writes,
            ours.cycles_incl_prefetch) == (reference.compute_cycles, reference.stall_cycles,
                                           reference.ifmap_dram_reads, reference.filter_dram_reads,
                                           reference.ofmap_dram_writes, reference.cycles_incl_prefetch)


@pytest.mark.parametrize("banks", SMALL)
def test_bank_settings_change_nothing_as_in_scalesim(banks):
    check(banks, "ws")


@pytest.mark.slow
@pytest.mark.parametrize("dataflow", ["ws", "os", "is"])
@pytest.mark.parametrize("banks", SETTINGS)
def test_every_bank_setting_every_dataflow(banks, dataflow):
    check(banks, dataflow)


def test_banks_that_do_not_divide_the_bandwidth_are_refused(tmp_path):
    with pytest.raises(AssertionError, match="divisible"):
        scalesim_gemm(8, 8, 8, 4, 4, "ws", bandwidth=2, read_bandwidth=READ_BANDWIDTH, banks=(5, 2))
    path = tmp_path / "banks.cfg"
    path.write_text(config_text(4, 4, "ws", bandwidth=2, read_bandwidth=READ_BANDWIDTH, banks=(5, 2)))
    with pytest.raises(InputError) as err:
        read_scalesim_cfg(path)
    assert err.value.where.field == "IfmapSRAMBankNum"
    path.write_text(config_text(4, 4, "ws", bandwidth=2, read_bandwidth=READ_BANDWIDTH, banks=(6, 3)))
    assert read_scalesim_cfg(path).read_bandwidth == (READ_BANDWIDTH, READ_BANDWIDTH)
