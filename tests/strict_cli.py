"""The commands the strict-input tests run (a transformer on one A100 node, for ``train`` and
``search``) and the check that a command is refused: exit 2, nothing on stdout, one error line.
Shared by tests/test_caps_before_work.py, tests/test_strict_values.py and the input-check files of
issue 49 (tests/test_inputs49.py, tests/test_inputs49b.py), with the API's twin: :func:`raised`."""

from __future__ import annotations

from pathlib import Path

from conftest import USAGE

from archsim.cli import main
from archsim.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "configs/transformers/gpt_1024h_24l.json")
CLUSTER = str(ROOT / "configs/clusters/a100_node.toml")
TRAIN = ["train", MODEL, "--cluster", CLUSTER, "--format", "json"]
SEARCH = ["search", MODEL, "--cluster", CLUSTER, "--global-batch", "64", "--format", "json"]


def refused(capsys, argv: list[str]) -> str:
    """The one error line of a command that must exit 2 having written nothing to stdout."""
    assert main(argv) == 2, argv
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and USAGE.match(err), err
    return err


def said(argv: list[str], capsys) -> str:
    """:func:`refused`'s line without its newline."""
    return refused(capsys, argv).strip()


def raised(call) -> str:
    """The message of the InputError an API call must raise."""
    import pytest

    with pytest.raises(InputError) as refusal:
        call()
    return str(refusal.value)
