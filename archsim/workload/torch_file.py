"""A PyTorch model named on the command line: ``model.py:ClassName`` with ``--input-shape 1,3,224,224``.

The file is imported as a module (it is the user's own code, run as ``python model.py`` would run it),
the class is built with no arguments, and :func:`archsim.workload.torch_import.from_torch` exports it
on zeros of the given shape (batch first; the batch is stripped: layers are per sample). Several
inputs: shapes separated by ``;``. Needs the ``archsim[torch]`` extra.

The file runs as Python, with the user's rights and no sandbox (docs/security.md). What archsim can
do is keep its own promises around it: anything the code raises while being imported, built or
traced (``SystemExit`` and ``KeyboardInterrupt`` too) is one line, and code that runs longer than
``timeout`` seconds is stopped (SIGALRM, in the main thread) and reported the same way.
"""

from __future__ import annotations

import importlib.util
import re
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from archsim.console import setting
from archsim.errors import InputError
from archsim.validate import INT32_MAX, is_file
from archsim.value_parsers import comma_items
from archsim.workload.layer import Network

_SPEC = re.compile(r"^(?P<file>.+\.py):(?P<name>[A-Za-z_][A-Za-z0-9_]*)$")
MAX_INPUT_ELEMENTS = 2**28  # zeros of this many float32 elements: 1 GiB, refused above
DEFAULT_TIMEOUT = 600.0  # seconds the user's code may run (import, build, trace): generous for a big model
PROGRESS_DELAY_S = 1.0  # seconds before a terminal shows the phases' bar: quick loads never draw one


class _TimedOut(BaseException):
    """Raised into the user's code when its time is up (a BaseException: ``except Exception`` there
    does not swallow it)."""


@contextmanager
def time_limit(seconds: float, error: type[BaseException] = _TimedOut) -> Iterator[None]:
    """Raise ``error`` (:class:`_TimedOut`) in the block after ``seconds`` (wall-clock seconds, SIGALRM);
    a no-op off the main thread (signals reach only it) or without ``setitimer``. Public: the fuzz
    harness limits each case with the same alarm the loader puts on the user's code."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(_signum, _frame):
        raise error

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _one_line(doing: str, exc: BaseException, timeout: float) -> str:
    if isinstance(exc, _TimedOut):
        return f"{doing} did not finish within {timeout:g} s (--timeout SECONDS allows more)"
    return f"{doing} raised {exc.__class__.__name__}: {' '.join(str(exc).split())[:200]}"


def is_torch_spec(text: str) -> bool:
    """Whether a NETWORK argument names a class in a Python file (``model.py:ClassName``)."""
    return bool(_SPEC.match(str(text)))


INPUT_DTYPES = ("float32", "int64")  # an input's element type: activations, or token ids for an nn.Embedding


def parse_input_shape(text: str | None) -> tuple[tuple[int, ...], ...]:
    """``1,3,224,224`` (or ``1x3x224x224``), several inputs separated by ``;``."""
    return tuple(shape for shape, _ in parse_inputs(text))


def parse_inputs(text: str | None) -> tuple[tuple[tuple[int, ...], str], ...]:
    """(shape, dtype) per input of :func:`parse_input_shape`'s text, where a shape may end in ``:int64``
    (``1,128:int64``: token ids) or ``:float32`` (the default)."""
    if not text or not text.strip():
        raise InputError(f"a PyTorch model needs {setting('input-shape')}, e.g. {setting('input-shape', '1,3,224,224')} "
                         "(batch first)",
                         field="input-shape")
    shapes = []
    for part in text.split(";"):
        part, _, dtype = part.partition(":")
        dtype = dtype.strip() or "float32"
        if dtype not in INPUT_DTYPES:
            raise InputError(f"an input's type is {' or '.join(INPUT_DTYPES)} (1,128:int64 for token ids), got "
                             f"{dtype!r}", field="input-shape")
        try:
            shape = tuple(int(x) for x in comma_items(re.sub("[x×]", ",", part), "input-shape"))
        except ValueError:
            raise InputError(f"expected positive integers like 1,3,224,224, got {part.strip()!r}",
                             field="input-shape") from None
        if not shape or any(not 0 < n <= INT32_MAX for n in shape):
            raise InputError(f"expected positive integers like 1,3,224,224, got {part.strip()!r}", field="input-shape")
        elements = 1
        for n in shape:
            elements *= n
        if elements > MAX_INPUT_ELEMENTS:
            raise InputError(f"an input of {elements:,} elements is over the limit of {MAX_INPUT_ELEMENTS:,} "
                             "(the export runs the model once on it)", field="input-shape")
        shapes.append((shape, dtype))
    return tuple(shapes)


def load_torch_file(spec: str, input_shape: str | None, *, unsupported: str = "error",
                    timeout: float = DEFAULT_TIMEOUT) -> Network:
    """The network of ``model.py:ClassName`` exported on zeros of ``input_shape``; the user's code
    (import, build, trace) may run ``timeout`` seconds in all. On a terminal, a bar names the phase
    under way once the work has taken :data:`PROGRESS_DELAY_S` (importing torch alone takes seconds)."""
    from archsim.progress import progress

    match = _SPEC.match(spec)
    if match is None:
        raise InputError(f"expected FILE.py:ClassName, got {spec!r}", field="NETWORK")
    path, name = Path(match["file"]), match["name"]
    shapes = parse_inputs(input_shape)  # flags first: before the user's file runs
    if not is_file(path):
        raise InputError("no such Python file", file=str(path))
    with progress(3, f"{path.name}:{name}", "phase", delay=PROGRESS_DELAY_S) as bar:
        bar.set_postfix_str("importing torch")
        try:
            import torch
        except ImportError:
            raise InputError("a PyTorch model needs PyTorch: pip install 'archsim[torch]'", file=str(path)) from None
        from archsim.workload.torch_import import from_torch

        bar.update()
        bar.set_postfix_str(f"running {path.name}")
        module_name = f"archsim_user_model_{abs(hash(str(path.resolve())))}"
        loader_spec = importlib.util.spec_from_file_location(module_name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise InputError("not loadable as a Python module", file=str(path))
        module = importlib.util.module_from_spec(loader_spec)
        doing, field = "importing it", None
        try:
            with time_limit(timeout):
                sys.modules[module_name] = module  # dataclasses and pickling look their module up
                try:
                    loader_spec.loader.exec_module(module)
                finally:
                    sys.modules.pop(module_name, None)
                cls = getattr(module, name, None)
                if cls is None or not isinstance(cls, type) or not issubclass(cls, torch.nn.Module):
                    found = sorted(k for k, v in vars(module).items() if isinstance(v, type)
                                   and issubclass(v, torch.nn.Module) and v.__module__ == module_name)
                    raise InputError(f"no torch.nn.Module class {name!r} here; found: {', '.join(found) or 'none'}",
                                     file=str(path), field=name)
                doing, field = f"{name}()", name
                model = cls()
                inputs = tuple(torch.zeros(shape, dtype=getattr(torch, dtype)) for shape, dtype in shapes)
                doing = f"tracing {name}"
                bar.update()
                bar.set_postfix_str(f"tracing {name} and exporting it to ONNX")
                network = from_torch(model, inputs if len(inputs) > 1 else inputs[0], name=name.lower(),
                                     unsupported=unsupported)
                bar.update()
                return replace(network, source=spec)  # named as given, as a file's path is
        except InputError as exc:
            raise InputError(exc.message, file=str(path), field=exc.where.field or field) from None
        except BaseException as exc:  # the user's code, SystemExit and KeyboardInterrupt too: their error, one line
            note = " (the class is built with no arguments)" if doing == f"{name}()" else ""
            raise InputError(_one_line(doing, exc, timeout) + note, file=str(path), field=field) from None


__all__ = ["DEFAULT_TIMEOUT", "INPUT_DTYPES", "MAX_INPUT_ELEMENTS", "is_torch_spec", "load_torch_file", "parse_input_shape",
           "parse_inputs", "time_limit"]
