"""Issue #40's user trial: a long single ``archsim train`` ran silent for seconds; the Gantt note named the DP
and embedding all-reduces where neither runs (DP 1; untied embeddings or PP 1); the Chrome trace labelled its
µs timestamps' axis in ns. Each test here failed before the fix."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from archsim.cli import main
from archsim.commands.train import LONG_JOB_OPS

ROOT = Path(__file__).resolve().parents[1]
GPT3_13 = str(ROOT / "configs" / "transformers" / "gpt3_1.3b.toml")  # tied embeddings (GPT-3's)
GPT2 = ROOT / "configs" / "transformers" / "gpt2.json"
NODE = str(ROOT / "configs" / "clusters" / "a100_node.toml")
ZB_V = ["train", GPT3_13, "--cluster", NODE, "--pp", "4", "--dp", "2", "--schedule", "zb-v"]
PHASE = "build and simulate the order"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_long_train_draws_its_phases_on_a_terminal_only(monkeypatch, capsys):
    """By hand: ZB-V on PP 4 holds 2 chunks a rank; global batch 4096 over DP 2 at micro-batch 1 is 2048
    micro-batches, 3·4·2·2048 = 49,152 F/I/W actions, past the 2 s mark (2 s / 60 µs = 33,333 ops); global batch
    16 is 3·4·2·8 = 192. Before the fix neither drew a bar."""
    assert LONG_JOB_OPS == 33_333
    long_job, short_job = [*ZB_V, "--global-batch", "4096"], [*ZB_V, "--global-batch", "16"]
    assert main(long_job) == 0
    piped = capsys.readouterr()
    assert piped.err == ""  # a pipe: no bar, however long the job
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(long_job) == 0
    assert "train zb-v:" in terminal.getvalue() and PHASE in terminal.getvalue()
    assert capsys.readouterr().out == piped.out  # the same figures either way
    quick = _Terminal()
    monkeypatch.setattr(sys, "stderr", quick)
    assert main(short_job) == 0
    assert quick.getvalue() == ""


def _caption(path: Path) -> str:
    text = path.read_text()
    start = text.index("What a rank runs after its last backward (")
    return text[start:text.index(") is not drawn", start) + 1]


@pytest.mark.parametrize(("model", "pp", "dp", "extra", "named"), [
    (GPT3_13, 1, 1, [], "(the optimizer step)"),  # no DP group, one stage holds both tables
    (GPT3_13, 1, 2, [], "(the DP all-reduce left to run, the optimizer step)"),
    (GPT3_13, 2, 1, [], "(the embedding all-reduce left to run, the optimizer step)"),  # tied, on two ranks
    (GPT3_13, 2, 2, [], "(the DP and embedding all-reduces left to run, the optimizer step)"),  # as before
    ("untied", 2, 2, [], "(the DP all-reduce left to run, the optimizer step)"),  # two tables: nothing to sum
    (GPT3_13, 1, 2, ["--distributed-optimizer"],
     "(the distributed optimizer&#x27;s DP reduce-scatter and all-gather left to run, the optimizer step)"),
], ids=["dp1-pp1", "dp2-pp1", "dp1-pp2-tied", "dp2-pp2-tied", "dp2-pp2-untied", "zero1-dp2-pp1"])
def test_the_gantt_note_names_only_the_collectives_that_run(tmp_path, capsys, model, pp, dp, extra, named):
    """Which collectives run, by hand: a DP all-reduce only where DP > 1; the embedding all-reduce only where
    the word embedding is tied to the LM head and the two sit on different ranks (PP > 1). Before the fix every
    case named both ("the DP and embedding all-reduces")."""
    if model == "untied":
        config = json.loads(GPT2.read_text()) | {"tie_word_embeddings": False}
        model = str(tmp_path / "gpt2_untied.json")
        Path(model).write_text(json.dumps(config))
    out = tmp_path / "g.html"
    argv = ["train", model, "--cluster", NODE, "--pp", str(pp), "--dp", str(dp), "--global-batch", "8",
            *extra, "--gantt", str(out)]
    assert main(argv) == 0
    capsys.readouterr()
    assert _caption(out) == f"What a rank runs after its last backward {named}"


def test_the_chrome_trace_reads_its_microseconds_in_milliseconds(tmp_path, capsys):
    """The Trace Event Format allows displayTimeUnit "ms" or "ns" and reads ts / dur in µs; archsim writes a
    GPU iteration's seconds as µs, so the pipeline's last event ends near the iteration's seconds × 10⁶ and
    "ms" labels its axis (before: "ns")."""
    trace = tmp_path / "t.json"
    assert main(["train", GPT3_13, "--cluster", NODE, "--pp", "2", "--global-batch", "8", "--format", "json",
                 "--chrome-trace", str(trace)]) == 0
    seconds = json.loads(capsys.readouterr().out)["meta"]["iteration_seconds"]
    document = json.loads(trace.read_text())
    assert document["displayTimeUnit"] == "ms"
    last_end = max(event["ts"] + event["dur"] for event in document["traceEvents"] if event["ph"] == "X")
    assert 0.5 * seconds * 1e6 < last_end <= seconds * 1e6
