"""A device sweep's array axes keep the file's cores (docs/formats.md, "Device sweep spec"): a chip of 4 cores × 2
arrays with a vector unit that states no ``cores`` is repeated in those 4 cores. Until 2026-12-04 every point was
one array per core, so the sweep's point of the file's own shape (8 × 256²) priced flash attention's non-matmul work
on a vector unit twice as wide as the file's and ran faster than `archsim train` on the file itself."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from device_files import device_toml
from test_robustness import write

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
CHIP = device_toml(name="four-core", arrays=8, arrays_per_core=2, rows=256, cols=256, clock_mhz=1200,
                   sram_kib=8192, hbm_gib=96, hbm_gbps=2000, intra_gbps=400) + "\n[vector]\nlanes = 128\nsublanes = 8\n"
SETTINGS = ["--dp", "4", "--global-batch", "8", "--dtype", "bf16", "--seq", "1024", "--format", "json"]


def train_seconds(device_text: str, folder: Path, capsys) -> float:
    """`archsim train` of GPT-2 on 4 chips of ``device_text`` in one server, linked as the sweep links them."""
    folder.mkdir(exist_ok=True)
    write(folder / "chip.toml", device_text)
    cluster = write(folder / "c.toml", '[cluster]\nname = "c"\n[[servers]]\ncount = 1\ngpus = 4\n'
                                       'device = "chip.toml"\n')  # in-server link: the file's intra_gbps
    capsys.readouterr()
    assert main(["train", str(ROOT / "configs" / "transformers" / "gpt2.json"), "--cluster", str(cluster),
                 *SETTINGS]) == 0
    return float(json.loads(capsys.readouterr().out)["meta"]["iteration_seconds"])


def test_the_files_own_shape_trains_as_the_file_and_keeps_its_vector_unit(tmp_path, capsys):
    write(tmp_path / "chip.toml", CHIP)
    spec = write(tmp_path / "s.toml", '[sweep]\nmodel = "gpt2"\ndevice = "chip.toml"\narray_sides = [256, 128]\n'
                                      'chips = [4]\nglobal_batch = 8\nseq = 1024\ndtype = "bf16"\n')
    assert main(["sweep", str(spec), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    with (tmp_path / "out" / "results.csv").open(encoding="utf-8", newline="") as handle:
        rows = {row["arrays"]: float(row["iteration_seconds"]) for row in csv.DictReader(handle)}
    assert rows["8x256x256"] == pytest.approx(train_seconds(CHIP, tmp_path / "file", capsys), rel=1e-12)
    # 32 arrays of 128² on the file's 4 cores: 8 per core, the vector unit as the file states it
    four = CHIP.replace("arrays = 8\narrays_per_core = 2\nrows = 256\ncols = 256\n",
                        "arrays = 32\narrays_per_core = 8\nrows = 128\ncols = 128\n")
    assert four != CHIP
    assert rows["32x128x128"] == pytest.approx(train_seconds(four, tmp_path / "four", capsys), rel=1e-12)
    # one array per core (the rule until 2026-12-04) widens the vector unit 8×, which times flash's work shorter
    wide = four.replace("arrays_per_core = 8\n", "arrays_per_core = 1\n")
    assert train_seconds(wide, tmp_path / "wide", capsys) < rows["32x128x128"]


def test_intra_gbps_is_the_sum_over_the_links(tmp_path, capsys):
    """docs/formats.md: 4 links of 100 GB/s are ``intra_gbps = 400``, ``links = 4``; the count is not timed, so a
    designer who writes one link's 100 GB/s beside ``links = 4`` gets a quarter of the fabric, not the chip."""
    def seconds(intra: int, links: int, folder: str) -> float:
        text = device_toml(name="four-core", arrays=8, arrays_per_core=2, rows=256, cols=256, clock_mhz=1200,
                           sram_kib=8192, hbm_gib=96, hbm_gbps=2000, intra_gbps=intra, links=links)
        return train_seconds(text, tmp_path / folder, capsys)

    summed = seconds(400, 4, "summed")
    assert summed == seconds(400, 1, "one")  # the count is recorded, not timed
    assert seconds(100, 4, "per_link") > summed  # one link's figure: a slower DP all-reduce
