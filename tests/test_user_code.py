"""`archsim import FILE.py:Class` runs the user's file as Python (issue 39, item 5): whatever it
raises while being imported, built or traced — SystemExit and KeyboardInterrupt included — is one
line and exit 2, and a file that never finishes is stopped by --timeout. Before the fix a
`raise SystemExit` at import ended archsim silently with the file's own status, and an exception
while tracing was a traceback."""

from __future__ import annotations

import time

import pytest
from test_robustness import clean_error, write

pytest.importorskip("torch")

MODEL = """import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        {init}
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        {forward}
        return self.fc(x)
"""
WHERE = {"import": "{raise_it}\n" + MODEL.format(init="pass", forward="pass"),
         "build": MODEL.format(init="{raise_it}", forward="pass"),
         "trace": MODEL.format(init="pass", forward="{raise_it}")}
RAISED = {"SystemExit": "raise SystemExit(3)", "KeyboardInterrupt": "raise KeyboardInterrupt",
          "BaseException": "raise BaseException('odd')", "GeneratorExit": "raise GeneratorExit",
          "ValueError": "raise ValueError('bad')"}


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("raised", RAISED)
def test_whatever_the_users_code_raises_is_one_line(tmp_path, capsys, where, raised):
    path = write(tmp_path / "model.py", WHERE[where].format(raise_it=RAISED[raised]))
    line = clean_error(capsys, "import", f"{path}:Net", "--input-shape", "1,4")
    said = "export failed: bad" if (where, raised) == ("trace", "ValueError") else f"raised {raised}"  # torch's words
    assert said in line and str(path) in line, line


@pytest.mark.parametrize("where", WHERE)
def test_a_file_that_never_finishes_is_stopped_by_the_timeout(tmp_path, capsys, where):
    path = write(tmp_path / "model.py", WHERE[where].format(raise_it="while True: pass"))
    start = time.monotonic()
    line = clean_error(capsys, "import", f"{path}:Net", "--input-shape", "1,4", "--timeout", "0.3")
    assert "did not finish within 0.3 s" in line and "--timeout" in line, line
    assert time.monotonic() - start < 60  # stopped, not run to the end (there is none)


def test_an_except_exception_in_the_loop_does_not_swallow_the_timeout(tmp_path, capsys):
    loop = "while True:\n    try:\n        time.sleep(0.01)\n    except Exception:\n        pass\n"
    path = write(tmp_path / "model.py", "import time\n" + loop + MODEL.format(init="pass", forward="pass"))
    assert "did not finish" in clean_error(capsys, "import", f"{path}:Net", "--input-shape", "1,4", "--timeout", "0.3")


def test_the_timeout_is_not_left_armed(tmp_path, capsys):
    """A model that finishes leaves no alarm behind to kill whatever runs next."""
    import signal

    from archsim.cli import main

    path = write(tmp_path / "model.py", MODEL.format(init="pass", forward="pass"))
    handler = signal.getsignal(signal.SIGALRM)
    assert main(["import", f"{path}:Net", "--input-shape", "1,4", "--timeout", "5"]) == 0
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0) and signal.getsignal(signal.SIGALRM) == handler
    assert len(capsys.readouterr().out.splitlines()) == 2  # the header and the one linear layer


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "x"])
def test_a_bad_timeout_is_one_line(tmp_path, capsys, value):
    path = write(tmp_path / "model.py", MODEL.format(init="pass", forward="pass"))
    assert "timeout" in clean_error(capsys, "import", f"{path}:Net", "--input-shape", "1,4", "--timeout", value)
