"""Every Hugging Face model_type archsim reads is named where a user is told what it reads: the MODEL help of
`archsim train` and `archsim search` (and so docs/cli.md, generated from the parser) and the line refusing a
model_type it does not read. The reference is the shipped config.json files themselves: each one that loads
names a model_type that is read (Qwen1.5-MoE's `qwen2_moe` loaded and trained but was left out of all three)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archsim import cli
from archsim.errors import InputError
from archsim.workload.model_files import load_transformer

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted(path for folder in (ROOT / "tests" / "data", ROOT / "configs")
                 for path in folder.rglob("*.json") if '"model_type"' in path.read_text(encoding="utf-8"))


def read_types() -> set[str]:
    """The model_types of the shipped config.json files that load."""
    kinds = set()
    for path in CONFIGS:
        try:
            load_transformer(path)
        except InputError:
            continue  # a model_type refused on purpose (Gemma 2), with its reason
        kinds.add(json.loads(path.read_text(encoding="utf-8"))["model_type"].lower())
    return kinds


def model_help(command: str) -> str:
    parser = cli.build_parser([command])
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return next(a.help for a in sub.choices[command]._actions if a.dest == "model")


def test_the_shipped_configs_cover_dense_and_mixture_types():
    assert {"gpt2", "llama", "mistral", "qwen3", "gemma", "mixtral", "qwen3_moe", "qwen2_moe"} <= read_types()


@pytest.mark.parametrize("command", ["train", "search"])
def test_every_read_model_type_is_in_the_model_help(command):
    listed = model_help(command).split("model_type ", 1)[1].split(")", 1)[0].split(", ")
    assert read_types() <= set(listed)


def test_every_read_model_type_is_in_the_refusal_of_an_unread_one(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "not_a_model"}), encoding="utf-8")
    with pytest.raises(InputError) as refused:
        load_transformer(config)
    listed = str(refused.value).split("archsim reads ", 1)[1].split(" configs", 1)[0].split(", ")
    assert read_types() <= set(listed)
