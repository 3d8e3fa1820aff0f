"""The user's guide cannot go stale: the site builds strictly, the CLI reference is the parser's,
the format tables are the code's keys, and every command and Python example shown is run.

Conventions the docs follow: a ```bash block holds commands a test runs (from the repository
root's files, in a scratch folder); a ```text block is a synopsis or needs what tests lack (a GPU);
``<!-- output-of: CMD -->`` before a ```text block means that block is CMD's exact output;
``<!-- lines-of: CMD -->`` that every line of the block is a line of CMD's output (a quote of some).
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from archsim import cli

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)


def blocks(kind: str) -> list[tuple[Path, str]]:
    return [(page, body) for page in PAGES for lang, body in FENCE.findall(page.read_text(encoding="utf-8"))
            if lang == kind]


def shown_commands() -> list[tuple[str, str]]:
    """(page, command) for every `archsim …` line of a bash block, trailing comments dropped."""
    found = []
    for page, body in blocks("bash"):
        for line in body.splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith("archsim "):
                found.append((page.relative_to(ROOT).as_posix(), line))
    return found


PLACEHOLDER = re.compile(r"\b[A-Z][A-Z_.]*\b|[|…<>]")


def inline_commands() -> list[tuple[str, str]]:
    """(page, command) for every inline `archsim …` span that is a whole command: not a bare
    mention (`archsim plan`, `archsim --help`) and free of placeholders (NETWORK, FILE, P, a|b, …)."""
    found = []
    for page in PAGES:
        for span in re.findall(r"`(archsim [^`]+)`", page.read_text(encoding="utf-8")):
            command = " ".join(span.split())
            words = command.split()
            if len(words) <= 2 or "--help" in words or PLACEHOLDER.search(command):
                continue
            found.append((page.relative_to(ROOT).as_posix(), command))
    return found


def hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A folder with the repository's inputs linked in, so commands write nothing into the checkout."""
    folder = tmp_path_factory.mktemp("docs_run")
    for name in ("configs", "layers", "benchmarks", "docs", "tests"):
        (folder / name).symlink_to(ROOT / name)
    return folder


def run_archsim(command: str, cwd: Path, capsys, monkeypatch) -> tuple[int, str, str]:
    """Run a documented command in-process (one interpreter for all: the imports are paid once)."""
    argv = shlex.split(command)
    assert argv[0] == "archsim"
    monkeypatch.chdir(cwd)
    capsys.readouterr()
    code = cli.main(argv[1:])
    out, err = capsys.readouterr()
    return code, out, err


def test_readme_setup_commands_are_what_ci_runs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert readme[2] == "```bash" and readme[3].startswith("python3 -m venv .venv && .venv/bin/pip install -q -e . &&")
    text = " ".join(" ".join(readme).split())
    assert readme[4] == ci[-3]  # CI runs exactly the README's test command,
    assert ci[-2] == ".venv/bin/mypy" and f"`{ci[-2]}`" in text  # then the type checker the README names,
    assert f"`{ci[-1]}`" in text  # then the slow stage the README quotes
    assert len(readme) <= 150


def assert_all_parse(commands) -> None:
    for page, command in commands:
        argv = shlex.split(command)[1:]
        try:
            cli.build_parser(argv).parse_args(argv)
        except SystemExit as stop:  # pragma: no cover - a failure message
            pytest.fail(f"{page}: {command!r} does not parse ({stop})")


def test_every_documented_command_parses():
    commands = shown_commands()
    assert len(commands) >= 12
    assert_all_parse(commands)


def test_every_inline_command_parses():
    commands = inline_commands()
    assert len(commands) >= 8
    assert_all_parse(commands)


@pytest.mark.slow
def test_every_inline_command_runs(scratch, capsys, monkeypatch):
    """The commands quoted in prose (paper reproductions: some take a minute or two)."""
    for page, command in inline_commands():
        code, _, err = run_archsim(command, scratch, capsys, monkeypatch)
        assert code == 0, f"{page}: {command!r} failed: {err[-500:]}"


@pytest.mark.long
def test_every_documented_command_runs(scratch, capsys, monkeypatch):
    for page, command in shown_commands():
        code, _, err = run_archsim(command, scratch, capsys, monkeypatch)
        assert code == 0, f"{page}: {command!r} failed: {err[-500:]}"


def test_quoted_outputs_match_a_fresh_run(scratch, capsys, monkeypatch):
    quoted = 0
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        quotes = re.findall(r"<!-- output-of: (.*?) -->\n```text\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
        for command, expected in quotes:
            code, out, err = run_archsim(command, scratch, capsys, monkeypatch)
            assert code == 0, err
            assert out == expected, f"{page.name}: the output of {command!r} changed; update the page"
            quoted += 1
    assert quoted >= 2


def quoted_layer_totals() -> list[int]:
    """total_cycles of each layer in the quick start's quoted `archsim cost` table (checked against a fresh run above)."""
    page = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
    table = re.search(r"<!-- output-of: archsim cost layerpipe_sample [^>]*-->\n```text\n(.*?)^```", page,
                      re.DOTALL | re.MULTILINE).group(1)
    header = next(line.split() for line in table.splitlines() if line.startswith("layer "))
    column = header.index("total_cycles") + 1  # rows carry the layer's type after its name; the header names it `type`
    return [int(line.split()[column - 1]) for line in table.splitlines() if line.startswith("conv")]


def test_pipedream_figures_in_the_prose_are_the_best_whole_layer_split(scratch, capsys, monkeypatch):
    """README's "PipeDream's split of whole layers: 2.22" and the quick start's "43.5 M cycles per iteration: conv1
    alone": the slowest stage of the best contiguous 3-way split of the quoted layer totals, by brute force."""
    totals = quoted_layer_totals()
    n = len(totals)
    splits = [(totals[:i], totals[i:j], totals[j:]) for i in range(1, n - 1) for j in range(i + 1, n)]
    best = min(max(sum(stage) for stage in split) for split in splits)
    assert best == totals[0]  # conv1 alone
    code, out, err = run_archsim("archsim pipeline layerpipe_sample --processors 3 --method pipedream --mode paper",
                                 scratch, capsys, monkeypatch)
    assert code == 0, err
    assert f"# iteration_cycles: {best}\n" in out
    quickstart = " ".join((ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8").split())
    assert f"({best / 1e6:.1f} M cycles per iteration: conv1 alone)" in quickstart
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert f"(PipeDream's split of whole layers: {sum(totals) / best:.2f})" in readme


def test_one_microbatch_idles_two_thirds_of_three_processors(scratch, capsys, monkeypatch):
    """The quick start: at the default one micro-batch 1F1B and GPipe run op after op, so the makespan is the work
    summed and each of p devices idles (p - 1) / p of it (more with transfers); zero-bubble and out-of-order
    policies, which move weight gradients off the critical path, idle less."""
    page = " ".join((ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8").split())
    assert "with 3 processors every device idles two thirds of the time under 1F1B and GPipe" in page

    def bubble(command: str) -> float:
        code, out, err = run_archsim(command, scratch, capsys, monkeypatch)
        assert code == 0, err
        header, row = [line.split() for line in out.splitlines() if not line.startswith("#")][:2]
        assert header[1:3] == ["processors", "microbatches"] and row[1:3] == ["3", "1"]
        return float(row[header.index("bubble_fraction")])

    for policy in ("1f1b", "gpipe"):
        assert bubble(f"archsim schedule ffnn16 --unit-costs --policy {policy} --processors 3") == pytest.approx(
            2 / 3, abs=5e-5)
    assert bubble("archsim schedule layerpipe_sample --policy 1f1b --processors 3 --mode paper") >= 2 / 3
    for policy in ("zb-h1", "ooo-pipe2"):
        assert bubble(f"archsim schedule ffnn16 --unit-costs --policy {policy} --processors 3") < 2 / 3 - 0.05


def test_quoted_lines_are_lines_of_a_fresh_run(scratch, capsys, monkeypatch):
    quoted = 0
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for command, expected in re.findall(r"<!-- lines-of: (.*?) -->\n```text\n(.*?)^```", text,
                                            re.DOTALL | re.MULTILINE):
            code, out, err = run_archsim(command, scratch, capsys, monkeypatch)
            assert code == 0, err
            printed = set(out.splitlines())
            stale = [line for line in expected.splitlines() if line not in printed]
            assert not stale, f"{page.name}: {command!r} no longer prints {stale}; update the page"
            quoted += 1
    assert quoted >= 2


@pytest.mark.long
def test_python_examples_run(scratch):
    examples = blocks("python")
    assert len(examples) >= 2
    for page, body in examples:
        done = subprocess.run([sys.executable, "-c", body], cwd=scratch, capture_output=True, text=True, check=False,
                              timeout=300)
        assert done.returncode == 0, f"{page.name}: example failed: {done.stderr[-800:]}"


def test_cli_reference_is_generated_from_the_parser():
    page = hooks().cli_reference()
    parser = cli.build_parser()
    for name, _, _ in cli.REGISTRY:
        assert f"## archsim {name}\n" in page
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for child in sub.choices.values():
        for action in child._actions:
            for option in action.option_strings if action.help != argparse.SUPPRESS else ():
                assert option in page
    assert "<!-- archsim-cli -->" in (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")


def table_keys(page: str, heading: str) -> list[list[str]]:
    """The first-column `names` of each table under ``heading`` (up to the next heading of its level)."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    level = heading.split()[0]
    section = text.split(heading + "\n", 1)[1]
    section = re.split(rf"^{level} ", section, flags=re.MULTILINE)[0]
    tables, current = [], []
    for line in section.splitlines():
        match = re.match(r"\| `([^`]+)` \|", line)
        if match:
            current.append(match.group(1))
        elif current:
            tables.append(current)
            current = []
    if current:
        tables.append(current)
    return tables


def test_format_tables_list_exactly_the_keys_the_code_checks():
    from archsim.cluster.profile_csv import COLUMNS as PROFILE_COLUMNS
    from archsim.cluster.trace import COLUMNS as TIRESIAS_COLUMNS
    from archsim.cluster_keys import CLUSTER_KEYS, NETWORK_KEYS, SERVER_KEYS
    from archsim.sweep.spec import KEYS, REQUIRED
    from archsim.workload.csv_loader import OPTIONAL, POSITIONAL

    assert table_keys("formats.md", "## Network (topology) CSV") == [list(POSITIONAL), list(OPTIONAL)]
    [sweep] = table_keys("formats.md", "## Sweep spec (TOML)")
    assert sorted(sweep) == sorted(KEYS)
    text = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    assert {key for key in KEYS if f"| `{key}` | yes |" in text} == REQUIRED
    from archsim.sweep import device_spec

    [device_sweep] = table_keys("formats.md", "## Device sweep spec (TOML)")
    assert sorted(device_sweep) == sorted(device_spec.KEYS)
    section = text.split("## Device sweep spec (TOML)\n", 1)[1].split("\n## ", 1)[0]
    assert {key for key in device_spec.KEYS if f"| `{key}` | yes |" in section} == device_spec.REQUIRED
    # the fourth table: the GPU short names, held to the code by tests/test_gpu_short_names.py
    cluster, servers, network, _short_names = table_keys("formats.md", "## Cluster (TOML)")
    assert (set(cluster), set(servers), set(network)) == (CLUSTER_KEYS, SERVER_KEYS, NETWORK_KEYS)
    [trace] = table_keys("formats.md", "## Job traces (CSV)")
    assert sorted(trace) == sorted(TIRESIAS_COLUMNS)
    [profile] = table_keys("formats.md", "## Profiles")
    assert profile == list(PROFILE_COLUMNS)


@pytest.mark.long
@pytest.mark.skipif(shutil.which("mkdocs") is None and importlib.util.find_spec("mkdocs") is None,
                    reason="mkdocs not installed (the docs and test extras install it)")
def test_site_builds_strictly(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, check=False, timeout=600,
                          env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    cli_page = (tmp_path / "site" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "archsim pipeline" in cli_page and "(default: layerpipe)" in cli_page
    api_page = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    assert "keyword-only" in api_page


def benchmark_index_scripts() -> list[str]:
    """The scripts named in the first cell of each row of benchmarks/README.md's index table (its first)."""
    lines = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8").splitlines()
    start = lines.index("| command | measures |") + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return [name for row in rows for name in re.findall(r"benchmarks/(\w+\.py)", row.split(" | ")[0])]


def test_every_benchmark_has_a_row_in_the_index():
    named = benchmark_index_scripts()
    missing = sorted(path.name for path in (ROOT / "benchmarks").glob("bench_*.py") if path.name not in named)
    assert not missing, f"benchmarks/README.md's table has no row for {missing}"
    assert not [name for name in named if not (ROOT / "benchmarks" / name).is_file()], "a row names no script"


def test_pages_state_the_pipeline_sends_default():
    """`--p2p`'s default is `megatron` (since 2026-12-05: a 1F1B rank waits for its send to end, as Megatron-LM's
    non-interleaved 1F1B does): where a page gives the flag's default it is that one, no page still says a hop
    delays only its receiver, and search's timing of 1F1B by the closed form names the held sends beside it."""
    from archsim.choices.training import DEFAULT_P2P

    assert DEFAULT_P2P == "megatron"
    stated = 0
    for page in PAGES:
        text = " ".join(page.read_text(encoding="utf-8").split())
        for said in re.findall(r"`(?:archsim (?:train|search) )?--p2p [\w|]+`.{0,80}?default `(\w+)`", text):
            assert said == DEFAULT_P2P, f"{page.name} gives --p2p's default as {said!r}"
            stated += 1
        assert "hop delays only the receiver" not in text, page.name
    assert stated >= 2  # training.md's and search.md's statements of the flag
    search = " ".join((ROOT / "docs" / "search.md").read_text(encoding="utf-8").split())
    timing = search.split("* **1F1B and GPipe**: the closed form `one_f_one_b_seconds`", 1)[1].split("* **", 1)[0]
    assert "#blocking-pipeline-sends" in timing and "`megatron`" in timing


def test_accuracy_gpt3_figures_are_the_benchmark_results():
    """docs/accuracy.md's GPT-3 175B figures under today's defaults (1F1B's sends blocking since 2026-12-05) are those
    of benchmarks/results/published_throughput.csv, which `benchmarks/bench_published_throughput.py` writes: the
    published-runs table, the fit table's cells for the blocking sends and the per-layer misses' ranges."""
    import csv

    with open(ROOT / "benchmarks" / "results" / "published_throughput.csv", encoding="utf-8") as file:
        rows = [row for row in csv.DictReader(file)
                if row["model"] == "gpt3-175b" and row["grad_accumulation"] == "fused"]
    tflops = {(int(r["gpus"]), int(r["pp"]), int(r["interleave"])): f"{float(r['hardware_tflops_per_gpu']):.1f}"
              for r in rows}
    gaps = {(int(r["gpus"]), int(r["interleave"])): [] for r in rows}
    for r in rows:
        gaps[int(r["gpus"]), int(r["interleave"])].append(float(r["gap_ms_per_layer_microbatch"]))
    page = (ROOT / "docs" / "accuracy.md").read_text(encoding="utf-8")
    header = "| run (hardware TFLOP/s per GPU) | published | 1F1B | 2 chunks | 3 chunks |\n"
    table = page.split(header, 1)[1].split("\n\n")[0]
    checked = 0
    for line in table.splitlines()[1:]:
        gpus, pp = re.match(r"\| ([\d,]+) GPUs, TP 8 × PP (\d+)", line).groups()
        for chunks, cell in enumerate(line.strip("|").split("|")[2:], start=1):
            if cell.strip():
                assert cell.split()[0] == tflops[int(gpus.replace(",", "")), int(pp), chunks], line
                checked += 1
    assert checked == 12
    text = " ".join(page.split())
    assert f"156.6 / 161.8 / 163.6 (+11.8…+16.9%; {tflops[1024, 8, 1]}, +11.7%, at 1 chunk with 1F1B's sends" in text
    assert " / ".join(tflops[g, 12, 1] for g in (384, 768, 1536)) + ", +6.0…+7.0%, with 1F1B's sends blocking" in text
    table2 = [gap for g in (384, 768, 1536) for gap in gaps[g, 1]]
    assert f"1.55–1.67 ms ({min(table2):.2f}–{max(table2):.2f} ms with 1F1B's sends blocking" in text
    whole = [gap for (g, _), found in gaps.items() if g == 1024 for gap in found]
    assert f"1,024-GPU figure sits {min(whole):.1f}–{max(whole):.1f} ms per layer and micro-batch" in text


def test_api_page_names_every_setting_train_runs_takes():
    """docs/api.md's `train_runs` paragraph lists the command's settings each row runs with: every keyword of
    `archsim.train_runs` but the inputs (model, runs file, cluster) and the sequence and op limit said elsewhere."""
    import inspect

    import archsim

    keywords = set(inspect.signature(archsim.train_runs).parameters) - {"model", "runs", "cluster", "seq", "max_ops"}
    page = " ".join((ROOT / "docs" / "api.md").read_text(encoding="utf-8").split())
    sentence = page.split("each row run with the command's ", 1)[1].split(" (same names, same defaults", 1)[0]
    assert keywords <= set(re.findall(r"`(\w+)`", sentence)), keywords - set(re.findall(r"`(\w+)`", sentence))
