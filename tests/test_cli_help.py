"""The CLI explains itself: --version, defaults in every help, lazy sub-command imports, public API."""

from __future__ import annotations

import argparse
import importlib.metadata
import subprocess
import sys

import pytest

import archsim
from archsim import cli


def subcommand_parsers(parser: argparse.ArgumentParser, prefix: str = "archsim"):
    """(``archsim cost``, its parser) for every sub-command, nested ones (``bppsa rnn``) included."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield f"{prefix} {name}", child
                yield from subcommand_parsers(child, f"{prefix} {name}")


def test_version_matches_installed_metadata(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"archsim {importlib.metadata.version('archsim')}"
    assert archsim.__version__ == importlib.metadata.version("archsim")


def test_top_level_help_imports_no_command_and_no_numpy():
    """`archsim --help` must not import the sub-commands (numpy, pandas, numba): that made it take seconds."""
    code = ("import sys\nfrom archsim.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "heavy = sorted(m for m in ('numpy', 'pandas', 'numba', 'plotly', 'scipy') if m in sys.modules)\n"
            "commands = sorted(m for m in sys.modules if m.startswith('archsim.commands.'))\n"
            "print('LOADED', heavy, commands)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "LOADED [] []" in out
    for name, _, text in cli.REGISTRY:
        assert name in out and text.split()[0] in out


def test_no_commands_help_loads_scipy_pandas_or_plotly():
    """Each command's --help builds its parser only: scipy (once pulled in through the GPU catalog),
    pandas and plotly load when a command runs (their CPU time: benchmarks/bench_cli_startup.py)."""
    names = [name for name, _, _ in cli.REGISTRY]
    code = ("import sys\nfrom archsim.cli import main\nfor name in " + repr(names) + ":\n"
            "    try:\n        main([name, '--help'])\n    except SystemExit:\n        pass\n"
            "print('HEAVY', sorted(m for m in ('pandas', 'plotly', 'scipy', 'numba') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "HEAVY []" in out


def test_a_subcommand_loads_only_its_own_module():
    code = ("import sys\nfrom archsim.cli import build_parser\nbuild_parser(['gemm', '--help'])\n"
            "print(sorted(m for m in sys.modules if m.startswith('archsim.commands.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "archsim.commands.gemm" in out and "archsim.commands.cost" not in out and "archsim.commands.sweep" not in out


def test_registry_help_is_each_commands_own():
    loaded = [cli.load_command(target) for _, target, _ in cli.REGISTRY]
    assert [c.name for c in loaded] == [name for name, _, _ in cli.REGISTRY]
    assert [c.help for c in loaded] == [text for _, _, text in cli.REGISTRY]


def test_every_option_has_help_and_states_its_default():
    parsers = list(subcommand_parsers(cli.build_parser()))
    assert {"archsim cost", "archsim bppsa rnn", "archsim validate-gpu"} <= {name for name, _ in parsers}
    for name, parser in parsers:
        text = " ".join(parser.format_help().split())
        for action in parser._actions:
            if (isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or not action.option_strings
                    or action.help == argparse.SUPPRESS):  # an older name kept out of the help
                continue
            assert action.help, f"{name} {action.option_strings[0]} has no help"
            if action.default not in (None, False, argparse.SUPPRESS):
                expanded = " ".join(parser._get_formatter()._expand_help(action).split())
                assert "default" in expanded, f"{name} {action.option_strings[0]}: no default in {expanded!r}"
        if any(a.option_strings and a.default not in (None, False, argparse.SUPPRESS) for a in parser._actions):
            assert "(default: " in text or "(default " in text, name


def _option(command: str, flag: str) -> argparse.Action:
    parsers = dict(subcommand_parsers(cli.build_parser()))
    return next(a for a in parsers[f"archsim {command}"]._actions if flag in a.option_strings)


@pytest.mark.parametrize(("command", "flag"), [("pipeline", "--method"), ("schedule", "--sync"),
                                               ("train", "--recompute"), ("search", "--recompute")])
def test_a_choice_flags_help_says_what_each_choice_is(command, flag):
    """A help that only names the kind ("partitioner") leaves the user guessing what ooo or ps is."""
    action = _option(command, flag)
    assert all(str(choice) in action.help for choice in action.choices), (command, flag, action.help)



def test_plan_links_help_names_all_that_exact_prices():
    """--links exact prices more than single sends (docs/papers/spp.md): a split boundary's replica pairs share
    their links, and a stage's all-reduce is train's, slowed through the leaves' uplinks; the help says all three."""
    text = " ".join(_option("plan", "--links").help.split())
    assert "launch latency" in text and "η·bandwidth" in text
    assert "replica pairs share" in text
    assert "all-reduce" in text and "uplink" in text

def test_pipeline_summary_names_every_method():
    """`archsim --help` listed pipeline's methods as (layerpipe, pipedream, gpipe) though --method takes
    ooo too; the parser's own choices are the reference (fails on that summary)."""
    summary = {name: text for name, _, text in cli.REGISTRY}["pipeline"]
    assert all(choice in summary for choice in _option("pipeline", "--method").choices), summary


def test_import_summary_names_transformer_configs():
    """docs/own-model.md: `archsim import MODEL` writes an ONNX file or a transformer config as a topology CSV;
    the summary said (ONNX, PyTorch) only (fails on that summary)."""
    summary = {name: text for name, _, text in cli.REGISTRY}["import"]
    assert "transformer config" in summary, summary


@pytest.mark.parametrize("command", ["pipeline", "schedule"])
def test_processors_help_says_what_a_processor_is(command):
    assert "stage" in _option(command, "--processors").help


def test_list_defaults_show_as_typed_not_as_python_lists():
    import re

    for name, parser in subcommand_parsers(cli.build_parser()):
        text = " ".join(parser.format_help().split())
        assert not re.search(r"\(default: [\[(]", text), (name, re.findall(r"\(default: [\[(][^)]*\)", text))
    search = dict(subcommand_parsers(cli.build_parser()))["archsim search"]
    assert "(default: none selective full)" in " ".join(search.format_help().split())


def test_help_shows_the_defaults_users_tripped_on(capsys):
    for argv, needle in ((["pipeline", "--help"], "(default: layerpipe)"), (["schedule", "--help"], "(default: 1)")):
        with pytest.raises(SystemExit):
            cli.main(argv)
        assert needle in " ".join(capsys.readouterr().out.split())


def test_public_api_is_listed_and_resolves():
    names = [n for n in archsim.__all__ if n != "__version__"]
    assert set(names) <= set(dir(archsim))
    assert {"load_network", "cost", "profile", "pipeline", "simulate", "run_sweep", "write_report"} <= set(names)
    for name in names:
        assert getattr(archsim, name) is not None
    with pytest.raises(AttributeError):
        archsim.no_such_thing  # noqa: B018


def test_public_api_cost_and_pipeline_keyword_only():
    # LayerPipe sample conv4: 28×28×128 → 128, 3×3, stride 1, pad 1, batch 32 → F is the GEMM
    # (32·28·28, 9·128, 128); on 32×32 ws: ⌈1152/32⌉·⌈128/32⌉·(2·32 + 32 + 25088 − 2) − 1 (SCALE-Sim's count).
    table = archsim.cost("layerpipe_sample", array="32x32", batch=32, mode="paper")
    assert int(table.set_index("layer").F_cycles["conv4"]) == 36 * 4 * (64 + 32 + 25088 - 2) - 1
    with pytest.raises(TypeError):
        archsim.cost("layerpipe_sample", "32x32")  # array is keyword-only
    profile = archsim.profile("layerpipe_sample", array="32x32", batch=32, mode="paper")
    plan = archsim.pipeline(profile, processors=3, method="pipedream")
    # PipeDream puts conv1, conv2, conv3+conv4 on three processors (Table III): the slowest is conv1's total
    assert plan.max_stage_cost == pytest.approx(float(table.set_index("layer").total_cycles["conv1"]))
    timeline = archsim.simulate(plan, profile, microbatches=2)
    assert timeline.makespan >= 2 * plan.max_stage_cost
    only_conv = archsim.load_network("resnet50", only="conv")
    assert {layer.kind for layer in only_conv.layers} == {"conv"}


def test_pipeline_table_shows_layer_ranges_and_explains_split_markers(capsys):
    argv = ["pipeline", "resnet50", "--processors", "6", "--method", "pipedream"]
    assert cli.main([*argv, "--format", "json"]) == 0
    import json

    rows = json.loads(capsys.readouterr().out)["rows"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "# split_ops: D1/D2 are the parts δ′/δ″" in out
    assert max(len(line) for line in out.splitlines() if not line.startswith("#")) < 160
    for row in rows:  # json keeps every layer; the table names the first and last and the count
        layers = row["layers"].split()
        shown = f"{layers[0]}…{layers[-1]} ({len(layers)})" if len(layers) > 2 else row["layers"]
        assert shown in out


def test_table_numbers_are_formatted_one_way(capsys):
    assert cli.main(["pipeline", "layerpipe_sample", "--processors", "3", "--mode", "paper"]) == 0
    out = capsys.readouterr().out
    assert "# speedup: 2.997\n" in out  # 96,478,356 / 32,191,601 to 4 significant digits
    assert "# single_processor_cycles: 96478356\n" in out  # integral cycle counts in full
    assert "e+0" not in out
    assert cli.main(["pipeline", "layerpipe_sample", "--processors", "3", "--mode", "paper", "--precision", "8"]) == 0
    assert "# speedup: 2.997004\n" in capsys.readouterr().out  # 2.99700397… to 8 digits


def test_sweep_progress_counts_configurations_like_the_results(tmp_path, capsys, monkeypatch):
    """The bar's total is the number of result rows (units × processors × methods), not units."""
    from archsim import progress
    from archsim.sweep import load_spec, run_sweep

    monkeypatch.setattr(progress, "on_terminal", lambda stream=None: True)  # bars are drawn on terminals only

    spec = tmp_path / "s.toml"
    spec.write_text('[sweep]\nname = "p"\nnetworks = ["layerpipe_sample"]\narrays = ["16x16", "32x32"]\n'
                    'batches = [4]\nprocessors = [2, 3, 4]\nmethods = ["pipedream", "gpipe"]\n')
    frame = run_sweep(load_spec(spec), tmp_path / "out", progress=True)
    bar = capsys.readouterr().err
    assert len(frame) == 2 * 3 * 2
    assert f"{len(frame)}/{len(frame)}" in bar and "config" in bar
    run_sweep(load_spec(spec), tmp_path / "out", progress=True)  # all cached: starts full
    assert f"{len(frame)}/{len(frame)}" in capsys.readouterr().err


def test_one_meaning_per_visible_option_name():
    """An option name shown in two commands' help means the same there (help texts may word it differently,
    but these were the names with two meanings)."""
    shown: dict[str, set[str]] = {}
    for name, parser in subcommand_parsers(cli.build_parser()):
        for action in parser._actions:
            if action.help != argparse.SUPPRESS:
                for option in action.option_strings:
                    shown.setdefault(option, set()).add(name)
    assert shown["--trace"] == {"archsim cluster"}
    assert shown["--k"] == {"archsim gemm"}
    assert {"archsim pipeline", "archsim schedule", "archsim plan"} <= shown["--chrome-trace"]


def test_older_option_names_still_work(tmp_path, capsys):
    old = tmp_path / "old.json"
    new = tmp_path / "new.json"
    base = ["pipeline", "layerpipe_sample", "--processors", "2", "--microbatches", "2", "--format", "csv"]
    assert cli.main([*base, "--trace", str(old)]) == 0
    assert cli.main([*base, "--chrome-trace", str(new)]) == 0
    assert old.read_text() == new.read_text() and '"traceEvents"' in new.read_text()
    capsys.readouterr()
    outputs = []
    for flags in (["--link-bandwidth", "8", "--reverse-k", "2"], ["--link-bandwidth", "8", "--k", "2"], []):
        assert cli.main(["schedule", "ffnn8", "--policy", "dp-reverse-k", "--processors", "4", "--format", "csv",
                         *flags]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] != outputs[2]  # the flags took effect (defaults: 64 bytes/cycle, k auto)
