"""A device file's ``[memory] dram_traffic = "scalesim"`` read by every command that prices its DRAM: ``cost
--config``'s chip columns (train's op timing) and their ``chip_seconds_by``, ``energy`` and ``cost --energy`` under
the analytic engine (the words train's energy counts, ``dram_counts`` naming them; the cycle engine keeps its own),
and a device sweep, whose SRAM axis then moves time. The default, "compulsory", prints what it printed before.

References: one fc layer of 70 inputs and 50 outputs at batch 100, whose GEMMs are F out[100×50] = x[100×70]·W[70×50]
(m, k, n = 100, 70, 50) and G dW[70×50] = xᵀ[70×100]·δ[100×50] (70, 100, 50), no δ (the first layer); each priced
by SCALE-Sim's memory model for one 32 × 32 ws array (archsim.array.dram_traffic, exact against the cycle engine)
with three 4 KiB operand buffers (2,048 two-byte words each) at 10 GB/s ÷ (2 B × 1 GHz) = 5 words/cycle. Each GEMM's
folds (⌈k/32⌉·⌈n/32⌉: 6 and 8) fill the chip's two arrays evenly, so none is split; a wave is at most 2·32 + 32 +
100 − 2 = 194 cycles, so its ≤ 4 waves (< 1 µs) are far below its HBM time (> 3 µs): every GEMM is HBM-bound."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from chip_pair import CLUSTER, TINY
from device_files import device_toml, write_file

from archsim.array.config import ArrayConfig
from archsim.array.dram_traffic import gemm_dram_traffic
from archsim.chip_time import dram_counts, file_dram_words
from archsim.cli import main
from archsim.devices.array_dram import device_dram_words
from archsim.devices.device_file import load_device

HBM = 10e9  # B/s
FC = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, Padding, "
      "Type,\nfc1, 1, 1, 1, 1, 70, 50, 1, 0, fc,\n")
F_GEMM, G_GEMM = (100, 70, 50), (70, 100, 50)


def _words(m: int, k: int, n: int) -> tuple[int, int, int]:
    """(ifmap, filter, ofmap) DRAM words of one GEMM on one 32 × 32 ws array, 2,048-word buffers, 5 words/cycle."""
    t = gemm_dram_traffic(m, k, n, 32, 32, "ws", sram_words=(2048,) * 3, bandwidth=(5, 5, 5))
    return t.ifmap_reads, t.filter_reads, t.ofmap_writes


def _chip(tmp_path, traffic: str | None, arrays: int = 2, sram_kib: int = 12, name: str = "chip.toml") -> str:
    """``arrays`` 32 × 32 ws arrays at 1 GHz, ``sram_kib`` KiB beside each, 10 GB/s of HBM, ``dram_traffic =
    traffic`` (None: no key)."""
    text = device_toml(name="chip", arrays=arrays, rows=32, cols=32, clock_mhz=1000, sram_kib=sram_kib, hbm_gib=16,
                       hbm_gbps=10, intra_gbps=100)
    if traffic is not None:
        text = text.replace("hbm_gbps = 10\n", f'hbm_gbps = 10\ndram_traffic = "{traffic}"\n')
    return str(write_file(tmp_path, name, text))


def _json(capsys, *flags: str) -> dict:
    assert main([*flags, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _run(tmp_path, capsys, command: str, traffic: str | None, *flags: str, arrays: int = 2) -> dict:
    network = str(write_file(tmp_path, "fc.csv", FC))
    return _json(capsys, command, network, "--batch", "100", "--config", _chip(tmp_path, traffic, arrays), *flags)


def test_cost_chip_columns_charge_the_counted_bytes_and_say_so(tmp_path, capsys):
    """Each kind's chip seconds are its GEMM's SCALE-Sim words × 2 B at 10 GB/s (compulsory: each operand and the
    result once); chip_seconds_by names which bytes (until now "its HBM bytes" either way)."""
    counted = _run(tmp_path, capsys, "cost", "scalesim")
    plain = _run(tmp_path, capsys, "cost", "compulsory")
    row, before = counted["rows"][0], plain["rows"][0]
    for kind, (m, k, n) in (("F", F_GEMM), ("G", G_GEMM)):
        assert row[f"{kind}_chip_seconds"] == pytest.approx(2 * sum(_words(m, k, n)) / HBM, rel=1e-12)
        assert before[f"{kind}_chip_seconds"] == pytest.approx(2 * (m * k + k * n + m * n) / HBM, rel=1e-12)
    assert row["D_chip_seconds"] == 0
    assert 'dram_traffic = "scalesim"' in counted["meta"]["chip_seconds_by"]
    assert "compulsory: each operand and result once" in plain["meta"]["chip_seconds_by"]


@pytest.mark.parametrize("arrays", [1, 2])
def test_energy_counts_the_words_train_counts(tmp_path, capsys, arrays):
    """energy on a file of one array or two: each kind's DRAM words are its GEMM's SCALE-Sim count (what train's
    energy counts: device_dram_words), each word filled from DRAM written to its SRAM once; the DRAM read energy
    scales with the words read; dram_counts names the count. Before: compulsory words, whatever the key."""
    rows = {row["op"]: row for row in _run(tmp_path, capsys, "energy", "scalesim", arrays=arrays)["rows"]}
    plain = _run(tmp_path, capsys, "energy", "compulsory", arrays=arrays)
    for kind, gemm in (("F", F_GEMM), ("G", G_GEMM)):
        got = [rows[kind][name] for name in ("ifmap_dram_reads", "filter_dram_reads", "ofmap_dram_writes")]
        assert got == list(_words(*gemm))
        assert [rows[kind]["ifmap_sram_writes"], rows[kind]["filter_sram_writes"]] == got[:2]
    trains = device_dram_words(load_device(_chip(tmp_path, "scalesim", arrays, name="train.toml")), "fp16")
    assert trains is not None
    assert np.array_equal(trains(*(np.array(x) for x in zip(F_GEMM, G_GEMM, strict=True)), np.array([1, 1])),
                          [_words(*F_GEMM), _words(*G_GEMM)])
    reads = sum(_words(*F_GEMM)[:2]) + sum(_words(*G_GEMM)[:2])
    compulsory_reads = (100 * 70 + 70 * 50) + (70 * 100 + 100 * 50)
    plain_total = plain["rows"][-1]
    assert plain_total["ifmap_dram_reads"] + plain_total["filter_dram_reads"] == compulsory_reads
    assert rows["TOTAL"]["dram_read_pj"] == pytest.approx(plain_total["dram_read_pj"] * reads / compulsory_reads,
                                                          rel=1e-12)
    assert "scalesim" in _run(tmp_path, capsys, "energy", "scalesim", arrays=arrays)["meta"]["dram_counts"]
    assert plain["meta"]["dram_counts"] == "compulsory (each operand once per GEMM)"


def test_cost_energy_prices_what_energy_prices(tmp_path, capsys):
    """cost --energy's TOTAL energy is energy's on the same file, with the key as without (one rule), the counted
    words dearer; its meta names the count where it is not the engine's own."""
    totals = {}
    for traffic in ("scalesim", "compulsory"):
        cost = _run(tmp_path, capsys, "cost", traffic, "--energy")
        energy = _run(tmp_path, capsys, "energy", traffic)
        assert cost["rows"][-1]["energy_pj"] == pytest.approx(energy["rows"][-1]["energy_pj"], rel=1e-12)
        assert ("dram_counts" in cost["meta"]) == (traffic == "scalesim")
        totals[traffic] = cost["rows"][-1]["energy_pj"]
    assert totals["scalesim"] > totals["compulsory"]


def test_sram_kb_sets_the_buffers_the_count_reads(tmp_path, capsys):
    """--sram-kb 3072 prices three 3072 KiB buffers (1,572,864 two-byte words each): energy counts the words SCALE-Sim
    moves through those, as its SRAM energy and area take them, and cost's chip columns time them (before: the file's
    4 KiB buffers' count beside 3072 KiB SRAMs priced)."""
    def words(m: int, k: int, n: int) -> tuple[int, int, int]:
        t = gemm_dram_traffic(m, k, n, 32, 32, "ws", sram_words=(3072 * 512,) * 3, bandwidth=(5, 5, 5))
        return t.ifmap_reads, t.filter_reads, t.ofmap_writes

    rows = {row["op"]: row for row in _run(tmp_path, capsys, "energy", "scalesim", "--sram-kb", "3072")["rows"]}
    for kind, gemm in (("F", F_GEMM), ("G", G_GEMM)):
        got = [rows[kind][name] for name in ("ifmap_dram_reads", "filter_dram_reads", "ofmap_dram_writes")]
        assert got == list(words(*gemm)) != list(_words(*gemm))
    row = _run(tmp_path, capsys, "cost", "scalesim", "--sram-kb", "3072")["rows"][0]
    for kind, gemm in (("F", F_GEMM), ("G", G_GEMM)):
        assert row[f"{kind}_chip_seconds"] == pytest.approx(2 * sum(words(*gemm)) / HBM, rel=1e-12)


def test_the_cycle_engine_keeps_its_own_counts(tmp_path):
    """Under the cycle engine no count replaces the engine's simulated one; under the analytic engine a file counting
    compulsory traffic (or no device file) gives none either."""
    array = ArrayConfig(rows=32, cols=32, dataflow="ws", element_bytes=2)
    path = _chip(tmp_path, "scalesim")
    assert file_dram_words(path, array, "cycle", "fp16") is None
    assert file_dram_words(path, array, "analytic", "fp16") is not None
    assert file_dram_words(_chip(tmp_path, "compulsory", name="c.toml"), array, "analytic", "fp16") is None
    assert file_dram_words(None, array, "analytic", "fp16") is None
    assert dram_counts(None, "cycle") == "cycle engine"


@pytest.mark.parametrize("command", [("energy",), ("cost", "--energy"), ("cost",)])
def test_the_default_prints_as_compulsory(tmp_path, capsys, command):
    """No key and "compulsory" print the same bytes."""
    name, *flags = command
    assert _run(tmp_path, capsys, name, None, *flags) == _run(tmp_path, capsys, name, "compulsory", *flags)


def _sweep_seconds(tmp_path, capsys, traffic: str) -> list[float]:
    """A device sweep of TINY over one chip of one array (:func:`_chip`) at 12 and 3072 KiB of SRAM: each point's
    iteration seconds, checked against train on the file stating that SRAM."""
    folder = tmp_path / traffic
    folder.mkdir()
    _chip(folder, traffic, arrays=1)
    (folder / "tiny.toml").write_text(TINY, encoding="utf-8")
    (folder / "spec.toml").write_text(
        '[sweep]\nname = "dram"\nmodel = "tiny.toml"\ndevice = "chip.toml"\nsram_kib_per_array = [12, 3072]\n'
        'chips = [1]\nglobal_batch = 1\nmicro_batch = 1\nrecompute = "none"\nattention = "standard"\n')
    assert main(["sweep", str(folder / "spec.toml"), "--out", str(folder / "out"), "--quiet"]) == 0
    with open(folder / "out" / "results.csv", encoding="utf-8") as handle:
        rows = {int(row["sram_kib_per_array"]): float(row["iteration_seconds"]) for row in csv.DictReader(handle)}
    for kib, seconds in rows.items():
        _chip(folder, traffic, arrays=1, sram_kib=kib, name=f"chip{kib}.toml")
        (folder / f"cluster{kib}.toml").write_text(CLUSTER.format(device=f"chip{kib}.toml"), encoding="utf-8")
        capsys.readouterr()
        meta = _json(capsys, "train", str(folder / "tiny.toml"), "--cluster", str(folder / f"cluster{kib}.toml"),
                     "--global-batch", "1", "--micro-batch", "1", "--recompute", "none", "--attention", "standard")
        assert seconds == pytest.approx(meta["meta"]["iteration_seconds"], rel=1e-9)
    return [rows[12], rows[3072]]


def test_a_device_sweep_prices_the_key_and_its_sram_axis_moves_time(tmp_path, capsys):
    """Each point is train's on the file with that SRAM; with the key 12 KiB re-reads what 3072 KiB holds (slower),
    without it the SRAM moves no time (each operand once)."""
    small, large = _sweep_seconds(tmp_path, capsys, "scalesim")
    assert small > 1.5 * large
    plain_small, plain_large = _sweep_seconds(tmp_path, capsys, "compulsory")
    assert plain_small == plain_large < small
