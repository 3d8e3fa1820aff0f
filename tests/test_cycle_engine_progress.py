"""The cycle engine's bars (issue #40: a bar on stderr, on a terminal only, for a command that can run past 2 s).
``gemm --engine cycle`` stepped one 4096x4096x1024 GEMM for 14 s with nothing drawn: its bar counts GEMMs with a
1 s delay, and a delayed bar is drawn only at an update past it, here the last. ``pipeline --method layerpipe
--engine cycle`` then compared the plan with Algorithm 1's on every fewer processor count, 26 s of stepping with no
bar. The counts below are by hand; a pipe gets nothing."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from recorded_bars import RecordingBar, record_bars

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def bars(monkeypatch) -> list[RecordingBar]:
    return record_bars(monkeypatch)


def test_gemm_bar_counts_gemms_and_is_drawn_at_once_for_a_long_one(bars, monkeypatch) -> None:
    """Three GEMMs: 3 counted, one update each, each named as it starts. 4096x4096x1024 on 32x32 ws is
    ⌈4096/32⌉·⌈1024/32⌉ = 4096 folds of 2·32 + 32 + 4096 − 2 = 4190 cycles, 17.2 M stall-free cycles: over
    the cycle engine's ~1.2 M a second, so drawn at once (delay 0); 64x64x64 alone (4 folds of about 158 cycles)
    is drawn only after 1 s."""
    from archsim.array.config import ArrayConfig
    from archsim.array.gemm_run import cycle_columns

    monkeypatch.setattr("archsim.array.gemm_run._cycle_row",  # nothing stepped: the bar alone is under test
                        lambda out, *_args: [column.append(0) for column in out.values()])
    rows = [(64, 64, 64), (4096, 4096, 1024), (128, 64, 32)]
    shapes = pd.DataFrame([(m, k, n, 32, 32, "ws") for m, k, n in rows], columns=["m", "k", "n", "rows", "cols",
                                                                                  "dataflow"])
    cycle_columns(shapes, ArrayConfig(rows=32, cols=32))
    cycle_columns(shapes.iloc[:1], ArrayConfig(rows=32, cols=32))
    assert [(bar.total, bar.unit) for bar in bars] == [(3, "GEMM"), (1, "GEMM")]
    assert bars[0].updates == [1, 1, 1] and bars[0].postfixes == ["64x64x64", "4096x4096x1024", "128x64x32"]
    assert [bar.options["delay"] for bar in bars] == [0.0, 1.0]


def test_layerpipe_fewer_processor_plans_are_counted(bars) -> None:
    """pipeline on 4 processors compares Algorithm 1's plan with its plans on 1, 2 and 3: 3 plans counted, one update
    as each is built; other methods build none and draw no bar."""
    from archsim.cli import main

    argv = ["pipeline", str(ROOT / "docs" / "examples" / "tiny_resnet.csv"), "--processors", "4", "--format", "csv"]
    assert main(argv + ["--method", "layerpipe"]) == 0
    fewer = [bar for bar in bars if bar.unit == "plan" and bar.enabled]  # the analytic plan itself: no bar
    assert [(bar.desc, bar.total, bar.updates, bar.options["delay"]) for bar in fewer] == [
        ("layerpipe on fewer processors", 3, [1, 1, 1], 1.0)]
    bars.clear()
    assert main(argv + ["--method", "gpipe"]) == 0
    assert [bar for bar in bars if bar.unit == "plan" and bar.enabled] == []


def test_layerpipe_plan_on_the_cycle_engine_has_its_bar(bars) -> None:
    """On the cycle engine Algorithm 1's δ splits are stepped (2.9 s of tiny_resnet's 8-processor plan on the TPU v4
    device file, nothing drawn): its one plan has a bar, then the fewer processors' 2 plans (on 3) one drawn at once."""
    from archsim.cli import main

    argv = ["pipeline", str(ROOT / "docs" / "examples" / "tiny_resnet.csv"), "--processors", "3", "--batch", "1",
            "--format", "csv", "--method", "layerpipe"]
    assert main(argv + ["--engine", "cycle"]) == 0
    plans = [(bar.desc, bar.total, bar.updates, bar.enabled, bar.options.get("delay")) for bar in bars
             if bar.unit == "plan"]
    assert plans == [("pipeline layerpipe", 1, [1], True, None),
                     ("layerpipe on fewer processors", 2, [1, 1], True, 0.0)]


SHAPES = "m,k,n,rows,cols,dataflow\n1024,1024,1024,32,32,ws\n1024,1024,512,32,32,ws\n"
# 32·32 folds of 2·32 + 32 + 1024 − 2 = 1118, plus 32·16 folds of the same: 1.72 M stall-free cycles, over 1.2 M


def _gemm(tmp_path: Path) -> list[str]:
    shapes = tmp_path / "shapes.csv"
    shapes.write_text(SHAPES, encoding="utf-8")
    return [sys.executable, "-m", "archsim", "gemm", "--shapes", str(shapes), "--engine", "cycle", "--format", "csv"]


def _on_terminal(argv: list[str]) -> str:
    """What ``argv`` writes on a pseudo-terminal (stdout and stderr both), read to its end."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: stdout and stderr on the terminal
        os.execv(argv[0], argv)
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the terminal closed as the child ended
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.long
def test_gemm_draws_its_bar_on_a_terminal_and_nothing_on_a_pipe(tmp_path) -> None:
    """On a terminal: the bar of 2 GEMMs, drawn at once naming the first, then each finished. On a pipe: stdout is
    the table alone and stderr is empty (gemm on a plain array says nothing)."""
    seen = _on_terminal(_gemm(tmp_path))
    assert "cycle engine:   0%" in seen and "0/2" in seen and "1024x1024x1024" in seen and "1/2" in seen
    piped = subprocess.run(_gemm(tmp_path), capture_output=True, check=True)
    assert piped.stderr == b""
    assert b"\r" not in piped.stdout and piped.stdout.decode().count("\n") == 3
