"""The energy of an iteration on a cluster mixing a catalog GPU (board power × time) with an array device (archsim's
energy model on the ops its own pipeline ranks run): each device priced by its own source and the two summed.
Before, ``energy_j`` was NaN there ("no board power known") unless the chip's file stated a ``board_watts``, which
then priced the chip at board power too; search's ``--objective energy`` refused such a cluster."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from device_files import device_toml
from test_docs import ROOT
from test_robustness import write

import archsim
from archsim.array.config import ArrayConfig
from archsim.cli import main
from archsim.energy import access_energies
from archsim.energy.model import op_energy_columns
from archsim.training.iteration import piece_works
from archsim.workload.model_files import load_transformer

MODEL = str(ROOT / "configs" / "transformers" / "gpt2.json")
# 4 arrays of 64 × 64 at 1 GHz, weight stationary, three operand SRAMs stated (KiB), no [energy]: the default table
CHIP = device_toml(name="chip", arrays=4, rows=64, cols=64, dataflow="ws", clock_mhz=1000,
                   sram_kib=[1024, 1024, 512], hbm_gib=16, hbm_gbps=1000, intra_gbps=100)
KEYWORDS = {"tp": 1, "pp": 2, "dp": 4, "global_batch": 16, "micro_batch": 2, "dtype": "bf16", "recompute": "none"}
A100_WATTS = 400  # the A100 80 GB's datasheet board power (docs/search.md, Objectives)
GPUS_PER_SERVER = 4


def cluster(tmp_path: Path, *servers: str, name: str = "mixed") -> str:
    """A cluster file of one ``GPUS_PER_SERVER``-GPU server per entry of ``servers`` ("a100" or "chip"), in order."""
    write(tmp_path / "chip.toml", CHIP)
    tables = "".join(f'\n[[servers]]\ngpus = {GPUS_PER_SERVER}\nintra_server_gbps = 1600\n'
                     + ('gpu = "a100-80gb"\n' if server == "a100" else 'device = "chip.toml"\n') for server in servers)
    return str(write(tmp_path / f"{name}.toml", f'[cluster]\nname = "{name}"\ninter_server_gbps = 200\n{tables}'))


def chip_joules(ranks: set[int], parameters: float) -> float:
    """By hand, docs/training.md "Accelerators (device files)": per micro-batch, the energy model (archsim.energy,
    default table) on the ops of the layers, embedding and head the chip's pipeline ``ranks`` hold — each op's
    accesses on one 64 × 64 ws array plus its memory-bound HBM words at the DRAM energy and its fused kernel's FP32
    lane operations, exponentials and integer instructions at the table's ``[fused]`` figures — × micro-batches × TP × DP;
    then each chip's optimizer step, 34 bytes per parameter in bf16 (2-byte words) at the DRAM energy, over the
    ``parameters`` one chip of each rank holds (× TP × DP chips). GPT-2's 12 layers: 6 per stage of PP 2."""
    config = load_transformer(MODEL)
    array = ArrayConfig(rows=64, cols=64, dataflow="ws", ifmap_sram_kb=1024, filter_sram_kb=1024, ofmap_sram_kb=512,
                        element_bytes=2, clock_hz=1e9)
    energies = access_energies(array)
    (layer, embedding, head), _ = piece_works(config, 2, 1, False, "flash", "megatron", "bf16")

    def picojoules(work) -> float:
        ops = [*work.forward, *work.backward]
        return sum(op_energy_columns(ops, array, energies)["energy_pj"]) + sum(
            op.vector_elements for op in ops) * energies.dram_read_pj + sum(  # + flash's non-matmul work
            op.lane_ops * energies.lane_pj + op.exps * energies.exp_pj + op.int_mults * energies.int_mult_pj
            + (op.int_ops - op.int_mults) * energies.int_pj for op in ops)

    per_microbatch = (6 * len(ranks) * picojoules(layer) + (0 in ranks) * picojoules(embedding)
                      + (1 in ranks) * picojoules(head))
    microbatches, tp, dp = 16 // (2 * 4), 1, 4
    optimizer = parameters * tp * dp * 34 / 2 * energies.dram_read_pj
    return (per_microbatch * microbatches * tp * dp + optimizer) * 1e-12


@pytest.mark.parametrize(("servers", "chip_rank"), [(("a100", "chip"), 1), (("chip", "a100"), 0)])
def test_train_sums_the_gpus_board_power_and_the_chips_energy_model_by_hand(tmp_path, capsys, servers, chip_rank):
    """Two servers, four A100s and four chips, PP 2 × DP 4: one rank on each. energy_j = 400 W × 4 GPUs ×
    the iteration's seconds + the chips' energy model joules on their own rank's ops (the head's on rank 1, the
    embedding's on rank 0), in the CLI's JSON and the library's result alike; energy_source names both sources."""
    path = cluster(tmp_path, *servers)
    result, _ = archsim.train(MODEL, cluster=path, **KEYWORDS)
    seconds = result.iteration_seconds
    board = A100_WATTS * GPUS_PER_SERVER * seconds
    chip = chip_joules({chip_rank}, result.memory[chip_rank].parameters)
    assert result.energy_j == pytest.approx(board + chip, rel=1e-9)
    assert 0.05 < chip / result.energy_j < 0.95  # both parts weigh: neither is lost in the other's round-off
    assert result.energy_source == ("chip: energy model on the ops' accesses (archsim.energy, default table); "
                                    "NVIDIA A100 SXM4 80GB: board power × iteration time")
    argv = ["train", MODEL, "--cluster", path, "--format", "json"]
    for key, value in KEYWORDS.items():
        argv += [f"--{key.replace('_', '-')}", str(value)]
    capsys.readouterr()
    assert main(argv) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert meta["energy_j"] == result.energy_j and meta["energy_source"] == result.energy_source
    assert "energy_dynamic_j" not in meta  # the two parts are an array cluster's alone


def test_the_chips_parts_on_either_rank_add_up_to_the_chip_alone(tmp_path):
    """Independent of the hand count: the chip's joules on rank 1 (A100s first) and on rank 0 (chips first), each the
    mixed energy less the A100s' board power, add up to the same layout run on eight chips, which prices the
    whole model on one device (none of the energy model's joules depend on the time)."""
    parts = []
    for servers in (("a100", "chip"), ("chip", "a100")):
        result, _ = archsim.train(MODEL, cluster=cluster(tmp_path, *servers, name="_".join(servers)), **KEYWORDS)
        parts.append(result.energy_j - A100_WATTS * GPUS_PER_SERVER * result.iteration_seconds)
    alone, _ = archsim.train(MODEL, cluster=cluster(tmp_path, "chip", "chip", name="chips"), **KEYWORDS)
    assert sum(parts) == pytest.approx(alone.energy_j, rel=1e-9)
    assert alone.energy_j == pytest.approx(chip_joules({0, 1}, alone.memory[0].parameters + alone.memory[1].parameters),
                                           rel=1e-9)


@pytest.mark.filterwarnings("ignore:.*intra_server_gbps = 1600:UserWarning")  # the tile file's own link, not the subject
def test_a_device_with_no_energy_figure_leaves_it_unknown_and_says_which(tmp_path):
    """The one case left NaN: a tile-timed device file (priced at board power) stating no ``board_watts``, beside
    the chip. The source names that device and the keys that would price it."""
    tiles = (ROOT / "configs" / "devices" / "a100_80gb_as_arrays.toml").read_text(encoding="utf-8")
    write(tmp_path / "tiles.toml", tiles.replace('name = "NVIDIA A100 SXM4 80GB"', 'name = "tiles"').replace(
        "board_watts = 400", ""))
    path = cluster(tmp_path, "chip", "a100")
    text = Path(path).read_text(encoding="utf-8").replace('gpu = "a100-80gb"', 'device = "tiles.toml"')
    write(Path(path), text)
    result, _ = archsim.train(MODEL, cluster=path, **KEYWORDS)
    assert result.energy_j is None
    assert result.energy_source.startswith("none: no default figure for tiles") and "gpu_watts" in result.energy_source


def test_search_prices_a_mixed_row_as_train_and_ranks_by_it(tmp_path, capsys):
    """search's ``energy_j`` of the mixed layout is train's (it was NaN, and ``--objective energy`` refused the
    cluster for the chip's missing board power); the 4-GPU rows on the A100s alone stay board power × time, and
    the note says the two ways apart."""
    path = cluster(tmp_path, "a100", "chip")
    capsys.readouterr()
    assert main(["search", MODEL, "--cluster", path, "--global-batch", "16", "--gpus", "4", "8", "--objective",
                 "energy", "--recompute", "none", "--schedule", "1f1b", "--sequence-parallel", "off",
                 "--max-micro-batch", "2", "--dtype", "bf16", "--top", "1000", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    rows = json.loads(out)["rows"]
    row = next(r for r in rows if (r["gpus"], r["tp"], r["pp"], r["dp"], r["micro_batch"]) == (8, 1, 2, 4, 2))
    result, _ = archsim.train(MODEL, cluster=path, schedule="1f1b", **KEYWORDS)
    assert row["iteration_seconds"] == pytest.approx(result.iteration_seconds, rel=1e-9)
    assert row["energy_j"] == pytest.approx(result.energy_j, rel=1e-9)
    a100s = [r for r in rows if r["gpus"] == 4]
    assert a100s and all(r["energy_j"] == pytest.approx(1600 * r["iteration_seconds"], rel=1e-12) for r in a100s)
    assert all(math.isfinite(r["energy_j"]) for r in rows)
    assert ("energy_j is found two ways here (4 GPUs: board power × time; 8 GPUs: the energy model's on the array "
            "devices plus board power × time on the others)") in err, err


@pytest.mark.filterwarnings("ignore:gpu_watts is not read:UserWarning")  # the library's form of the note checked here
def test_gpu_watts_is_noted_unread_on_the_chips_server_only(tmp_path, capsys):
    """On a mixed cluster the chip's server's ``gpu_watts`` prices nothing (the energy model prices the chip) and is
    noted; the A100 server's prices its GPUs and is not: 300 W × 4 × seconds where the datasheet's 400 W was."""
    path = cluster(tmp_path, "a100", "chip")
    text = Path(path).read_text(encoding="utf-8")
    for watts, server in ((None, None), (300, 'gpu = "a100-80gb"'), (300, 'device = "chip.toml"')):
        name = f"{watts}_{'chip' if server and 'chip' in server else 'a100'}"
        edited = text if server is None else text.replace(server, f"{server}\ngpu_watts = {watts}")
        result, _ = archsim.train(MODEL, cluster=str(write(tmp_path / f"{name}.toml", edited)), **KEYWORDS)
        if server is None:
            base = result
            continue
        capsys.readouterr()
        argv = ["train", MODEL, "--cluster", str(tmp_path / f"{name}.toml"), "--format", "json"]
        for key, value in KEYWORDS.items():
            argv += [f"--{key.replace('_', '-')}", str(value)]
        assert main(argv) == 0
        err = capsys.readouterr().err
        noted = "gpu_watts is not read by train on an array device" in err
        chip_part = base.energy_j - 1600 * base.iteration_seconds
        if "chip" in server:
            assert noted and result.energy_j == base.energy_j
        else:
            assert not noted, err
            assert result.energy_j == pytest.approx(chip_part + 1200 * result.iteration_seconds, rel=1e-9)
