"""``gemm --config chip.toml`` says the lines ``cost`` says of the same file, word for word, both read by one reader
(:func:`archsim.device_toml.device_toml_notes`): the file's arrays and, under the cycle
engine without ``--bandwidth``, the words/cycle the file's ``[memory] hbm_gbps`` set (until 2026-12-05 a note that
the engine left it unread, naming the flag's value nearest the file's GB/s); ``archsim.gemm`` warns the same texts as
``archsim.cost``.

Before: gemm read the file with the array reader alone and said the unread HBM by a rule of its own (not under
``--min-bandwidth``, though its stall columns ran at the default words/cycle all the same)."""

from __future__ import annotations

import warnings

import pytest
from device_files import device_toml

import archsim
from archsim.cli import main

# 4 cores × 2 arrays of 64 × 64 at 1.2 GHz, 2000 GB/s of HBM: 2000 / 1.2 = 1666.7 one-byte words a cycle, so
# 1667 words/cycle (1667 × 1.2 = 2000.4 GB/s); at fp16 2000 / 2.4 = 833.3, so 833 (833 × 2.4 = 1999.2 GB/s)
CHIP = device_toml(name="MyChip", arrays=8, arrays_per_core=2, rows=64, cols=64, dataflow="ws", clock_mhz=1200,
                   sram_kib=3072, hbm_gib=96, hbm_gbps=2000, intra_gbps=400, links=4)


def _notes(capsys, argv: list[str]) -> list[str]:
    assert main(argv) == 0, capsys.readouterr().err
    err = capsys.readouterr().err
    return [line.split(": ", 1)[1] for line in err.splitlines() if line.startswith("archsim ")]


@pytest.mark.parametrize(("engine", "dtype", "nearest"), [
    ("cycle", ["--dtype", "int8"], "ran at 1667 words/cycle per operand buffer"),
    ("cycle", [], "ran at 833 words/cycle per operand buffer"),  # train's fp16, the TOML's default
    ("analytic", [], None),
])
def test_gemm_says_costs_lines_of_a_device_toml(tmp_path, capsys, engine, dtype, nearest):
    chip = tmp_path / "chip.toml"
    chip.write_text(CHIP, encoding="utf-8")
    config = ["--config", str(chip), "--engine", engine, *dtype]
    gemm = _notes(capsys, ["gemm", "--m", "64", "--k", "64", "--n", "64", *config])
    cost = _notes(capsys, ["cost", "ffnn8", *config])
    assert gemm == cost
    assert any("device of 8 arrays" in line for line in gemm)
    unread = [line for line in gemm if "hbm_gbps = 2000 GB/s" in line]
    assert len(unread) == (1 if nearest else 0)
    if nearest:
        assert nearest in unread[0] and unread[0].endswith("--bandwidth WORDS overrides it")


def test_gemm_says_the_hbm_rate_under_min_bandwidth_too(tmp_path, capsys):
    """--min-bandwidth adds a column; the stall cycles ran at the file's rate all the same."""
    chip = tmp_path / "chip.toml"
    chip.write_text(CHIP, encoding="utf-8")
    lines = _notes(capsys, ["gemm", "--m", "64", "--k", "64", "--n", "64", "--config", str(chip), "--engine", "cycle",
                            "--min-bandwidth"])
    assert any("ran at 833 words/cycle per operand buffer" in line for line in lines)


def test_the_library_gemm_warns_what_cost_warns(tmp_path):
    chip = tmp_path / "chip.toml"
    chip.write_text(CHIP, encoding="utf-8")
    said = {}
    for name, call in (("gemm", lambda: archsim.gemm(m=64, k=64, n=64, config=chip, engine="cycle")),
                       ("cost", lambda: archsim.cost("ffnn8", config=chip, engine="cycle"))):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        said[name] = [str(w.message) for w in caught]
    assert said["gemm"] == said["cost"]
    assert any("ran at 833 words/cycle" in text and text.endswith("bandwidth=WORDS overrides it")
               for text in said["gemm"])  # fp16's 2-byte words
