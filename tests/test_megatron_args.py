"""A search row's ``megatron_args`` describe the model priced, not only its layout (issue #40): the shape
(``--num-layers`` … ``--max-position-embeddings``) and, for a Llama, grouped-query attention, RoPE, RMSNorm,
SwiGLU, no biases, untied embeddings and no dropout. Each row's arguments are parsed here by a parser built from
the flag names and types read in Megatron-LM's ``megatron/training/arguments.py`` (core_v0.15.0, commit
0d7e02b: each ``add_argument``'s type, action and choices), so a misspelt flag or a value of the wrong type
fails; the expected values are read from the config files here and worked out by hand. These tests fail on the
code before 2026-12-01, whose arguments carried no model flag (and had no ``megatron_model_args``)."""

from __future__ import annotations

import argparse
import json
import tomllib
from pathlib import Path

import pytest

import archsim
from archsim.training.search_rows import megatron_args, megatron_model_args
from archsim.training.search_space import Candidate
from archsim.workload.model_files import load_transformer
from tests.tiny_search import tiny_files

ROOT = Path(__file__).resolve().parents[1]
NODE = ROOT / "configs" / "clusters" / "a100_node.toml"
GPT3_1_3B = ROOT / "configs" / "transformers" / "gpt3_1.3b.toml"
HF = ROOT / "tests" / "data" / "hf_configs"


def _window(text: str) -> tuple[int, ...]:
    """Megatron's ``tuple_type``: "4095,0" or "(4095,0)" → (4095, 0)."""
    return tuple(int(part) for part in text.strip("()").split(","))


def megatron_parser() -> argparse.ArgumentParser:
    """The flags archsim may emit, each with the type, action, choices, dest and default Megatron-LM's
    arguments.py gives it (store_false flags keep Megatron's dest: ``--disable-bias-linear`` → add_bias_linear)."""
    p = argparse.ArgumentParser(allow_abbrev=False, exit_on_error=False)
    for flag in ("tensor-model-parallel-size", "pipeline-model-parallel-size", "micro-batch-size",
                 "global-batch-size", "recompute-num-layers", "num-layers-per-virtual-pipeline-stage",
                 "decoder-first-pipeline-num-layers", "decoder-last-pipeline-num-layers", "num-layers", "hidden-size",
                 "ffn-hidden-size", "num-attention-heads", "kv-channels", "seq-length", "max-position-embeddings"):
        p.add_argument(f"--{flag}", type=int, default=None)
    p.add_argument("--num-query-groups", type=int, default=1)
    for flag in ("fp16", "bf16", "sequence-parallel", "use-flash-attn", "overlap-grad-reduce",
                 "use-distributed-optimizer", "group-query-attention", "swiglu", "untie-embeddings-and-output-weights",
                 "add-qkv-bias", "qk-layernorm"):
        p.add_argument(f"--{flag}", action="store_true")
    p.add_argument("--no-gradient-accumulation-fusion", action="store_false", dest="gradient_accumulation_fusion")
    p.add_argument("--disable-bias-linear", action="store_false", dest="add_bias_linear")
    p.add_argument("--recompute-granularity", type=str, default=None, choices=["full", "selective"])
    p.add_argument("--recompute-method", type=str, default=None, choices=["uniform", "block"])
    p.add_argument("--position-embedding-type", type=str, default="learned_absolute",
                   choices=["learned_absolute", "rope", "mrope", "relative", "none"])
    p.add_argument("--rotary-percent", type=float, default=1.0)
    p.add_argument("--normalization", default="LayerNorm", choices=["LayerNorm", "RMSNorm"])
    p.add_argument("--window-size", type=_window, default=None)
    p.add_argument("--attention-dropout", type=float, default=0.1)
    p.add_argument("--hidden-dropout", type=float, default=0.1)
    return p


def parsed(args: str) -> argparse.Namespace:
    """``args`` parsed by :func:`megatron_parser` (an unknown flag or a bad value raises), each flag given once."""
    words = args.split()
    flags = [w for w in words if w.startswith("--")]
    assert len(flags) == len(set(flags)), args
    namespace, unknown = megatron_parser().parse_known_args(words)
    assert not unknown, f"not Megatron-LM flags: {unknown}"
    return namespace


def model(ns: argparse.Namespace) -> dict:
    """The model Megatron-LM builds from ``ns``, as its validate_args completes it: kv_channels defaults to
    hidden // heads, query groups to the heads without --group-query-attention, the QKV bias follows the others;
    it refuses to start without the four it requires (``required_args``)."""
    required = (ns.num_layers, ns.hidden_size, ns.num_attention_heads, ns.max_position_embeddings)
    assert None not in required, f"Megatron-LM requires --num-layers --hidden-size --num-attention-heads " \
                                 f"--max-position-embeddings, got {required}"
    return {"layers": ns.num_layers, "hidden": ns.hidden_size, "heads": ns.num_attention_heads,
            "ffn": ns.ffn_hidden_size, "seq": ns.seq_length, "max_positions": ns.max_position_embeddings,
            "kv_channels": ns.kv_channels or ns.hidden_size // ns.num_attention_heads,
            "query_groups": ns.num_query_groups if ns.group_query_attention else ns.num_attention_heads,
            "positions": ns.position_embedding_type, "rotary_percent": ns.rotary_percent,
            "norm": ns.normalization, "swiglu": ns.swiglu, "bias": ns.add_bias_linear,
            "qkv_bias": ns.add_bias_linear or ns.add_qkv_bias, "qk_norm": ns.qk_layernorm,
            "untied": ns.untie_embeddings_and_output_weights, "window": ns.window_size,
            "attention_dropout": ns.attention_dropout, "hidden_dropout": ns.hidden_dropout}


def _rows(path, cluster=NODE, **options) -> list[dict]:
    found = archsim.search(str(path), cluster=str(cluster), top=3, schedule=["1f1b"], max_micro_batch=1, refine=0,
                           recompute=["none"], progress=False, **options)
    assert found.rows and all(row["megatron_args"] for row in found.rows)  # 1F1B, even split: Megatron runs them
    return found.rows


def test_gpt3_rows_carry_its_shape_and_megatron_defaults_for_the_rest():
    """GPT-3 1.3B (configs/transformers/gpt3_1.3b.toml): its shape, the FFN 4 × hidden (the TOML's default), a learned
    table of ``seq`` rows; LayerNorm, GeLU, biases, tied embeddings and dropout 0.1 are Megatron's defaults: no flag."""
    t = tomllib.loads(GPT3_1_3B.read_text(encoding="utf-8"))["transformer"]
    hidden, heads, seq = t["hidden"], t["heads"], t["seq"]
    expected = {"layers": t["layers"], "hidden": hidden, "heads": heads, "ffn": 4 * hidden, "seq": seq,
                "max_positions": seq, "kv_channels": hidden // heads, "query_groups": heads,
                "positions": "learned_absolute", "rotary_percent": 1.0, "norm": "LayerNorm", "swiglu": False,
                "bias": True, "qkv_bias": True, "qk_norm": False, "untied": False, "window": None,
                "attention_dropout": 0.1, "hidden_dropout": 0.1}
    assert expected["ffn"] == 8192 and expected["kv_channels"] == 128  # by hand: 4 × 2048, 2048 / 16
    for row in _rows(GPT3_1_3B, global_batch=16):
        ns = parsed(row["megatron_args"])
        assert model(ns) == expected
        assert (ns.tensor_model_parallel_size, ns.pipeline_model_parallel_size) == (row["tp"], row["pp"])
        assert not any(w in row["megatron_args"].split() for w in ("--swiglu", "--normalization", "--kv-channels"))


def test_llama3_rows_carry_the_llama_flags():
    """Llama-3-8B (tests/data/hf_configs/llama3_8b.json, Meta's config) at 4096 tokens: 8 query groups, RoPE over
    the whole head, RMSNorm, SwiGLU at its intermediate_size, no biases, untied embeddings, no dropout (its
    attention_dropout 0.0; a Llama has no hidden dropout), head_dim 4096 / 32 = 128 (Megatron's default)."""
    config = json.loads((HF / "llama3_8b.json").read_text(encoding="utf-8"))
    seq = 4096
    expected = {"layers": config["num_hidden_layers"], "hidden": config["hidden_size"],
                "heads": config["num_attention_heads"], "ffn": config["intermediate_size"], "seq": seq,
                "max_positions": seq, "kv_channels": 128, "query_groups": config["num_key_value_heads"],
                "positions": "rope", "rotary_percent": 1.0, "norm": "RMSNorm", "swiglu": True, "bias": False,
                "qkv_bias": False, "qk_norm": False, "untied": not config["tie_word_embeddings"], "window": None,
                "attention_dropout": config["attention_dropout"], "hidden_dropout": 0.0}
    assert (expected["query_groups"], expected["ffn"], expected["untied"]) == (8, 14336, True)
    for row in _rows(HF / "llama3_8b.json", global_batch=8, seq=seq, dtype="bf16"):
        ns = parsed(row["megatron_args"])
        assert model(ns) == expected
        assert ns.bf16 and not ns.fp16


@pytest.mark.parametrize(("options", "flags"), [
    ({"balance": "planned", "schedule": ["1f1b"], "recompute": ["full", "selective"]},
     {"--recompute-granularity", "--recompute-method"}),
    ({"schedule": ["interleaved-1f1b"], "chunks": [2], "dp_overlap": "bucketed", "distributed_optimizer": True,
      "grad_accumulation": "unfused"},
     {"--num-layers-per-virtual-pipeline-stage", "--overlap-grad-reduce", "--use-distributed-optimizer",
      "--no-gradient-accumulation-fusion"}),
])
def test_every_flag_of_the_layouts_parses(tmp_path, options, flags):
    """Rows under recompute, interleaving, bucketed overlap, the distributed optimizer and unfused accumulation
    (the tiny GPT of tests/tiny_search.py: 4 layers, hidden 256, 4 heads, 128 tokens): every flag archsim writes
    is one of Megatron-LM's with a value of its type, the model's among them."""
    path, cluster = tiny_files(tmp_path)
    found = archsim.search(path, cluster=cluster, global_batch=8, top=50, refine=0, progress=False,
                           max_micro_batch=2, **options)
    written = [row["megatron_args"] for row in found.rows if row["megatron_args"]]
    assert written
    for args in written:
        ns = parsed(args)
        assert (ns.num_layers, ns.hidden_size, ns.num_attention_heads, ns.seq_length) == (4, 256, 4, 128)
    assert flags <= {w for args in written for w in args.split() if w.startswith("--")}


def _model_of(path, seq: int | None = None) -> dict:
    return model(parsed(megatron_model_args(load_transformer(path, seq=seq))))


def test_a_wider_attention_than_hidden_sets_kv_channels():
    """tests/data/hf_configs/llama_head_dim.toml: 32 heads of head_dim 128 over hidden 2560, whose Megatron default
    would be 2560 / 32 = 80; its tied embeddings are Megatron's default (no --untie flag)."""
    t = tomllib.loads((HF / "llama_head_dim.toml").read_text(encoding="utf-8"))["transformer"]
    got = _model_of(HF / "llama_head_dim.toml")
    assert t["hidden"] // t["heads"] == 80
    assert (got["kv_channels"], got["query_groups"], got["untied"]) == (t["head_dim"], t["kv_heads"], False)


def test_mistral_window_and_qwen3_qk_norms():
    """Mistral-7B's sliding_window 4096 (0 ≤ q − k < 4096: the query and 4095 keys before it) is Megatron's window
    (4095, 0), its left and right reach; Qwen3-8B's q and k norms are --qk-layernorm (RMSNorm, as the model's)."""
    mistral = json.loads((HF / "mistral_7b_v0_1.json").read_text(encoding="utf-8"))
    got = _model_of(HF / "mistral_7b_v0_1.json", seq=8192)
    assert got["window"] == (mistral["sliding_window"] - 1, 0) == (4095, 0)
    qwen3 = json.loads((HF / "qwen3_8b.json").read_text(encoding="utf-8"))
    got = _model_of(HF / "qwen3_8b.json", seq=4096)
    assert (got["qk_norm"], got["norm"], got["kv_channels"], got["window"]) == (True, "RMSNorm", qwen3["head_dim"], None)
    assert (got["bias"], got["qkv_bias"]) == (False, False)


def test_qwen2_biases_and_partial_rotary(tmp_path):
    """A Qwen2 (Llama-3-8B's shape, model_type qwen2): q, k, v biases and no other, --disable-bias-linear with
    --add-qkv-bias; a Llama rotating half of each head (partial_rotary_factor 0.5): --rotary-percent 0.5."""
    base = json.loads((HF / "llama3_8b.json").read_text(encoding="utf-8"))
    (tmp_path / "qwen2").mkdir()
    (tmp_path / "qwen2" / "config.json").write_text(json.dumps({**base, "model_type": "qwen2"}))
    got = _model_of(tmp_path / "qwen2" / "config.json", seq=4096)
    assert (got["bias"], got["qkv_bias"], got["rotary_percent"]) == (False, True, 1.0)
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "config.json").write_text(json.dumps({**base, "partial_rotary_factor": 0.5}))
    got = _model_of(tmp_path / "half" / "config.json", seq=4096)
    assert (got["rotary_percent"], got["qkv_bias"]) == (0.5, False)


def test_stated_gpt_dropout_other_than_megatrons_default():
    """A GPT with attention dropout off: Megatron-LM's default 0.1 would run the dropout archsim did not price."""
    from dataclasses import replace

    c = replace(load_transformer(GPT3_1_3B), attention_dropout=0.0)
    got = model(parsed(megatron_model_args(c)))
    assert (got["attention_dropout"], got["hidden_dropout"]) == (0.0, 0.1)


def test_models_megatron_lm_cannot_build_get_no_arguments(tmp_path):
    """The one rule: empty where Megatron-LM's pretrain_gpt cannot build the model priced — Gemma's GeGLU and
    √hidden-scaled embeddings, OPT and BERT (families it does not train), a GPT with ReLU (no flag), and a learned
    position table shorter than the sequence (Megatron asserts max_position_embeddings ≥ seq_length)."""
    assert megatron_model_args(load_transformer(HF / "gemma_7b.json", seq=4096)) == ""
    gpt2 = json.loads((ROOT / "configs" / "transformers" / "gpt2.json").read_text(encoding="utf-8"))
    (tmp_path / "relu").mkdir()
    (tmp_path / "relu" / "config.json").write_text(json.dumps({**gpt2, "activation_function": "relu"}))
    assert megatron_model_args(load_transformer(tmp_path / "relu" / "config.json")) == ""
    (tmp_path / "opt.toml").write_text('[transformer]\nfamily = "opt"\nlayers = 2\nhidden = 64\nheads = 2\n'
                                       'vocab = 100\nseq = 32\n')
    (tmp_path / "bert.toml").write_text('[transformer]\nfamily = "bert"\nlayers = 2\nhidden = 64\nheads = 2\n'
                                        'vocab = 100\nseq = 32\n')
    assert megatron_model_args(load_transformer(tmp_path / "opt.toml")) == ""
    assert megatron_model_args(load_transformer(tmp_path / "bert.toml")) == ""
    t = tomllib.loads(GPT3_1_3B.read_text(encoding="utf-8"))["transformer"]
    assert megatron_model_args(load_transformer(GPT3_1_3B, seq=2 * t["seq"])) == ""  # the table has t["seq"] rows
    assert megatron_model_args(load_transformer(GPT3_1_3B, seq=t["seq"] // 2))  # a shorter sequence runs


def test_uneven_interleaved_layout_flags_parse():
    """A split Megatron-LM runs (first and last stages' counts, the rest even) and an interleaved one: the layout's
    flags beside the model's, all parsed; 24 layers over PP 2 × 2 chunks are 6 per virtual stage (by hand)."""
    c = load_transformer(GPT3_1_3B)
    uneven = Candidate(1, 4, 2, 1, "full", "1f1b", 1, False, stage_layers=(5, 7, 7, 5))
    ns = parsed(megatron_args(uneven, 16, c, "bf16"))
    assert (ns.decoder_first_pipeline_num_layers, ns.decoder_last_pipeline_num_layers, ns.num_layers) == (5, 5, 24)
    assert (ns.recompute_granularity, ns.recompute_method, ns.recompute_num_layers) == ("full", "uniform", 1)
    interleaved = Candidate(2, 2, 2, 1, "selective", "interleaved-1f1b", 2, True, attention="flash")
    ns = parsed(megatron_args(interleaved, 16, c, "fp16"))
    assert (ns.num_layers_per_virtual_pipeline_stage, ns.sequence_parallel, ns.use_flash_attn) == (6, True, True)
    assert megatron_args(interleaved, 16, load_transformer(HF / "gemma_7b.json", seq=4096), "fp16") == ""
