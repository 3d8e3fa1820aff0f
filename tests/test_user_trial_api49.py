"""User trial 49 (issue #40 item 4, "the Python API as the CLI"): a notebook user calls ``archsim.train``,
``archsim.search`` and ``archsim.cost`` with each flag of the command as a keyword and a bad value of the kind a
widget or a CSV cell hands over. The command's one-line refusal (``archsim COMMAND ... --FLAG VALUE``, exit 2) is
the reference: the function refuses the same values with the same line, the flag's spelling as the keyword's
(docs/api.md, "The flags as keywords"), and accepts what the command accepts. What it returns is then the
command's ``--format json``, read from ``python -m archsim`` run as a separate process."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings

import pytest
from api_parity_helpers import MODEL, NODE, TOPOLOGY, as_printed, cli_error
from test_api_parity import EXCLUDED, keyword, parser_of
from test_docs import ROOT

import archsim
from archsim import cli

SEARCH_GRID = {"gpus": 2, "max_micro_batch": 1, "recompute": "full", "schedule": "1f1b"}  # a small grid: quick
# command → (its argv before the flag under test, the same call from Python with the flag's keyword added)
CALLS = {
    "train": (["train", MODEL, "--cluster", NODE, "--global-batch", "16"],
              lambda kw: archsim.train(MODEL, **{"cluster": NODE, "global_batch": 16, **kw})),
    "search": (["search", MODEL, "--cluster", NODE, "--global-batch", "16", "--gpus", "2", "--max-micro-batch", "1",
                "--recompute", "full", "--schedule", "1f1b"],
               lambda kw: archsim.search(MODEL, **{"cluster": NODE, "global_batch": 16, **SEARCH_GRID,
                                                   "progress": False, **kw})),
    "cost": (["cost", TOPOLOGY], lambda kw: archsim.cost(TOPOLOGY, **kw)),
}
SPP_CLUSTER = str(ROOT / "configs" / "clusters" / "testbed_1080ti.toml")
KERNELS = str(ROOT / "tests" / "data" / "neusight_kernels" / "linear.csv")
# the other jobs docs/api.md gives the flags as keywords, run in a scratch folder (``report="x"`` writes x there)
OTHER_CALLS = {
    "energy": (["energy", TOPOLOGY], lambda kw: archsim.iteration_energy(TOPOLOGY, **kw)),
    "gemm": (["gemm", "--m", "8", "--k", "8", "--n", "8"], lambda kw: archsim.gemm(**{"m": 8, "k": 8, "n": 8, **kw})),
    "plan": (["plan", TOPOLOGY, "--cluster", SPP_CLUSTER, "--microbatches", "4"],
             lambda kw: archsim.plan(TOPOLOGY, **{"cluster": SPP_CLUSTER, "microbatches": 4, **kw})),
    "cluster": (["cluster", "--jobs", "4", "--gpus", "8"], lambda kw: archsim.cluster_jobs(**{"jobs": 4, "gpus": 8, **kw})),
    "validate-gpu": (["validate-gpu", "--csv", KERNELS], lambda kw: archsim.validate_gpu(**{"csv": KERNELS, **kw})),
}
# refusals of a combination, whose line names other settings with their values (``--engine cycle``/``engine='cycle'``)
# plan's activation_compression_ratio beside its default method is refused whatever its value (PipeDream's option:
# tests/test_inputs49.py checks both wordings)
COMBINATIONS = {("gemm", "shapes"), ("gemm", "layout"), ("plan", "activation_compression_ratio")}
# What a widget, a CSV cell or a slip of the hand gives: a word, counts out of range, a fraction, a blank
BAD = ("x", "0", "-1", "1.5", "", " ", "nan")


def flags_of(command: str) -> list[tuple[str, str]]:
    """Each option of the command that takes a value, as (flag name, keyword), less the command's own."""
    found = []
    for action in parser_of(command)._actions:
        name = keyword(action)
        if action.option_strings and action.nargs != 0 and name not in EXCLUDED[command]:
            found.append((next(f for f in action.option_strings if f.startswith("--"))[2:], name))
    return found


def command_refusal(argv: list[str], capsys) -> str | None:
    """The command's error line (None where it ran), its prefix dropped and its flag spelt as the keyword would be."""
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = cli.main(argv)
    printed = capsys.readouterr().err.strip().splitlines()
    assert code in (0, 2), printed
    return None if code == 0 else re.sub(r"^archsim [\w-]+: error: ", "", printed[-1])


def keyword_refusal(call, keywords: dict) -> str | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            call(keywords)
        except archsim.InputError as refused:
            assert "\n" not in str(refused)
            return str(refused)
    return None


def as_keyword(line: str, flag: str, name: str) -> str:
    """The command's line as the function says it: ``argument --tp: …`` and ``field 'global-batch'`` are the
    field ``field 'tp'`` / ``field 'global_batch'``, a flag named in the sentence (``--input-shape applies``, ``--jobs
    draws``) the keyword, and a flag with a placeholder or a number (``--config FILE``, ``--tp 2``) the keyword's ``config=FILE``, ``tp=2``, as
    :func:`archsim.console.setting` spells it for either caller."""
    line = line.replace(f"argument --{flag}: ", f"field '{name}': ", 1).replace(f"field '{flag}'", f"field '{name}'")
    line = re.sub(r"argument --([a-z][a-z0-9-]*): ", lambda other: f"field '{other[1].replace('-', '_')}': ", line,
                  count=1)  # another flag's refusal (--trace given beside --jobs: ``argument --jobs:``)
    return re.sub(r"--([a-z][a-z0-9-]*)(?: ([A-Z][A-Z0-9_]*|[0-9][0-9.]*[0-9]|[0-9])\b)?",  # jobs; config=FILE; gb=6.83
                  lambda named: named[1].replace("-", "_") + (f"={named[2]}" if named[2] else ""), line)


@pytest.mark.parametrize(("command", "flag", "name"),
                         [(command, flag, name) for command in CALLS for flag, name in flags_of(command)])
def test_each_flags_bad_values_are_refused_as_the_keywords(command, flag, name, capsys):
    """Before: ``dtype=""`` (train, search, cost), ``schedule=""`` (search), and cost's ``array``, ``dataflow``,
    ``only``, ``dim`` and ``energy_table`` given ``""`` ran with the default, where ``--dtype ''`` is refused;
    the other blanks said ``expected a positive integer, got ''`` (the command: ``expected a value, got an empty
    one``); a value outside a flag's choices was argparse's ``invalid choice: 'x' (choose from 'ws', 'os', 'is')``
    from the command and ``expected one of …``, ``unknown dataflow 'x'; choose one of …``, ``unknown mode 'x';
    choose paper or exact``, ``unknown dtype …`` or ``expected both, on or off`` from the function."""
    argv, call = CALLS[command]
    for value in BAD:
        said = command_refusal([*argv, f"--{flag}", value], capsys)
        raised = keyword_refusal(call, {name: value})
        assert (said and as_keyword(said, flag, name)) == raised, (flag, value)


@pytest.mark.parametrize(("command", "flag", "name"), [
    pytest.param(command, flag, name, marks=[pytest.mark.long] if command == "cluster" else [])  # a value taken runs jobs
    for command in OTHER_CALLS for flag, name in flags_of(command) if (command, name) not in COMBINATIONS])
def test_the_other_jobs_flags_bad_values_are_refused_as_the_keywords(command, flag, name, capsys, tmp_path,
                                                                     monkeypatch):
    """Before: ``cluster_jobs``' ``gpus``, ``seed``, ``seeds`` and ``jobs`` and ``plan``'s ``seed`` and
    ``max_search_steps`` said ``expected a positive integer`` (or non-negative) where the flag says ``expected a
    processor count`` (``a seed``, ``a seed count``, ``a job count``, ``a step count``); ``validate_gpu``'s
    ``memory_gbps=0`` passed the value's check (``--memory-gbps 0``: ``expected a positive number``)."""
    monkeypatch.chdir(tmp_path)
    argv, call = OTHER_CALLS[command]
    for value in BAD:
        said = command_refusal([*argv, f"--{flag}", value], capsys)
        raised = keyword_refusal(call, {name: value})
        assert (said and as_keyword(said, flag, name)) == raised, (flag, value)


def test_the_table_covers_every_job_and_the_blank_and_choice_flags():
    """A flag added to one of the commands joins the table above by itself; these are the ones that failed."""
    assert {"dtype", "dataflow", "mode", "array", "only", "dim", "energy_table"} <= {n for _, n in flags_of("cost")}
    assert {"dtype", "schedule", "sequence_parallel", "gpus"} <= {n for _, n in flags_of("search")}
    assert {"dtype", "stage_layers", "tp", "global_batch"} <= {n for _, n in flags_of("train")}


@pytest.mark.parametrize("name", ["gpus", "recompute", "schedule", "chunks"])
def test_a_list_keyword_given_no_value_is_refused_as_the_flag_given_none(name, capsys):
    """``--gpus`` with no value is a usage error; ``gpus=[]`` searched every GPU count, ``recompute=[]`` costed nothing
    (an empty answer and a note), ``schedule=[]`` every schedule."""
    argv, call = CALLS["search"]
    said = cli_error([*argv, f"--{name.replace('_', '-')}"], capsys)
    said, _, choices = said.partition(" (one of ")  # a flag of a few values names them (recompute, schedule)
    assert said.endswith(f"argument --{name}: expected at least one argument")
    assert bool(choices) == (name in ("recompute", "schedule"))
    with pytest.raises(archsim.InputError) as refused:
        call({name: []})
    assert str(refused.value) == f"field '{name}': expected at least one argument"


@pytest.mark.parametrize(("name", "value"), [("recompute", None), ("schedule", {"1f1b": 1}), ("gpus", object())])
def test_a_list_keyword_given_what_no_flag_gives_is_one_line(name, value):
    """``recompute=None`` raised ``TypeError: 'NoneType' object is not iterable`` from inside the search."""
    with pytest.raises(archsim.InputError) as refused:
        CALLS["search"][1]({name: value})
    assert refused.value.where.field == name
    assert refused.value.message == f"expected a value or a list of values, got {type(value).__name__}"


def test_stage_layers_given_one_count_is_read_as_the_flag_reads_it(capsys):
    """``stage_layers=5`` raised ``TypeError: 'int' object is not iterable``; ``--stage-layers 5`` is one count."""
    argv, call = CALLS["train"]
    said = command_refusal([*argv, "--pp", "2", "--stage-layers", "5"], capsys)
    assert said and keyword_refusal(call, {"pp": 2, "stage_layers": 5}) == as_keyword(said, "stage-layers",
                                                                                       "stage_layers")
    assert keyword_refusal(call, {"stage_layers": 24}) is None  # one stage of all 24 layers, as --stage-layers 24


def test_dim_given_a_bare_number_is_one_line():
    """``dim=5`` raised ``TypeError: 'int' object is not iterable``; a --dim entry is NAME=VALUE."""
    with pytest.raises(archsim.InputError) as refused:
        archsim.cost(TOPOLOGY, dim=5)
    assert str(refused.value) == "field 'dim': expected NAME=POSITIVE_INTEGER, got '5'"


def test_plans_no_peak_refusal_names_the_keyword_as_python_spells_it(capsys):
    """A card of no fp16 peak: the command says ``give --dtype fp32``; the function said ``give dtype fp32``, neither
    the flag nor the keyword (docs/api.md: the advice names a setting as you would type it)."""
    argv = ["plan", TOPOLOGY, "--cluster", "configs/clusters/testbed_1080ti_gpu.toml", "--microbatches", "4"]
    assert cli_error(argv, capsys).endswith("argument --dtype: NVIDIA GTX 1080 Ti has no fp16 peak; give --dtype fp32")
    with pytest.raises(archsim.InputError) as refused:
        archsim.plan(TOPOLOGY, cluster="configs/clusters/testbed_1080ti_gpu.toml", microbatches=4)
    assert str(refused.value) == "field 'dtype': NVIDIA GTX 1080 Ti has no fp16 peak; give dtype='fp32'"


def printed_json(argv: list[str]) -> dict:
    """``python -m archsim ARGV --format json`` in a process of its own, as a shell runs it."""
    done = subprocess.run([sys.executable, "-m", "archsim", *argv, "--format", "json"], cwd=ROOT, capture_output=True,
                          text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.long
@pytest.mark.parametrize(("argv", "call"), [
    (["cost", TOPOLOGY, "--array", "16x16", "--batch", "8", "--dtype", "fp16", "--dataflow", "os", "--clock-ghz", "1.5",
      "--energy", "--only", "conv"],  # the analytic engine: the cycle engine's parity is tests/test_api_parity_cost.py's
     lambda: archsim.cost(TOPOLOGY, array="16x16", batch="8", dtype="fp16", dataflow="os", clock_ghz="1.5",
                          energy=True, only=["conv"])),
    (["train", MODEL, "--cluster", NODE, "--tp", "2", "--pp", "2", "--dp", "2", "--global-batch", "16",
      "--micro-batch", "2", "--recompute", "selective", "--stage-layers", "10,14", "--dtype", "bf16"],
     lambda: archsim.train(MODEL, cluster=NODE, tp="2", pp=2.0, dp=2, global_batch=16, micro_batch=2,
                           recompute="selective", stage_layers=[10, 14], dtype="bf16")[0]),
    (["search", MODEL, "--cluster", NODE, "--global-batch", "16", "--gpus", "4", "8", "--top", "3",
      "--schedule", "1f1b", "--recompute", "none,full", "--max-micro-batch", "2"],
     lambda: archsim.search(MODEL, cluster=NODE, global_batch=16, gpus="4,8", top=3, schedule="1f1b",
                            recompute=["none", "full"], max_micro_batch="2", progress=False)),
], ids=["cost", "train", "search"])
def test_the_result_is_the_commands_json_from_another_process(argv, call):
    """The numbers a notebook gets are the ones a shell prints, at full precision, with the keywords given as a
    widget gives them (``"8"``, ``2.0``, a list for a comma flag)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = call()
    assert as_printed(result.to_dict()) == printed_json(argv)


@pytest.mark.parametrize(("call", "field"), [
    (lambda: archsim.train(MODEL, cluster=NODE, global_batch=None), "global_batch"),
    (lambda: archsim.train(MODEL, cluster=NODE, global_batch=16, tp=None), "tp"),
    (lambda: archsim.search(MODEL, cluster=NODE, global_batch=16, top=None, progress=False), "top"),
    (lambda: archsim.cost(TOPOLOGY, batch=None), "batch"),
])
def test_none_for_a_count_is_said_as_none(call, field):
    """``tp=None`` said ``expected a positive integer, got 'None'``, the line ``tp="None"`` gets: a notebook's empty
    cell (None) read as if the user had typed the word."""
    with pytest.raises(archsim.InputError) as refused:
        call()
    assert str(refused.value) == f"field '{field}': expected a positive integer, got None"
    with pytest.raises(archsim.InputError, match="got 'None'"):
        archsim.train(MODEL, cluster=NODE, global_batch="None")


@pytest.mark.parametrize(("method", "name"), [("layerpipe", "split_axes"), ("layerpipe", "alpha"),
                                              ("gpipe", "balance"), ("pipedream", "replication")])
def test_pipelines_method_keywords_refuse_a_blank_as_the_flags_do(method, name, capsys):
    """``archsim.pipeline``'s ``**options`` (each method's own keywords): ``replication=""`` ran PipeDream's default
    and ``split_axes=""``, ``alpha=" "`` and ``balance=""`` each said a line of its own, where ``archsim pipeline
    --split-axes ''`` says the one every flag says."""
    profile = archsim.profile(TOPOLOGY, batch=4)
    with pytest.raises(archsim.InputError) as refused:
        archsim.pipeline(profile, processors=3, method=method, **{name: " " if name == "alpha" else ""})
    assert str(refused.value) == f"field '{name}': expected a value, got an empty one"
    if name in ("split_axes", "alpha"):  # archsim pipeline's flags (balance and replication are the library's)
        flag = name.replace("_", "-")
        said = cli_error(["pipeline", TOPOLOGY, "--processors", "3", f"--{flag}", ""], capsys)
        assert as_keyword(re.sub(r"^archsim [\w-]+: error: ", "", said), flag, name) == str(refused.value)


@pytest.mark.parametrize(("name", "value"), [("workers", "x"), ("workers", "0"), ("max_configs", "0"), ("max_configs", "1.5")])
def test_run_sweeps_counts_are_refused_in_their_flags_words(name, value, capsys, tmp_path, monkeypatch):
    """``run_sweep(workers="x")`` said ``expected a positive integer``; ``archsim sweep --workers x`` says ``expected a
    worker count`` (``--max-configs``: ``a configuration count``)."""
    spec = str(ROOT / "configs" / "sweeps" / "sample_quick.toml")
    monkeypatch.chdir(tmp_path)  # nothing is written: each is refused before the sweep starts
    flag = name.replace("_", "-")
    said = command_refusal(["sweep", spec, f"--{flag}", value], capsys)
    assert said and keyword_refusal(lambda kw: archsim.run_sweep(spec, **kw), {name: value}) == \
        as_keyword(said, flag, name)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("argv", "call", "flag"), [
    (["cost", TOPOLOGY], lambda: archsim.cost(TOPOLOGY, only=[]), "only"),
    ([*CALLS["train"][0]], lambda: archsim.train(MODEL, cluster=NODE, global_batch=16, stage_layers=[]), "stage-layers"),
    (["pipeline", TOPOLOGY, "--processors", "3"],
     lambda: archsim.pipeline(archsim.profile(TOPOLOGY, batch=4), processors=3, split_axes=[]), "split-axes"),
])
def test_a_comma_keyword_given_an_empty_list_is_refused_as_the_flag_given_none(argv, call, flag, capsys):
    """``split_axes=[]`` planned LayerPipe with no δ split at all (a plan ``--split-axes`` cannot ask for),
    ``only=[]`` costed every layer and ``stage_layers=[]`` said ``expected at least one argument``: ``--only``,
    ``--split-axes`` and ``--stage-layers`` alone are usage errors, ``expected one argument``."""
    name = flag.replace("-", "_")
    said = command_refusal([*argv, f"--{flag}"], capsys)
    assert said == f"argument --{flag}: expected one argument"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(archsim.InputError) as refused:
            call()
    assert str(refused.value) == as_keyword(said, flag, name)
