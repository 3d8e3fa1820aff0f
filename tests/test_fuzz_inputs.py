"""Property-based fuzzing of every reader and of the CLI: for any input, a result or one clean
InputError line (exit 2) — never another exception, a hang, a negative or NaN number in a result.

Each case mutates a valid file (replace one token with a hostile value, insert random text, drop or
repeat a line) or draws a command line from hostile flag values. A quarter of the cases are invalid
by construction: the valid file or command with one value set against a documented rule (a negative
count, a NaN time, an unknown dataflow; the tables BREAKS and CLI_BREAKS), which must be refused.
Every case runs under a 30 s alarm. The tallies (cases per format, results, clean errors, invalid
inputs refused) are printed. The default run is a fast slice; the ``slow`` tier is the acceptance
run of ≥ 10⁴ cases over all nine formats: ``pytest -m slow tests/test_fuzz_inputs.py -s``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import signal
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import numpy as np

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archsim.array.config import read_scalesim_cfg
from archsim.cli import main
from archsim.cluster.profile_csv import load_profile_csv
from archsim.cluster.trace import load_tiresias_csv
from archsim.commands.gemm import read_shapes
from archsim.errors import InputError
from archsim.partition.graph_txt import load_graph_txt
from archsim.partition.pipedream import Level, PipeDreamOptions, pipedream_plan
from archsim.spp.topology import load_topology_file
from archsim.sweep.spec import load_spec
from archsim.validation.gpu_csv import read_kernel_csv
from archsim.workload import load_topology

ROOT = Path(__file__).resolve().parents[1]
# PipeDream's graph.txt (a diamond after an Input node, one list-valued size), read and planned.
GRAPH_TXT = "".join(
    f"node{k} -- {desc} -- forward_compute_time={f}, backward_compute_time={b}, activation_size={a}, "
    f"parameter_size={p}\n" for k, desc, f, b, a, p in (
        (1, "Input", "0.0", "0.0", "1000.0", "0.0"), (2, "Conv2d", "2.5", "4.0", "4000.0", "1000.0"),
        (3, "ReLU", "1.0", "1.0", "[4000.0; 16.0]", "0.0"), (4, "Conv2d", "3.0", "5.0", "2000.0", "500.0"),
        (5, "Add", "0.5", "0.5", "2000.0", "0.0"))) + "\tnode1 -- node2\n\tnode2 -- node3\n\tnode2 -- node4\n" \
    "\tnode3 -- node5\n\tnode4 -- node5\n"


def plan_graph_txt(path: Path) -> None:
    """Read a profile and run PipeDream's optimizer on it: a finite, non-negative time or an InputError."""
    plan = pipedream_plan(load_graph_txt(path), [Level(2, 1e9)], PipeDreamOptions(activation_compression_ratio=1.0))
    assert math.isfinite(plan.time_per_stage) and plan.time_per_stage >= 0


READERS = {
    "graph.txt": (plan_graph_txt, GRAPH_TXT),
    "cfg": (read_scalesim_cfg, (ROOT / "configs/arrays/scalesim_32x32_ws.cfg").read_text(encoding="utf-8")),
    "sweep.toml": (load_spec, (ROOT / "configs/sweeps/sample_quick.toml").read_text(encoding="utf-8")),
    "cluster.toml": (load_topology_file, (ROOT / "configs/clusters/spp_sim.toml").read_text(encoding="utf-8")),
    "trace.csv": (load_tiresias_csv,
                  "".join((ROOT / "configs/traces/sample_tiresias.csv").read_text(encoding="utf-8")
                          .splitlines(keepends=True)[:6])),
    "kernels.csv": (read_kernel_csv, ("# gpu: fuzz\nnetwork,layer,batch,op,measured_ms,ifmap_h,channels\n"
                                      "vgg16,conv1,1,F,0.5,224,3\nvgg16,conv1,1,D,0.7,224,3\n")),
    "shapes.csv": (read_shapes, "m,k,n,rows,cols,dataflow\n64,64,64,32,32,ws\n100,20,7,8,8,os\n"),
    "profile.csv": (load_profile_csv, ("layer,forward_s,backward_s,activation_bytes,parameter_bytes\n"
                                       "conv1,0.002,0.005,1000,100\nfc1,0.001,0.002,400,4000\n")),
    "topology.csv": (load_topology, (ROOT / "layers/layerpipe_sample.csv").read_text(encoding="utf-8")),
}
HOSTILE = ["0", "-1", "1", "2147483647", "2147483648", "9223372036854775808", "1" * 30, "1e19", "1e308", "1e999",
           "inf", "-inf", "nan", "NaN", "1.5", "", " ", "%", "%(x)s", "x" * 300, "a\x00b", "\x1b[31m", "\n", '"',
           "'", ",", ";", "[]", "[1, inf]", "[0, 0]", "[2147483647]", "{a = 1}", "true", '"x"', '"../../x"',
           '"/abs"', '"a\\u0000b"', "ü", "\ufeff", "\\", "0x10", "1_000", "[[x]]", "[sweep]", "= 5", "::"]
TOKEN = re.compile(r"[^\s,=:\[\]\"]+")
LINES = st.lists(st.sampled_from(HOSTILE), min_size=1, max_size=3).map(" ".join)

# Values that break a documented rule: counts are positive integers, sizes and times non-negative
# finite numbers, rates and clocks positive finite numbers.
COUNT = ("0", "-1", "1.5", "x", "nan")
SIZE = ("-1", "nan", "inf", "-inf", "x")
RATE = ("0", "-1", "nan", "inf", "x")
# Per format: where a value sits (a CSV column — header line, column name — or a regex whose group 1 is
# the value) and the values that break its rule. Every break of the valid seed must be refused.
BREAKS = {
    "graph.txt": [(r"forward_compute_time=([^,\n]+)", SIZE), (r"backward_compute_time=([^,\n]+)", SIZE),
                  (r"activation_size=([^,\n]+)", SIZE), (r"parameter_size=([^,\n]+)", SIZE)],
    "cfg": [(r"(?m)^ArrayHeight:\s*(\S+)", COUNT), (r"(?m)^ArrayWidth:\s*(\S+)", COUNT),
            (r"(?m)^IfmapSramSzkB:\s*(\S+)", ("-1", "x", "nan")), (r"(?m)^Dataflow : (\S+)", ("xs", "1"))],
    "sweep.toml": [(r"(?m)^batches = (\[.*\])", ("[0]", "[-1]", '["x"]', "[1.5]", "[16, 0]")),
                   (r"(?m)^processors = (\[.*\])", ("[0]", "[-1]", '["x"]', "[2, 1.5]")),
                   (r"(?m)^arrays = (\[.*\])", ('["0x4"]', '["axb"]', '["-1x4"]', "[32]")),
                   (r"(?m)^dataflows = (\[.*\])", ('["xs"]', "[1]")),
                   (r"(?m)^methods = (\[.*\])", ('["bogus"]',)), (r'(?m)^mode = (".*")', ('"bogus"', "1"))],
    "cluster.toml": [(r"(?m)^count = (\S+)", ("0", "-1", '"x"', "1.5")), (r"(?m)^gpus = (\S+)", ("0", "-1", '"x"', "1.5")),
                     (r"(?m)^intra_server_gbps = (\[.*\])", ("[0, 1]", "[-1, 5]", "[1, inf]", "[nan, 1]", '["x", 1]')),
                     (r"(?m)^inter_server_gbps = (\[.*\])", ("[0, 1]", "[-1, 5]", "[1, inf]", "inf", "0")),
                     (r"(?m)^seed = (\S+)", ("-1", '"x"', "1.5"))],
    "trace.csv": [((0, "num_gpu"), COUNT), ((0, "submit_time"), SIZE), ((0, "iterations"), ("-1", "1.5", "x")),
                  ((0, "duration"), SIZE)],
    "kernels.csv": [((1, "batch"), COUNT), ((1, "measured_ms"), SIZE), ((1, "op"), ("Q", "")),
                    ((1, "ifmap_h"), COUNT)],
    "shapes.csv": [((0, "m"), ("-1", "1.5", "x")), ((0, "k"), ("-1", "1.5", "x")), ((0, "rows"), COUNT),
                   ((0, "cols"), COUNT), ((0, "dataflow"), ("xs", "1"))],
    "profile.csv": [((0, "forward_s"), SIZE), ((0, "backward_s"), SIZE), ((0, "activation_bytes"), SIZE),
                    ((0, "parameter_bytes"), SIZE)],
    "topology.csv": [((0, "IFMAP Height"), COUNT), ((0, "Filter Width"), COUNT), ((0, "Channels"), COUNT),
                     ((0, "Num Filter"), COUNT), ((0, "Strides"), COUNT), ((0, "Padding"), ("-1", "1.5", "x"))],
}


def break_sites(kind: str) -> list[tuple[str, str]]:
    """Every (text, what) with one value of the valid seed broken: each site's occurrence × bad value."""
    seed = READERS[kind][1]
    found = []
    for where, values in BREAKS[kind]:
        if isinstance(where, tuple):  # a CSV column: every data row after the header line
            lines = seed.splitlines(keepends=True)
            header = [cell.strip() for cell in lines[where[0]].split(",")]
            column = header.index(where[1])
            for row in range(where[0] + 1, len(lines)):
                for value in values:
                    cells = lines[row].rstrip("\n").split(",")
                    cells[column] = value
                    found.append(("".join(lines[:row]) + ",".join(cells) + "\n" + "".join(lines[row + 1:]),
                                  f"line {row + 1} {where[1]}={value}"))
        else:
            for match in re.finditer(where, seed):
                for value in values:
                    found.append((seed[:match.start(1)] + value + seed[match.end(1):], f"{match.group(0)!r} → {value}"))
    assert found, kind
    return found


BROKEN = {kind: break_sites(kind) for kind in READERS}


class Hang(BaseException):
    """A case ran past the 30 s limit (BaseException: no handler in the code under test swallows it)."""


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


LIMIT_S = 30.0


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

    monkeypatch.setattr(sys.modules[__name__], "LIMIT_S", 0.05)
    cases = {"hangs": lambda path: time.sleep(5), "raises": lambda path: [][0], "accepts": lambda path: 1,
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
    tally = _fuzz_readers(tmp_path, 300)
    print("\n" + tally.report("readers"))
    tally.check()
    assert tally.total() >= 300 and tally.formats() == set(READERS) and tally.total("invalid refused") > 0


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
ARRAYS = st.sampled_from(["32x32", "1x1", "0x4", "3000000000x1", "2147483647x2147483647", "8", "axb", "1e19x1",
                          "-1x4", "256x256"])


# Per command, flag values that break the flag's documented range: set last, so they win.
CLI_BREAKS = {
    "cost": [("--batch", COUNT), ("--array", ("0x4", "-1x4", "axb", "1.5x4", "4x0")), ("--element-bytes", COUNT)],
    "gemm": [("--m", ("-1", "1.5", "x")), ("--n", ("-1", "x")), ("--array", ("0x4", "axb"))],
    "pipeline": [("--processors", COUNT), ("--microbatches", COUNT), ("--batch", COUNT),
                 ("--alpha", ("-1", "nan", "inf", "x")), ("--method", ("bogus",))],
    "schedule": [("--processors", COUNT), ("--microbatches", COUNT), ("--bandwidth", RATE),
                 ("--comm-units", ("-1", "nan", "inf", "x"))],
    "plan": [("--microbatches", COUNT), ("--seed", ("-1", "x", "1.5")), ("--clock-ghz", RATE)],
    "cluster": [("--jobs", COUNT), ("--gpus", COUNT), ("--seed", ("-1", "x")), ("--unit-seconds", SIZE),
                ("--interval", ("-1", "nan", "inf", "x"))],
}
CLI_BROKEN = [(command, flag, value) for command, breaks in CLI_BREAKS.items() for flag, values in breaks
              for value in values]


@st.composite
def command_line(draw) -> tuple[list[str], str | None]:
    """A command with hostile flags, and what breaks it when a quarter of the time one flag is set to a
    value outside its range (CLI_BREAKS); every simulation bounded by --max-ops 20000 (≈ a second)."""
    command = draw(st.sampled_from(["cost", "gemm", "pipeline", "schedule", "plan", "cluster"]))
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


def _numbers(value):
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
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
        assert out == "" and len(err.splitlines()) == 1 and err.startswith("archsim: error: "), (argv, err)
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
            "cluster": ["cluster", "--jobs", "3", "--trace", "synthetic"]}[command]
    tally = Tally()
    _run_once(tally, capsys, [*argv, "--format", "json"], None)
    _run_once(tally, capsys, [*argv, flag, value, "--format", "json"], f"{flag} {value}")
    tally.check()
    assert tally.total("exit 0") == 1 and tally.total("invalid refused") == 1


@pytest.mark.slow
def test_acceptance_fuzz_run(tmp_path, capsys):
    """Issue 19's acceptance: ≥ 10⁴ cases over all nine formats (eight files and the CLI; and the profile
    CSV), 0 tracebacks, 0 hangs past 30 s, 0 invalid inputs accepted, 0 negative or NaN outputs."""
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
