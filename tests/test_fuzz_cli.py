"""Property-based fuzzing of the CLI: for any command line drawn from hostile flag values, exit 0
with finite non-negative numbers, or exit 2 with one clean error line — never a traceback or a hang.

Each case is one of the fuzzed commands (cost, gemm, pipeline, schedule, plan, cluster, train, search)
with hostile values for some of its flags. A quarter of the cases are invalid by construction: one flag
set outside its documented range (``CLI_BREAKS`` in tests/fuzz_cases.py), which must be refused; the
exhaustive test sets each such value once on a valid base command. A quarter of the schedule cases give
a run a flag it would ignore (``SCHEDULE_IGNORED``: array flags with unit or per-stage costs, multistream's
clock and memory, cost flags with --torch-steps), also refused. Every case runs under a 20 s alarm
(tests/fuzz_tally.py) and every simulation is bounded by ``--max-ops``. The ``slow`` tier's acceptance
run (tests/test_fuzz_acceptance.py) draws its command lines through ``_fuzz_cli`` here.

Seeding: the cases' ``@settings`` take the session's hypothesis profile (tests/conftest.py), so under the
default ``deterministic`` profile every run replays the same cases (a CI failure reproduces);
``--hypothesis-profile=explore`` draws new ones.
"""

from __future__ import annotations

import json
import math
import time

import pytest
from conftest import USAGE
from fuzz_cases import (
    CLI_BREAKS,
    CLI_BROKEN,
    ROOT,
    SCHEDULE_IGNORED,
    SCHEDULE_IGNORED_CASES,
    SCHEDULE_RUNS,
    ignored_schedule_argv,
)
from fuzz_tally import LIMIT_S, PAUSED_S, Hang, Tally, alarm_paused, time_limit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archsim.cli import main
from archsim.training.op_rows import SHAPE_KEYS

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


def software_flags(maybe) -> None:
    """The flags ``train`` and ``search`` share (precision, sequence length, the run's software, output
    digits), each with values in range: the base flags are hostile enough, and CLI_BREAKS breaks these."""
    maybe("--dtype", st.sampled_from(["fp32", "fp16", "bf16"]))  # fp32 without --attention standard: refused
    maybe("--seq", st.sampled_from(["1", "64", "1024"]))  # the transformer learns 1,024 positions
    maybe("--attention", st.sampled_from(["standard", "flash"]))
    maybe("--dp-overlap", st.sampled_from(["none", "bucketed"]))
    maybe("--grad-accumulation", st.sampled_from(["fused", "unfused"]))
    maybe("--precision", SMALL)


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
        if draw(st.integers(0, 3)) == 0:  # a run that never reads a flag it is given: refused
            run = draw(st.sampled_from(sorted(SCHEDULE_IGNORED)))
            flag, value = draw(st.sampled_from(SCHEDULE_IGNORED[run]))
            return [*ignored_schedule_argv(run, flag, value), "--format", "json"], f"{flag} ignored by {run}"
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
        software_flags(maybe)
        maybe("--implementation", st.sampled_from(["megatron", "pytorch-eager"]))
        maybe("--balance", st.sampled_from(["even", "planned"]))
        if draw(st.integers(0, 3)) == 0:  # a quarter of the time: at --tp 1 it is turned off with a note
            flags.append("--sequence-parallel")
    elif command == "search":
        argv = ["search", TRANSFORMER, "--cluster", GPU_CLUSTER, "--global-batch", draw(INTS),
                "--recompute", draw(st.sampled_from(["none", "selective", "full"])),
                "--schedule", *draw(st.sampled_from([["1f1b", "zb-h1"], ["interleaved-1f1b"], ["interleaved-zb", "zb-v"],
                                                     ["gpipe", "zb-h2", "dualpipev"], ["looped-bfs"]]))]
        maybe("--gpus", INTS)
        maybe("--max-micro-batch", INTS)
        maybe("--refine", INTS)
        maybe("--top", INTS)
        maybe("--chunks", INTS)
        software_flags(maybe)
        maybe("--objective", st.sampled_from(["time", "cost", "energy"]))
        maybe("--balance", st.sampled_from(["even", "planned"]))
        maybe("--placement", st.sampled_from(["file", "planned"]))
        maybe("--sequence-parallel", st.sampled_from(["both", "on", "off"]))
        maybe("--max-ops", st.sampled_from(["20000", "1"]))
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


SIGNED = {"uneven_gain", "placement_gain"}  # search's gains: null where no split applies, negative where it loses
NO_GEMM = set(SHAPE_KEYS)  # train's GEMM shape: null on a row that runs no GEMM (no NaN written), never negative


def _numbers(value):
    """Every number of a JSON result, a null counted as the NaN it was written from (JSON has no NaN), except
    the gains (SIGNED), a row's GEMM shape where it runs none (NO_GEMM) and a ``train --sweep`` point that reports
    its failure in ``error``."""
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield value
    elif isinstance(value, dict):
        failed = bool(value.get("error"))
        for key, item in value.items():
            if item is None and not failed and key not in SIGNED | NO_GEMM:
                yield math.nan
            elif key not in SIGNED:
                yield from _numbers(item)
    elif isinstance(value, list):
        for item in value:
            yield from _numbers(item)


def _run_once(tally: Tally, capsys, argv: list[str], broken: str | None) -> None:
    """One command line: exit 0 with finite non-negative numbers, or exit 2 with one clean line; tallied."""
    began, paused = time.perf_counter(), PAUSED_S[0]
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
        tally.slowest = max(tally.slowest, time.perf_counter() - began - (PAUSED_S[0] - paused))
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


@pytest.mark.long
def test_the_time_limit_counts_archsim_not_the_tests_checks():
    """A case's 20 s is archsim's time: the timeline checks (tests/conftest.py) run with the clock paused."""
    with time_limit(0.3), alarm_paused():
        time.sleep(0.6)
    with pytest.raises(Hang), time_limit(0.3):
        with alarm_paused():
            time.sleep(0.1)
        time.sleep(0.6)


def test_hostile_command_lines_give_a_result_or_one_clean_line(capsys):
    tally = _fuzz_cli(capsys, 40)
    with capsys.disabled():
        print("\n" + tally.report("command lines"))
    tally.check()
    assert tally.total() >= 40


@pytest.fixture(scope="module")
def valid_runs() -> dict[tuple[str, ...], Tally]:
    """The tally of each valid base command line, run once for the module: a command's cases below all start from
    the same line (a search's is a quarter of a second), so running it again per flag checks nothing new."""
    return {}


def _valid_run(valid_runs: dict[tuple[str, ...], Tally], capsys, argv: list[str]) -> Tally:
    if tuple(argv) not in valid_runs:
        tally = Tally()
        _run_once(tally, capsys, argv, None)
        valid_runs[tuple(argv)] = tally
    return valid_runs[tuple(argv)]


@pytest.mark.parametrize("command, flag, value", CLI_BROKEN)
def test_every_flag_value_out_of_range_is_refused(command, flag, value, capsys, valid_runs):
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
    valid = _valid_run(valid_runs, capsys, [*argv, "--format", "json"])
    valid.check()
    assert valid.total("exit 0") == 1
    tally = Tally()
    _run_once(tally, capsys, [*argv, flag, value, "--format", "json"], f"{flag} {value}")
    tally.check()
    assert tally.total("invalid refused") == 1


@pytest.mark.parametrize("run, flag, value", SCHEDULE_IGNORED_CASES)
def test_every_flag_a_schedule_run_ignores_is_refused(run, flag, value, capsys, valid_runs):
    """Exhaustively: each valid run of SCHEDULE_RUNS exits 0, and with a flag it would ignore exits 2."""
    valid = _valid_run(valid_runs, capsys, [*SCHEDULE_RUNS[run], "--format", "json"])
    valid.check()
    assert valid.total("exit 0") == 1
    tally = Tally()
    _run_once(tally, capsys, [*ignored_schedule_argv(run, flag, value), "--format", "json"], f"{flag} ignored by {run}")
    tally.check()
    assert tally.total("invalid refused") == 1
