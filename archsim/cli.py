"""``archsim`` command line: one entry point, a registry of sub-commands.

Each sub-command is a pair (``add_arguments``, ``run``) registered in :data:`COMMANDS`. User
mistakes raise :class:`~archsim.errors.InputError`, caught once in :func:`main` and printed as
one line with exit status 2 — never a traceback.
"""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from archsim.errors import InputError


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line and exit 2 like every other input error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise InputError(f"{self.prog}: {message}")


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def _commands() -> list[Command]:
    from archsim.commands import (bppsa, cluster, cost, energy, gemm, import_model, pipeline, plan, schedule, sweep,
                                  validate_gpu)

    return [cost.COMMAND, energy.COMMAND, gemm.COMMAND, pipeline.COMMAND, schedule.COMMAND, plan.COMMAND, bppsa.COMMAND,
            cluster.COMMAND, sweep.SWEEP, sweep.REPORT, validate_gpu.COMMAND, import_model.COMMAND]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="archsim", description="Systolic-array costs and training-pipeline planning.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for command in _commands():
        child = sub.add_parser(command.name, help=command.help, description=command.help)
        command.add_arguments(child)
        child.set_defaults(_run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    gc.set_threshold(100_000, 50, 100)  # a short-lived process building 10⁶-op problems: collect rarely
    try:
        args = build_parser().parse_args(argv)
        return int(args._run(args))
    except InputError as exc:
        print(f"archsim: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
