"""The lines a command says on stderr beside its output: ``archsim COMMAND: note: …``, ``archsim
COMMAND: warning: …`` and its one ``archsim COMMAND: error: …``, each named after the running
command as argparse names it (``archsim bppsa rnn``). Why: stderr of several commands gathered in
one log still says which command spoke. :func:`archsim.cli.main` names the command once
(:func:`speaking_as`); outside it (no command chosen, a helper called from Python) the prefix is
``archsim``. The library API says the same texts as UserWarnings, without any prefix, and names each
setting as its keyword (``tp=2``) where the command names its flag (``--tp 2``): :func:`setting`."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

PROGRAM = "archsim"
_SPEAKER: ContextVar[str] = ContextVar("archsim_speaker", default=PROGRAM)
_HELD: ContextVar[list[tuple[str, str]] | None] = ContextVar("archsim_held", default=None)
_KEYWORDS: ContextVar[bool] = ContextVar("archsim_keywords", default=False)
_KEPT: ContextVar[list[str] | None] = ContextVar("archsim_kept", default=None)
_LIVE: dict[int, object] = {}  # id(stream) → a stream a status line (:func:`status`) is drawn on now
_WRITING = threading.Lock()  # a ticker's thread and the command's lines write one stream
ERASE = "\r\x1b[K"  # back to the line's start, then clear it
Run = TypeVar("Run")  # what a run returns (said_after)
Speak = Callable[[str, str], None]  # how a run says a line: (kind, text), kind "note" or "warning", as say takes them


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


@contextmanager
def as_keywords() -> Iterator[None]:
    """Name every setting in the messages made inside as the library's keyword (``tp=2``), not its flag:
    the API's functions (:mod:`archsim.api`) run inside it, so their warnings and errors speak Python."""
    token = _KEYWORDS.set(True)
    try:
        yield
    finally:
        _KEYWORDS.reset(token)


def setting(name: str, value: object = None, *, placeholder: str | None = None) -> str:
    """A setting as the caller spells it: ``--tp 2`` from a command, ``tp=2`` from the library
    (:func:`as_keywords`). ``name`` in either spelling (``max_ops`` or ``max-ops``); ``value`` a real
    value (a text one quoted for Python, ``schedule='gpipe'``), ``placeholder`` a stand-in (``N``), as is;
    neither: the bare name (``--tp``, ``tp``)."""
    if _KEYWORDS.get():
        keyword = name.replace("-", "_")
        if placeholder is None and value is None:
            return keyword
        return f"{keyword}={placeholder if placeholder is not None else repr(value) if isinstance(value, str) else value}"
    shown = placeholder if placeholder is not None else "" if value is None else str(value)
    return f"--{name.replace('_', '-')}" + (f" {shown}" if shown else "")


def shell_word(value: object) -> str:
    """``value`` (a path, a name) as one shell word, quoted where it holds a space or a shell character, so a
    page's "Regenerate" command runs as shown; a plain name is left as it is."""
    import shlex

    return shlex.quote(str(value))


def switch_on(name: str) -> str:
    """A switch turned on as the caller spells it: ``--distributed-optimizer`` from a command,
    ``distributed_optimizer=True`` from the library (:func:`as_keywords`)."""
    return setting(name, True) if _KEYWORDS.get() else setting(name)


def keyed(name: str, key: str, value: object = None, *, placeholder: str | None = None) -> str:
    """One entry of a setting that maps names to values, as the caller spells it: ``--dim seq=128`` from a
    command, ``dim={'seq': 128}`` from the library (:func:`as_keywords`); ``value`` and ``placeholder`` as
    :func:`setting`'s; neither: the entry named (``--dim seq``, ``dim['seq']``)."""
    if _KEYWORDS.get():
        keyword = name.replace("-", "_")
        if placeholder is None and value is None:
            return f"{keyword}[{key!r}]"
        return f"{keyword}={{{key!r}: {placeholder if placeholder is not None else repr(value)}}}"
    shown = placeholder if placeholder is not None else "" if value is None else str(value)
    return f"--{name.replace('_', '-')} {key}" + (f"={shown}" if shown else "")


POSITIONALS = ("NETWORK", "MODEL")  # the commands' positional arguments: the library's functions name them in lower case


def field_name(name: str) -> str:
    """An :class:`~archsim.errors.InputError`'s field naming a setting, as the caller spells it: the keyword
    from the library (``global_batch``: :func:`setting`), the flag's name as given from a command
    (``global-batch``); a command's positional ``NETWORK`` or ``MODEL`` is the library's ``network`` or ``model``
    argument."""
    if name in POSITIONALS:
        return name.lower() if _KEYWORDS.get() else name
    return setting(name) if _KEYWORDS.get() else name


def job(name: str) -> str:
    """Another archsim job as the caller would run it: ``archsim search`` from a command, ``archsim.search`` from
    the library (:func:`as_keywords`)."""
    return route(f"{PROGRAM} {name}", f"{PROGRAM}.{name}")


def in_library() -> bool:
    """Whether the caller is the library (:func:`as_keywords`), not a command: what only one of them has to be told."""
    return bool(_KEYWORDS.get())


def route(command: str, library: str) -> str:
    """A way to do something, as the caller would take it: ``command`` (a command line) from a command,
    ``library`` (the Python calls) from the library (:func:`as_keywords`), where the two differ in more than
    a name (``archsim pipeline`` plans and runs; Python calls ``archsim.pipeline``, then ``archsim.simulate``)."""
    return library if _KEYWORDS.get() else command


@contextmanager
def notes_kept() -> Iterator[list[str]]:
    """Keep the library's notes said inside (:func:`library_note`) in the list yielded, in order, instead of
    warning them: a command that prints them itself, or a sweep's point that drops them. Why not
    :class:`warnings.catch_warnings`: it swaps the process's one filter list, so a thread running beside the
    block loses its warnings or has them caught; this is a context variable, each thread's (and task's) own."""
    kept: list[str] = []
    token = _KEPT.set(kept)
    try:
        yield kept
    finally:
        _KEPT.reset(token)


def library_note(text: str, stacklevel: int = 1) -> None:
    """A note of the library's: kept inside :func:`notes_kept`, else a :class:`UserWarning` at ``stacklevel`` as
    :func:`warnings.warn` counts it from the caller of this function (1: the caller's line)."""
    kept = _KEPT.get()
    if kept is not None:
        kept.append(text)
        return
    import warnings

    warnings.warn(text, UserWarning, stacklevel=stacklevel + 1)


def library_say(kind: str, text: str) -> None:
    """The :data:`Speak` of a library function whose run says its lines two calls below it (api_array's,
    api_cluster's, api_validation's): each line, a note or a warning alike, a :func:`library_note` at the line that
    called the library function (a run speaking from another depth needs a stacklevel of its own)."""
    library_note(text, stacklevel=5)


def tell(text: str, stacklevel: int = 1) -> None:
    """A note to whoever runs archsim: a command's note line (:func:`note`), a library call's :func:`library_note`
    (no command speaking, :func:`speaking_as`: Python's warnings, not stderr lines), at ``stacklevel`` as
    :func:`library_note` counts it from the caller of this function."""
    if prefix() == PROGRAM:
        library_note(text, stacklevel=stacklevel + 1)
    else:
        note(text)


def say(kind: str, text: str) -> None:
    """One line on stderr: ``PREFIX: KIND: TEXT`` (``kind``: note, warning or error)."""
    line(f"{prefix()}: {kind}: {text}")


def line(text: str) -> None:
    """One line on stderr as it is: :func:`say`'s, and the unprefixed ``wrote FILE`` lines (docs/cli.md). A status
    line drawn there (:func:`status`) is erased first, so the line never runs on from the ticker's text (the
    ticker draws itself again below it)."""
    stream = sys.stderr
    with _WRITING:
        if _LIVE.pop(id(stream), None) is not None:
            stream.write(ERASE)
        print(text, file=stream, flush=True)


def status(text: str, stream=None) -> None:
    """Draw ``text`` over the current stderr line (``stream``: another), a terminal's transient status (numba's
    compile ticker, :func:`archsim.jit.tick`); ``""`` erases it. Only on a terminal: the caller checks."""
    out = sys.stderr if stream is None else stream
    with _WRITING:
        out.write(f"\r{text}" if text else ERASE)
        out.flush()
        if text:
            _LIVE[id(out)] = out
        else:
            _LIVE.pop(id(out), None)


@contextmanager
def after_the_run() -> Iterator[None]:
    """Hold the lines said inside by :func:`say_after_run` and say them when the block ends normally; a block
    ended by an error drops them, so an error is its command's one line (the run's notes never precede it)."""
    lines: list[tuple[str, str]] = []
    token = _HELD.set(lines)
    try:
        yield
    finally:
        _HELD.reset(token)
    for kind, text in lines:
        say(kind, text)


def said_after(run: Callable[[Speak], Run], speak: Speak) -> Run:
    """``run(hold)``'s result, what it said through ``hold`` (kind, text) passed to ``speak`` once it returned: a run
    that raises is its error alone, as :func:`after_the_run` keeps a command's (for a library job, whose ``speak``
    warns)."""
    held: list[tuple[str, str]] = []
    done = run(lambda kind, text: held.append((kind, text)))
    for kind, text in held:
        speak(kind, text)
    return done


def say_after_run(kind: str, text: str) -> None:
    """:func:`say` once the run has succeeded, inside :func:`after_the_run` (the CLI runs every command in
    one); outside one, now."""
    held = _HELD.get()
    if held is None:
        say(kind, text)
    else:
        held.append((kind, text))


def note(text: str) -> None:
    """A note: something the run did that the user may not expect, the result still as asked."""
    say("note", text)


def warn(text: str) -> None:
    """A warning: an input that is accepted but looks mistaken (a unit that slipped)."""
    say("warning", text)
