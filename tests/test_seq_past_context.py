"""Issue #40: a ``--seq`` past a rotary model's ``max_position_embeddings`` (100,000 against Llama-3-8B's 8,192) runs —
rotary positions have no table to run off — but the user is told the model was trained to 8,192 positions, in one
``note:`` line (the API: a UserWarning), as the default sequence's note is said.

Failed before: the run said nothing about it."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import archsim
from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "hf_configs"
CLUSTER = ROOT / "configs" / "clusters" / "h100_2_servers.toml"
LLAMA3 = DATA / "llama3_8b.json"  # max_position_embeddings 8192 (meta-llama/Meta-Llama-3-8B's config.json)
MISTRAL = DATA / "mistral_7b_v0_1.json"  # max_position_embeddings 32768
TRAIN = ["--tp", "8", "--pp", "2", "--global-batch", "2", "--dtype", "bf16", "--cluster", str(CLUSTER), "--format", "json"]


def _notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if "max_position_embeddings" in line]


def test_train_notes_a_seq_past_the_rotary_models_context(capsys):
    assert main(["train", str(LLAMA3), "--seq", "100000", *TRAIN]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["meta"]["seq"] == 100000  # run as asked
    [line] = _notes(out.err)
    assert line.startswith("archsim train: note: ") and "--seq 100000" in line and "8192" in line
    assert "trained to 8192 positions" in line


@pytest.mark.parametrize("seq", ["8192", "1024"])
def test_no_note_at_or_below_the_context(capsys, seq):
    """max_position_embeddings itself is a length the model takes: no note (nor below it)."""
    assert main(["train", str(LLAMA3), "--seq", seq, *TRAIN]) == 0
    assert _notes(capsys.readouterr().err) == []


def test_search_notes_it_too(capsys):
    assert main(["search", str(MISTRAL), "--seq", "65536", "--cluster", str(CLUSTER), "--global-batch", "16",
                 "--gpus", "8", "--max-micro-batch", "1", "--schedule", "1f1b", "--recompute", "full", "--top", "1",
                 "--format", "json"]) == 0
    [line] = _notes(capsys.readouterr().err)
    assert line.startswith("archsim search: note: ") and "--seq 65536" in line and "trained to 32768 positions" in line


def test_the_api_warns_naming_the_keyword():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        archsim.train(str(LLAMA3), cluster=str(CLUSTER), tp=8, pp=2, global_batch=2, dtype="bf16", seq=100000)
    said = [str(w.message) for w in caught if "max_position_embeddings" in str(w.message)]
    assert len(said) == 1 and "seq=100000" in said[0] and "trained to 8192 positions" in said[0]
    assert all(issubclass(w.category, UserWarning) for w in caught)


def test_a_learned_table_is_refused_not_noted(capsys):
    """GPT-2's 1024 learned positions: past them is an error (unchanged), so no note is needed there."""
    assert main(["train", str(ROOT / "configs" / "transformers" / "gpt2.json"), "--seq", "2048",
                 "--global-batch", "2", "--cluster", str(CLUSTER)]) == 2
    err = capsys.readouterr().err
    assert "note:" not in err and "1024" in err
