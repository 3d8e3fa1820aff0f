"""An SPP researcher and an out-of-order backprop researcher on a 4-layer network of their own: a plan's Gantt
says its rows are stages and channels (and which GPUs run each stage), and `schedule`'s out-of-order pipelines
say when their layer allocation leaves devices idle, as `pipeline` does."""

from __future__ import annotations

import json
import re

import pytest

from archsim.cli import main

# fc layers 256 → 1024 → 2048 → 512 → 128: per layer F/G/δ cycles a hand computation of SCALE-Sim's ws folds checks
NETWORK = """Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides, Padding, Type, Inputs, Bias, Repeat,
fc1, 1, 1, 1, 1, 256, 1024, 1, 0, fc, input, 1, 1,
fc2, 1, 1, 1, 1, 1024, 2048, 1, 0, fc, fc1, 1, 1,
fc3, 1, 1, 1, 1, 2048, 512, 1, 0, fc, fc2, 1, 1,
fc4, 1, 1, 1, 1, 512, 128, 1, 0, fc, fc3, 1, 1,
"""

# two servers of different fabrics: 2 GPUs at 100 Gb/s (both directions) and 1 at 400, 40 Gb/s between them
CLUSTER = """[cluster]
name = "het2"
inter_server_gbps = 40

[[servers]]
gpus = 2
intra_server_gbps = 100

[[servers]]
gpus = 1
intra_server_gbps = 400
"""


def _files(tmp_path):
    network = tmp_path / "net4.csv"
    network.write_text(NETWORK)
    cluster = tmp_path / "het2.toml"
    cluster.write_text(CLUSTER)
    return network, cluster


def _figure(html: str) -> dict:
    """The plotly figure's layout keys a reader sees: the rows axis title and the caption under the chart."""
    title = re.search(r'"yaxis":\{"title":\{"text":"([^"]*)"', html)
    assert title, "no rows axis title"
    return {"rows_title": json.loads(f'"{title.group(1)}"'), "text": html}  # plotly writes "/" as \u002f


def test_plan_gantt_rows_are_stages_and_channels(tmp_path, capsys) -> None:
    """`archsim plan --gantt` draws one row per stage (s1, s2: a stage of 2 replicas is one row), per channel
    between stages (ch1) and per stage all-reduce (ar1), but titled the rows axis "processor", and nothing on the
    page said which GPUs a stage row stands for (fails before the fix). The rows axis now says stage / channel
    and the caption names each stage's layers and GPUs, as the plan's table does (s1: fc1–fc2 on g0 g1)."""
    network, cluster = _files(tmp_path)
    out = tmp_path / "plan.html"
    assert main(["plan", str(network), "--cluster", str(cluster), "--microbatches", "4", "--format", "json",
                 "--gantt", str(out)]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["first_layer"], r["last_layer"], r["devices"]) for r in rows] == [("fc1", "fc2", "g0 g1"),
                                                                                    ("fc3", "fc4", "g2")]
    figure = _figure(out.read_text())
    assert figure["rows_title"] == "stage / channel"
    text = figure["text"]
    assert "s1: fc1–fc2 on g0 g1" in text and "s2: fc3–fc4 on g2" in text
    assert "ch1" in text and "ar1" in text


@pytest.mark.parametrize("flags, used, processors", [
    (["--policy", "ooo-pipe1", "--processors", "6"], 4, 6),  # ⌈4/6⌉ = 1 layer a device: 2 get none
    (["--policy", "gpipe", "--processors", "3"], 2, 3),  # ⌈4/3⌉ = 2 layers a device: 2, 2 and none
    (["--policy", "ooo-pipe2", "--processors", "2", "--group", "4"], 1, 2),  # one group of 4 layers: device 1
])
def test_schedule_ooo_says_when_processors_stay_idle(tmp_path, capsys, flags, used, processors) -> None:
    """The out-of-order paper's allocations (⌈L/P⌉ contiguous layers a device; ooo-pipe2's groups dealt round
    robin) can leave a device without layers. `archsim schedule` ran such a schedule silently, its row saying
    `processors 6` and a bubble fraction counting the idle devices, where `pipeline` notes the same case on
    stderr (fails before the fix: stderr was empty). Counted by hand from the allocation rule."""
    network, _ = _files(tmp_path)
    assert main(["schedule", str(network), "--microbatches", "2", "--format", "json", *flags]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["rows"][0]["processors"] == processors
    notes = captured.err.strip().splitlines()
    assert len(notes) == 1 and notes[0].startswith("archsim schedule: note: "), notes
    assert f"uses {used} of the {processors} processors; {processors - used} stay idle" in notes[0], notes[0]


@pytest.mark.parametrize("policy", ["mp", "gpipe", "ooo-pipe1", "ooo-pipe2"])
def test_schedule_ooo_on_every_processor_says_nothing(tmp_path, capsys, policy) -> None:
    """4 layers on 2 devices: every allocation gives each device layers, so stderr stays empty."""
    network, _ = _files(tmp_path)
    assert main(["schedule", str(network), "--processors", "2", "--microbatches", "1", "--policy", policy]) == 0
    assert capsys.readouterr().err == ""
