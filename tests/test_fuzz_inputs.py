"""Property-based fuzzing of every reader and of the CLI: for any input, a result or one clean
InputError line (exit 2) — never another exception, a hang, a negative or NaN number in a result.

Each case mutates a valid file (replace one token with a hostile value, insert random text, drop or
repeat a line) or draws a command line from hostile flag values. A quarter of the cases are invalid
by construction: the valid file or command with one value set against a documented rule (a negative
count, a NaN time, an unknown dataflow; the tables in tests/fuzz_cases.py), which must be refused.
Every case runs under a 20 s alarm. The tallies (cases per format, results, clean errors, invalid
inputs refused) are printed. The default run is a fast slice; the ``slow`` tier is the acceptance
run of ≥ 10⁴ cases over every reader format (tests/fuzz_cases.py's ``READERS``) and command:
``pytest -m slow tests/test_fuzz_inputs.py -s``.

Seeding: the cases' ``@settings`` take the session's hypothesis profile (tests/conftest.py), so under the
default ``deterministic`` profile both tiers replay the same cases on every run (a CI failure reproduces);
``--hypothesis-profile=explore`` draws new ones.
"""

from __future__ import annotations

import dataclasses
import json
import math
import signal
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from conftest import USAGE
from fuzz_cases import BROKEN, CLI_BREAKS, CLI_BROKEN, HOSTILE, READERS, ROOT, TOKEN
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archsim.cli import main
from archsim.errors import InputError

LINES = st.lists(st.sampled_from(HOSTILE), min_size=1, max_size=3).map(" ".join)


class Hang(BaseException):
    """A case ran past the 20 s limit (BaseException: no handler in the code under test swallows it)."""


@contextmanager
def time_limit(seconds: float):
    def expire(*_):
        raise Hang

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


LIMIT_S = 20.0  # issue 39: nothing in the fuzz set runs past 20 s


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


class Tally:
    """Outcomes per (format, outcome), the slowest case, and the first few failures with their input."""

    def __init__(self):
        self.counts: Counter = Counter()
        self.failures: list[str] = []
        self.slowest = 0.0

    def fail(self, kind: str, outcome: str, detail: str) -> None:
        self.counts[(kind, outcome)] += 1
        if len(self.failures) < 10:
            self.failures.append(f"{kind} {outcome}: {detail}")

    def total(self, outcome: str | None = None) -> int:
        return sum(n for (_, what), n in self.counts.items() if outcome in (None, what))

    def formats(self) -> set[str]:
        return {kind for kind, _ in self.counts}

    def report(self, title: str) -> str:
        lines = [f"{title}: {self.total()} cases, slowest {self.slowest:.1f} s"]
        for kind in sorted(self.formats()):
            parts = ", ".join(f"{what} {n}" for (k, what), n in sorted(self.counts.items()) if k == kind)
            lines.append(f"  {kind}: {parts}")
        return "\n".join(lines + self.failures)

    def check(self) -> None:
        """The acceptance criteria: no traceback, hang, accepted invalid input, negative or NaN output."""
        bad = {what: self.total(what) for what in ("traceback", "hang", "invalid accepted", "negative or nan")}
        assert not any(bad.values()), (bad, self.failures)


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


NETWORK = ["layerpipe_sample"]
SMALL = st.integers(1, 6).map(str)
INTS = st.sampled_from(["0", "-1", "2147483647", "2147483648", "1e19", "10000000000000000000", "x", "", "4096",
                        "4097", "3"]) | SMALL
FLOATS = st.sampled_from(["0", "-1", "inf", "nan", "1e308", "1e-320", "x", "0.5", "2", "1.001"])
TRANSFORMER = str(ROOT / "configs/transformers/gpt_1024h_24l.json")
GPU_CLUSTER = str(ROOT / "configs/clusters/a100_node.toml")
SWEEPS = st.sampled_from(["tp=1,2", "micro_batch=1,2", "tp=0", "tp=x", "recompute=none,bogus", "schedule=bogus",
                          "sequence_parallel=maybe", "sequence_parallel=true,false", "global_batch=8,100000000",
                          "tp=" + ",".join(map(str, range(1, 600))), "", "pp=1,1", "tp=" + "9" * 5000])
ARRAYS = st.sampled_from(["32x32", "1x1", "0x4", "3000000000x1", "2147483647x2147483647", "8", "axb", "1e19x1",
                          "-1x4", "256x256"])


@st.composite
def command_line(draw) -> tuple[list[str], str | None]:
    """A command with hostile flags, and what breaks it when a quarter of the time one flag is set to a
    value outside its range (CLI_BREAKS); every simulation bounded by --max-ops 20000 (≈ a second)."""
    command = draw(st.sampled_from(["cost", "gemm", "pipeline", "schedule", "plan", "cluster", "train", "search"]))
    flags: list[str] = []

    def maybe(flag: str, values) -> None:
        if draw(st.booleans()):
            flags.extend([flag, draw(values)])

    if command == "cost":
        argv = ["cost", *NETWORK]
        maybe("--batch", INTS)
        maybe("--array", ARRAYS)
        maybe("--element-bytes", INTS)
    elif command == "gemm":
        argv = ["gemm", "--m", draw(INTS), "--k", draw(INTS), "--n", draw(INTS)]
        maybe("--array", ARRAYS)
    elif command == "pipeline":
        argv = ["pipeline", *NETWORK, "--processors", draw(INTS), "--max-ops", "20000"]
        maybe("--microbatches", INTS)
        maybe("--batch", INTS)
        maybe("--alpha", FLOATS)
        maybe("--array", ARRAYS)
        maybe("--method", st.sampled_from(["layerpipe", "pipedream", "gpipe"]))
    elif command == "schedule":
        argv = ["schedule", *NETWORK, "--processors", draw(INTS), "--max-ops", "20000",
                "--policy", draw(st.sampled_from(["gpipe", "mp", "ooo-pipe2", "dp-wfbp", "1f1b", "zb-h1"]))]
        maybe("--microbatches", INTS)
        maybe("--bandwidth", FLOATS)
        maybe("--comm-units", FLOATS)
    elif command == "plan":
        argv = ["plan", *NETWORK, "--cluster", str(ROOT / "configs/clusters/testbed_v100.toml"),
                "--microbatches", draw(INTS), "--max-ops", "20000"]
        maybe("--seed", INTS)
        maybe("--clock-ghz", FLOATS)
    elif command == "train":
        argv = ["train", TRANSFORMER, "--cluster", GPU_CLUSTER, "--global-batch", draw(INTS), "--max-ops", "20000"]
        for flag in ("--tp", "--pp", "--dp", "--micro-batch", "--interleave"):
            maybe(flag, INTS)
        maybe("--schedule", st.sampled_from(["1f1b", "gpipe", "zb-h1", "zb-v", "interleaved-1f1b", "bogus", ""]))
        maybe("--recompute", st.sampled_from(["none", "selective", "full", "x"]))
        maybe("--stage-layers", st.sampled_from(["12,12", "1,23", "0,24", "x", "", "9" * 5000, "²,1"]))
        maybe("--placement", st.sampled_from(["file", "planned", "0", "1", "", "0,0"]))
        maybe("--sweep", SWEEPS)
    elif command == "search":
        argv = ["search", TRANSFORMER, "--cluster", GPU_CLUSTER, "--global-batch", draw(INTS), "--recompute", "none",
                "--schedule", "1f1b", "zb-h1"]
        maybe("--gpus", INTS)
        maybe("--max-micro-batch", INTS)
        maybe("--refine", INTS)
        maybe("--top", INTS)
        maybe("--chunks", INTS)
    else:
        argv = ["cluster", "--jobs", draw(st.sampled_from(["0", "-1", "100001", "x", "3", "5"])),
                "--trace", "synthetic"]
        maybe("--gpus", INTS)
        maybe("--seed", INTS)
        maybe("--unit-seconds", FLOATS)
        maybe("--interval", FLOATS)
    if draw(st.integers(0, 3)) == 0:
        flag, values = draw(st.sampled_from(CLI_BREAKS[command]))
        value = draw(st.sampled_from(values))
        return [*argv, *flags, flag, value, "--format", "json"], f"{flag} {value}"
    return [*argv, *flags, "--format", "json"], None


SIGNED = {"uneven_gain", "placement_gain"}  # search's gains: NaN where no split applies, negative where it loses


def _numbers(value):
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key not in SIGNED:
                yield from _numbers(item)
    elif isinstance(value, list):
        for item in value:
            yield from _numbers(item)


def _run_once(tally: Tally, capsys, argv: list[str], broken: str | None) -> None:
    """One command line: exit 0 with finite non-negative numbers, or exit 2 with one clean line; tallied."""
    began = time.perf_counter()
    try:
        with time_limit(LIMIT_S):
            code = main(argv)
    except Hang:
        tally.fail(argv[0], "hang", " ".join(argv))
        return
    except Exception as error:  # noqa: BLE001 — counted, then the run fails
        tally.fail(argv[0], "traceback", f"{type(error).__name__}: {error} on {' '.join(argv)}")
        return
    finally:
        tally.slowest = max(tally.slowest, time.perf_counter() - began)
        out, err = capsys.readouterr()
    if code == 2:
        assert out == "" and len(err.splitlines()) == 1 and USAGE.match(err), (argv, err)
        tally.counts[(f"cli {argv[0]}", "invalid refused" if broken else "exit 2")] += 1
    elif code != 0:
        tally.fail(f"cli {argv[0]}", "traceback", f"exit {code}: {err[-300:]} on {' '.join(argv)}")
    elif broken:
        tally.fail(f"cli {argv[0]}", "invalid accepted", " ".join(argv))
    elif any(not math.isfinite(n) or n < 0 for n in _numbers(json.loads(out)["rows"])):
        tally.fail(f"cli {argv[0]}", "negative or nan", " ".join(argv))
    else:
        tally.counts[(f"cli {argv[0]}", "exit 0")] += 1


def _fuzz_cli(capsys, examples: int) -> Tally:
    tally = Tally()

    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(case=command_line())
    def case(case):
        _run_once(tally, capsys, *case)

    case()
    return tally


def test_hostile_command_lines_give_a_result_or_one_clean_line(capsys):
    tally = _fuzz_cli(capsys, 40)
    with capsys.disabled():
        print("\n" + tally.report("command lines"))
    tally.check()
    assert tally.total() >= 40


@pytest.mark.parametrize("command, flag, value", CLI_BROKEN)
def test_every_flag_value_out_of_range_is_refused(command, flag, value, capsys):
    """Exhaustively: the valid base command of each kind, with one flag out of its range, exits 2."""
    argv = {"cost": ["cost", *NETWORK], "gemm": ["gemm", "--m", "8", "--k", "8", "--n", "8"],
            "pipeline": ["pipeline", *NETWORK, "--processors", "2"],
            "schedule": ["schedule", *NETWORK, "--processors", "2", "--policy", "gpipe"],
            "plan": ["plan", *NETWORK, "--cluster", str(ROOT / "configs/clusters/testbed_v100.toml"),
                     "--microbatches", "2"],
            "cluster": ["cluster", "--jobs", "3", "--trace", "synthetic"],
            "train": ["train", TRANSFORMER, "--cluster", GPU_CLUSTER, "--global-batch", "8"],
            "search": ["search", TRANSFORMER, "--cluster", GPU_CLUSTER, "--global-batch", "8", "--gpus", "2",
                       "--recompute", "none", "--schedule", "1f1b"]}[command]
    tally = Tally()
    _run_once(tally, capsys, [*argv, "--format", "json"], None)
    _run_once(tally, capsys, [*argv, flag, value, "--format", "json"], f"{flag} {value}")
    tally.check()
    assert tally.total("exit 0") == 1 and tally.total("invalid refused") == 1


@pytest.mark.slow
def test_acceptance_fuzz_run(tmp_path, capsys):
    """Issues 19 and 39's acceptance: ≥ 10⁴ cases over every reader format and every fuzzed command,
    0 tracebacks, 0 hangs past 20 s, 0 invalid inputs accepted, 0 negative or NaN outputs."""
    readers, commands = _fuzz_readers(tmp_path, 10_000), _fuzz_cli(capsys, 1_500)
    with capsys.disabled():
        print("\n" + readers.report("readers") + "\n" + commands.report("command lines"))
        print(f"all: {readers.total() + commands.total()} cases, "
              f"{readers.total('invalid refused') + commands.total('invalid refused')} invalid by construction "
              f"(all refused), slowest {max(readers.slowest, commands.slowest):.1f} s")
    readers.check()
    commands.check()
    assert readers.total() + commands.total() >= 10_000
    assert readers.formats() == set(READERS) and len(commands.formats()) == len(CLI_BREAKS)
