"""A Hugging Face config's torch_dtype does not set train's --dtype (fp16 by default); when --dtype is not
given and the config names another of train's dtypes, train says so once on stderr, archsim.train as a
UserWarning."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import archsim
from archsim.cli import main

CLUSTER = "configs/clusters/h100_1gpu.toml"  # one GPU: the default layout fills it, no other note
NOTE = "config.json says bfloat16; priced in fp16, train's default: give --dtype bf16 to price it so"


def _small(tmp_path, torch_dtype: str | None, name: str = "config.json") -> str:
    """A two-layer Llama config stating ``torch_dtype`` (None: no such key), written as ``name``."""
    config = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1024,
              "max_position_embeddings": 128, "tie_word_embeddings": False}
    if torch_dtype is not None:
        config["torch_dtype"] = torch_dtype
    path = tmp_path / name
    path.write_text(json.dumps(config), encoding="utf-8")
    return str(path)


def _train(capsys, *argv: str) -> tuple[dict, str]:
    capsys.readouterr()
    assert main(["train", *argv, "--cluster", CLUSTER, "--global-batch", "1", "--seq", "128", "--format", "json"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def test_train_notes_a_bfloat16_config_priced_at_the_default(capsys, tmp_path):
    document, err = _train(capsys, _small(tmp_path, "bfloat16"))
    assert err == f"archsim train: note: {NOTE}\n"  # one line, the only one
    assert document["meta"]["dtype"] == "fp16"  # the default is not changed


@pytest.mark.parametrize(("torch_dtype", "flags"), [
    ("bfloat16", ("--dtype", "bf16")),  # priced as the config says
    ("bfloat16", ("--dtype", "fp16")),  # given on purpose: nothing to say
    ("float16", ()),  # the default is the config's
    (None, ()),  # nothing stated
    ("float8_e4m3fn", ()),  # not one of train's dtypes
])
def test_train_says_nothing_when_the_dtype_is_given_or_agrees(capsys, tmp_path, torch_dtype, flags):
    document, err = _train(capsys, _small(tmp_path, torch_dtype), *flags)
    assert err == ""
    assert document["meta"]["dtype"] == (flags[1] if flags else "fp16")


def test_api_train_warns_with_the_same_note(tmp_path):
    path = _small(tmp_path, "bfloat16")
    with pytest.warns(UserWarning) as caught:
        result, _ = archsim.train(path, cluster=CLUSTER, global_batch=1, seq=128)
    assert [str(w.message) for w in caught] == [NOTE.replace("--dtype bf16", "dtype='bf16'")]
    assert result.to_dict()["meta"]["dtype"] == "fp16"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # given: no warning at all
        archsim.train(path, cluster=CLUSTER, global_batch=1, seq=128, dtype="bf16")


def test_the_dtype_key_newer_transformers_write_is_read_as_torch_dtype(capsys, tmp_path):
    """User trial 29: transformers 4.56 renamed the config's ``torch_dtype`` to ``dtype`` (``save_pretrained``
    writes ``"dtype": "bfloat16"``), and such a config got no dtype note. Failed before the fix: no such note."""
    path = _small(tmp_path, None)
    config = json.loads(Path(path).read_text(encoding="utf-8"))
    Path(path).write_text(json.dumps({**config, "dtype": "bfloat16"}), encoding="utf-8")
    _, err = _train(capsys, path)
    assert err == f"archsim train: note: {NOTE}\n"


def test_the_note_names_the_file_the_config_was_read_from(capsys, tmp_path):
    """A config saved under another name than config.json is named by its own name (the note said
    "config.json says" whatever the file was called): train, search and archsim.train alike; a config given
    already loaded, by its model's name."""
    path = _small(tmp_path, "bfloat16", name="tiny_llama.json")
    _, err = _train(capsys, path)
    assert err == f"archsim train: note: {NOTE.replace('config.json', 'tiny_llama.json')}\n"
    assert main(["search", path, "--cluster", CLUSTER, "--global-batch", "1", "--seq", "128", "--format", "json"]) == 0
    said = capsys.readouterr().err
    assert "tiny_llama.json says bfloat16; priced in fp16, search's default" in said and "config.json" not in said
    with pytest.warns(UserWarning) as caught:
        archsim.train(path, cluster=CLUSTER, global_batch=1, seq=128)
    assert [str(w.message) for w in caught] == \
        [NOTE.replace("config.json", "tiny_llama.json").replace("--dtype bf16", "dtype='bf16'")]
    from archsim.workload.model_files import load_transformer

    loaded = load_transformer(path)
    with pytest.warns(UserWarning) as caught:
        archsim.train(loaded, cluster=CLUSTER, global_batch=1, seq=128)
    assert [str(w.message) for w in caught] == \
        [NOTE.replace("config.json", f"{loaded.name}'s config").replace("--dtype bf16", "dtype='bf16'")]
