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
