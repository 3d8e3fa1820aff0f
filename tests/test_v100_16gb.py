"""The V100 SXM2 16 GB: NVIDIA's Tesla V100 datasheet lists the SXM2 module with 16 or 32 GB of HBM2, the same
80 SMs, 1530 MHz boost, 900 GB/s and peaks. CUDA names it "Tesla V100-SXM2-16GB". Failed before: that name was
read as the catalog's 32 GB board (``find_gpu`` gave ``v100``, and a cluster of them was refused for its memory),
so no run could be made on the 16 GB part; now it is the catalog's ``v100-16gb``, 16 GiB, its kernel times the
32 GB board's to the last bit (only the memory differs)."""

from __future__ import annotations

import json
from pathlib import Path

from archsim.cli import main
from archsim.devices.catalog import GPUS
from archsim.devices.gpu_lookup import find_gpu, gpu
from archsim.units import GIB

ROOT = Path(__file__).resolve().parents[1]
GPT2 = str(ROOT / "configs" / "transformers" / "gpt2.json")


def _cluster(tmp_path: Path, name: str) -> str:
    path = tmp_path / f"{name.replace(' ', '_')}.toml"
    path.write_text(f'[cluster]\nname = "v"\n\n[[servers]]\ncount = 1\ngpus = 1\nintra_server_gbps = 1200\n'
                    f'gpu = "{name}"\n', encoding="utf-8")
    return str(path)


def test_the_cuda_name_is_the_16_gb_board():
    assert find_gpu("Tesla V100-SXM2-16GB") == "v100-16gb"
    board = gpu("Tesla V100-SXM2-16GB")
    assert board is GPUS["v100-16gb"] and board.memory_bytes == 16 * GIB  # the datasheet's 16 GB (GiB)
    assert "16GB" in board.name and "32" not in board.name
    assert find_gpu("Tesla V100-SXM2-32GB") == "v100" and gpu("v100") is GPUS["v100-32gb"]  # unchanged


def test_its_figures_are_the_32_gb_parts_but_memory():
    small, large = GPUS["v100-16gb"], GPUS["v100-32gb"]
    assert small.hbm_bytes_per_s == large.hbm_bytes_per_s == 900e9  # the datasheet's HBM2 900 GB/s
    assert small.arrays == large.arrays and small.lanes == large.lanes and small.peaks == large.peaks
    assert small.nvlink_bytes_per_s == large.nvlink_bytes_per_s and small.board_watts == large.board_watts


def test_train_on_it_says_16_gb_and_times_as_the_32_gb_board(tmp_path, capsys):
    runs = {}
    for name in ("Tesla V100-SXM2-16GB", "Tesla V100-SXM2-32GB"):
        argv = ["train", GPT2, "--cluster", _cluster(tmp_path, name), "--global-batch", "1", "--format", "json"]
        assert main(argv) == 0, capsys.readouterr().err
        runs[name] = json.loads(capsys.readouterr().out)
    small, large = runs["Tesla V100-SXM2-16GB"], runs["Tesla V100-SXM2-32GB"]
    assert "16GB" in small["meta"]["gpu"] and small["meta"]["memory_capacity_gib"] == 16
    assert large["meta"]["memory_capacity_gib"] == 32
    assert small["meta"]["iteration_seconds"] == large["meta"]["iteration_seconds"]  # identical, not approx
    assert [row["seconds"] for row in small["rows"]] == [row["seconds"] for row in large["rows"]]

