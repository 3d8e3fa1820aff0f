"""The commands the strict-input tests run (a transformer on one A100 node, for ``train`` and
``search``) and the check that a command is refused: exit 2, nothing on stdout, one error line.
Shared by tests/test_caps_before_work.py and tests/test_strict_values.py."""

from __future__ import annotations

from pathlib import Path

from conftest import USAGE

from archsim.cli import main

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
