"""One module per ``archsim`` sub-command; shared argument helpers in :mod:`.common`.

:class:`Command` lives here, not in :mod:`archsim.cli`, so a command module never imports the CLI
that imports it (and importing this package stays as light as ``archsim --help`` needs).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    """A sub-command: its name, one-line help, its options and what it runs (exit status); ``elsewhere``: flags
    of another command that a user brings to this one, each with what this one takes instead (train's ``gpus``:
    its layout flags), said beside argparse's ``unrecognized arguments``."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    elsewhere: tuple[tuple[str, str], ...] = ()
