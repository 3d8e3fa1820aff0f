"""Small findings of a user trial of ``archsim train`` and ``archsim.search``: an interleaved schedule run with one
model chunk per rank without a word, a search row's ``command`` missing from the library's rows, a sweep point on
fewer GPUs than the cluster's without the note a single run gives, and a runs file naming another model."""

from __future__ import annotations

import json
import warnings

import pytest
from test_docs import ROOT

import archsim
from archsim.cli import main

MODEL = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")  # 24 layers, 16 heads
NODE = str(ROOT / "configs" / "clusters" / "a100_node.toml")  # 8 GPUs
ONE_CHUNK = ("--schedule interleaved-1f1b ran with one model chunk per pipeline rank (--interleave 1): it interleaves "
             "nothing (interleaved-1f1b: Megatron-LM's plain 1F1B, the figures of --schedule 1f1b); "
             "--interleave V gives each rank V chunks")
ONE_CHUNK_API = ("schedule='interleaved-1f1b' ran with one model chunk per pipeline rank (interleave=1): it "
                 "interleaves nothing (interleaved-1f1b: Megatron-LM's plain 1F1B, the figures of schedule='1f1b'); "
                 "interleave=V gives each rank V chunks")  # the same note in the keywords a library user typed
# all 8 GPUs: no idle-GPU note; overlapped sends (every mode runs one-chunk interleaving as 1F1B since 2026-12-05:
# tests/test_one_chunk_note_schedules.py)
LAYOUT = ("--tp", "2", "--pp", "4", "--global-batch", "8", "--p2p", "overlapped")


def _train(capsys, *args: str) -> tuple[dict, str]:
    assert main(["train", MODEL, "--cluster", NODE, *args, "--format", "json"]) == 0
    out, err = capsys.readouterr()
    return json.loads(out), err


def test_interleaved_1f1b_without_interleave_is_noted_once(capsys):
    one, err = _train(capsys, *LAYOUT, "--schedule", "interleaved-1f1b")
    assert err.splitlines() == [f"archsim train: note: {ONE_CHUNK}"]
    plain, err = _train(capsys, *LAYOUT)
    assert err == ""
    # what the note says: 1F1B's figures (Megatron-LM runs one chunk as plain 1F1B; until 2026-12-05 rank 0 held
    # 2·PP − 1 = 7 micro-batches' inputs where 1F1B holds 4: tests/test_one_chunk_note_schedules.py)
    assert one["meta"]["iteration_seconds"] == pytest.approx(plain["meta"]["iteration_seconds"], rel=1e-9)
    assert one["meta"]["memory_per_rank"] == plain["meta"]["memory_per_rank"]
    _, err = _train(capsys, *LAYOUT, "--schedule", "interleaved-1f1b", "--interleave", "2")
    assert err == ""


def test_the_library_warns_the_same_one_chunk_note():
    with pytest.warns(UserWarning) as caught:
        archsim.train(MODEL, cluster=NODE, tp=2, pp=4, global_batch=8, schedule="interleaved-1f1b")
    assert [str(w.message) for w in caught] == [ONE_CHUNK_API]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        archsim.train(MODEL, cluster=NODE, tp=2, pp=4, global_batch=8, schedule="interleaved-1f1b", interleave=2)


def test_search_rows_are_to_dicts_rows_with_their_command():
    found = archsim.search(MODEL, cluster=NODE, global_batch=16, top=3, schedule=["1f1b"], max_micro_batch=2,
                           refine=0, recompute="full", sequence_parallel="off")
    printed = found.to_dict()["rows"]
    assert len(found.rows) == len(printed) == 3
    for row, twin in zip(found.rows, printed, strict=True):
        assert list(row) == list(twin)
        assert row["command"] == twin["command"]
        assert row["command"].startswith(f"archsim train {MODEL} --cluster {NODE} --tp {row['tp']} ")
    with pytest.raises(TypeError, match="read-only"):  # the rows are read-only: to_dict still gives what was printed
        found.rows[0]["command"] = "edited"
    assert found.to_dict()["rows"][0]["command"] == printed[0]["command"] == found.rows[0]["command"]


def test_sweep_points_on_fewer_gpus_are_noted_once_per_gpu_count(capsys):
    document, err = _train(capsys, "--global-batch", "8", "--sweep", "tp=1,2,4", "--sweep", "pp=1,2",
                           "--sweep", "micro_batch=1,2")
    assert [row["gpus"] for row in document["rows"]] == [1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 8, 8]
    head, tail = "archsim train: note: ", "; set --tp/--pp/--dp, or archsim search to choose"
    assert err.splitlines() == [
        f"{head}2 of the sweep's 12 points use 1 of the cluster's 8 GPUs (tp 1 × pp 1 × dp 1){tail}",
        f"{head}4 of the sweep's 12 points use 2 of the cluster's 8 GPUs (tp 1 × pp 2 × dp 1, tp 2 × pp 1 × dp 1){tail}",
        f"{head}4 of the sweep's 12 points use 4 of the cluster's 8 GPUs (tp 2 × pp 2 × dp 1, tp 4 × pp 1 × dp 1){tail}"]


def test_a_sweep_whose_points_all_use_the_cluster_or_cannot_run_says_nothing_of_idle_gpus(capsys):
    document, err = _train(capsys, *LAYOUT, "--sweep", "micro_batch=1,2")
    assert err == "" and {row["gpus"] for row in document["rows"]} == {8}
    # tp 3 (3 GPUs) does not divide the 16 heads: that point does not run, so it leaves no GPU idle
    document, err = _train(capsys, "--global-batch", "8", "--sweep", "tp=3,8")
    assert [(row["gpus"], row["error"] != "") for row in document["rows"]] == [(3, True), (8, False)]
    assert err == ""
