"""A training-systems engineer plans a Llama-3-70B-like run on 8 × 8 H100 with eight 400 Gb/s rails: ``archsim
train`` at TP 8, PP 4, interleaved, and ``archsim search`` on 64 GPUs, from the command line and from Python.

Each test here failed on the code before its fix (the docstring says how). The references are outside the code:
Narayanan et al. 2021 (SC'21), §2.2.2: 1F1B with several model chunks per device is the interleaved schedule, a
different schedule from plain 1F1B; docs/api.md: a result's repr is the one line a notebook shows for it.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import archsim

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "configs/transformers/gpt_1024h_24l.json")
CLUSTER = str(ROOT / "configs/clusters/a100_node.toml")


@pytest.mark.parametrize(("settings", "order"), [
    ({"interleave": 2}, "interleaved-1f1b v2"),  # 1F1B over two chunks a rank: Megatron's interleaved schedule
    ({"schedule": "interleaved-1f1b", "interleave": 3}, "interleaved-1f1b v3"),
    ({"schedule": "zb-v"}, "zb-v v2"),  # a V: two chunks a rank by its shape
    ({}, "1f1b,"),  # one chunk a rank: plain 1F1B, no chunk count
])
def test_a_train_result_repr_names_the_schedule_that_ran(settings, order):
    """Failed before: ``archsim.train(..., interleave=5)`` (Megatron's interleaved 1F1B, as the meta's ``schedule``
    says) showed ``TrainResult(tp 8 × pp 4 × dp 2, micro-batch 1, 1f1b, …)`` in a notebook: the plain 1F1B its
    flags do not run, with no word of the chunks, whose bubble and memory differ."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result, _ = archsim.train(MODEL, cluster=CLUSTER, tp=2, pp=2, dp=2, global_batch=16, micro_batch=1,
                                  **settings)
    text = repr(result)
    assert f"micro-batch 1, {order}" in text, text
    assert result.to_dict()["meta"]["schedule"] == order.split(" ")[0].rstrip(","), text


def test_the_pareto_page_shows_large_figures_to_the_unit_as_the_command_and_the_other_pages_do(tmp_path, capsys):
    """Failed before: ``search --pareto-html``'s tables wrote a run's joules and tokens/s with an exponent
    (``5.252e+06``, ``7.155e+04``: three digits of 71,552 tokens/s lost) where the command's own table prints
    ``5252255`` and ``71552`` and docs/cli.md says a table shows such a number to the unit, "as the HTML pages'
    tables show numbers". Each cell of a large figure now reads back as the row's JSON value to the unit."""
    import json
    import re

    from archsim.cli import main

    page = tmp_path / "front.html"
    argv = ["search", MODEL, "--cluster", CLUSTER, "--global-batch", "16", "--top", "3", "--schedule", "1f1b",
            "--max-micro-batch", "2", "--refine", "0"]
    assert main([*argv, "--pareto-html", str(page), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    html = page.read_text()
    ranked = html[html.index("<h2>Ranked configurations</h2>"):]
    header = re.findall(r"<th>([^<]*)</th>", ranked)
    body = [re.findall(r"<td>([^<]*)</td>", tr) for tr in re.findall(r"<tr>(.*?)</tr>", ranked, re.DOTALL)]
    body = [cells for cells in body if cells]
    assert len(body) == len(rows) and "e+" not in html[html.index("<h2>Pareto front</h2>"):]
    large = [(dict(zip(header, cells))[key], row[key]) for cells, row in zip(body, rows)
             for key in ("energy_j", "tokens_per_second") if row[key] >= 1e4]  # 4 digits would need an exponent
    assert large
    for shown, value in large:
        assert abs(float(shown.replace(",", "")) - value) <= 0.5, (shown, value)


@pytest.mark.parametrize("schedule", ["zb-v", "dualpipev"])
def test_a_v_schedules_wrong_chunk_count_is_not_told_that_it_takes_no_interleave(capsys, schedule):
    """Failed before: ``--schedule zb-v --interleave 5`` was refused with "--interleave takes one of the schedules
    1f1b, interleaved-1f1b, interleaved-zb, looped-bfs, not 'zb-v'", though ``--interleave 2`` beside zb-v runs
    (it restates the V's two chunks a rank, Qi et al. 2024's ZB-V; DeepSeek-V3's DualPipeV likewise). The
    refusal now names the V's own count and both ways out, each of which runs."""
    from archsim.cli import main

    argv = ["train", MODEL, "--cluster", CLUSTER, "--pp", "2", "--dp", "4", "--global-batch", "16",
            "--schedule", schedule]
    capsys.readouterr()
    assert main([*argv, "--interleave", "5"]) == 2
    err = capsys.readouterr().err
    assert f"{schedule} runs 2 model chunks a rank by its V shape, not 5: drop --interleave (or give --interleave 2" \
        in err and "takes one of the schedules" not in err, err
    assert main(argv) == 0 and main([*argv, "--interleave", "2"]) == 0


@pytest.mark.parametrize("flag", ["--out", "--gantt"])
def test_a_dash_as_an_output_is_refused_not_written_as_a_file_named_dash(tmp_path, monkeypatch, capsys, flag):
    """Failed before: ``train … --format json --out -``, which many Unix tools read as standard output (POSIX's
    Utility Syntax Guidelines, guideline 13, for operands), wrote a file named ``-`` in the working folder and said
    ``wrote -``. It is refused before any work, naming ``/dev/stdout``; ``./-`` still names a file of that name."""
    from archsim.cli import main

    monkeypatch.chdir(tmp_path)
    argv = ["train", MODEL, "--cluster", CLUSTER, "--dp", "8", "--global-batch", "16", "--format", "json"]
    capsys.readouterr()
    assert main([*argv, flag, "-"]) == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: -: '-' is not standard output here" in err and "/dev/stdout" in err, err
    assert not (tmp_path / "-").exists()
    assert main([*argv, flag, "./-"]) == 0 and (tmp_path / "-").stat().st_size > 0


@pytest.mark.parametrize(("command", "typed", "hint"), [
    ("search", ["--interleave", "2"], "(--interleave is archsim train's: archsim search takes --chunks V"),
    ("search", ["--micro-batch", "2"], "(--micro-batch is archsim train's: archsim search takes --max-micro-batch)"),
    ("train", ["--chunks", "2"], "(--chunks is archsim search's: archsim train takes --interleave V"),
    ("train", ["--max-micro-batch", "2"], "(--max-micro-batch is archsim search's: archsim train takes --micro-batch"),
])
def test_the_sibling_jobs_chunk_and_micro_batch_flags_name_this_jobs_own(capsys, command, typed, hint):
    """Failed before: ``search --interleave 2`` (train's chunks per rank) was refused as "unrecognized arguments"
    alone and ``train --chunks 2`` (search's) was told "did you mean '--runs'?", a runs file, though docs/cli.md
    says "a flag of the sibling command says what this one takes instead" and Megatron-LM's
    ``--num-layers-per-virtual-pipeline-stage`` already named ``--chunks`` on search."""
    from archsim.cli import main

    layout = ["--tp", "2"] if command == "train" else []
    capsys.readouterr()
    assert main([command, MODEL, "--cluster", CLUSTER, "--global-batch", "16", *layout, *typed]) == 2
    err = capsys.readouterr().err
    assert hint in err and "did you mean" not in err, err


@pytest.mark.long  # a search, then a train per entry of its front: over a second
def test_every_pareto_configuration_carries_the_train_line_that_times_it(capsys):
    """Failed before: ``search --format json``'s ``meta.pareto`` entries had no ``command``, so a configuration of
    the front below ``--top`` (the table's Pareto block lists them all) could not be run as a ranked row can. Each
    entry's command, run, gives the entry's own memory and, for an event-timed entry, its time."""
    import json
    import shlex

    from archsim.cli import main

    capsys.readouterr()
    assert main(["search", MODEL, "--cluster", CLUSTER, "--global-batch", "16", "--top", "1", "--schedule", "1f1b",
                 "--max-micro-batch", "2", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    front = document["meta"]["pareto"]
    below_top = [entry for entry in front if entry["command"] not in {row["command"] for row in document["rows"]}]
    assert len(front) > 1 and below_top
    for entry in front:
        argv = shlex.split(entry["command"])
        assert argv[:2] == ["archsim", "train"]
        assert main([*argv[1:], "--format", "json"]) == 0
        meta = json.loads(capsys.readouterr().out)["meta"]
        assert meta["peak_memory_gib"] == pytest.approx(entry["peak_memory_gib"], rel=1e-9)
        if entry["timing"] == "event":
            assert meta["iteration_seconds"] == pytest.approx(entry["iteration_seconds"], rel=1e-9)


def test_the_pareto_block_counts_one_configuration_and_shows_joules_to_the_unit(capsys):
    """Failed before: ``search --objective energy`` on one GPU count (energy ∝ time: a front of one) closed its table
    with "(1 configurations)" and the entry's joules as ``2.067e+04 J`` where its row's ``energy_j`` column shows
    the figure to the unit (docs/cli.md: a number those digits would write with an exponent is shown to the unit)."""
    from archsim.cli import main

    capsys.readouterr()
    assert main(["search", MODEL, "--cluster", CLUSTER, "--global-batch", "2048", "--top", "1", "--schedule", "1f1b",
                 "--max-micro-batch", "2", "--refine", "0", "--objective", "energy"]) == 0
    block = capsys.readouterr().out.split("\nPareto front, ")[1].splitlines()
    assert block[0] == "iteration time against energy per iteration (1 configuration):", block
    joules = float(block[1].rsplit(", ", 1)[1].removesuffix(" J"))
    assert "e+" not in block[1] and joules >= 1e4 and joules == round(joules), block
