"""An accelerator designer's first hour (trial 55): their own chip as a device TOML and a SCALE-Sim ``.cfg``, costed,
trained, swept and fed bad input. Each test is a defect that session found, pinned: it failed before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from device_files import device_toml, scalesim_chip_cfg
from test_robustness import clean_error, write

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
# the designer's made-up chip: 4 × 64² weight-stationary arrays at 1 GHz, 1 MiB of SRAM per array, 16 GiB of HBM at
# 800 GB/s, a 100 GB/s link
CHIP = device_toml(name="mychip", arrays=4, rows=64, cols=64, dataflow="ws", clock_mhz=1000, sram_kib=1024, hbm_gib=16,
                   hbm_gbps=800, intra_gbps=100)
# the same chip as a SCALE-Sim .cfg with archsim's device sections
CHIP_CFG = scalesim_chip_cfg(4, 1.0, 800, "mychip", "mychip", sram_kb=(256, 256, 256))
CLUSTER = '[cluster]\nname = "c"\n[[servers]]\ncount = 1\ngpus = 4\ndevice = "{device}"\n'
TRAIN = ("train", "gpt2", "--dp", "4", "--global-batch", "8", "--seq", "128", "--dtype", "bf16")


def _line(text: str, start: str) -> int:
    """The 1-based number of the line of ``text`` that starts with ``start`` (counted by hand in the file)."""
    return next(n for n, line in enumerate(text.splitlines(), start=1) if line.startswith(start))


@pytest.mark.parametrize("suffix", [".toml", ".cfg"])
def test_an_energy_figure_too_large_for_a_finite_joule_is_refused_at_its_line(tmp_path, capsys, suffix):
    """``[energy] mac_pj = 1e300`` (a slipped exponent) was read: train printed ``energy_j: inf`` (null in its JSON)
    and a device sweep wrote ``inf`` rows, whose Pareto front then ranked nothing. A per-event figure is now held to
    the bound of every other figure of a device file (10¹⁵), at its line, as a negative one already was."""
    text = (CHIP if suffix == ".toml" else CHIP_CFG) + "\n[energy]\nmac_pj = 1e300\n"
    write(tmp_path / f"mychip{suffix}", text)
    cluster = write(tmp_path / "c.toml", CLUSTER.format(device=f"mychip{suffix}"))
    line = clean_error(capsys, *TRAIN, "--cluster", cluster)
    assert f"mychip{suffix}, line {_line(text, 'mac_pj')}, field 'energy.mac_pj'" in line, line
    assert "<= 1e+15" in line and "got '1e" in line, line
    write(tmp_path / f"mychip{suffix}", text.replace("1e300", "1e15"))  # the bound itself is a figure
    assert main([*TRAIN, "--cluster", str(cluster)]) == 0
    capsys.readouterr()


def test_an_energy_table_figure_too_large_is_refused(tmp_path, capsys):
    """An energy table (``--energy-table FILE.toml``) whose DRAM figure is 1e300 pJ per bit priced an iteration at
    inf pJ; it is refused, naming the table's key, as a figure a device file states is."""
    table = (ROOT / "configs" / "energy" / "horowitz45.toml").read_text(encoding="utf-8")
    start = table.index("[dram]")
    key = table.index("pj_per_bit", start)
    end = table.index("\n", key)
    bad = write(tmp_path / "t.toml", table[:key] + "pj_per_bit = 1e300" + table[end:])
    line = clean_error(capsys, "energy", "ffnn8", "--array", "8x8", "--energy-table", bad)
    assert "t.toml" in line and "field 'dram.pj_per_bit'" in line and "<= 1e+15" in line, line


def test_a_device_sweep_of_more_chips_than_train_takes_is_refused_at_the_specs_line(tmp_path, capsys):
    """``chips = [65536]`` passed the spec's check (1…65,536) and was then refused by the point's own cluster as
    ``mychip.toml, field 'servers[1].count': more than 16384 GPUs in all``: a device file and a cluster key the
    designer never wrote. The spec now takes what train takes, 1…16,384, and says so at its line."""
    write(tmp_path / "mychip.toml", CHIP)
    text = '[sweep]\nmodel = "gpt2"\ndevice = "mychip.toml"\nchips = [4, 65536]\nglobal_batch = 65536\nseq = 128\n'
    spec = write(tmp_path / "s.toml", text)
    line = clean_error(capsys, "sweep", spec, "--out", tmp_path / "out")
    assert line.endswith("s.toml, line 4, field 'chips': expected integers in 1…16384, got '65536'"), line
    assert not (tmp_path / "out").exists()
    write(spec, text.replace("chips = [4, 65536]", "chips = [16384]").replace("65536", "16384"))  # the bound runs
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    assert (tmp_path / "out" / "results.csv").read_text(encoding="utf-8").count("\n") == 2  # the header and the point


def test_a_device_sweeps_seq_past_trains_range_is_refused_at_the_specs_line(tmp_path, capsys):
    """``seq = 100000000`` in a device sweep spec passed the spec's check (1…2147483647, as ``seq = 0`` is told) and
    was refused by the model's reader as ``field 'seq': must be an integer in 1…1048576`` with no file or line. The
    spec now holds it to train's range (1…1,048,576) at its line, as every other key of the spec is."""
    write(tmp_path / "mychip.toml", CHIP)
    text = '[sweep]\nmodel = "gpt3_1.3b"\ndevice = "mychip.toml"\nchips = [4]\nglobal_batch = 8\nseq = 100000000\n'
    spec = write(tmp_path / "s.toml", text)
    line = clean_error(capsys, "sweep", spec, "--out", tmp_path / "out")
    assert line.endswith("s.toml, line 6, field 'seq': expected integers in 1…1048576, got '100000000'"), line
    write(spec, text.replace("100000000", "0"))  # the range a refusal states is the one the spec takes
    assert clean_error(capsys, "sweep", spec, "--out", tmp_path / "out").endswith("1…1048576, got '0'")


@pytest.mark.parametrize("command", ["train", "energy", "cost"])
def test_an_sram_figure_past_three_int32_buffers_is_refused_at_its_line(tmp_path, capsys, command):
    """``sram_kib_per_array = 1e10`` (7 TiB beside an array: a unit slipped) was split in three buffers of 3.3 × 10⁹
    KiB each, past the int32 a buffer takes, and refused as ``field 'ifmap_sram_kb': must be an integer in
    1…2147483647``: no file, no line, and a name the device file does not use. It is now refused at the key's line,
    saying the most it takes (three buffers of 2³¹ − 1 KiB), by every reader of the file."""
    text = CHIP.replace("sram_kib_per_array = 1024", "sram_kib_per_array = 1e10")
    chip = write(tmp_path / "mychip.toml", text)
    argv = {"train": [*TRAIN, "--cluster", write(tmp_path / "c.toml", CLUSTER.format(device="mychip.toml"))],
            "energy": ["energy", "ffnn8", "--config", chip], "cost": ["cost", "ffnn8", "--config", chip]}[command]
    line = clean_error(capsys, *argv)
    where = f"mychip.toml, line {_line(text, 'sram_kib_per_array')}, field 'memory.sram_kib_per_array'"
    assert where in line and "at most 6442450941 KiB" in line and "ifmap_sram_kb" not in line, line
    write(chip, text.replace("1e10", str(3 * (2**31 - 1))))  # the largest figure: three whole int32 buffers
    assert main([str(a) for a in argv]) == 0  # cost reads a TOML as energy does
    err = capsys.readouterr().err
    assert "ifmap_sram_kb" not in err


def test_the_host_link_a_device_file_states_is_documented_as_not_timed(tmp_path, capsys):
    """``[links] host_gbps`` was documented as "the host link (PCIe), GB/s per direction", as if it were priced, but
    nothing reads it on a device file (the chips' collectives and hops run on ``intra_gbps`` and the NIC; no offload is
    modelled): 1 GB/s and 1000 GB/s train alike. The docs now say it is recorded, not timed, as ``links`` and
    ``l2_mib`` are."""
    seconds = []
    for gbps in (1, 1000):
        write(tmp_path / "mychip.toml", CHIP + f"host_gbps = {gbps}\n")
        cluster = write(tmp_path / "c.toml", CLUSTER.format(device="mychip.toml"))
        assert main([*TRAIN, "--pp", "2", "--dp", "2", "--cluster", str(cluster), "--format", "json"]) == 0
        seconds.append(capsys.readouterr().out)
    assert seconds[0] == seconds[1]  # the whole document: time, energy, memory and every op alike
    (row,) = [line for line in (ROOT / "docs" / "formats.md").read_text(encoding="utf-8").splitlines()
              if line.startswith("| `[links] host_gbps`")]
    assert "recorded, not timed" in row, row


def test_energy_under_the_analytic_engine_says_no_dram_bandwidth_it_did_not_use(tmp_path, capsys):
    """``archsim energy ffnn8 --config mychip.toml`` printed ``bandwidth_words_per_cycle: 10`` beside ``dram_counts:
    compulsory``: a figure the analytic engine never reads (its DRAM words are each operand once), and 10 words/cycle
    where the chip states 800 GB/s (400 two-byte words at 1 GHz). The meta now states the SRAM sizes it priced and,
    only under the cycle engine, the bandwidth its stalls ran at: since 2026-12-05 the chip's, 800 GB/s ÷ (2 B × 1 GHz)
    = 400 words/cycle per operand (docs/formats.md, "Memory bandwidth, stated once")."""
    chip = write(tmp_path / "mychip.toml", CHIP)
    for engine, said in (("analytic", False), ("cycle", True)):
        assert main(["energy", "ffnn8", "--config", str(chip), "--dtype", "fp16", "--engine", engine]) == 0
        out = capsys.readouterr().out
        assert "# sram_kb: 341,341,341" in out  # 1024 KiB in three whole-KiB buffers: priced under either engine
        assert ("# bandwidth_words_per_cycle" in out) is said, out[:600]
        assert ("# bandwidth_words_per_cycle: 400\n" in out) is said, out[:600]


@pytest.mark.parametrize("command", ["train", "search"])
def test_a_seq_flag_past_the_longest_sequence_is_refused_as_the_flags(tmp_path, capsys, command):
    """``--seq 1048577`` was refused as ``trial/llama.json, field 'seq': must be an integer in 1…1048576``: the model
    file named as if it stated the length, which the flag gave. The range is now the setting's, said without the file;
    a length past a learned position table stays the model's limit, named with its file."""
    cluster = write(tmp_path / "c.toml", CLUSTER.format(device="mychip.toml"))
    write(tmp_path / "mychip.toml", CHIP)
    model = ROOT / "configs" / "transformers" / "gpt3_1.3b.toml"
    line = clean_error(capsys, command, model, "--cluster", cluster, "--global-batch", "8", "--seq", 2**20 + 1)
    assert line == f"archsim {command}: error: argument --seq: expected a sequence of 1…1048576 tokens, got '1048577'"
    line = clean_error(capsys, command, "gpt2", "--cluster", cluster, "--global-batch", "8", "--seq", "2048")
    assert "gpt2.json, field 'seq': gpt2 learns 1024 position embeddings" in line, line


@pytest.mark.parametrize("command", ["train", "search"])
@pytest.mark.parametrize("seq", ["0", "-3", "2048.5"])
def test_a_seq_flag_below_one_states_the_range_seq_takes(tmp_path, capsys, command, seq):
    """``--seq 0`` was refused with the generic positive integer's range, ``1…2147483647``, where ``--seq 1048577``
    was refused with the longest sequence's, ``1…1048576`` (2²⁰): two ranges for one flag. One flag type now states
    the range it takes, whatever the slip, and ``seq=`` in the library says the same."""
    import archsim
    from archsim.errors import InputError

    cluster = write(tmp_path / "c.toml", CLUSTER.format(device="mychip.toml"))
    write(tmp_path / "mychip.toml", CHIP)
    line = clean_error(capsys, command, "gpt2", "--cluster", cluster, "--global-batch", "8", "--seq", seq)
    assert line == f"archsim {command}: error: argument --seq: expected a sequence of 1…1048576 tokens, got '{seq}'"
    with pytest.raises(InputError) as caught:
        getattr(archsim, command)("gpt2", cluster=cluster, global_batch=8, seq=seq)
    assert str(caught.value) == f"field 'seq': expected a sequence of 1…1048576 tokens, got '{seq}'"


@pytest.mark.parametrize(("table", "typo", "meant"), [
    ('[cluster]\nname = "c"\n[[servers]]\ncount = 1\ngpus = 4\ndevcie = "mychip.toml"\n', "servers[1].devcie", "device"),
    ('[cluster]\nname = "c"\ninter_server_gbp = 100\n[[servers]]\ngpus = 4\ndevice = "mychip.toml"\n',
     "inter_server_gbp", "inter_server_gbps"),
    ('[cluster]\nname = "c"\n[network]\nnic_gpbs = 100\n[[servers]]\ngpus = 4\ndevice = "mychip.toml"\n', "nic_gpbs",
     "nic_gbps"),
])
def test_a_misspelt_cluster_key_names_the_key_meant(tmp_path, capsys, table, typo, meant):
    """``devcie = "mychip.toml"`` in a cluster's [[servers]] was told the table's keys, where the same slip in the
    device file (``hbm_gbs``) is told ``did you mean 'hbm_gbps'?``: the cluster's [cluster], [[servers]] and [network]
    tables now name the nearest key too, as every other reader of a key does (``archsim.validate.did_you_mean``)."""
    write(tmp_path / "mychip.toml", CHIP)
    line = clean_error(capsys, *TRAIN, "--cluster", write(tmp_path / "c.toml", table))
    assert f"field '{typo}': unknown key in " in line and f"(did you mean '{meant}'?); keys are " in line, line


@pytest.mark.parametrize(("command", "servers"), [
    ("train", 'gpu = 4\ndevice = "mychip.toml"\n'),  # gpus = 4 slipped beside the device file
    ("train", "gpu = 8\n"),
    ("plan", 'gpu = 4\ndevice = "mychip.toml"\n'),
])
def test_a_gpu_count_written_as_gpu_names_the_slip(tmp_path, capsys, command, servers):
    """``gpu = 4`` for ``gpus = 4`` (one letter dropped) was told ``names both gpu = 4 and device = 'mychip.toml'``
    beside a device file, or ``unknown GPU '8'; the catalog has …`` alone: neither says the chip count went in the
    GPU's name. A number as ``gpu`` is now refused as that slip, naming ``gpus``."""
    write(tmp_path / "mychip.toml", CHIP)
    cluster = write(tmp_path / "c.toml", '[cluster]\nname = "c"\n[[servers]]\ncount = 1\n' + servers)
    argv = [*TRAIN] if command == "train" else ["plan", "ffnn8", "--microbatches", "2"]
    line = clean_error(capsys, *argv, "--cluster", cluster)
    count = servers.split("=")[1].split()[0]
    assert f"line 5, field 'servers[1].gpu': gpu = {count} is a number" in line and f"gpus = {count}" in line, line


def test_a_device_named_without_its_suffix_in_a_cluster_names_the_file_meant(tmp_path, capsys):
    """``device = "mychip"`` beside mychip.toml was told ``device file …/mychip not found``, where a device sweep's spec
    says of the same slip ``the spec's folder has mychip.toml, not mychip: write device = "mychip.toml"``. The
    cluster file's refusal now names the file too (one finder, ``archsim.validate.suffixed_files``)."""
    write(tmp_path / "mychip.toml", CHIP)
    table = CLUSTER.format(device="mychip")
    line = clean_error(capsys, *TRAIN, "--cluster", write(tmp_path / "c.toml", table))
    assert line.endswith("not found (a device path is read relative to the cluster file's folder): the folder has "
                         'mychip.toml: write device = "mychip.toml"'), line
    (tmp_path / "mychip.toml").unlink()  # no file of that stem: nothing to name
    assert clean_error(capsys, *TRAIN, "--cluster", tmp_path / "c.toml").endswith("the cluster file's folder)")


def test_an_array_chips_fp8_peak_keeps_the_peaks_its_arrays_compute(tmp_path, capsys):
    """A ``[compute.peak_tflops]`` table stating only ``fp8 = 32.77`` (``train --fp8``'s rate: on ``arrays`` it must be the
    arrays' own, as every stated peak must) replaced
    every default peak, so ``archsim train`` refused the chip at its default dtype: ``field 'dtype': mychip has no fp16
    peak; it has fp8`` — while the docs say an array chip's fp16, bf16 and fp32 peaks default to its arrays' rate,
    2 · 4 · 64 · 64 · 1 GHz = 32.77 TFLOP/s here. They now do beside other dtypes: the run and its MFU are the
    table-less chip's."""
    cluster = write(tmp_path / "c.toml", CLUSTER.format(device="mychip.toml"))
    runs = []
    for text in (CHIP, CHIP.replace("[memory]", "[compute.peak_tflops]\nfp8 = 32.77\n\n[memory]")):  # the arrays' rate
        write(tmp_path / "mychip.toml", text)
        assert main([*TRAIN, "--cluster", str(cluster), "--dtype", "fp16", "--format", "json"]) == 0
        runs.append(capsys.readouterr().out)
    assert runs[0] == runs[1]
