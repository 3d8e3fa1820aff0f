"""The library, its tests and its benchmarks pass ruff (pinned in the test extra, with the rule set and its
reasoned exceptions in pyproject.toml): the linter runs as a test, so the README's test command and CI check it
alike."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_code_passes_ruff():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "archsim", "tests", "benchmarks"],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
