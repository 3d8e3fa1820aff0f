"""Two findings of a user trial of ``archsim train MODEL --runs RUNS.csv``: a runs file's ``# model:`` line, which
named the model its rows were measured on and which nothing read (another MODEL ran without a word), and an
interleaved schedule on rows of one model chunk per rank, which a single run notes and the runs path did not."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import archsim
from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
GPT = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")  # named gpt_1024h_24l: the file's stem
OTHER = str(ROOT / "configs" / "transformers" / "gpt_2048h_20l.json")  # another GPT of vTrain's vocabulary
LLAMA = str(ROOT / "tests" / "data" / "llama2_7b" / "config.json")  # named llama2_7b: its folder
NODE = str(ROOT / "configs" / "clusters" / "a100_node.toml")
SHIPPED = ROOT / "configs" / "runs" / "vtrain_h1024_l24.csv"
VTRAIN = ROOT / "tests" / "data" / "e2e" / "vtrain_single_node_shown.csv"
NOTE = "archsim train: note: "


def _runs(path: Path, model: str | None, rows: str = "1,1,1,8,8\n2,1,1,4,8\n") -> str:
    """A small runs file in archsim's columns (each row fits one A100 with GPT's 1024-hidden, 24-layer model),
    with ``# model: {model}`` after a ``# source:`` line where ``model`` is given."""
    lines = ["# source: a user's runs", *([f"# model: {model}"] if model is not None else []),
             "tp,pp,dp,micro_batch,global_batch"]
    path.write_text("\n".join(lines) + "\n" + rows)
    return str(path)


def _err(capsys, model: str, runs: str, *args: str) -> tuple[list[dict], str]:
    assert main(["train", model, "--cluster", NODE, "--runs", runs, *args, "--format", "json"]) == 0
    out, err = capsys.readouterr()
    return json.loads(out)["rows"], err


def _mismatch(named: str, model: str) -> str:
    return (f"the runs file was made for model {named} (its '# model:' line), MODEL is {model}: "
            f"every row was predicted for {model}")


def test_a_runs_file_made_for_another_model_is_noted_once_naming_both(tmp_path, capsys):
    runs = _runs(tmp_path / "runs.csv", "gpt_1024h_24l")
    rows, err = _err(capsys, OTHER, runs)
    assert err.splitlines() == [NOTE + _mismatch("gpt_1024h_24l", "gpt_2048h_20l")]
    assert [row["model"] for row in rows] == ["gpt_2048h_20l"] * 2  # still run, as given: the user may mean it


def test_the_shipped_runs_file_names_its_model_and_another_model_is_noted(tmp_path, capsys):
    """The trial's case: the shipped file (vTrain's layouts of the 1024-hidden GPT) given with Llama-2 7B."""
    lines = SHIPPED.read_text().splitlines()
    assert "# model: gpt_1024h_24l" in lines  # the name archsim gives the model docs/training.md runs it with
    head = tmp_path / "head.csv"  # its metadata, header and first row (TP1 PP1 DP1): one row keeps it fast
    header = next(i for i, line in enumerate(lines) if line.startswith("gpus,"))
    head.write_text("\n".join(lines[:header + 2]) + "\n")
    _, err = _err(capsys, LLAMA, str(head), "--attention", "standard")
    assert [line for line in err.splitlines() if line.startswith(NOTE)] == [
        NOTE + _mismatch("gpt_1024h_24l", "llama2_7b"),  # and, as train says it, the sequence the rows ran at
        NOTE + "sequence length 4096 tokens per sample, from max_position_embeddings: a rotary model's longest "
        "context, not its training length; --seq N sets it"]
    for model in (GPT, "gpt_1024h_24l"):  # by path and by the shipped name: the same model, nothing said
        _, err = _err(capsys, model, str(head), "--attention", "standard")
        assert err == "", model


def test_a_model_line_naming_a_config_path_stands_for_that_configs_name(tmp_path, capsys):
    for named, model in (("configs/transformers/gpt_1024h_24l.json", GPT), ("llama2_7b/config.json", LLAMA)):
        runs = _runs(tmp_path / "runs.csv", named, "1,1,1,1,1\n")
        _, err = _err(capsys, model, runs)
        assert not [line for line in err.splitlines() if "'# model:'" in line], named
    runs = _runs(tmp_path / "runs.csv", "configs/transformers/gpt_1024h_24l.json")
    _, err = _err(capsys, OTHER, runs)
    assert err.splitlines() == [NOTE + _mismatch("gpt_1024h_24l", "gpt_2048h_20l")]


def test_a_model_line_with_control_characters_is_noted_escaped(tmp_path, capsys):
    _, err = _err(capsys, OTHER, _runs(tmp_path / "runs.csv", "\x1b[31mgpt"))
    assert err.splitlines() == [NOTE + _mismatch("'\\x1b[31mgpt'", "gpt_2048h_20l")]


def test_without_a_model_line_nothing_changes(tmp_path, capsys):
    _, err = _err(capsys, OTHER, _runs(tmp_path / "runs.csv", None))
    assert err == ""
    _, err = _err(capsys, OTHER, _runs(tmp_path / "runs.csv", ""))  # an empty name names nothing
    assert err == ""
    vtrain = tmp_path / "vtrain.csv"  # vTrain's CSV as released: no '# model:' line, its rows' own shapes
    vtrain.write_text("\n".join(VTRAIN.read_text().splitlines()[:2]) + "\n")
    _, err = _err(capsys, OTHER, str(vtrain), "--attention", "standard")
    assert err == ""


def test_the_library_warns_the_same_model_note(tmp_path):
    runs = _runs(tmp_path / "runs.csv", "gpt_1024h_24l")
    with pytest.warns(UserWarning) as caught:
        rows = archsim.train_runs(OTHER, runs=runs, cluster=NODE)
    assert [str(w.message) for w in caught] == [_mismatch("gpt_1024h_24l", "gpt_2048h_20l")]
    assert len(rows) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        archsim.train_runs(GPT, runs=runs, cluster=NODE)


ONE_CHUNK = ("--schedule interleaved-1f1b ran with one model chunk per pipeline rank (interleave 1): it interleaves "
             "nothing (interleaved-1f1b: Megatron-LM's plain 1F1B, the figures of --schedule 1f1b); "
             "interleave V gives each rank V chunks")
# TP2 PP2 DP2 and TP1 PP4 DP2 on the node's 8 GPUs, 4 micro-batches per pipeline: interleaving may run on each
CHUNKED = "tp,pp,dp,micro_batch,global_batch,interleave\n2,2,2,1,8,2\n2,2,2,1,8,\n1,4,2,1,8,1\n"
UNCHUNKED = "tp,pp,dp,micro_batch,global_batch\n2,2,2,1,8\n1,4,2,1,8\n"


def test_interleaved_1f1b_on_rows_of_one_chunk_is_noted_once_with_their_count(tmp_path, capsys):
    chunked, unchunked = tmp_path / "chunked.csv", tmp_path / "unchunked.csv"
    chunked.write_text(CHUNKED)
    unchunked.write_text(UNCHUNKED)
    rows, err = _err(capsys, GPT, str(chunked), "--schedule", "interleaved-1f1b")
    assert [row["interleave"] for row in rows] == [2, 1, 1]
    assert err.splitlines() == [f"{NOTE}2 of the 3 rows: {ONE_CHUNK}"]
    _, err = _err(capsys, GPT, str(unchunked), "--schedule", "interleaved-1f1b")
    assert err.splitlines() == [f"{NOTE}2 of the 2 rows: {ONE_CHUNK}"]
    _, err = _err(capsys, GPT, str(unchunked))  # 1F1B: one chunk is what it runs, nothing to say
    assert err == ""
    only = tmp_path / "only.csv"
    only.write_text("tp,pp,dp,micro_batch,global_batch,interleave\n2,2,2,1,8,2\n")
    _, err = _err(capsys, GPT, str(only), "--schedule", "interleaved-1f1b")
    assert err == ""


def test_the_library_warns_the_same_one_chunk_note(tmp_path):
    chunked = tmp_path / "chunked.csv"
    chunked.write_text(CHUNKED)
    with pytest.warns(UserWarning) as caught:
        archsim.train_runs(GPT, runs=chunked, cluster=NODE, schedule="interleaved-1f1b")
    keyword = ONE_CHUNK.replace("--schedule interleaved-1f1b", "schedule='interleaved-1f1b'").replace(
        "--schedule 1f1b", "schedule='1f1b'")  # as typed in Python
    assert [str(w.message) for w in caught] == [f"2 of the 3 rows: {keyword}"]


def test_the_command_and_the_library_say_a_runs_files_notes_in_one_order(tmp_path, capsys):
    """A file with a cleared row, another model's '# model:' line and interleaved rows of one chunk: the three notes,
    cleared row first, then the model line, then the rows' layout, from both the command and the library."""
    runs = _runs(tmp_path / "runs.csv", "gpt_1024h_24l", rows="2,2,2,1,8\n,,,,\n1,4,2,1,8\n")
    cleared = ("1 row of empty cells (line 5: a spreadsheet's cleared row) was skipped, as a blank line is: no run is "
               "read from it")
    expected = [cleared, _mismatch("gpt_1024h_24l", "gpt_2048h_20l"), f"2 of the 2 rows: {ONE_CHUNK}"]
    _, err = _err(capsys, OTHER, runs, "--schedule", "interleaved-1f1b")
    assert err.splitlines() == [NOTE + line for line in expected]
    with pytest.warns(UserWarning) as caught:
        archsim.train_runs(OTHER, runs=runs, cluster=NODE, schedule="interleaved-1f1b")
    library = [str(w.message) for w in caught]  # the layout note in the keywords' words (schedule='…')
    assert library[:2] == expected[:2] and len(library) == 3
    assert library[2].startswith("2 of the 2 rows: schedule='interleaved-1f1b' ran with one model chunk")
