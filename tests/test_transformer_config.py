"""Transformers from configs: parameter counts against the published ones, FLOPs per token against
Kaplan et al. (2020), Table 1: C_forward ≈ 2N + 2·n_layer·n_ctx·d_attn, N = 2·d·n_layer·(2·d_attn + d_ff)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archsim.errors import InputError
from archsim.lowering import lower_network
from archsim.workload import load_network
from archsim.workload.model_files import load_transformer

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "transformers"


def test_gpt2_small_has_its_published_124m_parameters():
    config = load_transformer(CONFIGS / "gpt2.json")
    # 124,439,808 is the count every GPT-2 small checkpoint reports (124 M published): 12 blocks,
    # the tied 50,257 × 768 token table (counted once, as the LM head) and 1,024 learned positions.
    assert config.parameter_count == 124_439_808
    assert abs(config.parameter_count - 124e6) / 124e6 < 0.01


def test_gpt3_sizes():
    big = load_transformer(CONFIGS / "gpt3_175b.toml")
    assert abs(big.parameter_count - 175e9) / 175e9 < 0.01
    xl = load_transformer(CONFIGS / "gpt3_1.3b.toml")
    # GPT-3 XL: 1.3157 B — the paper's "1.3B" is rounded to two digits (1.2% below the count).
    assert round(xl.parameter_count / 1e9, 1) == 1.3


@pytest.mark.parametrize("file", ["gpt2.json", "gpt3_1.3b.toml", "gpt3_175b.toml"])
def test_forward_flops_per_token_match_kaplan(file):
    config = load_transformer(CONFIGS / file)
    d, n_layer, n_ctx, d_ff = config.hidden, config.layers, config.seq, config.ffn
    kaplan_n = 2 * d * n_layer * (2 * d + d_ff)
    kaplan = 2 * kaplan_n + 2 * n_layer * n_ctx * d
    network = config.network()
    fc = sum(layer.macs for layer in network.layers if layer.kind == "fc" and layer.name != "lm_head")
    attention = sum(layer.macs for layer in network.layers if layer.kind == "matmul")
    # Kaplan counts causal attention: each token attends to n_ctx/2 positions on average, half of
    # the S×S scores and context products archsim's array computes (masking skips no work there).
    ours = (2 * fc + 2 * attention / 2) / n_ctx
    assert abs(ours - kaplan) / kaplan < 0.01
    assert 2 * attention / n_ctx == 4 * n_layer * n_ctx * d  # the dense products, both matmuls


def test_llama_grouped_query_attention_and_swiglu(tmp_path):
    # Llama-2-7B's published shapes; its checkpoints hold 6,738,415,616 parameters.
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
                                "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 11008,
                                "vocab_size": 32000, "max_position_embeddings": 4096,
                                "tie_word_embeddings": False}))
    config = load_transformer(path)
    assert config.parameter_count == 6_738_415_616  # RMSNorm's γ alone (the network's norm layer costs a β too)
    gqa = json.loads(path.read_text()) | {"num_key_value_heads": 8}
    path.write_text(json.dumps(gqa))
    network = load_transformer(path, seq=128).network()
    assert network.layer("l1_qkv").filters == 4096 + 2 * 8 * 128
    assert [layer.name for layer in network.layers[7:13]] == ["l1_ln2", "l1_gate", "l1_up", "l1_silu", "l1_mul",
                                                              "l1_down"]
    assert network.layer("l1_mul").inputs == ("l1_silu", "l1_up")


def test_bert_large_config_gives_the_shipped_encoder(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "bert", "hidden_size": 1024, "num_hidden_layers": 24,
                                "num_attention_heads": 16, "intermediate_size": 4096, "vocab_size": 30522,
                                "max_position_embeddings": 512, "type_vocab_size": 2}))
    ours = load_network(path)
    shipped = load_network("bert_large")
    assert ours.layers[0].name == "emb_ln"

    def ops(network):
        return [[(op.kind, op.gemms, op.vector_elements) for op in item.ops] for item in lower_network(network, 4, "paper")]

    assert ops(ours)[1:] == ops(shipped)  # paper mode: every layer has its δ


def test_sequence_length_from_dim_and_bad_configs(tmp_path):
    assert load_network(CONFIGS / "gpt2.json", dims={"seq": 256}).layer("l1_scores").ifmap_h == 256
    bad = tmp_path / "t.toml"
    bad.write_text('[transformer]\nfamily = "gpt"\nlayers = 2\nhidden = 100\nheads = 3\nvocab = 10\nseq = 8\n')
    with pytest.raises(InputError, match="heads \\(3\\) must divide hidden"):
        load_network(bad)
    bad.write_text('[transformer]\nfamily = "gpt"\nlayers = 2\nhidden = 64\nheads = 4\nvocab = 10\nseq = 8\n'
                   'colour = 1\n')
    with pytest.raises(InputError) as err:
        load_network(bad)
    assert err.value.where.field == "colour"
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "t5"}')
    with pytest.raises(InputError, match="model_type 't5'"):
        load_network(bad)


def test_import_writes_a_csv_that_loads_back_shape_checked(tmp_path):
    from archsim.cli import main
    from archsim.workload import load_topology

    out = tmp_path / "gpt2.csv"
    assert main(["import", str(CONFIGS / "gpt2.json"), "--dim", "seq=64", "-o", str(out)]) == 0
    assert load_topology(out).layers == load_network(CONFIGS / "gpt2.json", dims={"seq": 64}).layers


def test_a_config_hashes_as_its_fields_and_anew_in_another_process():
    """A config's hash is kept (every memory figure's cache looks it up); it must be the fields' tuple's, as
    dataclass makes it, and must not travel in a pickle: another process hashes strings with another seed."""
    import os
    import pickle
    import subprocess
    import sys
    from dataclasses import fields, replace

    config = load_transformer(CONFIGS / "gpt3_175b.toml")
    own = hash(tuple(getattr(config, f.name) for f in fields(config)))  # dataclass's rule, written out
    assert hash(config) == own and hash(config) == own  # kept, then read back
    longer = replace(config, seq=2 * config.seq)
    assert hash(longer) == hash(tuple(getattr(longer, f.name) for f in fields(longer))) != own
    assert vars(pickle.loads(pickle.dumps(config))).keys() == {f.name for f in fields(config)}
    child = ("import pickle, sys\nfrom archsim.workload.model_files import load_transformer\n"
             "sent = pickle.loads(sys.stdin.buffer.read())\nmade = load_transformer(sys.argv[1])\n"
             "print(sent == made, hash(sent) == hash(made), len({sent, made}))")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = subprocess.run([sys.executable, "-c", child, str(CONFIGS / "gpt3_175b.toml")], input=pickle.dumps(config),
                          capture_output=True, env=env, check=True)
    assert done.stdout.decode().split() == ["True", "True", "1"]
