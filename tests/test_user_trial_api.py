"""A new user's path through the Python API with their own Mistral-style config (grouped-query
attention, SwiGLU, RoPE) and cluster: every keyword is checked as the command's flag checks it, and
what the functions return can be copied and pickled as any result."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
import warnings

import pytest
from test_docs import ROOT

import archsim
from archsim.cli import main

CLUSTER = str(ROOT / "configs" / "clusters" / "h100_2_servers.toml")
ONE_GPU = str(ROOT / "configs" / "clusters" / "h100_1gpu.toml")  # a one-GPU layout fills it: no layout note
MISTRAL_LIKE = {  # a small Mistral: 4 query heads per kv head, SwiGLU's intermediate_size, untied
    "architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 512,
    "intermediate_size": 1792, "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
    "vocab_size": 32000, "max_position_embeddings": 4096, "rope_theta": 1000000.0, "hidden_act": "silu",
    "rms_norm_eps": 1e-05, "tie_word_embeddings": False, "sliding_window": None, "torch_dtype": "bfloat16",
}


@pytest.fixture
def model(tmp_path) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(MISTRAL_LIKE), encoding="utf-8")
    return str(path)


# keyword → (a value archsim search's flag refuses, that flag's argv)
SEARCH_REFUSED = {
    "objective": ("speed", ["--objective", "speed"]),
    "balance": ("uneven", ["--balance", "uneven"]),
    "placement": ("random", ["--placement", "random"]),
    "top": (0, ["--top", "0"]),
    "max_micro_batch": (0, ["--max-micro-batch", "0"]),
    "gpus": (0, ["--gpus", "0"]),
    "chunks": (0, ["--schedule", "interleaved-1f1b", "--chunks", "0"]),
    "refine": (-1, ["--refine", "-1"]),
    "max_ops": (0, ["--max-ops", "0"]),
    "schedule": ("zb", ["--schedule", "zb"]),
}


@pytest.mark.parametrize("keyword", sorted(SEARCH_REFUSED))
def test_search_refuses_what_its_flag_refuses(model, keyword, capsys):
    """``archsim search`` refuses each value at its flag (exit 2); ``archsim.search`` raised a KeyError,
    ZeroDivisionError or ValueError, or returned no rows, or ran on as if the value were valid."""
    value, argv = SEARCH_REFUSED[keyword]
    assert main(["search", model, "--cluster", CLUSTER, "--global-batch", "16", *argv]) == 2
    assert capsys.readouterr().out == ""
    keywords = {"schedule": "interleaved-1f1b"} if keyword == "chunks" else {}
    keywords[keyword] = value
    with pytest.raises(archsim.InputError) as refused:
        archsim.search(model, cluster=CLUSTER, global_batch=16, **keywords)
    assert refused.value.where.field == keyword.replace("_", "-")  # the flag's spelling, as the CLI's line


@pytest.mark.parametrize("keyword", ["top", "max_micro_batch"])
def test_search_takes_an_integer_as_its_flag_takes_it(model, keyword):
    """A count given as the flag's text (``top="2"``) is the integer, as ``--top 2`` is: it raised a
    TypeError comparing it with ints."""
    found = archsim.search(model, cluster=CLUSTER, global_batch=16, schedule="1f1b", refine=0,
                           recompute="full", sequence_parallel="off", **{keyword: "2"})
    assert 1 <= len(found.rows) <= (2 if keyword == "top" else 10)


def test_a_train_result_is_copied_and_pickled_as_any_result(model):
    """A notebook deep-copies results, sends them to worker processes (pickle) and turns them into dicts
    (``dataclasses.asdict``): each raised "StageOrder is immutable; cannot set '_columns'"."""
    result, rates = archsim.train(model, cluster=CLUSTER, tp=2, pp=2, dp=2, global_batch=16, micro_batch=2)
    for again in (copy.deepcopy(result), pickle.loads(pickle.dumps(result))):
        assert again.iteration_seconds == result.iteration_seconds
        assert again.memory == result.memory and again.breakdown == result.breakdown
        assert again.run.order == result.run.order
        assert again.run.order.columns.kind.tolist() == result.run.order.columns.kind.tolist()
    assert dataclasses.asdict(result)["iteration_seconds"] == result.iteration_seconds
    assert pickle.loads(pickle.dumps(rates)) == rates


RUNS = ("tp,pp,dp,micro_batch,global_batch,recompute,measured_seconds\n"
        "2,2,2,2,16,selective,0.05\n"
        "2,1,4,1,16,full,0.04\n")  # TP 2: Megatron-LM splits the 2 KV heads over TP


@pytest.mark.parametrize("attention", ["flash", "standard"])
def test_runs_from_python_are_the_rows_archsim_train_runs_prints(model, tmp_path, capsys, attention):
    """``archsim train MODEL --runs RUNS.csv`` from Python: docs/api.md sent the user to
    ``predict_runs``, whose rows run on the library's default attention (Megatron's standard core), not
    the command's (FlashAttention): the same file was predicted 2.5 times slower there on a Mistral-7B."""
    runs = tmp_path / "runs.csv"
    runs.write_text(RUNS, encoding="utf-8")
    assert main(["train", model, "--cluster", CLUSTER, "--runs", str(runs), "--seq", "2048",
                 "--attention", attention, "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    keywords = {} if attention == "flash" else {"attention": attention}
    rows = archsim.train_runs(model, runs=str(runs), cluster=CLUSTER, seq=2048, **keywords)
    assert [r["predicted_seconds"] for r in rows] == [r["predicted_seconds"] for r in printed["rows"]]
    assert [r["error"] for r in rows] == [r["error"] for r in printed["rows"]]
    assert {r["energy_source"] for r in rows} == {printed["meta"]["energy_source"]}
    assert json.loads(json.dumps(rows)) == rows


def test_runs_from_python_refuse_what_the_command_refuses(model, tmp_path):
    runs = tmp_path / "runs.csv"
    runs.write_text(RUNS.replace("2,1,4,1,16,full", "2,1,4,1,16,all"), encoding="utf-8")
    with pytest.raises(archsim.InputError) as refused:
        archsim.train_runs(model, runs=str(runs), cluster=CLUSTER)
    assert (refused.value.where.line, refused.value.where.field) == (3, "recompute")
    for keyword, value in (("attention", "fast"), ("schedule", "zb"), ("max_ops", 0)):
        with pytest.raises(archsim.InputError) as refused:
            archsim.train_runs(model, runs=str(runs), cluster=CLUSTER, **{keyword: value})
        assert refused.value.where.field == keyword.replace("_", "-")  # the flag's spelling


@pytest.mark.parametrize("value", ["false", "no", 0, 1, None])
def test_sequence_parallel_is_true_or_false(model, value):
    """``--sequence-parallel`` is a switch; the keyword took any value by its truth, so the text "false"
    (read from a user's YAML or CSV) ran the iteration with sequence parallelism on."""
    with pytest.raises(archsim.InputError) as refused:
        archsim.train(model, cluster=CLUSTER, tp=2, dp=2, global_batch=8, sequence_parallel=value)
    assert refused.value.where.field == "sequence-parallel"


def _activations(tmp_path, recompute: str, attention: str, sequence_parallel: bool = False, **fields) -> float:
    """Activation bytes on the one GPU of a TP-2 rank holding all layers, one micro-batch in flight."""
    path = tmp_path / f"config_{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps({**MISTRAL_LIKE, **fields}), encoding="utf-8")
    result, _ = archsim.train(str(path), cluster=CLUSTER, tp=2, global_batch=2, micro_batch=2, seq=1024,
                              recompute=recompute, attention=attention, sequence_parallel=sequence_parallel)
    return result.memory[0].activations


KEPT = [("none", "standard", False), ("none", "standard", True), ("selective", "standard", False),
        ("selective", "flash", True), ("none", "flash", False)]


@pytest.mark.parametrize(("recompute", "attention", "sp"), KEPT)
def test_activation_memory_keeps_the_grouped_k_and_v(tmp_path, recompute, attention, sp):
    """Each layer keeps K and V for the scores' and the context's backward: with 2 KV heads for 8 query
    heads they are a quarter of the width they are with 8 (fp16, 2 bytes an element; TP 2 splits them).
    The memory was Korthikanti et al.'s GPT formula, 6·s·b·h/t for Q, K and V whatever the KV heads. Grouped,
    FlashAttention's backward also writes dK and dV per query head (flash_api.cpp ``mha_bwd``'s ``dk_expanded``
    and ``dv_expanded``, s × b × 8/t heads × head dim 64 each, 2 bytes) while one layer's backward runs."""
    s, b, t, h, layers = 1024, 2, 2, MISTRAL_LIKE["hidden_size"], MISTRAL_LIKE["num_hidden_layers"]
    full = _activations(tmp_path, recompute, attention, sp, num_key_value_heads=8)
    grouped = _activations(tmp_path, recompute, attention, sp, num_key_value_heads=2)
    k_and_v_saved = 2 * 2 * s * b * (h // t - h // 4 // t)  # K and V, each h/t wide before, h/4/t after
    expanded = 2 * 2 * s * b * 8 // t * 64 if attention == "flash" else 0
    assert full - grouped == layers * k_and_v_saved - expanded


@pytest.mark.parametrize(("recompute", "attention", "sp"), KEPT)
def test_activation_memory_keeps_the_swiglu_width(tmp_path, recompute, attention, sp):
    """SwiGLU keeps three ffn-wide tensors a token (the gate's and the up projection's outputs for the
    product's backward, and the product, the down projection's input): each ffn column a TP rank holds
    adds 3 × 2 bytes a token. The memory was 16·s·b·h/t for the MLP, a GELU MLP of 4·h, whatever ffn."""
    s, b, t, layers = 1024, 2, 2, MISTRAL_LIKE["num_hidden_layers"]
    wide = _activations(tmp_path, recompute, attention, sp, intermediate_size=1792)
    narrow = _activations(tmp_path, recompute, attention, sp, intermediate_size=1024)
    assert wide - narrow == layers * 3 * 2 * s * b * (1792 - 1024) // t


def test_gpt_activation_memory_is_korthikanti_et_al_s():
    """A GPT layer (GELU MLP of 4·h, as many KV heads as heads) keeps Korthikanti et al.'s
    s·b·h·(10 + 24/t + 5·a·s/(h·t)) bytes (Table 2), with sequence parallelism s·b·h/t·(34 + 5·a·s/h)."""
    from archsim.training.layer_activations import layer_activation_bytes
    from archsim.workload.model_files import load_transformer

    gpt = load_transformer(str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json"))
    s, h, a, b, t = gpt.seq, gpt.hidden, gpt.heads, 2, 4
    assert gpt.ffn == 4 * h and gpt.kv_heads == a and gpt.drops_hidden and gpt.drops_attention
    assert layer_activation_bytes(gpt, b, t, "none", False) == s * b * h * (10 + 24 / t + 5 * a * s / (h * t))
    assert layer_activation_bytes(gpt, b, t, "none", True) == s * b * h / t * (34 + 5 * a * s / h)
    assert layer_activation_bytes(gpt, b, t, "selective", False) == s * b * h * (10 + 24 / t)


def test_train_warns_as_the_command_does_when_memory_does_not_fit(model, capsys):
    """``archsim train`` prints "warning: does not fit: …" on stderr; ``archsim.train`` said nothing, and a
    notebook showed an iteration time for a layout that cannot run. The same line is a warning now."""
    too_big = {**MISTRAL_LIKE, "hidden_size": 8192, "num_attention_heads": 64, "num_key_value_heads": 8,
               "intermediate_size": 28672, "num_hidden_layers": 16}  # 14 B parameters: 224 GB of states
    path = model.replace("config.json", "big.json")
    with open(path, "w", encoding="utf-8") as file:
        json.dump(too_big, file)
    # --dtype given: the config's bfloat16 adds no note, the memory warning is the only line
    assert main(["train", path, "--cluster", ONE_GPU, "--global-batch", "1", "--seq", "512", "--dtype", "fp16"]) == 0
    printed = capsys.readouterr().err.strip()
    assert printed.startswith("archsim train: warning: does not fit: pipeline rank 0 needs")
    with pytest.warns(UserWarning) as caught:
        result, _ = archsim.train(path, cluster=ONE_GPU, global_batch=1, seq=512, dtype="fp16")
    assert result.fits == (False,)
    assert [str(w.message) for w in caught] == [printed.removeprefix("archsim train: warning: ")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert archsim.train(model, cluster=ONE_GPU, global_batch=1, seq=512, dtype="fp16")[0].fits == (True,)


@pytest.mark.parametrize(("keyword", "value", "field"), [
    ("max_ops", "many", "max-ops"),            # TypeError: '>' between int and str
    ("max_ops", 0, "max-ops"),                 # the flag refuses 0 at once; the job-size check took it as a limit
    ("stage_layers", ["two", "2"], "stage-layers"),  # TypeError: int + str
    ("cluster", None, "cluster"),              # TypeError from open()
    ("model", 7, "model"),                     # TypeError from Path()
])
def test_train_refuses_a_keyword_of_the_wrong_kind_in_one_line(model, keyword, value, field):
    keywords = {"model": model, "cluster": CLUSTER, "pp": 2, "global_batch": 4, keyword: value}
    with pytest.raises(archsim.InputError) as refused:
        archsim.train(keywords.pop("model"), **keywords)
    assert refused.value.where.field == field
