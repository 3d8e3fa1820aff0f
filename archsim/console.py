"""The lines a command says on stderr beside its output: ``archsim COMMAND: note: …``, ``archsim
COMMAND: warning: …`` and its one ``archsim COMMAND: error: …``, each named after the running
command as argparse names it (``archsim bppsa rnn``). Why: stderr of several commands gathered in
one log still says which command spoke. :func:`archsim.cli.main` names the command once
(:func:`speaking_as`); outside it (no command chosen, a helper called from Python) the prefix is
``archsim``. The library API says the same texts as UserWarnings, without any prefix."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

PROGRAM = "archsim"
_SPEAKER: ContextVar[str] = ContextVar("archsim_speaker", default=PROGRAM)


def prefix() -> str:
    """Who is speaking: the running command's name (``archsim train``), else ``archsim``."""
    return _SPEAKER.get()


@contextmanager
def speaking_as(prog: str) -> Iterator[None]:
    """Name every line said inside after ``prog`` (``archsim plan``), and the speaker before it after."""
    token = _SPEAKER.set(prog)
    try:
        yield
    finally:
        _SPEAKER.reset(token)


def say(kind: str, text: str) -> None:
    """One line on stderr: ``PREFIX: KIND: TEXT`` (``kind``: note, warning or error)."""
    print(f"{prefix()}: {kind}: {text}", file=sys.stderr)


def note(text: str) -> None:
    """A note: something the run did that the user may not expect, the result still as asked."""
    say("note", text)


def warn(text: str) -> None:
    """A warning: an input that is accepted but looks mistaken (a unit that slipped)."""
    say("warning", text)
