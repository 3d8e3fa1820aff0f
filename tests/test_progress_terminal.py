"""Progress bars only on a terminal: output sent to a file or a pipe carries no bar (issue reproducer:
a sweep drew its bar into a redirected stderr)."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from archsim import progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_on_terminal_asks_the_stream_it_draws_on():
    assert progress.on_terminal(Terminal()) is True
    assert progress.on_terminal(io.StringIO()) is False
    assert progress.on_terminal(object()) is False  # no isatty at all
    closed = io.StringIO()
    closed.close()
    assert progress.on_terminal(closed) is False  # isatty raises ValueError


def test_a_bar_draws_on_a_terminal_and_not_on_a_file():
    shown, hidden = Terminal(), io.StringIO()
    for stream in (shown, hidden):
        with progress.progress(3, "work", "step", file=stream, mininterval=0) as bar:
            bar.update(3)
    assert "3/3" in shown.getvalue() and hidden.getvalue() == ""


@pytest.mark.long
def test_a_sweep_redirected_to_a_file_draws_no_bar(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('[sweep]\nname = "p"\nnetworks = ["layerpipe_sample"]\narrays = ["16x16"]\n'
                    'batches = [4]\nprocessors = [2]\nmethods = ["gpipe"]\n')
    with open(tmp_path / "err.txt", "w") as err:
        done = subprocess.run([sys.executable, "-m", "archsim", "sweep", str(spec), "--out", str(tmp_path / "out")],
                              stdout=subprocess.DEVNULL, stderr=err, check=False, timeout=300, env={**os.environ})
    assert done.returncode == 0
    text = (tmp_path / "err.txt").read_text()
    assert "config" not in text and "%|" not in text
