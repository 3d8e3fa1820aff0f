"""``archsim`` command line: one entry point, a registry of sub-commands.

Each sub-command is a pair (``add_arguments``, ``run``) in its own module under
``archsim.commands``, listed in :data:`REGISTRY` by name, module and one-line help. Only the
sub-command being run is imported, so ``archsim --help`` does not load numpy, pandas or numba.
User mistakes raise :class:`~archsim.errors.InputError`, caught once in :func:`main` and printed
as one line with exit status 2 — never a traceback.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import NoReturn, TextIO, cast

from archsim import __version__
from archsim.commands import Command
from archsim.console import PROGRAM, after_the_run, say, speaking_as
from archsim.errors import InputError, Terminated, one_line
from archsim.output_files import output_set, sigterm_as_interrupt
from archsim.output_inputs import outputs_apart_from_inputs
from archsim.output_targets import distinct_targets, suffix_mismatches
from archsim.validate import did_you_mean
from archsim.value_parsers import EMPTY_VALUE, not_a_choice

# name, "module:attribute" of its Command, and the one-line help `archsim --help` lists (a test
# checks it equals the Command's own help, so the two cannot drift).
REGISTRY: tuple[tuple[str, str, str], ...] = (
    ("cost", "archsim.commands.cost:COMMAND", "per-layer F/G/D cycles, utilization and bytes of a network"),
    ("energy", "archsim.commands.energy:COMMAND",
     "energy of one training iteration by part and op, and the array's area"),
    ("gemm", "archsim.commands.gemm:COMMAND", "SCALE-Sim-exact cost of GEMMs out[MxN] = A[MxK]·B[KxN]"),
    ("sparse", "archsim.commands.sparse:COMMAND",
     "SCALE-Sim-exact sparse layers (N:M, CSR/CSC/ELLPACK) and their δ/G training cycles"),
    ("pipeline", "archsim.commands.pipeline:COMMAND",
     "partition a network over processors (layerpipe, pipedream, gpipe, ooo)"),
    ("schedule", "archsim.commands.schedule:COMMAND",
     "layer-wise schedules: pipelines (mp, gpipe, ooo-pipe1/2) and data parallel"),
    ("plan", "archsim.commands.plan:COMMAND",
     "pipeline planning over a cluster: SPP, PipeDream's optimizer, baselines"),
    ("bppsa", "archsim.commands.bppsa:COMMAND",
     "back-propagation as a parallel scan: RNN speedup, pruned VGG-11 and your network's FLOPs"),
    ("cluster", "archsim.commands.cluster:COMMAND",
     "SPB + Jigsaw vs Gandiva and Tiresias on a job trace: makespan, JCT, utilization"),
    ("collective", "archsim.commands.collective:COMMAND",
     "one NCCL collective per size over a group of a cluster's GPUs: time, bus bandwidth, algorithm"),
    ("sweep", "archsim.commands.sweep:SWEEP", "run a sweep spec (array × batch × processors × method, or a device file's fields) with caching"),
    ("report", "archsim.commands.sweep:REPORT", "write the HTML report of a sweep's results"),
    ("validate-gpu", "archsim.commands.validate_gpu:COMMAND",
     "compare archsim's per-layer F/D/G costs with kernels measured on a GPU"),
    ("import", "archsim.commands.import_model:COMMAND", "convert a model (ONNX, PyTorch, transformer config) to archsim's topology CSV"),
    ("train", "archsim.commands.train:COMMAND",
     "one training iteration of a transformer on GPUs: TP × PP × DP, time, memory, breakdown"),
    ("search", "archsim.commands.search:COMMAND",
     "search TP × PP × DP × micro-batch × recompute × schedule for the fastest training iteration"),
)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every option's help ends with its default, unless the help already states it or there is none
    (``None``, ``False``: the option is off unless given); a list default as it is typed (``none
    selective full``; ``none`` when empty), not as Python prints it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if ("default" in text or default is None or default is False or default == argparse.SUPPRESS
                or not action.option_strings):
            return text
        shown = "%(default)s"
        if isinstance(default, (list, tuple)):
            shown = (" ".join(str(item) for item in default) or "none").replace("%", "%%")
        return f"{text} (default: {shown})" if text else f"(default: {shown})"


class Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line and exit 2 like every other input error, and help
    shows defaults (:class:`HelpFormatter`), in nested sub-commands too. Public: a command's own arguments
    can be read by the parser ``archsim COMMAND`` uses, without the whole CLI."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        # A flag is its whole name: argparse's prefix matching read ``archsim pipeline --schedule 1f1b`` (pipeline has
        # no --schedule) as ``--schedule-csv 1f1b`` and replaced a file named 1f1b; a prefix is an unknown argument.
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        # A word that starts with a minus and a digit is a value, never an option (archsim has no option named so):
        # argparse reads only plain numbers so, and ``--array -64x64`` or ``--sram-kb -1,64,64`` got "expected one
        # argument" instead of the flag's own check, which names the form it takes.
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def error(self, message: str) -> NoReturn:
        raise UsageError(message + self._choices_hint(message))

    def _choices_hint(self, message: str) -> str:
        """For argparse's "expected one argument" (or "at least one") of a flag that takes one of a few values, those
        values (`` (one of both, on, off)``), as a wrong value is told them: ``search --sequence-parallel`` alone,
        train's switch brought to search, said only that a value was missing; "" for any other message."""
        found = re.fullmatch(r"argument (--[\w-]+)(?:/\S+)?: expected (?:at least )?one argument", message)
        action = self._option_string_actions.get(found.group(1)) if found else None
        choices = None if action is None else action.choices
        return f" (one of {', '.join(map(str, choices))})" if choices else ""

    def _get_values(self, action: argparse.Action, arg_strings: list[str]):
        """Every option's values as the user wrote them, before their type: an empty one (``--gantt ''``,
        ``--stage-layers ''``) is refused rather than read as "not given" (no option of archsim takes an
        empty value; ``--report`` alone, with no value, still takes its default)."""
        if action.option_strings and any(not text.strip() for text in arg_strings):
            self.error(f"argument {'/'.join(action.option_strings)}: {EMPTY_VALUE}")
        return super()._get_values(action, arg_strings)

    def _check_value(self, action: argparse.Action, value) -> None:
        """A value outside the flag's choices refused in the line its keyword's is (``expected one of ws, os, is,
        got 'x'``), not argparse's ``invalid choice: 'x' (choose from 'ws', 'os', 'is')``, whose wording also changes
        with the Python version."""
        if action.choices is not None and value not in action.choices:
            raise argparse.ArgumentError(action, not_a_choice(value, action.choices))


class UsageError(InputError):
    """argparse's complaint about the command line: printed as every input error is, one line named
    after the command (:func:`main`)."""


def load_command(target: str) -> Command:
    """Import ``module:attribute`` and return that :class:`Command`."""
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _selected(argv: Sequence[str]) -> str | None:
    """The sub-command ``argv`` runs: its first word that names one (top-level options take no value)."""
    names = {name for name, _, _ in REGISTRY}
    return next((word for word in argv if word in names), None)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with ``argv`` that selects a sub-command, only that one is imported and given a parser."""
    parser = Parser(prog="archsim",
                    description="Systolic-array costs and training-pipeline planning.",
                    epilog="Run 'archsim COMMAND --help' for a command's options and their defaults. Every schedule, "
                           "the flag that takes it and its source: docs/cli.md, \"Schedules\".")
    parser.add_argument("--version", action="version", version=f"archsim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    wanted = None if argv is None else _selected(argv)
    for name, target, text in REGISTRY:
        if wanted is not None and name != wanted:
            continue  # a command's run needs no sibling parsers (15 of them: ~5 ms of argparse and gettext)
        child = sub.add_parser(name, help=text, description=text)
        if argv is None or name == wanted:
            command = load_command(target)
            command.add_arguments(child)
            child.set_defaults(_run=command.run)
    return parser


def _chosen(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.ArgumentParser:
    """The innermost parser ``argv`` selects (``archsim bppsa rnn``: the ``rnn`` parser), read as argparse
    reads it: at each level the first word that is not an option names the sub-command (the levels above a
    command take no option with a value). Known before parsing, so an error in parsing names it too."""
    words = iter(argv)
    while True:
        sub = next((action for action in parser._actions if isinstance(action, argparse._SubParsersAction)), None)
        name = None if sub is None else next((word for word in words if not word.startswith("-")), None)
        if sub is None or name not in sub.choices:
            return parser
        parser = sub.choices[name]


def _flag_hint(parser: argparse.ArgumentParser, message: str, argv: Sequence[str] = ()) -> str:
    """For the first unknown flag of argparse's ``unrecognized arguments`` that has one, what to give instead: where
    it is another command's flag, what this one takes (its :attr:`Command.elsewhere <archsim.commands.Command>`:
    `` (--gpus is archsim search's: …)``), else `` (did you mean '--recompute'?)`` where it resembles one of
    ``parser``'s long options (``validate.did_you_mean``); "" for none. A name of three letters or fewer gets no
    likeness: it is more likely another command's flag than a typo (``search --tp`` is not ``--top``). Where argparse
    stopped at a required flag first (``train --config chip.toml``: "required: --cluster"), ``argv``'s unknown flags."""
    words = message.removeprefix("unrecognized arguments: ").split() if message.startswith("unrecognized") else []
    if message.startswith("the following arguments are required"):
        words = [w for w in argv if w.startswith("--") and w.partition("=")[0] not in parser._option_string_actions]
    flags = [o[2:] for o in parser._option_string_actions if o.startswith("--")]
    targets = {name: target for name, target, _ in REGISTRY}
    command = parser.prog.split()[1] if len(parser.prog.split()) > 1 else ""  # "archsim bppsa rnn": bppsa's
    elsewhere = dict(load_command(targets[command]).elsewhere) if command in targets else {}
    from archsim.training.job_settings import with_layout

    given = {w.partition("=")[0][2:]: w.partition("=")[2] or (words[i + 1] if i + 1 < len(words) else "")
             for i, w in enumerate(words) if w.startswith("--")}  # each flag's value: a layout hint quotes it
    hints = (f" (--{name} {with_layout(elsewhere[name], value)})" if name in elsewhere else
             did_you_mean(name, flags, "--") if len(name) > 3 else "" for name, value in given.items())
    return next((hint for hint in hints if hint), "") or _repeat_hint(parser, words)


def _repeat_hint(parser: argparse.ArgumentParser, words: list[str]) -> str:
    """For an unrecognized ``KEY=VALUE`` word where ``parser`` has a repeated ``KEY=…`` flag (``train --sweep``,
    ``--dim``), that each entry takes its own flag: ``--sweep tp=1,2 dp=4,8`` leaves ``dp=4,8`` unread, told
    `` (each entry takes its own --sweep: --sweep dp=4,8)``; "" for none."""
    word = next((w for w in words if "=" in w and not w.startswith("-")), None)
    flag = next((action.option_strings[-1] for action in parser._actions if isinstance(action, argparse._AppendAction)
                 and "=" in str(action.metavar or "")), None)
    return "" if word is None or flag is None else f" (each entry takes its own {flag}: {flag} {word})"


def as_argument(parser: argparse.ArgumentParser, exc: InputError) -> str:
    """An input error's line as the command states it: where its field is one of ``parser``'s arguments (and no
    file's key), named as argparse names one (``argument --split-axes: …``, ``argument --flush/--no-flush: …``,
    ``argument NETWORK: …``), so every refusal of a flag reads alike, whether argparse or the run made it; the
    library names the keyword instead (``field 'split_axes': …``, :func:`archsim.console.field_name`)."""
    where = exc.where
    if where.field is None or where.file is not None or where.line is not None:
        return str(exc)
    field = where.field
    action = parser._option_string_actions.get(f"--{field.replace('_', '-')}")
    if action is None:
        action = next((a for a in parser._actions if not a.option_strings and field in (a.metavar, a.dest)), None)
    if action is None:
        return str(exc)
    name = "/".join(action.option_strings) or str(action.metavar or action.dest)
    return one_line(f"argument {name}: {exc.message}")


def main(argv: Sequence[str] | None = None) -> int:
    gc.set_threshold(100_000, 50, 100)  # a short-lived process building 10⁶-op problems: collect rarely
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = PROGRAM  # no command chosen (yet): a top-level error
    chosen: argparse.ArgumentParser | None = None
    try:
        parser = build_parser(argv)
        chosen = _chosen(parser, argv)
        prog = chosen.prog  # "archsim train", "archsim bppsa rnn": its errors' and notes' prefix, as argparse's
        with speaking_as(prog):
            try:
                args = parser.parse_args(argv)
            except UsageError as exc:  # a misspelt flag: the one it resembles, as a misspelt keyword is told
                raise UsageError(f"{exc}{_flag_hint(chosen, str(exc), argv)}") from None
            distinct_targets(chosen, args)
            outputs_apart_from_inputs(chosen, args)
            mismatched = suffix_mismatches(chosen, args)
            # files replace their targets together, or none does (SIGTERM too: it ends the run as Ctrl-C does);
            # notes said after the run follow it, or none does
            with after_the_run(), _reader_may_leave(), sigterm_as_interrupt(), output_set():
                status = int(args._run(args))
            for line in mismatched if status == 0 else ():  # said of files written, not of a run that failed
                say("warning", line)
            return status
    except InputError as exc:  # a usage error (UsageError) too, even one the top parser reports for a command
        with speaking_as(prog):
            say("error", str(exc) if chosen is None or isinstance(exc, UsageError) else as_argument(chosen, exc))
        return 2
    except BrokenPipeError:  # stderr's reader left while an error or a note was printed
        return 0
    except KeyboardInterrupt as exc:  # Ctrl-C: one line (what a stopped sweep kept, where it says), not a traceback
        ended = isinstance(exc, Terminated)  # SIGTERM (sigterm_as_interrupt, around every command)
        with speaking_as(prog):  # named after the command stopped, as its other lines: the run did not finish
            say("error", f"{'terminated' if ended else 'interrupted'}{f': {exc}' if exc.args else ''}")
        return 143 if ended else 130  # the shell's codes for a command ended by SIGTERM, by SIGINT


class _DroppedWhenGone:
    """A run's stdout: when its reader goes away (``archsim … | head -1``) the rest of what the run
    prints is dropped instead of raising BrokenPipeError out of the command, which would end the run
    before its files were written and discard the ones staged. Why: a user who named ``--gantt`` or
    ``--schedule-csv`` asked for the file, and the computation succeeded; the reader chose to stop
    reading. Anything else the stream does is the wrapped stream's."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            _to_devnull(self._stream)
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            _to_devnull(self._stream)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _to_devnull(stream: TextIO) -> None:
    """Point ``stream``'s descriptor at the null device, as Python's documentation advises for a
    reader that left (the ``signal`` module, "Note on SIGPIPE"): what is still buffered, and the
    interpreter's flush at exit, then go nowhere instead of raising again."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError):  # no descriptor (a test's stream): nothing will be flushed to it
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


@contextmanager
def _reader_may_leave() -> Iterator[None]:
    """Run with :class:`_DroppedWhenGone` as ``sys.stdout``, flushing it at the end, so a reader that
    left is met here and not by the interpreter's flush at exit (status 120 and a traceback line).
    A stdout closed before the start (``>&-``: ``sys.stdout`` is None) is left as Python has it."""
    stream = sys.stdout
    if stream is None:
        yield
        return
    sys.stdout = cast(TextIO, _DroppedWhenGone(stream))
    try:
        yield
        sys.stdout.flush()
    finally:
        sys.stdout = stream


def command_line() -> int:
    """The process entry (the ``archsim`` script, ``python -m archsim``): :func:`main`, then freeze
    the garbage collector's objects, so that the interpreter's collections at exit skip what
    imports built (numpy's, argparse's: 10–20 ms of a 0.15 s command; benchmarks/README.md). Only
    the exiting process does this: :func:`main` called in-process (tests) collects as usual."""
    code = main()
    gc.freeze()  # the output is written and flushed by its writers; nothing left needs finalizing
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(command_line())
