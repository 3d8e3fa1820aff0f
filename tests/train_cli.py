"""Running ``archsim`` in-process as a test reads its output: :func:`run_cli` (stdout of a command that must
succeed, stderr in the failure's message) and :func:`train_json` (``archsim train``'s ``--format json`` document).
Shared by tests/test_host_bound.py and tests/test_compute_split.py (and the files that import them)."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

from archsim.cli import main


def run_cli(args: list[str]) -> str:
    """The stdout of ``archsim ARGS``, which must exit 0 (its stderr is the assertion's message otherwise)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(args)
    assert code == 0, err.getvalue()
    return out.getvalue()


def train_json(args: list[str]) -> dict:
    """``archsim train ARGS --format json``'s document (``meta`` and ``rows``)."""
    return json.loads(run_cli(["train", *args, "--format", "json"]))
