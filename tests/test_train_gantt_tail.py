"""``train --gantt`` draws the pipeline's passes, which end before the iteration does: each rank's DP
all-reduce and optimizer step come after its last backward. The page says so, with the seconds, so the
chart's last bar is not read as the iteration's end."""

import json
import re
from pathlib import Path

import pytest

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
CLUSTER = str(ROOT / "configs" / "clusters" / "a100_node.toml")
RUN = ["--tp", "2", "--pp", "2", "--dp", "2", "--global-batch", "16", "--micro-batch", "2"]


@pytest.mark.parametrize("command", ["train", "search"])
def test_the_gantt_page_states_the_time_after_the_last_bar(tmp_path, capsys, command):
    page = tmp_path / "g.html"
    if command == "train":
        argv = ["train", MODEL, "--cluster", CLUSTER, *RUN, "--format", "json"]
    else:
        argv = ["search", MODEL, "--cluster", CLUSTER, "--global-batch", "16", "--top", "1", "--schedule", "1f1b",
                "--max-micro-batch", "2", "--refine", "0", "--format", "json"]
    assert main([*argv, "--gantt", str(page)]) == 0
    out = json.loads(capsys.readouterr().out)
    if command == "search":  # the first row, as train times it
        row = out["rows"][0]
        assert main(row["command"].split()[1:] + ["--format", "json"]) == 0
        out = json.loads(capsys.readouterr().out)
    meta = out["meta"]
    last_bar = max(slot["end_s"] for slot in meta["timeline"])
    after = meta["iteration_seconds"] - last_bar
    assert after > 0  # a DP all-reduce and an optimizer step follow the last backward
    text = page.read_text()
    note = re.search(r"<p>([^<]*not drawn[^<]*)</p>", text)
    assert note is not None
    assert f"{after:.4g} s" in note.group(1) and f"{meta['iteration_seconds']:.4g} s" in note.group(1)
