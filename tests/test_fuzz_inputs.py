"""Property-based fuzzing of every reader and of the CLI: for any input, a result or one clean
InputError line (exit 2) — never another exception, a negative or NaN number in a result.

Each case mutates a valid file (replace one token with a hostile value, insert random text, drop or
repeat a line) or draws a command line from hostile flag values. The default run is a fast slice;
the ``slow`` tier runs ≥ 10⁴ cases: ``pytest -m slow tests/test_fuzz_inputs.py``.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path

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


def _fuzz_readers(tmp_path: Path, examples: int) -> Counter:
    outcomes: Counter = Counter()

    @settings(max_examples=examples, deadline=30_000, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(data=st.data())
    def case(data):
        kind = data.draw(st.sampled_from(sorted(READERS)))
        reader, seed = READERS[kind]
        path = tmp_path / f"fuzz.{kind}"
        path.write_bytes(data.draw(mutated(seed)).encode("utf-8", "surrogatepass"))
        try:
            reader(path)
            outcomes[(kind, "ok")] += 1
        except InputError as error:
            message = str(error)
            assert "\n" not in message and "\x1b" not in message and "\x00" not in message
            assert str(path) in message or error.where.file is None
            outcomes[(kind, "input error")] += 1

    case()
    return outcomes


@pytest.mark.parametrize("examples", [pytest.param(300, id="fast"),
                                      pytest.param(10_000, id="10k", marks=pytest.mark.slow)])
def test_every_reader_gives_a_result_or_one_clean_input_error(tmp_path, examples):
    outcomes = _fuzz_readers(tmp_path, examples)
    print(f"\nreader cases: {sum(outcomes.values())}", dict(sorted(outcomes.items())))
    assert sum(outcomes.values()) >= examples


NETWORK = ["layerpipe_sample"]
SMALL = st.integers(1, 6).map(str)
INTS = st.sampled_from(["0", "-1", "2147483647", "2147483648", "1e19", "10000000000000000000", "x", "", "4096",
                        "4097", "3"]) | SMALL
FLOATS = st.sampled_from(["0", "-1", "inf", "nan", "1e308", "1e-320", "x", "0.5", "2", "1.001"])
ARRAYS = st.sampled_from(["32x32", "1x1", "0x4", "3000000000x1", "2147483647x2147483647", "8", "axb", "1e19x1",
                          "-1x4", "256x256"])


@st.composite
def command_line(draw) -> list[str]:
    """A command with hostile flags; every simulation bounded by --max-ops 20000 (≈ a second)."""
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
    return [*argv, *flags, "--format", "json"]


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


def _fuzz_cli(capsys, examples: int) -> Counter:
    outcomes: Counter = Counter()

    @settings(max_examples=examples, deadline=30_000, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(argv=command_line())
    def case(argv):
        code = main(argv)
        out, err = capsys.readouterr()
        if code == 2:
            assert out == "" and len(err.splitlines()) == 1 and err.startswith("archsim: error: "), (argv, err)
            outcomes[(argv[0], "exit 2")] += 1
            return
        assert code == 0, (argv, code, err)
        for number in _numbers(json.loads(out)["rows"]):
            assert math.isfinite(number) and number >= 0, (argv, number)
        outcomes[(argv[0], "exit 0")] += 1

    case()
    return outcomes


@pytest.mark.parametrize("examples", [pytest.param(40, id="fast"),
                                      pytest.param(1_500, id="1500", marks=pytest.mark.slow)])
def test_hostile_command_lines_give_a_result_or_one_clean_line(capsys, examples):
    outcomes = _fuzz_cli(capsys, examples)
    with capsys.disabled():
        print(f"\ncommand lines: {sum(outcomes.values())}", dict(sorted(outcomes.items())))
    assert sum(outcomes.values()) >= examples
