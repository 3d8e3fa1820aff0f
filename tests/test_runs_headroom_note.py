"""``archsim train --runs`` says of a row that fits with little memory to spare what ``archsim train`` says of the
same layout alone (its fullest rank above 90% of its GPU's memory), naming the row's line. Failed before: the runs
path printed no such note."""

import json
import warnings
from pathlib import Path

import archsim
from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
GPT = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")
NODE = str(ROOT / "configs" / "clusters" / "a100_node.toml")  # A100 SXM4 80GB, no usable_memory_gib
NOTE = "archsim train: note: "
# the layout near the top of an 80 GB A100: micro-batch 184 of the 1024-hidden GPT on one GPU (about 75 GiB)
FULL = ("--tp", "1", "--pp", "1", "--dp", "1", "--micro-batch", "184", "--global-batch", "184")


def _full_notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if "above 90%" in line]


def test_a_runs_row_above_90_percent_of_its_gpu_is_noted_as_train_notes_it_naming_its_line(tmp_path, capsys):
    assert main(["train", GPT, "--cluster", NODE, *FULL, "--format", "json"]) == 0
    out, err = capsys.readouterr()
    meta = json.loads(out)["meta"]
    assert meta["peak_memory_gib"] > 0.9 * 80 and meta["peak_memory_gib"] < 80  # the premise: fits, above 90%
    alone = _full_notes(err)
    assert len(alone) == 1 and alone[0].startswith(NOTE + "pipeline rank 0 uses "), err
    runs = tmp_path / "runs.csv"  # line 2 far from full (about 10 GiB), line 3 the layout above
    runs.write_text("tp,pp,dp,micro_batch,global_batch\n1,1,1,8,8\n1,1,1,184,184\n")
    assert main(["train", GPT, "--cluster", NODE, "--runs", str(runs), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    rows = json.loads(out)["rows"]
    assert rows[1]["peak_memory_gib"] == meta["peak_memory_gib"]
    # the same note, the row's line named before it; none for line 2
    assert _full_notes(err) == [NOTE + "line 3: " + alone[0].removeprefix(NOTE)], err
    with warnings.catch_warnings(record=True) as said:  # the library's train_runs says it too
        warnings.simplefilter("always")
        archsim.train_runs(GPT, runs=runs, cluster=NODE)
    assert [str(w.message) for w in said if "above 90%" in str(w.message)] == ["line 3: " + alone[0].removeprefix(NOTE)]
