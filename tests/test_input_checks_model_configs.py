"""Transformer configs ``train``/``search`` accepted silently and now refuse with one line (issue #40): a
sequence beyond a config's learned positions — and the neighbouring
configs that stay accepted, so a refusal does not overreach."""

from __future__ import annotations

from pathlib import Path

import pytest
from input_checks_common import GPT2, NODE, write_config

import archsim
from archsim.cli import main
from archsim.errors import InputError
from archsim.workload import load_network
from archsim.workload.model_files import load_transformer

ROOT = Path(__file__).resolve().parents[1]


# Hugging Face configs by their documented keys: OPT's and BERT's learned tables hold
# max_position_embeddings positions (OPT's has 2 rows more, an offset, not more positions); Llama's
# and Mistral's max_position_embeddings is rotary's trained length, no table: no hard limit.
OPT = {"model_type": "opt", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
       "vocab_size": 1000, "max_position_embeddings": 2048, "ffn_dim": 1024}
BERT = {"model_type": "bert", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
        "vocab_size": 1000, "max_position_embeddings": 512, "intermediate_size": 1024}
LLAMA = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
         "vocab_size": 1000, "max_position_embeddings": 4096, "intermediate_size": 688}


@pytest.mark.parametrize("command", ["train", "search"])
def test_seq_beyond_learned_positions_is_refused_in_one_line(command, tmp_path, capsys):
    out = tmp_path / "out.csv"
    argv = [command, str(GPT2), "--cluster", str(NODE), "--global-batch", "8", "--seq", "2048", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert "gpt2" in err and "1024" in err and "--seq" in err
    assert not out.exists()


def test_seq_beyond_learned_positions_is_refused_by_the_api():
    with pytest.raises(InputError, match="1024"):
        archsim.train(GPT2, cluster=NODE, global_batch=8, seq=1025)
    with pytest.raises(InputError, match="1024"):
        archsim.search(GPT2, cluster=NODE, global_batch=8, seq=4096)
    config = load_transformer(GPT2)
    with pytest.raises(InputError, match="1024"):  # a config object with a longer seq
        archsim.train(config, cluster=NODE, global_batch=8, seq=2048)
    with pytest.raises(InputError, match="1024"):  # the array commands' --dim seq=N
        load_network(GPT2, dims={"seq": 2048})


@pytest.mark.parametrize(("name", "document", "limit"), [("opt", OPT, 2048), ("bert", BERT, 512)])
def test_the_limit_is_the_configs_position_count(tmp_path, name, document, limit):
    path = write_config(tmp_path, document, name)
    assert load_transformer(path, seq=limit).seq == limit
    with pytest.raises(InputError, match=str(limit)) as caught:
        load_transformer(path, seq=limit + 1)
    assert caught.value.where.field == "seq"


def test_rotary_positions_and_configs_without_a_limit_take_any_seq(tmp_path):
    llama = write_config(tmp_path, LLAMA, "llama")
    assert load_transformer(llama, seq=8192).seq == 8192
    mistral = write_config(tmp_path, {**LLAMA, "model_type": "mistral", "num_key_value_heads": 4,
                                      "sliding_window": None}, "mistral")
    assert load_transformer(mistral, seq=32768).seq == 32768
    # a [transformer] TOML states a sequence length, not a position limit: none is invented
    toml = ROOT / "configs" / "transformers" / "gpt3_1.3b.toml"
    assert load_transformer(toml).seq == 2048 and load_transformer(toml, seq=4096).seq == 4096


def test_a_vtrain_row_names_its_own_gpt_and_sequence():
    """vTrain's rows replace MODEL's shape and sequence (learned positions at the row's sequence)."""
    from archsim.training.parallel import Parallelism
    from archsim.training.runs import RunRow
    from archsim.training.runs_predict import row_config

    config = row_config(load_transformer(GPT2), RunRow(2, Parallelism(), shape=(1024, 16, 24, 2048)))
    assert config.seq == 2048


# -- Hugging Face configs: a key that changes the shapes archsim builds
def test_a_head_dim_other_than_hidden_over_heads_sets_the_attention_width(tmp_path):
    """Mistral-NeMo's config (hidden 5120, 32 heads, head_dim 128, not 160): 128-wide heads, not 160
    (tests/test_hf_head_dim.py checks its shapes and counts)."""
    nemo = write_config(tmp_path, {**LLAMA, "model_type": "mistral", "hidden_size": 5120, "num_attention_heads": 32,
                                   "num_key_value_heads": 8, "head_dim": 128, "sliding_window": None}, "nemo")
    assert (load_transformer(nemo).head_dim, load_transformer(nemo).attention_width) == (128, 4096)
    same = write_config(tmp_path, {**LLAMA, "head_dim": 64}, "llama")  # 256 / 4: what archsim builds, accepted
    assert load_transformer(same).head_dim == 64
