"""An LLM training engineer's trial: planning a run on 4 servers × 8 H100 from Python and the CLI (a
Llama-2-13B-shaped model, a runs file written by hand or exported from a spreadsheet, the cluster TOML).

Each test here failed on the code before its fix (the docstring says how).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "configs/transformers/gpt_1024h_24l.json")
CLUSTER = str(ROOT / "configs/clusters/a100_node.toml")
HEADER = "tp,pp,dp,micro_batch,global_batch,recompute\n"


def _runs_csv(capsys, path: Path) -> tuple[int, list[str], str]:
    capsys.readouterr()
    status = main(["train", MODEL, "--cluster", CLUSTER, "--runs", str(path), "--attention", "standard",
                   "--format", "csv"])
    out, err = capsys.readouterr()
    return status, [line for line in out.splitlines() if line and not line.startswith("#")], err


def test_a_spreadsheet_row_of_empty_cells_is_a_blank_line(tmp_path, capsys):
    """Failed before: a spreadsheet saves a row it emptied as commas alone (``,,,,,``); the runs file refused
    it ("line 3, field 'tp': expected a positive integer, got ''") where it skips a blank line and the topology
    CSV reader skips such a row. Now it is skipped as a blank line is: the same runs, each still named by its
    own line in the file."""
    plain = tmp_path / "plain.csv"
    plain.write_text(HEADER + "2,2,2,1,16,full\n\n1,2,4,2,16,selective\n")
    spread = tmp_path / "spread.csv"
    spread.write_text(HEADER + "2,2,2,1,16,full\n,,,,,\n1,2,4,2,16,selective\n, ,\t,,,\n")
    status, want, _ = _runs_csv(capsys, plain)
    assert status == 0 and len(want) == 3, want  # the header and two runs
    status, got, err = _runs_csv(capsys, spread)
    assert status == 0, err
    assert got == want
    assert [row.split(",")[0] for row in got[1:]] == ["2", "4"]  # file lines 2 and 4


def _train_json(capsys, model: str, cluster: str) -> tuple[int, str, str]:
    capsys.readouterr()
    status = main(["train", model, "--cluster", cluster, "--tp", "2", "--pp", "2", "--dp", "2", "--global-batch", "16",
                   "--micro-batch", "2", "--format", "json"])
    out, err = capsys.readouterr()
    return status, out, err


def test_a_byte_order_mark_before_a_toml_or_json_file_is_skipped(tmp_path, capsys):
    """Failed before: Windows Notepad saves "UTF-8 with BOM"; a model or cluster TOML that began with the mark
    was refused as "line 1: not valid TOML (Invalid statement, column 1)", a line that looks right, and a
    config.json as "not valid JSON (Unexpected UTF-8 BOM (decode using utf-8-sig) …)", where every CSV reader
    (a runs file too) skips the mark. Now the mark is skipped and the run is the one without it."""
    model_toml = ('[transformer]\nfamily = "llama"\nname = "small_llama"\nlayers = 4\nhidden = 512\nheads = 8\n'
                  'vocab = 32000\nseq = 512\nffn = 1376\n')
    cluster_toml = Path(CLUSTER).read_text(encoding="utf-8")
    config_json = ('{"model_type": "llama", "hidden_size": 512, "intermediate_size": 1376, "num_attention_heads": 8, '
                   '"num_hidden_layers": 4, "vocab_size": 32000, "max_position_embeddings": 512}')
    for name, text in (("model.toml", model_toml), ("cluster.toml", cluster_toml), ("config.json", config_json)):
        for kind, mark, newline in (("plain", "", "\n"), ("bom", "\ufeff", "\r\n")):  # a config.json names its folder
            (tmp_path / kind / "llama").mkdir(parents=True, exist_ok=True)
            (tmp_path / kind / "llama" / name).write_bytes((mark + text.replace("\n", newline)).encode())
    for model in ("model.toml", "config.json"):
        runs = [_train_json(capsys, str(tmp_path / kind / "llama" / model), str(tmp_path / kind / "llama/cluster.toml"))
                for kind in ("plain", "bom")]
        assert [status for status, _, _ in runs] == [0, 0], runs[1][2]
        assert runs[1][1].replace("/bom/", "/plain/") == runs[0][1]


def test_a_json_syntax_error_is_located_like_every_file_error(tmp_path, capsys):
    """Failed before: a hand-written config.json with a trailing comma was refused as "FILE: not valid JSON
    (Expecting property name enclosed in double quotes: line 4 column 1 (char 50))", the line inside the
    message, where a TOML syntax error (and every other file error) reads ``FILE, line N: …``."""
    folder = tmp_path / "llama2_13b"
    folder.mkdir()
    config = folder / "config.json"
    config.write_text('{\n  "model_type": "llama",\n  "hidden_size": 5120,\n}\n')
    capsys.readouterr()
    assert main(["train", str(config), "--cluster", CLUSTER]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (f"archsim train: error: {config}, line 4: not valid JSON (Expecting property name enclosed in "
                   "double quotes, column 1)\n")


def test_a_model_folder_names_the_config_json_inside_it(tmp_path, capsys):
    """Failed before: transformers' ``from_pretrained`` takes a model's folder, so a user gives ``train`` the
    folder too; it was refused as "FILE: transformer config is not a regular file (a folder)", which says
    what is wrong but not what to write. Now the one line names the folder's config.json to give."""
    folder = tmp_path / "llama2_13b"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "llama"}')
    capsys.readouterr()
    assert main(["train", str(folder), "--cluster", CLUSTER]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    assert err == (f"archsim train: error: {folder}: a folder, not a transformer config; give the config.json in it "
                   f"({folder / 'config.json'})\n")


@pytest.mark.parametrize("command", [["train"], ["search"]])
@pytest.mark.parametrize("model", ["", "  "])
def test_an_empty_model_argument_is_told_empty(capsys, command, model):
    """Failed before: ``archsim train "" --cluster …`` was refused as ``.: transformer config is not a regular file
    (a folder)`` — Path("") is the working folder — and a blank one as a missing shipped name."""
    assert main([*command, model, "--cluster", CLUSTER, "--global-batch", "8"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    assert err.startswith(f"archsim {command[0]}: error: argument MODEL: expected a transformer config's path or a "
                          "shipped name, got an empty one; shipped: "), err
    shipped = sorted(p.stem for p in (Path(__file__).parents[1] / "configs" / "transformers").iterdir())
    assert err.rstrip("\n").endswith(", ".join(shipped)), err


def test_the_library_tells_an_empty_model_in_its_argument():
    import archsim
    from archsim.errors import InputError

    with pytest.raises(InputError, match="^field 'model': expected a transformer config's path or a shipped name, "
                                         "got an empty one"):
        archsim.train("", cluster=CLUSTER, global_batch=8)


def test_a_misspelt_runs_column_is_named_beside_the_missing_one(tmp_path, capsys):
    """Failed before: a header with ``micro_bacth`` for ``micro_batch`` was refused as "missing column(s)
    micro_batch", with no word of the misspelt column the user typed, which the file does have; now the one
    line names both."""
    path = tmp_path / "runs.csv"
    path.write_text("tp,pp,dp,micro_bacth,global_batch\n8,4,1,1,128\n")
    status, _, err = _runs_csv(capsys, path)
    assert status == 2 and err.count("\n") == 1, err
    assert err.startswith(f"archsim train: error: {path}, line 1: missing column(s) micro_batch (unknown column(s) "
                          "micro_bacth (did you mean 'micro_batch'?)): a runs file names tp, pp, dp, micro_batch, global_batch and optionally"), err


def test_a_tab_separated_runs_file_is_named_as_such(tmp_path, capsys):
    """Failed before: a spreadsheet's "Text (Tab delimited)" export was refused as "missing column(s) tp, pp,
    dp, micro_batch, global_batch", though its header names them all; a ';'-separated one already got the
    line that says what is wrong, and now a tab-separated one does too."""
    path = tmp_path / "runs.csv"
    path.write_text("tp\tpp\tdp\tmicro_batch\tglobal_batch\n8\t4\t1\t1\t128\n")
    status, _, err = _runs_csv(capsys, path)
    assert status == 2
    assert err == f"archsim train: error: {path}, line 1: one column: cells are separated by a comma, not a tab\n"


LLAMA_JSON = ('{"model_type": "llama", "hidden_size": 512, "intermediate_size": 1376, "num_attention_heads": 8, '
              '"num_hidden_layers": 4, "vocab_size": 32000, "max_position_embeddings": 8192, "my_note": "x", '
              '"torch_dtype": "bfloat16"}')
SEQ_NOTE = ("sequence length 8192 tokens per sample, from max_position_embeddings: a rotary model's longest context, "
            "not its training length; {} sets it")


def test_runs_say_a_rotary_configs_sequence_came_from_max_position_embeddings(tmp_path, capsys):
    """Failed before: ``train`` and ``search`` on a Llama config.json given without ``--seq`` say that the
    sequence is ``max_position_embeddings`` (the longest context, 131,072 for Llama-3.1, not a training
    length), name the config's fields they do not read and, without ``--dtype``, that its ``torch_dtype`` is
    not the precision priced; ``train --runs`` and ``archsim.train_runs`` priced every row at that length and
    precision and said none of it. Now they say the three, once, as ``train`` does; with ``--seq`` the
    sequence note is not said."""
    import warnings

    import archsim

    folder = tmp_path / "small_llama"
    folder.mkdir()
    (folder / "config.json").write_text(LLAMA_JSON)
    runs = tmp_path / "runs.csv"
    runs.write_text(HEADER + "2,2,2,1,16,full\n1,2,4,1,16,full\n")
    single = ["train", str(folder / "config.json"), "--cluster", CLUSTER]
    capsys.readouterr()
    assert main([*single, "--tp", "2", "--pp", "2", "--dp", "2", "--global-batch", "16", "--micro-batch", "1"]) == 0
    train_notes = [line for line in capsys.readouterr().err.splitlines() if "note:" in line]
    assert f"archsim train: note: {SEQ_NOTE.format('--seq N')}" in train_notes
    assert any("my_note" in line for line in train_notes)  # the field train does not read, named
    assert any("config.json says bfloat16" in line for line in train_notes) and len(train_notes) == 3
    assert main([*single, "--runs", str(runs)]) == 0
    assert [line for line in capsys.readouterr().err.splitlines() if "note:" in line] == train_notes
    assert main([*single, "--runs", str(runs), "--seq", "1024"]) == 0
    assert "max_position_embeddings" not in capsys.readouterr().err
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        archsim.train_runs(str(folder / "config.json"), runs=str(runs), cluster=CLUSTER)
    said = [str(w.message) for w in caught]
    assert SEQ_NOTE.format("seq=N") in said and any("my_note" in text for text in said), said
    assert any("config.json says bfloat16" in text and "dtype='bf16'" in text for text in said), said


def test_rows_of_empty_cells_are_counted_in_one_note(tmp_path, capsys):
    """Failed before: the cleared rows were skipped without a word, so a run the user meant to keep went missing
    silently. Now one note counts them and names their lines (3 and 5 here, by hand: the header is line 1, a blank
    line 4 and a comment are no rows); the runs are the same; the library warns the same line once."""
    import warnings

    import archsim

    spread = tmp_path / "spread.csv"
    spread.write_text(HEADER + "2,2,2,1,16,full\n,,,,,\n\n, ,\t,,,\n# a comment, with a comma\n1,2,4,2,16,selective\n")
    status, got, err = _runs_csv(capsys, spread)
    assert status == 0 and len(got) == 3, err  # the header and two runs
    said = [line for line in err.splitlines() if "empty cells" in line]
    assert len(said) == 1 and "2 rows of empty cells (lines 3, 5:" in said[0] and "were skipped" in said[0]
    plain = tmp_path / "plain.csv"
    plain.write_text(HEADER + "2,2,2,1,16,full\n\n1,2,4,2,16,selective\n")
    assert "empty cells" not in _runs_csv(capsys, plain)[2]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        archsim.train_runs(MODEL, runs=str(spread), cluster=CLUSTER, attention="standard")
    assert [str(w.message) for w in caught if "empty cells" in str(w.message)] == [said[0].split("note: ", 1)[1]]
