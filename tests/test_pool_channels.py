"""A pool row keeps its input's channels (layers/README.md: "Pooling rows have Channels = Num Filter").
A row that said otherwise (3 channels in, 16 out) was accepted and costed as 16 channels of output: the
pool's cycles and its activation bytes 16/3 times too large, with no word. It is refused now, as an
elementwise or batchnorm row with a different Num Filter is."""

from __future__ import annotations

from test_robustness import clean_error

from archsim.cli import main

HEADER = "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, Padding, Type, Inputs,"


def test_a_pool_that_changes_the_channel_count_is_refused(tmp_path, capsys):
    path = tmp_path / "p.csv"
    path.write_text(f"{HEADER}\np1, 32, 32, 2, 2, 3, 16, 2, 0, pool, input,\n", encoding="utf-8")
    line = clean_error(capsys, "cost", path, "--batch", "2")
    assert "line 2, field 'Num Filter'" in line and "pool keeps the channel count" in line


def test_a_pool_that_keeps_it_is_costed(tmp_path, capsys):
    path = tmp_path / "p.csv"
    path.write_text(f"{HEADER}\np1, 32, 32, 2, 2, 3, 3, 2, 0, pool, input,\n", encoding="utf-8")
    assert main(["cost", str(path), "--batch", "2", "--format", "csv"]) == 0
    row = capsys.readouterr().out.splitlines()[1].split(",")
    assert row[0] == "p1" and int(row[9]) == 2 * 16 * 16 * 3  # activation_bytes: batch · 16×16 · 3 channels


def test_a_pool_with_one_filter_reduces_its_channels_too(tmp_path, capsys):
    """Num Filter 1 on a pool reads its window over every channel (a reduction over features, as ``archsim
    import`` writes one): a 1×1 window over 8 channels of a 6×1 map, batch 2, by hand: F reads 2·6·8 = 96
    elements, ⌈96 / 8 columns⌉ = 12 cycles on an 8×8 array, and writes 2·6·1 = 12 bytes (before: refused as a
    pool changing its channel count). Num Filter 2 (neither 8 nor 1) is still refused."""
    path = tmp_path / "p.csv"
    path.write_text(f"{HEADER}\nmean, 6, 1, 1, 1, 8, 1, 1, 0, pool, input,\n", encoding="utf-8")
    assert main(["cost", str(path), "--batch", "2", "--array", "8x8", "--format", "csv"]) == 0
    row = capsys.readouterr().out.splitlines()[1].split(",")
    assert row[0] == "mean" and int(row[2]) == 12 and int(row[9]) == 12  # F_cycles, activation_bytes
    path.write_text(f"{HEADER}\nmean, 6, 1, 1, 1, 8, 2, 1, 0, pool, input,\n", encoding="utf-8")
    line = clean_error(capsys, "cost", path, "--batch", "2")
    assert "line 2, field 'Num Filter'" in line and "pool keeps the channel count" in line
