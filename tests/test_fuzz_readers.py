"""Property-based fuzzing of every file reader: for any file, a result or one clean InputError —
never another exception, a hang, a negative or NaN number in the result.

Each case mutates a valid file (replace one token with a hostile value, insert random text, drop or
repeat a line, truncate). A quarter of the cases are invalid by construction: the valid file with one
value set against a documented rule (a negative count, a NaN time, an unknown dataflow; the tables in
tests/fuzz_cases.py), which must be refused. Every case runs under a 20 s alarm (tests/fuzz_tally.py).
The default run is a fast slice and an exhaustive pass over every documented rule broken; the
``slow`` tier's acceptance run (tests/test_fuzz_acceptance.py) draws ≥ 10⁴ cases through
``_fuzz_readers`` here and the command-line fuzzing of tests/test_fuzz_cli.py.

Seeding: the cases' ``@settings`` take the session's hypothesis profile (tests/conftest.py), so under the
default ``deterministic`` profile every run replays the same cases (a CI failure reproduces);
``--hypothesis-profile=explore`` draws new ones.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import numpy as np
import pytest
from fuzz_cases import BROKEN, HOSTILE, READERS, TOKEN
from fuzz_tally import LIMIT_S, Hang, Tally, time_limit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archsim.errors import InputError

LINES = st.lists(st.sampled_from(HOSTILE), min_size=1, max_size=3).map(" ".join)


@st.composite
def mutated(draw, text: str) -> str:
    """``text`` with one to three mutations."""
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["token", "token", "insert", "drop_line", "repeat_line", "truncate"]))
        tokens = list(TOKEN.finditer(text))
        lines = text.splitlines(keepends=True)
        if how == "token" and tokens:
            token = draw(st.sampled_from(tokens))
            text = text[:token.start()] + draw(st.sampled_from(HOSTILE) | LINES) + text[token.end():]
        elif how == "insert":
            at = draw(st.integers(0, len(text)))
            text = text[:at] + draw(st.text(max_size=12) | st.sampled_from(HOSTILE)) + text[at:]
        elif how == "drop_line" and lines:
            del lines[draw(st.integers(0, len(lines) - 1))]
            text = "".join(lines)
        elif how == "repeat_line" and lines:
            at = draw(st.integers(0, len(lines) - 1))
            text = "".join(lines[:at + 1] + [lines[at]] + lines[at + 1:])
        elif how == "truncate":
            text = text[:draw(st.integers(0, len(text)))]
    return text


def _reader_numbers(value, depth: int = 0):
    """Every number in a reader's result (dataclasses, containers, numpy arrays), for the sign check."""
    if depth > 8 or isinstance(value, (bool, str, bytes)):
        return
    if isinstance(value, (int, float, np.integer, np.floating)):
        yield float(value)
    elif isinstance(value, np.ndarray) and value.dtype.kind in "iuf":
        yield from value.astype(float).ravel().tolist()
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from _reader_numbers(getattr(value, field.name), depth + 1)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _reader_numbers(item, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _reader_numbers(item, depth + 1)


def _read_once(tally: Tally, kind: str, path: Path, text: str, broken: str | None) -> None:
    """One reader case: a result with no negative or NaN number, or one clean InputError; tallied."""
    reader = READERS[kind][0]
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    began = time.perf_counter()
    try:
        with time_limit(LIMIT_S):
            result = reader(path)
    except Hang:
        tally.fail(kind, "hang", repr(text[:200]))
        return
    except InputError as error:
        message = str(error)
        assert "\n" not in message and "\x1b" not in message and "\x00" not in message, message
        assert str(path) in message or error.where.file is None, message
        tally.counts[(kind, "invalid refused" if broken else "input error")] += 1
        return
    except Exception as error:  # noqa: BLE001 — counted, then the run fails
        tally.fail(kind, "traceback", f"{type(error).__name__}: {error} on {text[:200]!r}")
        return
    finally:
        tally.slowest = max(tally.slowest, time.perf_counter() - began)
    if broken:
        tally.fail(kind, "invalid accepted", broken)
    elif any(not math.isfinite(n) or n < 0 for n in _reader_numbers(result)):
        tally.fail(kind, "negative or nan", repr(text[:200]))
    else:
        tally.counts[(kind, "ok")] += 1


def test_the_tally_counts_each_kind_of_failure(tmp_path, monkeypatch):
    """The acceptance counts can fail: a hang, a traceback, an accepted invalid input, a negative result."""
    import sys

    def buggy(path):
        raise IndexError("a reader's own bug")  # not an InputError: a traceback

    monkeypatch.setattr(sys.modules[__name__], "LIMIT_S", 0.05)
    cases = {"hangs": lambda path: time.sleep(5), "raises": buggy, "accepts": lambda path: 1,
             "negative": lambda path: {"cycles": -1}}
    for kind, reader in cases.items():
        monkeypatch.setitem(READERS, kind, (reader, ""))
    tally = Tally()
    for kind in cases:
        _read_once(tally, kind, tmp_path / kind, "x", "a broken rule" if kind == "accepts" else None)
    assert {what: tally.total(what) for what in ("hang", "traceback", "invalid accepted", "negative or nan")} \
        == {"hang": 1, "traceback": 1, "invalid accepted": 1, "negative or nan": 1}
    with pytest.raises(AssertionError):
        tally.check()


def _fuzz_readers(tmp_path: Path, examples: int) -> Tally:
    tally = Tally()

    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(data=st.data())
    def case(data):
        kind = data.draw(st.sampled_from(sorted(READERS)))
        if data.draw(st.integers(0, 3)) == 0:  # invalid by construction
            text, broken = data.draw(st.sampled_from(BROKEN[kind]))
        else:
            text, broken = data.draw(mutated(READERS[kind][1])), None
        _read_once(tally, kind, tmp_path / f"fuzz.{kind}", text, broken)

    case()
    return tally


@pytest.mark.long
def test_every_reader_gives_a_result_or_one_clean_input_error(tmp_path):
    tally = _fuzz_readers(tmp_path, 480)
    print("\n" + tally.report("readers"))
    tally.check()
    assert tally.total() >= 480 and tally.formats() == set(READERS) and tally.total("invalid refused") > 0


def test_every_documented_rule_broken_in_a_valid_file_is_refused(tmp_path):
    """Exhaustively, not sampled: each break of each format's seed is an InputError, and each seed is valid."""
    tally = Tally()
    for kind in sorted(READERS):
        _read_once(tally, kind, tmp_path / f"seed.{kind}", READERS[kind][1], None)
        for text, what in BROKEN[kind]:
            _read_once(tally, kind, tmp_path / f"broken.{kind}", text, what)
    tally.check()
    assert tally.total("ok") == len(READERS) and tally.total() == len(READERS) + sum(map(len, BROKEN.values()))
