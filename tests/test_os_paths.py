"""Paths the OS refuses — a name longer than NAME_MAX, a folder that is a file — as inputs or
outputs through the CLI: one clean error naming the path, never an OSError traceback, and nothing
left behind (the acceptance fuzz run found the first, a sweep's network)."""

import pytest
from test_robustness import SAMPLE_SWEEP, clean_error, write

LONG = "x" * 300


@pytest.mark.parametrize("argv", [
    ["cost", LONG], ["cost", LONG + ".csv"], ["cost", LONG + ".onnx"], ["cost", LONG + ".json"],
    ["cost", "a/" + LONG], ["energy", "layerpipe_sample", "--energy-table", LONG],
    ["energy", "layerpipe_sample", "--energy-table", LONG + ".toml"], ["sweep", LONG + ".toml"],
])
def test_names_too_long_for_the_os(capsys, argv):
    line = clean_error(capsys, *argv)
    assert any(why in line for why in ("not found", "no shipped network", "no shipped transformer", "unknown energy table",
                                       "File name too long")), line


def test_a_sweep_network_name_too_long_for_the_os(capsys, tmp_path):
    text = SAMPLE_SWEEP.read_text(encoding="utf-8")
    start = text.index("networks = ")
    path = write(tmp_path / "s.toml", text[:start] + f'networks = ["-1 {LONG}"]\n' + text[text.index("\n", start) + 1:])
    assert "field 'networks'" in clean_error(capsys, "sweep", path, "--out", tmp_path / "out")


@pytest.mark.parametrize("where", ["too long", "under a file"])
@pytest.mark.parametrize("argv", [
    ["cost", "layerpipe_sample", "--out", "{}.csv"],
    ["schedule", "layerpipe_sample", "--policy", "1f1b", "--processors", 2, "--microbatches", 4, "--gantt", "{}.html"],
    ["sweep", SAMPLE_SWEEP, "--out", "{}"],
])
def test_outputs_that_cannot_be_written(capsys, tmp_path, where, argv):
    """An output path the OS refuses is one clean error naming it, and nothing is left behind."""
    blocker = write(tmp_path / "a_file", "x")
    target = tmp_path / LONG if where == "too long" else blocker / "out"
    line = clean_error(capsys, *[str(target) + str(a)[2:] if str(a).startswith("{}") else a for a in argv])
    assert "cannot write" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]
