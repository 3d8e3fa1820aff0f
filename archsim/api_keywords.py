"""The API's keyword checks: each keyword refused in one line as its flag refuses it (an
:class:`~archsim.errors.InputError` naming the keyword), or turned into the object its flag builds
(a transformer config, a GPU cluster). Shared by :mod:`archsim.api`, :mod:`archsim.api_training`, :mod:`archsim.api_search`, so a
keyword means the same to every job.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, TypeVar, cast

if TYPE_CHECKING:
    from archsim.count_types import Count

F = TypeVar("F", bound=Callable)


def speaks_keywords(function: F) -> F:
    """An API job whose warnings and errors name each setting as its keyword (``tp=2``), not the command's flag
    (``--tp 2``): :func:`archsim.console.setting` inside :func:`archsim.console.as_keywords`; called by a
    command (``archsim search`` runs ``archsim.search``), it keeps the command's flags. A keyword the job does
    not take is refused in one line naming the nearest it does (:func:`check_keywords`), as ``pipeline``'s
    ``**options`` are, and a required one left out in one line naming it (:func:`check_required`), as the command's
    usage error names its flag, and a blank text (``dtype=""``, a widget left empty) in one line as every flag
    refuses it (:func:`check_blank`)."""
    import inspect

    from archsim.console import PROGRAM, as_keywords, prefix

    signature = inspect.signature(function)
    parameters = signature.parameters.values()
    named = tuple(p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
    open_ended = any(p.kind == p.VAR_KEYWORD for p in parameters)  # **options: the function checks its own
    flags = {p.name for p in parameters if p.kind == p.KEYWORD_ONLY}  # a command's options; its operands are positional

    def blanks(kwargs: dict) -> None:  # **options are flags too (pipeline's split_axes, replication)
        check_blank(kwargs, flags | (set(kwargs) - set(named)) if open_ended else flags)

    @functools.wraps(function)
    def job(*args, **kwargs):
        kwargs = {name: plain_bool(value) for name, value in kwargs.items()}
        if not open_ended:  # a misspelt keyword: one line naming it and the nearest, not Python's TypeError
            check_keywords(kwargs, named, f"archsim.{function.__name__}")
        check_required(signature, args, kwargs, f"archsim.{function.__name__}")
        if prefix() != PROGRAM:  # a command is speaking (archsim.console.speaking_as)
            blanks(kwargs)
            return function(*args, **kwargs)
        with as_keywords():
            blanks(kwargs)  # its line names the field as the keyword is spelt
            return function(*args, **kwargs)

    return job  # type: ignore[return-value]


def plain_bool(value: object) -> object:
    """A numpy bool (``np.True_``: a pandas bool column's cell, ``row.fsdp``) as Python's bool, the switch it
    stands for; any other value as is. numpy is not imported for it: without numpy loaded no value is one."""
    import sys

    numpy = sys.modules.get("numpy")
    return bool(value) if numpy is not None and isinstance(value, numpy.bool_) else value


def user_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the user's line: the first frame outside the archsim package,
    counted from the function that calls this and then :func:`warnings.warn` (1). A fixed level is right from one
    depth only: a note said from inside a run (``run_plan``'s ``speak``) is deeper than one said after it."""
    import os
    import sys

    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame: FrameType | None = sys._getframe(1)  # the function that warns
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def positive_int(value: object, field: str, *, low: int = 1, high: int | None = None, what: str | None = None) -> int:
    """A keyword whose flag takes an integer in ``low`` … ``high`` (None: 2³¹ − 1; 1: ``positive_int_flag``;
    0: ``--refine``'s ``int_flag``): refused with the flag's message, naming it as the flag's ``int_flag`` does
    (``what``: ``"a seed"``, ``"a processor count"``; None: a positive or non-negative integer), or the integer
    (``"2"`` read as ``--top 2`` reads it; a float that is a whole number, ``8.0`` from a pandas float column, as 8)."""
    from archsim.errors import InputError
    from archsim.validate import INT32_MAX
    from archsim.value_parsers import parse_int, whole_number

    value = whole_number(value)
    what = what or ("a positive integer" if low == 1 else "a non-negative integer")
    if value is None:  # no flag gives None: said as Python's None, not as the text 'None' (tp="None")
        raise InputError(f"expected {what}, got None", field=field)
    try:
        return parse_int(value, low=low, high=INT32_MAX if high is None else high, what=what)
    except ValueError as exc:
        raise InputError(str(exc), field=field) from None


def seq_keyword(value: object) -> int:
    """``seq=``, read as ``--seq`` reads it: 1 … MAX_SEQ tokens with the flag's message
    (:func:`archsim.value_parsers.parse_seq`; ``"2048"`` or ``2048.0`` as 2048)."""
    from archsim.errors import InputError
    from archsim.value_parsers import parse_seq, whole_number

    try:
        return parse_seq(whole_number(value))
    except ValueError as exc:
        raise InputError(str(exc), field="seq") from None


def positive_float(value: object, field: str) -> float:
    """A keyword whose flag takes ``positive_float_flag``'s number: refused with the flag's message, or the float
    (``"1.25"`` read as ``--moe-expert-capacity-factor 1.25`` reads it)."""
    from archsim.errors import InputError
    from archsim.value_parsers import parse_float

    try:
        return parse_float(value, low=0.0, low_open=True, what="a positive number")
    except ValueError as exc:
        raise InputError(str(exc), field=field) from None


def ratio(value: object, field: str) -> float:
    """A keyword whose flag takes ``ratio_flag``'s number (a ratio ≥ 1): refused with the flag's message, or the float
    (``"1.5"`` read as ``--moe-load-imbalance 1.5`` reads it: :func:`~archsim.value_parsers.parse_ratio`)."""
    from archsim.errors import InputError
    from archsim.value_parsers import parse_ratio

    try:
        return parse_ratio(value)
    except ValueError as exc:
        raise InputError(str(exc), field=field) from None


def int_or_word(value: object, word: str, field: str) -> int | str:
    """A keyword whose flag takes a positive integer or ``word`` (search's ``etp``: ``1`` or ``"tp"``), read as the
    flag reads it (:func:`~archsim.value_parsers.parse_int_or_word`; ``"2"`` and ``2.0`` as 2), or refused with its
    message."""
    from archsim.errors import InputError
    from archsim.value_parsers import parse_int_or_word, whole_number

    try:
        return parse_int_or_word(whole_number(value), word)
    except ValueError as exc:
        raise InputError(str(exc), field=field) from None


def clock_ghz(value: object, field: str = "clock-ghz") -> float:
    """A keyword that takes ``--clock-ghz``'s value: refused with the flag's line
    (:func:`archsim.array.options.clock_ghz`'s range), or the clock in GHz (``"1.5"`` read as the flag reads it)."""
    from archsim.array.options import clock_ghz as checked
    from archsim.errors import InputError

    try:
        return checked(value)
    except ValueError as exc:
        raise InputError(str(exc), field=field) from None


def check_choice(value: object, choices: tuple[str, ...], field: str) -> None:
    """A keyword whose flag takes one of ``choices``: refused as the flag's ``choices`` refuse it
    (:func:`archsim.value_parsers.check_choice`, imported when called: this module loads nothing it need not)."""
    from archsim.value_parsers import check_choice as refuse

    refuse(value, choices, field)


def check_switch(value: object, field: str, *, none: bool = False) -> None:
    """A keyword whose flag is a switch (``--sequence-parallel``): True or False (or None where ``none``: the
    command's default), refused otherwise, since the text "false" read from a user's file is true."""
    if not isinstance(value, bool) and not (none and value is None):
        from archsim.errors import InputError

        raise InputError(f"expected True{', False or None' if none else ' or False'}, got {value!r}", field=field)


def check_path(value: object, field: str, what: str) -> None:
    """A keyword that takes a file: a str or Path, else refused in one line (not a TypeError from open)."""
    if not isinstance(value, (str, Path)):
        from archsim.errors import InputError

        raise InputError(f"expected {what}, got {type(value).__name__}", field=field)


def check_text(value: object, field: str, what: str) -> None:
    """A keyword that takes a name (a schedule, a GPU, a scheduler address): a str, else refused in one line naming
    it (not a TypeError or AttributeError from the code that reads the name)."""
    if not isinstance(value, str):
        from archsim.errors import InputError

        raise InputError(f"expected {what}, got {type(value).__name__}", field=field)


def check_required(signature, args: tuple, kwargs: dict, what: str) -> None:
    """A required argument left out (``archsim.train(cluster=…, global_batch=8)``, no model) is an InputError naming
    it, as the command's usage error names its flag, not Python's TypeError; too many positional arguments or one
    given twice stay Python's TypeError (the call itself is malformed, docs/api.md)."""
    import inspect

    from archsim.errors import InputError

    known = {name: value for name, value in kwargs.items() if name in signature.parameters}
    taken = [p for p in signature.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    try:
        signature.bind_partial(*args, **known)  # Python's TypeError first: too many positionals, one given twice
    except TypeError as exc:  # inspect's words name no function ("too many positional arguments"): say which, and how
        keywords = [p.name for p in signature.parameters.values() if p.kind == p.KEYWORD_ONLY]
        if len(args) > len(taken) and not any(p.kind == p.VAR_POSITIONAL for p in signature.parameters.values()):
            names = f" ({', '.join(p.name for p in taken)})" if taken else ""
            meant = ", ".join(f"{name}=…" for name in keywords[:len(args) - len(taken)])
            raise TypeError(f"{what}() takes {len(taken)} positional argument{'s' * (len(taken) != 1)}{names} but "
                            f"{len(args)} were given; the others are keywords{f': {meant}' if meant else ''}") from None
        raise TypeError(f"{what}(): {exc}") from None
    given = set(kwargs) | {p.name for p in taken[:len(args)]}
    for p in signature.parameters.values():
        if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) \
                and p.name not in given:
            raise InputError(f"required by {what}, not given", field=p.name, missing=True)


def check_blank(kwargs: dict, flags: set[str]) -> None:
    """A flag's keyword given a blank text, alone or in a list (``dtype=""``, ``schedule=["1f1b", " "]``): refused
    with the line ``archsim.cli.Parser`` refuses ``--dtype ''`` with (no option takes an empty value), not read as
    "not given" (``dtype=""`` ran in the default precision, ``dataflow=""`` on the default dataflow)."""
    from archsim.errors import InputError
    from archsim.value_parsers import EMPTY_VALUE

    for name in sorted(flags & set(kwargs)):
        value = kwargs[name]
        items = value if isinstance(value, (list, tuple)) else (value,)
        if any(isinstance(item, str) and not item.strip() for item in items):
            raise InputError(EMPTY_VALUE, field=name.replace("_", "-"))


def check_keywords(given: Iterable[str], valid: tuple[str, ...], what: str, *, shown: tuple[str, ...] | None = None) -> None:
    """Keywords a function gathers in ``**options``: one not in ``valid`` is refused in one line naming it and
    the nearest valid one, not a TypeError from the function it reached; another training job's layout keyword
    (``archsim.search(tp=2)``) with what to give instead (:func:`~archsim.training.job_settings.elsewhere`), not a word it resembles (``top``).
    ``shown``: the keywords the line lists and suggests (default ``valid``): the user-facing ones where ``valid`` also
    holds a partitioner's internal parameters (``coster``, ``max_rounds``), taken but no flag's."""
    from archsim.console import as_keywords
    from archsim.errors import InputError
    from archsim.output_hints import command_outputs
    from archsim.training.job_settings import elsewhere, with_layout
    from archsim.validate import did_you_mean

    with as_keywords():  # called before the job speaks its keywords: the hint names them so
        hints = {**command_outputs(what), **elsewhere(what.removeprefix("archsim."))}
    listed = valid if shown is None else shown
    for name in sorted(set(given) - set(valid)):  # a near one only: gpus is no misspelt max_ops
        value = given.get(name) if isinstance(given, dict) else None  # a layout the hint quotes back
        hint = f" ({name} {with_layout(hints[name], value if isinstance(value, str) else None)})" if name in hints \
            else did_you_mean(name, listed)
        raise InputError(f"unknown keyword{hint}; {what} takes {', '.join(sorted(listed)) or 'none'}", field=name)


def listed(value, field: str, *, single: bool = False) -> tuple:
    """A list keyword's values as a tuple, read as the comma flags read theirs (``--only conv,fc``): a string split
    at its commas by the flags' one reader (:func:`archsim.value_parsers.comma_items`: ``"4,8"``: two; ``"4"``: one, not
    its characters; an empty entry, ``"4,,8"``, refused naming ``field``, the flag's name), a list or tuple as is, one
    value (a count, whole floats included, a path) as one. None, another value no flag could give, or no value at
    all (``[]``: ``recompute=[]`` costed nothing, ``gpus=[]`` every count) is refused in one line naming ``field``, as
    the flag given no value is (``--gpus`` alone: argparse's "expected at least one argument"; ``single``: a flag of
    one comma text, ``--stage-layers`` alone: "expected one argument")."""
    import numbers

    from archsim.errors import InputError
    from archsim.value_parsers import NO_VALUE, NO_VALUES, comma_items

    if isinstance(value, str):
        return comma_items(value, field)
    if isinstance(value, (numbers.Number, Path)):
        return (value,)
    try:  # a mapping or a DataFrame iterates its keys: column names read as values (csv=frame: "a: not found")
        values = tuple(value) if value is not None and not isinstance(value, dict) and not _is_frame(value) else None
    except TypeError:  # an object no flag could give
        values = None
    if values is None:
        raise InputError(f"expected a value or a list of values, got {type(value).__name__}", field=field)
    if not values:
        raise InputError(NO_VALUE if single else NO_VALUES, field=field)
    return values


def _is_frame(value: object) -> bool:
    """Whether ``value`` is a pandas DataFrame (pandas not imported for it: without pandas loaded none is)."""
    import sys

    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(value, pandas.DataFrame)


def named(given: str | Path | None, value: object, placeholder: str) -> str:
    """The path a search row's ``archsim train`` line names: ``given``, else ``value`` where it is a
    path, else ``placeholder`` (an object loaded in Python has no path to name)."""
    if given is not None:
        return str(given)
    return str(value) if isinstance(value, (str, Path)) else placeholder


@dataclass(frozen=True)
class TrainNumbers:
    """``archsim.train``'s and ``archsim.train_sweep``'s counts and numbers, read as ``archsim train``'s flags read
    them (:func:`train_numbers`): the layout's counts, ``etp`` (None: TP), ``cp_hierarchy`` (a2a+p2p's (A, P), None
    without), ``seq`` (tokens, None: the model's), the experts' ``capacity`` factor and load ``imbalance`` (None:
    dropless, uniform) and ``mtp`` (MTP modules, None: the model's own)."""

    tp: int
    pp: int
    dp: int
    global_batch: int
    micro_batch: int
    interleave: int
    cp: int
    ep: int
    etp: int | None
    cp_hierarchy: tuple[int, int] | None
    seq: int | None
    capacity: float | None
    imbalance: float | None
    mtp: int | None


def train_numbers(*, tp, pp, dp, global_batch, micro_batch, interleave, cp, ep, etp, cp_hierarchy, seq,
                  moe_expert_capacity_factor, moe_load_imbalance, mtp_layers) -> TrainNumbers:
    """The keywords :class:`TrainNumbers` holds, each checked in one line naming its flag (``"2"`` and ``2.0`` read as
    2, as the flags read them): the one reading of :func:`archsim.train` and :func:`archsim.train_sweep`, so the two
    cannot come to take a keyword differently."""
    tp, pp, dp, global_batch, micro_batch, interleave, cp, ep = (
        positive_int(value, name) for value, name in ((tp, "tp"), (pp, "pp"), (dp, "dp"), (global_batch, "global-batch"),
                                                     (micro_batch, "micro-batch"), (interleave, "interleave"), (cp, "cp"),
                                                     (ep, "ep")))
    etp = None if etp is None else positive_int(etp, "etp")
    hierarchy = None if cp_hierarchy is None else cast("tuple[int, int]", tuple(  # two: Parallelism checks the count
        positive_int(n, "cp-hierarchy") for n in listed(cp_hierarchy, "cp-hierarchy", single=True)))
    seq = None if seq is None else seq_keyword(seq)  # "2048" is 2048 to the notes and the document too
    capacity = None if moe_expert_capacity_factor is None else \
        positive_float(moe_expert_capacity_factor, "moe-expert-capacity-factor")
    imbalance = None if moe_load_imbalance is None else ratio(moe_load_imbalance, "moe-load-imbalance")
    mtp = None if mtp_layers is None else positive_int(mtp_layers, "mtp-layers", low=0)
    return TrainNumbers(tp, pp, dp, global_batch, micro_batch, interleave, cp, ep, etp, hierarchy, seq, capacity,
                        imbalance, mtp)


def transformer(model, seq: Count | None):
    """A config path or shipped name loaded, or a config as is; ``seq`` overrides its sequence length (``--seq``)."""
    from dataclasses import replace

    from archsim.workload.model_files import load_transformer
    from archsim.workload.transformer import TransformerConfig

    seq = None if seq is None else seq_keyword(seq)  # "2048" read as --seq 2048 reads it
    if isinstance(model, TransformerConfig):
        return model if seq is None else replace(model, seq=seq)
    check_path(model, "model", "a transformer config path or a TransformerConfig")
    return load_transformer(model, seq=seq)


def seq_note(model, config, seq: int | None) -> str:
    """``train``'s and ``search``'s note on a rotary config's default sequence (its longest context), for a
    model given as a path; '' for a config object, whose sequence the caller set."""
    from archsim.workload.model_files import default_seq_note

    return default_seq_note(config, model, seq) if isinstance(model, (str, Path)) else ""


def unread_note(model) -> str:
    """``train``'s and ``search``'s note on a config.json's fields archsim does not read; '' for a config object."""
    from archsim.workload.model_files import unread_fields_note

    return unread_fields_note(model)


def gpu_cluster(cluster, dtype: str | None = None):
    """A cluster TOML loaded to train in ``dtype`` (None: fp16), or a cluster as is (``dtype`` replacing its own)."""
    from dataclasses import replace

    from archsim.choices.devices import DTYPES
    from archsim.training.cluster import GpuCluster
    from archsim.training.cluster_file import load_gpu_cluster

    if not isinstance(cluster, GpuCluster):
        check_path(cluster, "cluster", "a cluster TOML path or a GpuCluster")
        return load_gpu_cluster(cluster, dtype or "fp16")
    if dtype is not None:
        check_choice(dtype, DTYPES, "dtype")
    return cluster if dtype is None else replace(cluster, dtype=dtype)
