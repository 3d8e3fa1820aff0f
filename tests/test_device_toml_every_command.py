"""One device model, one reading: ``cost``, ``energy``, ``gemm``, ``pipeline`` and ``schedule`` read a device TOML given
as ``--config`` through one reader (:func:`archsim.device_toml.device_toml_notes`, train's device reader beneath it),
with the same notes on stderr (``pipeline`` and ``schedule`` on the file's arrays as processors); ``archsim.cost``,
``archsim.gemm``, ``archsim.profile`` and ``archsim.schedule`` likewise; ``plan`` refuses one, naming the cluster's
``device``.

Failed before the fix: ``cost --config chip.toml`` and ``gemm --config chip.toml`` were refused ("--config reads a
SCALE-Sim .cfg (a device TOML is for train, search and energy)") and printed the flags that would do the same;
``sparse`` named flags it does not take."""

from __future__ import annotations

import json

import pytest
from device_files import device_toml

from archsim.cli import main

# 4 cores × 2 arrays of 64 × 64 (ws) at 1.2 GHz, 3072 KiB of SRAM per array: three operand buffers of 1024 KiB
CHIP = device_toml(name="MyChip", arrays=8, arrays_per_core=2, rows=64, cols=64, dataflow="ws", clock_mhz=1200,
                   sram_kib=3072, hbm_gib=96, hbm_gbps=2000, intra_gbps=400, links=4)
# the same array by hand, as the old refusal named it
BY_HAND = ["--array", "64x64", "--dataflow", "ws", "--clock-ghz", "1.2", "--sram-kb", "1024,1024,1024"]
# and its DRAM under the cycle engine, the file's hbm_gbps per operand: 2000 GB/s ÷ (2 B × 1.2 GHz) = 833.3, 833
# words/cycle (docs/formats.md, "Memory bandwidth, stated once")
HBM_WORDS = 833


def _json(capsys, argv: list[str]) -> tuple[dict, str]:
    assert main(argv) == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


@pytest.mark.parametrize("dtype", [[], ["--dtype", "fp16"]])
def test_cost_on_a_device_toml_costs_its_array_as_the_flags_by_hand(tmp_path, capsys, dtype):
    chip = tmp_path / "chip.toml"
    chip.write_text(CHIP, encoding="utf-8")
    by_hand, _ = _json(capsys, ["cost", "resnet50", *BY_HAND, "--dtype", "fp16", "--energy", "--format", "json"])
    read, err = _json(capsys, ["cost", "resnet50", "--config", str(chip), *dtype, "--energy", "--format", "json"])
    per_array = list(by_hand["rows"][0])
    assert [{k: row[k] for k in per_array} for row in read["rows"]] == by_hand["rows"]  # the TOML's default: fp16
    assert f"{chip} is a device of 8 arrays" in err
    assert "add --dtype fp16" not in err


def test_cost_and_energy_say_the_same_notes_of_what_they_read(tmp_path, capsys):
    chip = tmp_path / "chip.toml"
    chip.write_text(CHIP.replace('name = "MyChip"', 'name = "MyChip"\nboard_watts = 300'), encoding="utf-8")
    notes = {}
    for command in ("cost", "energy"):
        _, err = _json(capsys, [command, "resnet50", "--config", str(chip), "--format", "json"])
        notes[command] = [line.split(": note: ", 1)[1] for line in err.splitlines() if ": note: " in line]
    assert any("board_watts" in line for line in notes["cost"])  # the unread key, said by the one reader
    assert any("device of 8 arrays" in line for line in notes["cost"])
    assert notes["cost"] == notes["energy"]  # both price train's fp16 unasked: no line asks for it


# The chip's seconds of the 300 × 200 × 100 GEMM (ws) on the file's 8 arrays of 64 × 64, which the flags by hand do not
# state: ⌈200/64⌉ · ⌈100/64⌉ = 8 folds, one wave, each array one fold of 2·64 + 64 + 300 − 2 = 490 cycles (SCALE-Sim's
# ws fold), 489 in SCALE-Sim's last-cycle index, at 1.2 GHz; its (300·200 + 200·100 + 300·100) · 2 B = 220 kB take
# 110 ns at 2000 GB/s, so the fold binds. Under --engine cycle the busiest array's fold, (300, 64, 64), is stepped at
# 2000 GB/s ÷ 8 arrays in 2-byte words at 1.2 GHz, 104 words/cycle per buffer: the whole fold in its 1024 KiB
# buffers, no stall, the same 489 cycles.
CHIP_SECONDS = 489 / 1.2e9


def _one_array(document: dict) -> dict:
    """A gemm document without the chip's column and meta: what the flags by hand print."""
    return {"meta": {k: v for k, v in document["meta"].items() if not k.startswith("chip_") and k != "per_array"},
            "rows": [{k: v for k, v in row.items() if k != "chip_seconds"} for row in document["rows"]]}


def test_gemm_on_a_device_toml_is_its_array_by_hand(tmp_path, capsys):
    chip = tmp_path / "chip.toml"
    chip.write_text(CHIP, encoding="utf-8")
    shape = ["gemm", "--m", "300", "--k", "200", "--n", "100", "--engine", "cycle", "--format", "json"]
    by_hand, _ = _json(capsys, [*shape, *BY_HAND, "--dtype", "fp16", "--bandwidth", str(HBM_WORDS)])
    read, err = _json(capsys, [*shape, "--config", str(chip)])
    assert _one_array(read) == by_hand  # the TOML's default: train's fp16
    assert read["rows"][0]["chip_seconds"] == pytest.approx(CHIP_SECONDS, rel=1e-12)
    assert read["meta"]["chip_arrays"] == 8
    assert "device of 8 arrays" in err


def test_the_library_reads_a_device_toml_as_the_commands_do(tmp_path):
    import archsim

    chip = tmp_path / "chip.toml"
    chip.write_text(CHIP, encoding="utf-8")
    by_hand = archsim.cost("layerpipe_sample", array="64x64", dataflow="ws", clock_ghz=1.2, sram_kb="1024,1024,1024",
                           dtype="fp16")
    with pytest.warns(UserWarning, match="device of 8 arrays"):
        read = archsim.cost("layerpipe_sample", config=chip, dtype="fp16")
    assert read.table[list(by_hand.table.columns)].equals(by_hand.table)
    gemm_by_hand = archsim.gemm(m=300, k=200, n=100, array="64x64", dataflow="ws", clock_ghz=1.2, dtype="fp16")
    with pytest.warns(UserWarning, match="device of 8 arrays"):
        gemm_read = archsim.gemm(m=300, k=200, n=100, config=str(chip))
    assert _one_array(gemm_read.to_dict()) == gemm_by_hand.to_dict()
    assert gemm_read.to_dict()["rows"][0]["chip_seconds"] == pytest.approx(CHIP_SECONDS, rel=1e-12)


def test_sparse_refuses_a_device_toml_saying_why_in_one_line(tmp_path, capsys):
    """A device TOML states no [sparsity] section; the refusal named --array and --dataflow, which sparse lacks."""
    chip = tmp_path / "chip.toml"
    chip.write_text(CHIP, encoding="utf-8")
    assert main(["sparse", "docs/examples/pruned_convs.csv", "--config", str(chip)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "[sparsity]" in err and "--array" not in err


# pipeline and schedule partition a network over processors that are arrays: the file's 4 cores × 2 arrays = 8
ARRAYS = ["--processors", "8"]


def test_pipeline_on_a_device_toml_is_its_arrays_by_hand(tmp_path, capsys):
    """``pipeline --config chip.toml`` was refused ("a device TOML is for train, search, cost, energy and gemm"); it
    now costs each layer on the file's array (64 × 64 ws at 1.2 GHz, three 1024 KiB SRAMs) and, with no
    --processors, partitions over the file's 8 arrays: the plan the flags by hand give on 8 processors."""
    chip = tmp_path / "chip.toml"
    chip.write_text(CHIP, encoding="utf-8")
    run = ["pipeline", "resnet50", "--dtype", "fp16", "--microbatches", "4", "--format", "json"]
    by_hand, _ = _json(capsys, [*run, *BY_HAND, *ARRAYS])
    read, err = _json(capsys, [*run, "--config", str(chip)])
    assert read == by_hand
    assert read["meta"]["processors"] == 8 and read["meta"]["clock_ghz"] == 1.2
    assert f"{chip} is a device of 8 arrays" in err
    fewer, _ = _json(capsys, [*run, "--config", str(chip), "--processors", "3"])  # a given count wins
    assert fewer == _json(capsys, [*run, *BY_HAND, "--processors", "3"])[0]


def test_schedule_on_a_device_toml_is_its_arrays_by_hand(tmp_path, capsys):
    """``schedule --config chip.toml`` (the cycle engine, so the SRAMs count) is the flags by hand on 8 devices, at
    train's fp16 as cost prices the TOML (no note asking for --dtype fp16)."""
    chip = tmp_path / "chip.toml"
    chip.write_text(CHIP, encoding="utf-8")
    # batch 1: the cycle engine steps every cycle (27 s at the default batch 32); the reading is what is checked
    run = ["schedule", "layerpipe_sample", "--policy", "gpipe", "--microbatches", "4", "--engine", "cycle",
           "--batch", "1", "--format", "json"]
    by_hand, _ = _json(capsys, [*run, *BY_HAND, *ARRAYS, "--dtype", "fp16", "--dram-bandwidth", str(HBM_WORDS)])
    read, err = _json(capsys, [*run, "--config", str(chip)])
    assert read == by_hand and read["rows"][0]["processors"] == 8
    assert "device of 8 arrays" in err and "add --dtype fp16" not in err


# batch 1: the cycle engine steps every cycle (27 s at the default batch 32); the reading is what is checked
HAND = {"array": "64x64", "dataflow": "ws", "clock_ghz": 1.2, "sram_kb": "1024,1024,1024", "dtype": "fp16", "batch": 1}


def _cycle_profiles(tmp_path) -> tuple:
    """layerpipe_sample on the cycle engine, from the device TOML and from the same array by hand."""
    import archsim

    chip = tmp_path / "chip.toml"
    chip.write_text(CHIP, encoding="utf-8")
    with pytest.warns(UserWarning, match="device of 8 arrays"):
        profile = archsim.profile("layerpipe_sample", config=chip, dtype="fp16", engine="cycle", batch=1)
    return profile, archsim.profile("layerpipe_sample", **{**HAND, "clock_ghz": None}, engine="cycle",
                                    bandwidth=HBM_WORDS)


# LayerPipe re-costs every split it tries on the cycle engine, and the fewer-processors note partitions on 1 … 7
# too: 17 s. The default run checks the same reading more cheaply: the profiles' equality (below) and pipeline
# --config chip.toml against the flags by hand (test_pipeline_on_a_device_toml_is_its_arrays_by_hand).
@pytest.mark.long
def test_the_library_pipelines_on_a_device_toml_as_by_hand_on_the_cycle_engine(tmp_path):
    import archsim

    profile, by_hand = _cycle_profiles(tmp_path)
    assert archsim.pipeline(profile, processors=8).max_stage_cost == archsim.pipeline(by_hand, processors=8).max_stage_cost


def test_the_library_profiles_and_schedules_on_a_device_toml_as_by_hand(tmp_path):
    import archsim

    chip = tmp_path / "chip.toml"
    profile, by_hand = _cycle_profiles(tmp_path)
    assert profile.total.tolist() == by_hand.total.tolist()
    with pytest.warns(UserWarning, match="device of 8 arrays"):
        read = archsim.schedule("layerpipe_sample", policy="gpipe", microbatches=4, config=chip, dtype="fp16",
                                engine="cycle", batch=1)
    assert read.to_dict() == archsim.schedule("layerpipe_sample", policy="gpipe", microbatches=4, processors=8,
                                              engine="cycle", dram_bandwidth=HBM_WORDS, **HAND).to_dict()


def test_plan_refuses_a_device_toml_in_one_line_naming_the_cluster_files_device(tmp_path, capsys):
    """plan prices one array per GPU of its cluster; a device TOML is a whole chip, which the cluster file names as
    its servers' device (then plan prices the layers on all its arrays): refused, saying so, not as a .cfg."""
    chip = tmp_path / "chip.toml"
    chip.write_text(CHIP, encoding="utf-8")
    assert main(["plan", "layerpipe_sample", "--cluster", "configs/clusters/testbed_1080ti.toml", "--microbatches",
                 "4", "--config", str(chip)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "servers' device in the cluster file" in err


def test_pipeline_without_processors_needs_a_device_file(capsys):
    """A plain SCALE-Sim .cfg states no array count: --processors stays required, in one line."""
    assert main(["pipeline", "layerpipe_sample", "--config", "configs/arrays/scalesim_32x32_ws.cfg"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "--processors is required" in err
