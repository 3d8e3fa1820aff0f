"""README's command lines cannot go stale: every sub-command it names is one the CLI registers, every flag
its synopsis gives is one of that command's, and every synopsis line with nothing left to fill in runs.

tests/test_docs.py runs the ```bash blocks; README's ```text synopsis ("## Commands") is read only here.
A synopsis line is complete when, its `# comment` and `[optional]` groups dropped, no word is a placeholder
(a word with a capital letter — NETWORK, FILE.cfg, RxC — or an ellipsis); a choice `a|b` stands for one run
per alternative that is not itself a placeholder (`--trace FILE|synthetic`: `--trace synthetic`).
"""

from __future__ import annotations

import argparse
import itertools
import re
import shlex
from pathlib import Path

import pytest

from archsim import cli

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)


def command_segments(text: str) -> list[str]:
    """Every `archsim …` command of the fenced blocks of ``text``, comments dropped; a line holding two
    (`archsim sweep SPEC.toml [--report]        archsim report RESULTS_DIR`) gives both."""
    found = []
    for _, body in FENCE.findall(text):
        for line in body.splitlines():
            line = re.split(r"\s#", line)[0].strip()
            if line.startswith("archsim "):
                found += [part.strip() for part in re.split(r"\s+(?=archsim )", line)]
    return found


def is_placeholder(word: str) -> bool:
    return any(ch.isupper() for ch in word) or "…" in word


def complete_commands(text: str) -> list[str]:
    """The runs the complete commands of ``text`` stand for (module docstring's rule), in order."""
    runs = []
    for segment in command_segments(text):
        words = re.sub(r"\s*\[[^\]]*\]", "", segment).split()
        options = [[alt for alt in word.split("|") if not is_placeholder(alt)] for word in words]
        if all(options):
            runs += [" ".join(choice) for choice in itertools.product(*options)]
    return runs


def named_commands(text: str) -> set[str]:
    """The sub-command words after `archsim` in ``text``'s fenced commands and inline spans."""
    spans = re.findall(r"`archsim ([^`\s]+)", text)
    words = [segment.split()[1] for segment in command_segments(text) if len(segment.split()) > 1] + spans
    return {word for word in words if not word.startswith("-") and not is_placeholder(word)}


def options_of(parser: argparse.ArgumentParser) -> set[str]:
    """A parser's option strings with those of its sub-parsers (`bppsa rnn`'s under `bppsa`)."""
    found = set(parser._option_string_actions)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found |= options_of(child)
    return found


def test_extraction_rule_on_a_hand_written_synopsis():
    text = ("```text\narchsim a NETWORK --x 1\narchsim b x|y [--m M]   # c --z\n"
            "archsim c --t FILE|s --p u|v|…  archsim d RESULTS_DIR\n```\n`archsim e` and `archsim --help`\n")
    assert command_segments(text) == ["archsim a NETWORK --x 1", "archsim b x|y [--m M]",
                                      "archsim c --t FILE|s --p u|v|…", "archsim d RESULTS_DIR"]
    assert complete_commands(text) == ["archsim b x", "archsim b y", "archsim c --t s --p u", "archsim c --t s --p v"]
    assert named_commands(text) == {"a", "b", "c", "d", "e"}


def test_every_command_readme_names_is_registered():
    named = named_commands(README)
    assert len(named) >= 15  # cost … search: the synopsis's fifteen
    registered = {name for name, _, _ in cli.REGISTRY}
    assert named <= registered, f"README names commands the CLI lacks: {sorted(named - registered)}"


def test_every_synopsis_flag_is_its_commands():
    parser = cli.build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    checked = 0
    for segment in command_segments(README):
        name = segment.split()[1]
        if name not in commands:
            continue  # test_every_command_readme_names_is_registered names it
        flags = {word.split("=")[0] for word in re.sub(r"[\[\]]", " ", segment).split() if word.startswith("--")}
        unknown = flags - options_of(commands[name])
        assert not unknown, f"README: {segment!r} gives flags archsim {name} lacks: {sorted(unknown)}"
        checked += len(flags)
    assert checked >= 30


COMPLETE = complete_commands(README)


def test_readme_has_complete_commands():
    # the worked example; bppsa rnn and pruned-vgg11; cluster's synthetic trace under its four policies
    assert len(COMPLETE) >= 7


@pytest.mark.long
@pytest.mark.parametrize("command", COMPLETE)
def test_complete_readme_command_runs(command, tmp_path, monkeypatch, capsys):
    """Each run in a folder of its own (what it writes lands there), the repository's inputs linked in."""
    for name in ("configs", "layers"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)
    code = cli.main(shlex.split(command)[1:])
    err = capsys.readouterr().err
    assert code == 0, f"README: {command!r} failed: {err[-500:]}"
