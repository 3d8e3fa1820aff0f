"""archsim's one exception type for user mistakes.

Everything a user can get wrong (a file, a row, a field, a flag) raises :class:`InputError`.
The CLI catches it once and prints one line; library callers can catch it too. Anything else
escaping archsim is a bug in archsim, never in the user's input.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_MESSAGE_CHARS = 1000


def one_line(text: object, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` made safe for one terminal line: control characters (newlines, ANSI escapes, NUL)
    written as escapes, and cut to ``limit`` characters — user text reaches error messages."""
    out = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))
    return out if len(out) <= limit else out[: limit - 1] + "…"


@dataclass(frozen=True)
class Where:
    """Where in the user's input a problem sits (all parts optional)."""

    file: str | None = None
    line: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        parts = []
        if self.file is not None:
            parts.append(one_line(self.file, 200))
        if self.line is not None:
            parts.append(f"line {self.line}")
        if self.field is not None:  # a file's key as written; a setting's as the caller spells it (console)
            from archsim.console import field_name

            parts.append(f"field '{one_line(self.field if self.file is not None else field_name(self.field), 100)}'")
        return ", ".join(parts)


class InputError(ValueError):
    """A mistake in user input, located by file, line and field where known. ``missing``: the input
    lacks something (a key, a section, a column), so the field has no line of its own to point at
    (:func:`archsim.toml_errors.locate`); data the error carries, not read from its wording."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        field: str | None = None,
        missing: bool = False,
    ) -> None:
        self.where = Where(file=file, line=line, field=field)
        self.message = message
        self.missing = missing
        located = str(self.where)
        super().__init__(one_line(f"{located}: {message}" if located else message))

    def at(self, *, file: str | None = None, line: int | None = None, field: str | None = None) -> InputError:
        """The same error (its message, whether something is missing) placed elsewhere: how a reader
        re-raises what a reader it called found, as its own file's key."""
        return InputError(self.message, file=file, line=line, field=field, missing=self.missing)


class Terminated(KeyboardInterrupt):
    """SIGTERM (a batch system's time limit, ``kill``) during a CLI run, which turns it into this
    (:func:`archsim.output_files.sigterm_as_interrupt`): the run ends as Ctrl-C ends it, its staged files removed,
    saying what it kept, with the shell's code for SIGTERM, 143."""
