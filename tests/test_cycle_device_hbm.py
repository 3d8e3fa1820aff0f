"""The cycle engine on a device file runs its DRAM at the file's ``[memory] hbm_gbps`` (docs/formats.md,
"Memory bandwidth, stated once"): words/cycle = round(hbm_gbps / (element bytes × the file's GHz)), every operand buffer at that
rate, as SCALE-Sim's ``Bandwidth`` is per buffer; ``--bandwidth`` wins; a SCALE-Sim ``.cfg`` without it keeps 10."""

import json

import pytest

from archsim.array.cycle import simulate_gemm
from archsim.array.device_rate import device_dram_rate
from archsim.cli import main
from archsim.errors import InputError

# One 8 × 8 ws array at 2 GHz, 3 KiB of SRAM (1 KiB per operand buffer: 512 bf16 words), 12 GB/s of HBM:
# by hand 12 GB/s ÷ (2 B × 2 GHz) = 3 words/cycle per operand.
TINY_CHIP = """[device]
name = "tiny"
gemm = "arrays"

[compute]
arrays = 1
rows = 8
cols = 8
dataflow = "ws"
clock_mhz = 2000

[memory]
sram_kib_per_array = 3
hbm_gib = 1
hbm_gbps = 12

[links]
intra_gbps = 10
"""
GEMM = ["gemm", "--m", "64", "--k", "64", "--n", "64", "--engine", "cycle", "--format", "json"]


def _stalls(words: int) -> int:
    """SCALE-Sim's model called directly: the 64³ GEMM on the 8 × 8 ws array, 512-word SRAMs, ``words`` per operand."""
    return simulate_gemm(64, 64, 64, 8, 8, "ws", sram_words=(512, 512, 512), bandwidth=(words,) * 3).stall_cycles


def _row(capsys, *flags: str) -> tuple[dict, dict, str]:
    assert main([*GEMM, *flags]) == 0
    out, err = capsys.readouterr()
    document = json.loads(out)
    return document["rows"][0], document["meta"], err


def test_a_device_tomls_hbm_gbps_is_the_cycle_engines_dram_rate(tmp_path, capsys):
    """Failed before: the engine ran at SCALE-Sim's 10 words/cycle (40 GB/s here), its stalls those of 10."""
    chip = tmp_path / "tiny.toml"
    chip.write_text(TINY_CHIP)
    assert _stalls(3) != _stalls(10)  # the rate shows in the count
    row, meta, err = _row(capsys, "--config", str(chip))  # bf16: a device TOML's default, train's
    assert row["stall_cycles"] == _stalls(3)
    assert meta["bandwidth_words_per_cycle"] == 3
    assert "ran at 3 words/cycle per operand buffer, [memory] hbm_gbps = 12 GB/s in 2-byte words" in err
    row, meta, err = _row(capsys, "--config", str(chip), "--dtype", "fp32")  # 12 ÷ (4 × 2) = 1.5: 2 whole
    assert row["stall_cycles"] == simulate_gemm(64, 64, 64, 8, 8, "ws", sram_words=(256, 256, 256),
                                                bandwidth=(2, 2, 2)).stall_cycles
    chip.write_text(TINY_CHIP.replace("hbm_gbps = 12", "hbm_gbps = 20"))  # 20 ÷ (2 × 2) = 5 … fp32: 2.5, a half up: 3
    row, meta, err = _row(capsys, "--config", str(chip), "--dtype", "fp32")
    assert meta["bandwidth_words_per_cycle"] == 3
    chip.write_text(TINY_CHIP)
    row, meta, err = _row(capsys, "--config", str(chip), "--bandwidth", "5")  # the flag wins, nothing said
    assert row["stall_cycles"] == _stalls(5) and meta["bandwidth_words_per_cycle"] == 5
    assert "hbm_gbps" not in err


def test_cost_reads_the_rate_as_gemm_does(tmp_path, capsys):
    """cost's cycle columns on one fc (out[64×64] = X[64×64]·W) are the same GEMM's at 3 words/cycle."""
    chip = tmp_path / "tiny.toml"
    chip.write_text(TINY_CHIP)
    net = tmp_path / "fc.csv"
    net.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
                   "Strides,\nfc1, 1, 1, 1, 1, 64, 64, 1,\n")
    assert main(["cost", str(net), "--config", str(chip), "--engine", "cycle", "--batch", "64",
                 "--format", "json"]) == 0
    out, err = capsys.readouterr()
    document = json.loads(out)
    forward = simulate_gemm(64, 64, 64, 8, 8, "ws", sram_words=(512, 512, 512), bandwidth=(3, 3, 3))
    assert document["rows"][0]["F_cycles"] == forward.cycles  # 20,887 (at 10 words: 6,565)
    assert document["meta"]["bandwidth_words_per_cycle"] == 3
    assert "ran at 3 words/cycle" in err


def test_a_plain_scalesim_cfg_keeps_scalesims_default(capsys):
    """No [memory]: 10 words/cycle per operand, as SCALE-Sim runs the file, and no note."""
    row, meta, err = _row(capsys, "--config", "configs/arrays/scalesim_32x32_ws.cfg")
    assert meta["bandwidth_words_per_cycle"] == 10
    assert row["stall_cycles"] == simulate_gemm(64, 64, 64, 32, 32, "ws", sram_words=(64 * 1024,) * 3,
                                                bandwidth=(10, 10, 10)).stall_cycles
    assert "words/cycle" not in err


# The same chip as a SCALE-Sim .cfg device file: 8 × 8 ws, 1 KiB per operand buffer, 2 GHz, 12 GB/s, no Bandwidth.
TINY_CFG = """[general]
run_name = tiny
[architecture_presets]
ArrayHeight : 8
ArrayWidth : 8
IfmapSramSzkB : 1
FilterSramSzkB : 1
OfmapSramSzkB : 1
Dataflow : ws
[archsim]
ClockGHz = 2.0
[device]
name = tiny
arrays = 1
[memory]
hbm_gib = 1
hbm_gbps = 12
[links]
intra_gbps = 10
"""
FC64 = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
        "fc1, 1, 1, 1, 1, 64, 64, 1,\n")


def test_array_config_of_a_device_cfg_costs_as_config_does(tmp_path):
    """Failed before: array_config kept SCALE-Sim's 10 words/cycle, so cost(array=array_config(config=f)) under the
    cycle engine ran at 10 where cost(config=f) ran at the file's rate. By hand: 12 GB/s ÷ (2 B × 2 GHz) = 3 (fp16),
    ÷ (1 B × 2 GHz) = 6 (int8), ÷ (4 B × 2 GHz) = 1.5, a half up: 2 (fp32)."""
    import warnings

    import archsim

    chip = tmp_path / "tiny.cfg"
    chip.write_text(TINY_CFG)
    net = tmp_path / "fc.csv"
    net.write_text(FC64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the keys a device .cfg states that an array does not read
        for dtype, words in (("fp16", 3), ("int8", 6), ("fp32", 2)):
            array = archsim.array_config(config=chip, dtype=dtype)
            assert array.bandwidth == (words,) and array.read_bandwidth is None
            given = archsim.cost(str(net), array=array, engine="cycle", batch=64).to_dict()
            named = archsim.cost(str(net), config=str(chip), dtype=dtype, engine="cycle", batch=64).to_dict()
            assert given["rows"] == named["rows"]
        forward = simulate_gemm(64, 64, 64, 8, 8, "ws", sram_words=(512, 512, 512), bandwidth=(3, 3, 3))
        fp16 = archsim.cost(str(net), array=archsim.array_config(config=chip, dtype="fp16"), engine="cycle", batch=64)
        assert fp16.to_dict()["rows"][0]["F_cycles"] == forward.cycles  # 20,887 (at 10 words: 6,565)
        assert archsim.array_config(config=chip, bandwidth=5).bandwidth == (5,)  # the keyword wins
        assert archsim.array_config(chip).bandwidth == (6,)  # a .cfg path as the array: int8, 12 ÷ (1 × 2)


def test_array_config_changes_no_analytic_figure_and_no_plain_cfg(tmp_path):
    """The analytic engine reads no bandwidth: the device rate moves none of its figures; a plain SCALE-Sim .cfg
    (no [memory]) keeps its 10 words/cycle, as SCALE-Sim runs it."""
    import warnings
    from dataclasses import replace

    import archsim

    chip = tmp_path / "tiny.cfg"
    chip.write_text(TINY_CFG)
    net = tmp_path / "fc.csv"
    net.write_text(FC64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        array = archsim.array_config(config=chip, dtype="fp16")
        scalesim = replace(array, bandwidth=(10,), user_bandwidth=False, dram_rate=None)  # what array_config gave before
        assert array != scalesim
        for job in (archsim.cost, archsim.iteration_energy):
            assert job(str(net), array=array, batch=64).to_dict() == job(str(net), array=scalesim, batch=64).to_dict()
        plain = archsim.array_config(config="configs/arrays/scalesim_32x32_ws.cfg")
    assert plain.bandwidth == (10,) and not plain.user_bandwidth


SPARSE_CFG = TINY_CFG.replace("[archsim]", """[sparsity]
SparsitySupport : true
SparseRep : ellpack_block
OptimizedMapping : false
BlockSize : 4
RandomNumberGeneratorSeed : 40
[archsim]""")
SPARSE_FC = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, "
             "Sparsity,\nfc1, 1, 1, 1, 1, 64, 64, 1, 2:4,\n")


def _sparse(tmp_path, capsys, cfg: str) -> dict:
    (tmp_path / "sparse.cfg").write_text(cfg)
    (tmp_path / "pruned.csv").write_text(SPARSE_FC)
    assert main(["sparse", str(tmp_path / "pruned.csv"), "--config", str(tmp_path / "sparse.cfg"), "--batch", "64",
                 "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_sparse_on_a_device_cfg_is_compute_only_without_bandwidth(tmp_path, capsys):
    """sparse runs the cycle engine only in SCALE-Sim's USER mode, which needs Bandwidth: there the file's rate is its
    Bandwidth (checked against hbm_gbps), so the hbm_gbps rule never applies. A device .cfg stating hbm_gbps and no
    Bandwidth is CALC: SCALE-Sim's stall-free compute report, no DRAM columns, hbm_gbps changing nothing."""
    calc = _sparse(tmp_path, capsys, SPARSE_CFG)
    assert calc["meta"]["stalls"].startswith("none: CALC")
    assert not {"F_stall_cycles", "F_total_cycles", "ifmap_dram_reads"} & set(calc["rows"][0])
    assert calc["rows"] == _sparse(tmp_path, capsys, SPARSE_CFG.replace("hbm_gbps = 12", "hbm_gbps = 1200"))["rows"]
    # USER mode, Bandwidth 3 = 12 GB/s ÷ (2 B × 2 GHz): the condensed 64 × 32 × 64 GEMM at 3 words, 1024-word SRAMs
    user = _sparse(tmp_path, capsys, SPARSE_CFG.replace("Dataflow : ws", "Dataflow : ws\nBandwidth : 3").replace(
        "[archsim]", "[run_presets]\nInterfaceBandwidth : USER\n[archsim]"))
    run = simulate_gemm(64, 32, 64, 8, 8, "ws", sram_words=(1024,) * 3, bandwidth=(3, 3, 3))
    assert run.stall_cycles != simulate_gemm(64, 32, 64, 8, 8, "ws", sram_words=(1024,) * 3,
                                             bandwidth=(10, 10, 10)).stall_cycles
    assert user["rows"][0]["F_stall_cycles"] == run.stall_cycles and user["rows"][0]["F_total_cycles"] == run.cycles


def test_the_rate_is_read_through_the_device_readers_checks(tmp_path):
    """device_dram_rate reads a device TOML as every device-file reader does (its keys checked): the words by hand
    (12 GB/s ÷ (2 B × 2 GHz) = 3), and a non-number ``hbm_gbps`` is the one-line error naming the key, not a
    TypeError from dividing a string."""
    good = tmp_path / "tiny.toml"
    good.write_text(TINY_CHIP)
    assert device_dram_rate(good, 2) == (3, 12.0, 2.0)
    bad = tmp_path / "bad.toml"
    bad.write_text(TINY_CHIP.replace("hbm_gbps = 12", 'hbm_gbps = "fast"'))
    with pytest.raises(InputError, match="hbm_gbps"):
        device_dram_rate(bad, 2)


# TINY_CFG without its clock: 12 GB/s is no number of words/cycle until a clock says how many cycles a second.
UNCLOCKED_CFG = TINY_CFG.replace("ClockGHz = 2.0\n", "")
UNCLOCKED = "hbm_gbps = 12 GB/s was not applied"


def test_a_device_cfg_without_a_clock_says_its_hbm_gbps_was_not_applied(tmp_path, capsys):
    """Failed before: the cycle engine ran at SCALE-Sim's 10 words/cycle and said nothing of the file's 12 GB/s. Now
    one note naming the file's rate, the 10 it ran at and how to state the clock (or the words) instead; the figures
    are SCALE-Sim's default's, as before (64³ GEMM in fp16: 512-word SRAMs, 10 words per operand)."""
    chip = tmp_path / "tiny.cfg"
    chip.write_text(UNCLOCKED_CFG)
    row, meta, err = _row(capsys, "--config", str(chip), "--dtype", "fp16")
    assert row["stall_cycles"] == _stalls(10) and meta["bandwidth_words_per_cycle"] == 10
    said = [line for line in err.splitlines() if UNCLOCKED in line]
    assert len(said) == 1
    assert "ran at 10 words/cycle" in said[0] and "ClockGHz = GHZ under [archsim]" in said[0]
    assert said[0].endswith("--bandwidth WORDS")
    _, _, err = _row(capsys, "--config", str(chip), "--dtype", "fp16", "--bandwidth", "3")  # the flag: nothing to say
    assert "hbm_gbps" not in err
    chip.write_text(TINY_CFG)  # its clock stated: the rate applies, said as before
    _, meta, err = _row(capsys, "--config", str(chip), "--dtype", "fp16")
    assert meta["bandwidth_words_per_cycle"] == 3 and UNCLOCKED not in err


def test_the_library_warns_the_unapplied_hbm_gbps_once(tmp_path):
    """archsim.cost on the unclocked file warns it as a UserWarning, once, naming the keyword; the analytic engine
    (which reads no bandwidth) says nothing of it."""
    import warnings

    import archsim

    chip = tmp_path / "tiny.cfg"
    chip.write_text(UNCLOCKED_CFG)
    net = tmp_path / "fc.csv"
    net.write_text(FC64)
    for engine, count in (("cycle", 1), ("analytic", 0)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            archsim.cost(str(net), config=str(chip), dtype="fp16", engine=engine, batch=64)
        said = [str(w.message) for w in caught if UNCLOCKED in str(w.message)]
        assert len(said) == count
        assert all(w.category is UserWarning for w in caught if UNCLOCKED in str(w.message))
        assert all(text.endswith("bandwidth=WORDS") for text in said)


def test_a_sweep_of_the_unclocked_cfg_says_it_too(tmp_path):
    """A cycle-engine sweep of the file without ``bandwidths`` ran at 10 words/cycle silently; its note names the
    spec's key."""
    from archsim.sweep.spec import load_spec
    from archsim.sweep.spec_arrays import array_file_notes

    (tmp_path / "tiny.cfg").write_text(UNCLOCKED_CFG)
    (tmp_path / "fc.csv").write_text(FC64)
    spec_file = tmp_path / "spec.toml"
    spec_file.write_text('[sweep]\nnetworks = ["fc.csv"]\narrays = ["tiny.cfg"]\nbatches = [4]\nprocessors = [1]\n'
                         'methods = ["gpipe"]\nengine = "cycle"\n')
    said = [note for note in array_file_notes(load_spec(spec_file)) if UNCLOCKED in note]
    assert len(said) == 1 and said[0].startswith("tiny.cfg: ") and said[0].endswith("bandwidths = [WORDS]")
