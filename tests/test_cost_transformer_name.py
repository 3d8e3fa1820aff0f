"""Refusals a newcomer meets first. A shipped transformer's name given to an array command (``cost gpt2``): the
array commands read a transformer config by path, and the refusal must say which file to give, not only list the
topology CSVs without it. `train` without `--global-batch`: the refusal says what the number is."""

import pytest
from test_docs import ROOT

from archsim.cli import main
from archsim.validate import shipped_file


@pytest.mark.parametrize(("name", "suffix"), [("gpt2", ".json"), ("gpt3_1.3b", ".toml")])
def test_a_shipped_transformers_name_is_told_its_config_file(tmp_path, monkeypatch, capsys, name, suffix) -> None:
    """Failed before: "no shipped network named 'gpt2'; shipped: bert_large, …", though `train gpt2` runs."""
    monkeypatch.chdir(tmp_path)
    config = shipped_file("transformers", name, (suffix,), "transformer config")
    assert config is not None and config.name == name + suffix
    assert main(["cost", name, "--array", "32x32"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert f"no shipped network named {name!r} ({name} is a shipped transformer config: give its file, {config})" in err


def test_a_name_no_transformer_has_keeps_the_plain_line(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["cost", "vg16", "--array", "32x32"]) == 2
    err = capsys.readouterr().err
    assert "no shipped network named 'vg16' (did you mean 'vgg16'?); shipped: " in err and "transformer" not in err


def test_train_without_global_batch_says_what_to_give(capsys) -> None:
    """Failed before: "--global-batch is required (unless --runs)" named the flag but not what its number is."""
    assert main(["train", "gpt2", "--cluster", str(ROOT / "configs" / "clusters" / "a100_node.toml")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert "--global-batch is required" in err and "samples one iteration trains" in err and "--global-batch 8" in err


def test_search_without_global_batch_says_what_train_says(capsys) -> None:
    """Failed before: search left it to argparse ("the following arguments are required: --global-batch"), which
    names the flag but not its number; train's refusal says what it is. One wording: the same words after the flag."""
    cluster = str(ROOT / "configs" / "clusters" / "a100_node.toml")
    assert main(["search", "gpt2", "--cluster", cluster]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert "--global-batch is required: the samples one iteration trains, all data-parallel replicas together, " \
           "e.g. --global-batch 8" in err
    assert main(["train", "gpt2", "--cluster", cluster]) == 2
    train_err = capsys.readouterr().err
    assert err.split("--global-batch is required", 1)[1].split(": ", 1)[1] == \
        train_err.split("--global-batch is required (unless --runs)", 1)[1].split(": ", 1)[1]
