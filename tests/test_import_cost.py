"""No fixed cost (issue #27): a command on a small input imports only what it uses. Each runs in a
fresh interpreter and reports which heavy packages ended up in ``sys.modules`` — deterministic, where
timing is not (the times are in benchmarks/bench_fixed_cost.py)."""

import json
import subprocess
import sys

import pytest
from output_commands import CLUSTER, PROFILE

HEAVY = ("pandas", "numba", "scipy", "networkx", "plotly", "torch", "onnx")
_CHILD = """
import contextlib, io, json, sys
from archsim.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(json.loads(sys.argv[1]))
print(json.dumps([code, sorted(m for m in json.loads(sys.argv[2]) if m in sys.modules)]))
"""

# argv → heavy packages the run may load; every other one in HEAVY must stay out
CASES = [
    (["schedule", "--stages", "2", "--stage-times", "1,1,1", "--microbatches", "4", "--policy", "zb-h1"], ()),
    (["schedule", "--stages", "4", "--stage-times", "1,2,1", "--microbatches", "8", "--policy", "1f1b",
      "--format", "csv"], ()),
    (["schedule", "layerpipe_sample", "--policy", "gpipe", "--processors", "2", "--microbatches", "2"], ()),
    (["plan", PROFILE, "--cluster", CLUSTER, "--microbatches", "4", "--method", "pipedream"], ()),
    (["plan", PROFILE, "--cluster", CLUSTER, "--microbatches", "4", "--method", "pipedream", "--format", "json"], ()),
    (["plan", PROFILE, "--cluster", CLUSTER, "--microbatches", "4"], ("networkx",)),  # SPP's min-cut device order
    (["import", "layerpipe_sample"], ()),
    (["gemm", "--m", "64", "--k", "64", "--n", "64"], ()),
    (["cost", "layerpipe_sample"], ()),  # rows from archsim.array.costing.layer_cost_rows, no DataFrame
    (["cost", "layerpipe_sample", "--format", "csv", "--clock-ghz", "1"], ()),
    (["energy", "layerpipe_sample"], ()),  # rows from archsim.energy.model.iteration_energy_rows
    (["energy", "layerpipe_sample", "--format", "json", "--microbatches", "4", "--clock-ghz", "1"], ()),
    (["cost", "layerpipe_sample", "--energy"], ()),
    (["pipeline", "layerpipe_sample", "--processors", "2"], ()),
    (["pipeline", "layerpipe_sample", "--processors", "2", "--microbatches", "2", "--clock-ghz", "1"], ()),
    (["cluster", "--trace", "synthetic", "--jobs", "8"], ()),  # one run: summarize with numpy, plain rows
    (["cluster", "--trace", "synthetic", "--jobs", "8", "--policy", "gandiva", "--format", "csv"], ()),
    (["bppsa", "rnn"], ()),  # records rendered by archsim.rows
]


def loaded(argv: list[str]) -> tuple[int, list[str]]:
    return loaded_modules(argv, list(HEAVY))


@pytest.mark.parametrize("argv, allowed", CASES, ids=[" ".join(a[:2]) + f" #{i}" for i, (a, _) in enumerate(CASES)])
def test_a_small_command_imports_no_heavy_package_it_does_not_use(argv, allowed):
    code, modules = loaded(argv)
    assert code == 0
    assert sorted(set(modules) - set(allowed)) == []


def test_help_imports_no_numpy():
    done = subprocess.run([sys.executable, "-c", ("import sys\nfrom archsim.cli import main\n"
                                                  "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
                                                  "print('numpy' in sys.modules, 'pandas' in sys.modules)")],
                          capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "False False"


@pytest.mark.long
def test_a_large_schedule_still_runs_the_compiled_kernel():
    """Above the size limit the simulator loads numba (so the compiled path is the one large jobs use)."""
    code, modules = loaded(["schedule", "--stages", "8", "--stage-times", "1,1,1", "--microbatches", "2000",
                            "--policy", "1f1b"])
    assert code == 0 and "numba" in modules


def test_a_pipedream_plan_prints_its_makespan_without_the_simulator():
    """``plan --method pipedream`` prints the PE makespan (archsim.spp.pe_order, checked against the
    simulator in tests/test_pe_finish_time.py) and loads neither the event simulator nor SPP's search:
    with them it was slower than PipeDream's released optimizer on its smallest profile."""
    argv = ["plan", PROFILE, "--cluster", CLUSTER, "--microbatches", "4", "--method", "pipedream"]
    code, modules = loaded_modules(argv, ["archsim.sim", "archsim.spp.pe", "archsim.spp.plan", "archsim.spp.prm",
                                          "archsim.spp.rdo"])
    assert code == 0 and modules == []


def test_only_the_process_entry_freezes_the_collector():
    """``archsim`` and ``python -m archsim`` freeze the collector's objects after the command (the exit's
    collections then skip what imports built); :func:`main` called in-process (tests, notebooks) must not."""
    code = ("import gc, sys\nfrom archsim.cli import command_line, main\n"
            "main(['gemm', '--m', '8', '--k', '8', '--n', '8'])\nafter_main = gc.get_freeze_count()\n"
            "sys.argv = ['archsim', 'gemm', '--m', '8', '--k', '8', '--n', '8']\ncommand_line()\n"
            "print(after_main, gc.get_freeze_count() > 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "0 True"
    done = subprocess.run([sys.executable, "-m", "archsim", "gemm", "--m", "8", "--k", "8", "--n", "8", "--format",
                           "csv"], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("m,k,n")


def loaded_modules(argv: list[str], names: list[str]) -> tuple[int, list[str]]:
    done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(argv), json.dumps(names)], capture_output=True,
                          text=True, check=True)
    code, modules = json.loads(done.stdout.splitlines()[-1])
    return code, modules
