"""User trial 37: an accelerator designer's own chip, a 2-core chip of 4 output-stationary 64 × 64 arrays per
core at 1.2 GHz, as a SCALE-Sim .cfg device file and as a device TOML (issue #37).

Each test here failed on the code before its fix (said in its docstring)."""

import json
from pathlib import Path

import pytest

from archsim.cli import main
from tests.chip_pair import CLUSTER, ENERGY_ZEROS, TINY, chip_cfg, chip_toml, energy_body, hand_macs, train_meta

ROOT = Path(__file__).resolve().parents[1]

# The chip: SCALE-Sim's own sections (shape, dataflow, SRAMs), archsim's clock and the device sections;
# ``{energy}``: its [energy] section's body (empty: the default table)
CHIP_CFG = chip_cfg()


def _only_macs(mac_pj: float) -> str:
    """Every per-event figure zero but the MAC's: the iteration's joules are its MACs × mac_pj."""
    return energy_body({"mac_pj": mac_pj, **dict.fromkeys(ENERGY_ZEROS, 0)}, toml=False)


def _write_chip(tmp_path, cfg: str = CHIP_CFG.format(energy="")) -> None:
    """The chip's .cfg (``cfg``: its text), and the one-server cluster.toml of it."""
    (tmp_path / "chip.cfg").write_text(cfg, encoding="utf-8")
    (tmp_path / "cluster.toml").write_text(CLUSTER.format(device="chip.cfg"), encoding="utf-8")


def _gpt3_seconds(tmp_path, capsys) -> dict:
    """GPT-3 1.3B trained on one chip of cluster.toml (micro-batch 1): each (layer, op)'s seconds."""
    code = main(["train", "gpt3_1.3b", "--cluster", str(tmp_path / "cluster.toml"), "--tp", "1", "--pp", "1",
                 "--dp", "1", "--global-batch", "1", "--micro-batch", "1", "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return {(row["name"], row["op"]): row["seconds"] for row in json.loads(out)["rows"]}


@pytest.mark.parametrize("mac_pj", [1.0, 2.5])
def test_train_prices_a_device_cfgs_energy_section(mac_pj, tmp_path, capsys):
    """Failed before: ``archsim energy --config chip.cfg`` priced the .cfg's ``[energy]`` figures, but ``archsim
    train`` (and search, and a device sweep) on a cluster naming the same file priced the default table's, with
    no word said (mac_pj = 1 gave the same joules as the default 2 pJ). Reference: the hand count of MACs ×
    mac_pj, every other figure set to zero."""
    meta = train_meta(tmp_path, capsys, "chip.cfg", CHIP_CFG.format(energy=_only_macs(mac_pj)))
    assert meta["energy_j"] == pytest.approx(hand_macs() * mac_pj * 1e-12, rel=1e-12)
    assert "[energy]" in meta["energy_source"]


def test_a_device_cfgs_energy_leakage_is_refused_naming_static_watts(tmp_path, capsys):
    """Failed before: a device .cfg's ``[energy] pe_leakage_mw`` was read by ``archsim energy`` and dropped by
    ``archsim train`` without a word. train prices a chip's static power by ``[device] static_watts`` over the
    whole iteration, so the per-op leakage figure is refused in one line naming the key and the one to write."""
    _write_chip(tmp_path, CHIP_CFG.format(energy="pe_leakage_mw = 0.01\n"))
    (tmp_path / "tiny.toml").write_text(TINY, encoding="utf-8")
    code = main(["train", str(tmp_path / "tiny.toml"), "--cluster", str(tmp_path / "cluster.toml"), "--tp", "1",
                 "--pp", "1", "--dp", "1", "--global-batch", "1", "--micro-batch", "1"])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1 and lines[0].startswith("archsim train: error:")
    assert "energy.pe_leakage_mw" in lines[0] and "static_watts" in lines[0]


# two fully connected layers, 64 → 32 → 16, in SCALE-Sim's topology format
TWO_FC = """Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,
fc1, 1, 1, 1, 1, 64, 32, 1,
fc2, 1, 1, 1, 1, 32, 16, 1,
"""

DESIGN_SPEC = """[sweep]
name = "trial37"
networks = ["two_fc.csv"]
arrays = ["chip.cfg"]
batches = [8]
processors = [1]
methods = ["gpipe"]
dtypes = ["fp16"]
{axis}"""


def _design_sweep(tmp_path, capsys, energy: str, axis: str = "") -> tuple[int, str]:
    (tmp_path / "chip.cfg").write_text(CHIP_CFG.format(energy=energy), encoding="utf-8")
    (tmp_path / "two_fc.csv").write_text(TWO_FC, encoding="utf-8")
    (tmp_path / "spec.toml").write_text(DESIGN_SPEC.format(axis=axis), encoding="utf-8")
    code = main(["sweep", str(tmp_path / "spec.toml"), "--quiet", "--out", str(tmp_path / "results")])
    _, err = capsys.readouterr()
    return code, err


@pytest.mark.parametrize("mac_pj", [1.0, 3.0])
def test_a_design_sweeps_cfg_array_is_priced_with_its_energy_section(mac_pj, tmp_path, capsys):
    """Failed before: docs/formats.md says a design sweep's ``.cfg`` point is that file's chip as ``archsim
    energy --config`` prices it, but the sweep priced the default table, dropping the file's ``[energy]``
    figures (its energy_pj was the same with mac_pj = 1 as with the default 2 pJ). Reference: the hand count of
    MACs × mac_pj (every other figure zero), exact mode: fc1's δ is not computed (nothing consumes it), so fc1
    has F and G (8 · 64 · 32 MACs each) and fc2 F, G and D (8 · 32 · 16 each)."""
    import csv

    code, err = _design_sweep(tmp_path, capsys, _only_macs(mac_pj))
    assert code == 0, err
    rows = list(csv.DictReader((tmp_path / "results" / "results.csv").open(encoding="utf-8")))
    macs = 2 * 8 * 64 * 32 + 3 * 8 * 32 * 16
    assert len(rows) == 1 and float(rows[0]["energy_pj"]) == pytest.approx(macs * mac_pj, rel=1e-12)


def test_an_energy_tables_axis_beside_a_cfgs_own_table_is_refused(tmp_path, capsys):
    """Failed before (the file's table was not read, so the axis ran): an ``energy_tables`` axis would replace the
    table a ``.cfg`` array's ``[energy]`` names, as ``sram_kb`` would its SRAMs: one line naming the axis and
    the file, exit 2, nothing written."""
    code, err = _design_sweep(tmp_path, capsys, "table = horowitz45\n",
                              'energy_tables = ["horowitz45"]\n')
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "energy_tables" in lines[0] and "chip.cfg" in lines[0]
    assert not (tmp_path / "results").exists()


# ---- the chip's figures against hand computations (these pass; they guard the closed forms a designer checks) ----

@pytest.mark.parametrize(("dataflow", "sr", "sc", "t", "fill"), [
    ("ws", 2048, 6144, 2048, 2 * 64), ("os", 2048, 6144, 2048, 64), ("is", 2048, 2048, 6144, 2 * 64)])
def test_one_gemms_cycles_on_one_array_are_scalesims_closed_form(dataflow, sr, sc, t, fill, tmp_path, capsys):
    """GPT-3 1.3B's QKV GEMM at one sample (out[M×N] = A[M×K]·B[K×N], M = 2048 tokens, K = 2048, N = 6144) on one
    64 × 64 array of the chip: ⌈Sr/R⌉·⌈Sc/C⌉ folds × (fill + C + T − 2) − 1 cycles, SCALE-Sim 3.0.0's compute cycles
    (its systolic_compute_{ws,os,is}.py; ws: Sr = K, Sc = N, T = M, fill 2R; os: Sr = M, Sc = N, T = K, fill R;
    is: Sr = K, Sc = M, T = N, fill 2R). Samajdar et al., ISPASS 2020, eq. 1, writes 2R + C + T − 2 per fold for
    every dataflow; SCALE-Sim 3.0.0's code overlaps the os fold's R-cycle fill (its own run of this shape at
    200 × 100 × 150 on 64 × 64 gives 12 × 226 − 1 = 2711 cycles, not 12 × 290 − 1), and archsim follows the code."""
    (tmp_path / "chip.cfg").write_text(CHIP_CFG.format(energy=""), encoding="utf-8")
    code = main(["gemm", "--m", "2048", "--k", "2048", "--n", "6144", "--config", str(tmp_path / "chip.cfg"),
                 "--dataflow", dataflow, "--format", "json"])
    out, _ = capsys.readouterr()
    assert code == 0
    row = json.loads(out)["rows"][0]
    folds = -(-sr // 64) * -(-sc // 64)
    assert row["folds"] == folds and row["cycles"] == folds * (fill + 64 + t - 2) - 1
    assert row["seconds"] == pytest.approx(row["cycles"] / 1.2e9, rel=1e-12)


def test_train_deals_a_gemms_folds_in_waves_over_the_eight_arrays_and_a_norm_runs_at_hbm_bandwidth(tmp_path, capsys):
    """GPT-3 1.3B's QKV GEMM forward (M = 2048, K = 2048, N = 6144, os) on the chip's 8 arrays: 3072 folds in
    ⌈3072 / 8⌉ = 384 waves of one fold's 64 + 64 + 2048 − 2 = 2174 cycles, less SCALE-Sim's last cycle, at
    1.2 GHz; its roofline (the three fp16 tensors once at 1200 GB/s, 48.9 µs) is below that. The first
    LayerNorm is memory-bound: 2048 × 2048 fp16 read and written, 2 · 8 MiB / 1.2 TB/s."""
    _write_chip(tmp_path)
    seconds = _gpt3_seconds(tmp_path, capsys)
    assert seconds[("qkv", "F")] == pytest.approx((384 * 2174 - 1) / 1.2e9, rel=1e-12)
    assert seconds[("norm1", "F")] == pytest.approx(2 * 2048 * 2048 * 2 / 1.2e12, rel=1e-12)


def test_energy_per_mac_and_per_word_are_the_documented_horowitz_figures(tmp_path, capsys):
    """configs/energy/README.md: per MAC at the element width (fp16: 2.0 pJ), DRAM per word 20.3125 pJ/bit ×
    16 bits = 325 pJ, SRAM per word the 64-bit read energy interpolated log-log between 20 pJ at 32 KiB and
    100 pJ at 1 MiB, × 16/64: at the chip's 512 KiB ifmap SRAM 20 · 16^(ln 5 / ln 32) / 4 pJ, at its 256 KiB
    ofmap SRAM 20 · 8^(ln 5 / ln 32) / 4 pJ; the row's total their sum with the registers' and vector unit's."""
    import math

    (tmp_path / "chip.cfg").write_text(CHIP_CFG.format(energy=""), encoding="utf-8")
    code = main(["energy", "resnet50", "--config", str(tmp_path / "chip.cfg"), "--batch", "2", "--dtype", "fp16",
                 "--format", "json"])
    out, _ = capsys.readouterr()
    assert code == 0
    total = next(row for row in json.loads(out)["rows"] if row["op"] == "TOTAL")
    slope = math.log(5) / math.log(32)
    assert total["mac_pj"] == pytest.approx(2.0 * total["macs"], rel=1e-12)
    dram_words = total["ifmap_dram_reads"] + total["filter_dram_reads"]
    assert total["dram_read_pj"] == pytest.approx(325.0 * dram_words, rel=1e-12)
    assert total["dram_write_pj"] == pytest.approx(325.0 * total["ofmap_dram_writes"], rel=1e-12)
    assert total["ifmap_sram_read_pj"] == pytest.approx(20 * 16**slope / 4 * total["ifmap_sram_reads"], rel=1e-9)
    assert total["ofmap_sram_read_pj"] == pytest.approx(20 * 8**slope / 4 * total["ofmap_sram_reads"], rel=1e-9)
    parts = [name for name in total if name.endswith("_pj") and name != "energy_pj"]
    assert total["energy_pj"] == pytest.approx(sum(total[name] for name in parts), rel=1e-12)


# the chip as a device TOML stating its SRAM as one figure, 1280 KiB per array (the three split equally)
DEVICE_TOML = chip_toml().replace("sram_kib_per_array = [512, 512, 256]", "sram_kib_per_array = 1280").format(
    lanes="", energy="")


def test_the_library_reads_a_device_toml_as_config_as_its_keywords(tmp_path):
    """Failed before: ``archsim.cost(..., config="chip.toml")`` answered with the command's flags (``--array 64x64
    --dataflow os --clock-ghz 1.2 --sram-kb 426,426,426 --dtype fp16``), which docs/api.md says the library names
    as keywords. ``archsim.cost`` reads the TOML as ``archsim energy`` does: the same table as those keywords,
    written by hand (``archsim.profile`` and ``archsim.schedule`` likewise: tests/test_device_toml_every_command.py)."""
    import archsim

    (tmp_path / "chip.toml").write_text(DEVICE_TOML, encoding="utf-8")
    by_hand = archsim.cost("layerpipe_sample", batch=2, array="64x64", dataflow="os", clock_ghz=1.2,
                           sram_kb="426,426,426", dtype="fp16")
    with pytest.warns(UserWarning, match="device of 8 arrays"):
        read = archsim.cost("layerpipe_sample", config=str(tmp_path / "chip.toml"), batch=2, dtype="fp16")
    columns = list(by_hand.table.columns)
    assert read.table[columns].equals(by_hand.table)


def test_a_gemm_below_its_roofline_runs_at_hbm_bandwidth(tmp_path, capsys):
    """The chip at 10 GB/s of HBM: GPT-3 1.3B's QKV GEMM (M = 2048, K = 2048, N = 6144) moves its three fp16 tensors,
    2 · 2048 · (2048 + 2 · 6144) bytes, in 5.87 ms, above its 0.70 ms on the arrays: each of F, G and D takes that."""
    _write_chip(tmp_path, CHIP_CFG.format(energy="").replace("hbm_gbps = 1200", "hbm_gbps = 10"))
    seconds = _gpt3_seconds(tmp_path, capsys)
    for op in "FGD":
        assert seconds[("qkv", op)] == pytest.approx(2 * 2048 * (2048 + 2 * 6144) / 10e9, rel=1e-12)


def test_a_device_sweep_refuses_a_cfgs_leakage_before_it_writes(tmp_path, capsys):
    """A device sweep reads the device file as train does, [energy] included: its leakage figure is refused when
    the spec is read, one line, nothing written (the results folder not made)."""
    (tmp_path / "chip.cfg").write_text(CHIP_CFG.format(energy="sram_leakage_mw_per_kib = 0.5\n"),
                                       encoding="utf-8")
    (tmp_path / "tiny.toml").write_text(TINY, encoding="utf-8")
    (tmp_path / "spec.toml").write_text('[sweep]\nname = "t37"\nmodel = "tiny.toml"\ndevice = "chip.cfg"\n'
                                        "chips = [1]\nglobal_batch = 1\n", encoding="utf-8")
    code = main(["sweep", str(tmp_path / "spec.toml"), "--quiet", "--out", str(tmp_path / "results")])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "energy.sram_leakage_mw_per_kib" in lines[0]
    assert not (tmp_path / "results").exists()


def test_a_spec_cfgs_energy_table_name_is_never_read_from_the_working_folder(tmp_path, capsys, monkeypatch):
    """docs/security.md: a sweep spec's names are never looked up in the working folder. The .cfg array's ``[energy]
    table = horowitz45``, read since this trial, is the shipped table even where the run's folder holds a file of
    that name; a ``.toml`` table not beside the .cfg is refused, not read from the working folder."""
    import csv
    import shutil

    work = tmp_path / "work"
    work.mkdir()
    (work / "horowitz45").write_text("not a table", encoding="utf-8")
    (work / "mine.toml").write_text("not a table", encoding="utf-8")
    monkeypatch.chdir(work)
    code, err = _design_sweep(tmp_path, capsys, "table = horowitz45\n")
    assert code == 0, err
    rows = list(csv.DictReader((tmp_path / "results" / "results.csv").open(encoding="utf-8")))
    assert rows[0]["energy_table"] == "horowitz45"
    shutil.rmtree(tmp_path / "results")
    code, err = _design_sweep(tmp_path, capsys, "table = mine.toml\n")
    assert code == 2 and f"{tmp_path / 'mine.toml'}: energy table not found" in err  # the .cfg's neighbour
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("table", ["mine.toml", "horowitz45"])
def test_a_cfgs_energy_table_is_never_read_from_the_working_folder(table, tmp_path, capsys, monkeypatch):
    """Failed before: docs/security.md says a ``.cfg``'s ``[energy] table = PATH.toml`` resolves relative to the
    .cfg's folder, but one not found there was read from the working folder (and a bare name, a shipped table's,
    from a file of that name there first): ``archsim energy --config`` priced another table depending on where it
    ran. Now a path is the .cfg's neighbour (missing: one line naming it), a name the shipped table."""
    work = tmp_path / "work"
    work.mkdir()
    (work / table).write_text((ROOT / "configs" / "energy" / "horowitz45.toml").read_text(encoding="utf-8")
                              .replace("pj_per_bit = 20.3125", "pj_per_bit = 1.0"), encoding="utf-8")
    (tmp_path / "chip.cfg").write_text(CHIP_CFG.format(energy=f"table = {table}\n"), encoding="utf-8")
    monkeypatch.chdir(work)
    code = main(["energy", "layerpipe_sample", "--config", str(tmp_path / "chip.cfg"), "--batch", "2", "--dtype",
                 "fp16", "--format", "json"])
    out, err = capsys.readouterr()
    if table.endswith(".toml"):
        assert code == 2 and out == "" and str(tmp_path / table) in err
    else:
        assert code == 0, err
        total = next(row for row in json.loads(out)["rows"] if row["op"] == "TOTAL")
        assert total["dram_write_pj"] == pytest.approx(325.0 * total["ofmap_dram_writes"], rel=1e-12)  # shipped


def test_a_device_sweeps_slipped_hbm_axis_value_is_named_as_the_specs(tmp_path, capsys):
    """Failed before: an ``hbm_gbps = [1.2]`` axis value (TB/s typed for GB/s) was warned as the device file's
    ``[memory] hbm_gbps = 1.2 GB/s``, where the file states 1200: the line now says the figure is the spec's
    axis, the key to correct."""
    (tmp_path / "chip.cfg").write_text(CHIP_CFG.format(energy=""), encoding="utf-8")
    (tmp_path / "tiny.toml").write_text(TINY, encoding="utf-8")
    (tmp_path / "spec.toml").write_text('[sweep]\nname = "t37"\nmodel = "tiny.toml"\ndevice = "chip.cfg"\n'
                                        "hbm_gbps = [1.2, 1200]\nchips = [1]\nglobal_batch = 1\n", encoding="utf-8")
    code = main(["sweep", str(tmp_path / "spec.toml"), "--quiet", "--out", str(tmp_path / "results")])
    err = capsys.readouterr().err
    (line,) = [line for line in err.splitlines() if "hbm_gbps" in line]
    assert code == 0 and "hbm_gbps = 1.2 GB/s (the spec's hbm_gbps axis)" in line
    assert line.endswith("write hbm_gbps = 1200")
