"""A device file's ``[memory] dram_traffic``: "compulsory" (the default, every figure as before) or "scalesim", each
GEMM's HBM bytes the words SCALE-Sim's memory model moves for each array's sub-GEMM (archsim.devices.array_dram), in
op timing and the energy model alike."""

import json

import numpy as np
import pytest

from archsim.array.dram_traffic import gemm_dram_traffic
from archsim.cli import main
from archsim.devices.array_dram import device_dram_words
from archsim.devices.device_file import load_device
from archsim.devices.kernel_constants import one_fraction
from archsim.devices.kernel_ops import array_gemm_seconds
from archsim.devices.unread_keys import unread_keys_note
from archsim.energy.model import op_count_columns
from archsim.errors import InputError
from archsim.lowering import Gemm, TrainingOp
from tests.chip_pair import CLUSTER, TINY
from tests.device_files import device_toml, scalesim_chip_cfg, write_file

NO_OVERHEAD = one_fraction(gemm=1.0, memory=1.0, launch_s=0.0)
CLOCK_HZ, HBM_GBPS = 1e9, 10  # 10 GB/s at 1 GHz in 2-byte words: 5 words/cycle per operand buffer, a half up


def _chip(tmp_path, traffic: str | None, arrays: int = 1, sram_kib: int = 12, gemm: str | None = None,
          name: str = "chip.toml"):
    """A device of ``arrays`` 32 × 32 ws arrays at 1 GHz with ``sram_kib`` KiB beside each (three buffers of a third)
    and 10 GB/s of HBM, stating ``dram_traffic = traffic`` (None: no key)."""
    text = device_toml(name="chip", arrays=arrays, rows=32, cols=32, clock_mhz=CLOCK_HZ / 1e6, sram_kib=sram_kib,
                       hbm_gib=16, hbm_gbps=HBM_GBPS, intra_gbps=100, gemm=gemm)
    if traffic is not None:
        text = text.replace(f"hbm_gbps = {HBM_GBPS}\n", f'hbm_gbps = {HBM_GBPS}\ndram_traffic = "{traffic}"\n')
    return write_file(tmp_path, name, text)


def _counted_bytes(m, k, n, sram_kib: int) -> int:
    """SCALE-Sim's DRAM bytes of one GEMM on one 32 × 32 ws array: each operand buffer a third of ``sram_kib`` in
    2-byte words, 5 words/cycle (docs/formats.md's rule: hbm_gbps / (2 B × 1 GHz))."""
    words = sram_kib // 3 * 1024 // 2
    traffic = gemm_dram_traffic(m, k, n, 32, 32, "ws", sram_words=(words,) * 3, bandwidth=(5, 5, 5))
    return 2 * (traffic.ifmap_reads + traffic.filter_reads + traffic.ofmap_writes)


def _train_json(tmp_path, capsys, traffic: str | None) -> str:
    """``archsim train``'s JSON output of TINY (tests/chip_pair.py) on one chip of :func:`_chip` stating ``traffic``,
    written to the same file each time (so no path in the output differs)."""
    _chip(tmp_path, traffic)
    (tmp_path / "cluster.toml").write_text(CLUSTER.format(device="chip.toml"), encoding="utf-8")
    (tmp_path / "tiny.toml").write_text(TINY, encoding="utf-8")
    code = main(["train", str(tmp_path / "tiny.toml"), "--cluster", str(tmp_path / "cluster.toml"),
                 "--global-batch", "1", "--micro-batch", "1", "--recompute", "none", "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_the_default_is_compulsory_traffic_byte_for_byte(tmp_path, capsys):
    """No key and "compulsory" train to the same bytes (every figure as before the key); "scalesim" is slower and
    moves more DRAM energy."""
    plain, compulsory, scalesim = (_train_json(tmp_path, capsys, traffic) for traffic in (None, "compulsory", "scalesim"))
    assert plain == compulsory
    before, after = (json.loads(text)["meta"] for text in (compulsory, scalesim))
    assert after["iteration_seconds"] > before["iteration_seconds"]
    assert after["energy_breakdown_j"]["dram"] > before["energy_breakdown_j"]["dram"]


def test_one_gemm_is_compute_waves_or_counted_bytes_at_the_hbm_rate(tmp_path):
    """One array: ⌈70/32⌉·⌈50/32⌉ = 6 ws folds of 2R + C + M − 2 = 194 cycles, less one (SCALE-Sim's count); the
    bytes are SCALE-Sim's count at 2 bytes a word, over 10 GB/s; the slower of the two."""
    m, k, n = 100, 70, 50
    device = load_device(_chip(tmp_path, "scalesim"))
    expected = max((6 * (2 * 32 + 32 + m - 2) - 1) / CLOCK_HZ, _counted_bytes(m, k, n, 12) / (HBM_GBPS * 1e9))
    assert float(array_gemm_seconds(m, k, n, 1, device, NO_OVERHEAD)) == pytest.approx(expected, rel=1e-12)
    compulsory = (m * k + k * n + m * n) * 2 / (HBM_GBPS * 1e9)
    assert expected > 2 * compulsory  # the count is not the operands once (so the key changed the figure)


def test_a_split_gemm_counts_each_arrays_sub_gemm(tmp_path):
    """(256, 32, 32) is one fold on four arrays: ws splits M in the cheapest s, ⌈s·parts/4⌉ waves of
    2R + C + ⌈256/s⌉ − 2 cycles. One GEMM: s = 4, 158 cycles (s = 3: 180, s = 2: 222, s = 1: 350), each array
    streaming 64 rows of A against all of B, so 4 × the count of (64, 32, 32). Two dealt together: s = 2, one wave
    of 222 (s = 4: two waves of 158), so 2 × 2 × the count of (128, 32, 32). SCALE-Sim's count, less one, each."""
    device = load_device(_chip(tmp_path, "scalesim", arrays=4))
    one = max((2 * 32 + 32 + 64 - 2 - 1) / CLOCK_HZ, 4 * _counted_bytes(64, 32, 32, 12) / (HBM_GBPS * 1e9))
    assert float(array_gemm_seconds(256, 32, 32, 1, device, NO_OVERHEAD)) == pytest.approx(one, rel=1e-12)
    two = max((2 * 32 + 32 + 128 - 2 - 1) / CLOCK_HZ, 2 * 2 * _counted_bytes(128, 32, 32, 12) / (HBM_GBPS * 1e9))
    assert float(array_gemm_seconds(256, 32, 32, 2, device, NO_OVERHEAD)) == pytest.approx(two, rel=1e-12)


def test_a_smaller_sram_moves_no_fewer_bytes(tmp_path):
    """(100, 70, 50) on 4 KiB buffers re-reads what 1024 KiB ones hold (SCALE-Sim's count is not monotone in the SRAM
    everywhere, docs/formats.md; here it is): more bytes, more seconds on the memory-bound chip."""
    small = load_device(_chip(tmp_path, "scalesim", sram_kib=12, name="small.toml"))
    large = load_device(_chip(tmp_path, "scalesim", sram_kib=3072, name="large.toml"))
    assert _counted_bytes(100, 70, 50, 12) > _counted_bytes(100, 70, 50, 3072)
    seconds = [float(array_gemm_seconds(100, 70, 50, 1, chip, NO_OVERHEAD)) for chip in (small, large)]
    assert seconds[0] > seconds[1] == pytest.approx(_counted_bytes(100, 70, 50, 3072) / (HBM_GBPS * 1e9))


def test_the_energy_model_prices_the_same_words(tmp_path):
    """Train's energy model, given the device's count, prices SCALE-Sim's reads and writes of each GEMM, as timed."""
    device = load_device(_chip(tmp_path, "scalesim"))
    op = TrainingOp("fc", "F", (Gemm(100, 70, 50, count=3),))
    dram = device_dram_words(device, "fp16")
    assert dram is not None and device_dram_words(load_device(_chip(tmp_path, None, name="plain.toml")), "fp16") is None
    from archsim.training.energy import device_array

    counts = op_count_columns([op], device_array(device, "fp16"), dram=dram)
    traffic = gemm_dram_traffic(100, 70, 50, 32, 32, "ws", sram_words=(2048,) * 3, bandwidth=(5, 5, 5))
    got = [int(counts[name][0]) for name in ("ifmap_dram_reads", "filter_dram_reads", "ofmap_dram_writes")]
    assert got == [3 * traffic.ifmap_reads, 3 * traffic.filter_reads, 3 * traffic.ofmap_writes]
    assert int(counts["ifmap_sram_writes"][0]) == 3 * traffic.ifmap_reads  # a word filled from DRAM is written once
    assert np.array_equal(dram(np.array([100]), np.array([70]), np.array([50]), np.array([3])),
                          [[traffic.ifmap_reads, traffic.filter_reads, traffic.ofmap_writes]])


@pytest.mark.parametrize("value", ['"exact"', '"SCALESIM"', "1", "true"])
def test_a_bad_value_is_refused_naming_the_choices(tmp_path, value):
    path = _chip(tmp_path, None)
    path.write_text(path.read_text().replace("hbm_gbps = 10\n", f"hbm_gbps = 10\ndram_traffic = {value}\n"))
    with pytest.raises(InputError) as caught:
        load_device(path)
    message = str(caught.value)
    assert "\n" not in message and "memory.dram_traffic" in message and "line " in message
    assert "'compulsory', 'scalesim'" in message


def test_a_cfg_device_reads_the_key_in_its_memory_section(tmp_path):
    text = scalesim_chip_cfg(arrays=2, hbm_gbps=400)
    good = write_file(tmp_path, "good.cfg", text.replace("hbm_gbps = 400\n", "hbm_gbps = 400\ndram_traffic = scalesim\n"))
    bad = write_file(tmp_path, "bad.cfg", text.replace("hbm_gbps = 400\n", "hbm_gbps = 400\ndram_traffic = cycle\n"))
    assert load_device(good).dram_traffic == "scalesim" and load_device(write_file(tmp_path, "plain.cfg", text)
                                                                        ).dram_traffic == "compulsory"
    with pytest.raises(InputError, match="'compulsory', 'scalesim'.*got 'cycle'"):
        load_device(bad)


def test_a_tiles_device_says_it_does_not_read_the_key(tmp_path):
    path = _chip(tmp_path, "scalesim", gemm="tiles")
    note = unread_keys_note(load_device(path), str(path))
    assert note is not None and "[memory] dram_traffic" in note
    plain = unread_keys_note(load_device(_chip(tmp_path, "compulsory", gemm="tiles", name="c.toml")), "c.toml")
    assert "dram_traffic" not in (plain or "")  # the default is nothing to say
