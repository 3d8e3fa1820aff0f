"""What a trainer of MoE and long-context models ran into (Mixtral-, DeepSeek-V3-like models, Llama 3 at 128k with
context parallelism, on H100 servers): each test failed before its fix."""

from __future__ import annotations

import json

import pytest

from archsim.errors import InputError
from archsim.workload.model_files import load_transformer

# A tiny DeepSeek-V3 written out in full: 4 layers, the first dense, then MoE
TINY = {"model_type": "deepseek_v3", "num_hidden_layers": 4, "first_k_dense_replace": 1, "moe_layer_freq": 1,
        "hidden_size": 64, "intermediate_size": 96, "moe_intermediate_size": 16, "num_attention_heads": 4,
        "num_key_value_heads": 4, "n_routed_experts": 8, "n_shared_experts": 1, "num_experts_per_tok": 2,
        "q_lora_rank": 32, "kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 8,
        "hidden_act": "silu", "vocab_size": 256, "max_position_embeddings": 64, "tie_word_embeddings": False}


def _write(tmp_path, config: dict):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


# transformers' defaults, read off configuration_deepseek_v2.py (DeepseekV2Config: n_routed_experts 64, q_lora_rank
# 1536, n_shared_experts 2, first_k_dense_replace 0) and configuration_deepseek_v3.py (DeepseekV3Config: 256, 1536,
# 1, 3); archsim read each absent key as none
@pytest.mark.parametrize("model_type, key, theirs", [
    ("deepseek_v3", "n_routed_experts", "256"), ("deepseek_v3", "q_lora_rank", "1536"),
    ("deepseek_v3", "n_shared_experts", "1"), ("deepseek_v3", "first_k_dense_replace", "3"),
    ("deepseek_v2", "n_routed_experts", "64"), ("deepseek_v2", "q_lora_rank", "1536"),
    ("deepseek_v2", "n_shared_experts", "2")])
def test_an_absent_deepseek_key_that_transformers_reads_as_its_default_is_refused(tmp_path, model_type, key, theirs):
    """A hand-written DeepSeek config.json without n_routed_experts was priced as a dense model (and --ep refused as
    "dense" while naming the file's own model_type as one whose experts are read), without q_lora_rank as no query
    latent, without n_shared_experts as none: transformers builds another model from the same file."""
    config = {k: v for k, v in TINY.items() if k != key} | {"model_type": model_type}
    with pytest.raises(InputError) as caught:
        load_transformer(_write(tmp_path, config))
    text = str(caught.value)
    assert "\n" not in text and key in text and f"absent as {theirs}" in text, text


def test_deepseek_v2_reads_an_absent_first_k_dense_replace_as_transformers_does(tmp_path):
    """DeepseekV2Config's default is 0, archsim's too: every layer a mixture of experts, no refusal."""
    c = load_transformer(_write(tmp_path, {k: v for k, v in TINY.items() if k != "first_k_dense_replace"}
                                | {"model_type": "deepseek_v2"}))
    assert c.moe and c.dense_layers == ()


def test_a_misspelt_n_routed_experts_is_named(tmp_path):
    """The typo `n_routed_expert` read as a dense model; now the refusal names the key the file has."""
    config = {("n_routed_expert" if k == "n_routed_experts" else k): v for k, v in TINY.items()}
    with pytest.raises(InputError, match="the file has 'n_routed_expert', misspelt"):
        load_transformer(_write(tmp_path, config))


def test_a_null_n_routed_experts_is_a_dense_model_needing_no_expert_keys(tmp_path):
    """HF builds every layer dense where n_routed_experts is null: the shared experts and the dense first layers size
    nothing then, so a config that leaves them out is not refused; its parameters by hand (h 64, heads 4, latents
    32/16, head dims 8 + 4 and 8, SwiGLU 96, vocabulary 256, 4 layers): embedding and head 2·V·h, final norm h, per
    layer MLA, two norms and the MLP."""
    config = {k: v for k, v in TINY.items() if k not in ("n_shared_experts", "first_k_dense_replace")}
    c = load_transformer(_write(tmp_path, config | {"n_routed_experts": None}))
    h, heads, dq, dc, n, r, v, f, vocab = 64, 4, 32, 16, 8, 4, 8, 96, 256
    mla = h * dq + dq + dq * heads * (n + r) + h * (dc + r) + dc + dc * heads * (n + v) + heads * v * h
    assert not c.moe and c.parameter_count == 2 * vocab * h + h + 4 * (mla + 2 * h + 3 * h * f)


def test_search_help_states_train_s_ep_rule_under_context_parallelism(capsys):
    """`search --help` said a row's EP divides the experts and DP, but search keeps train's rule (docs/training.md,
    "Context parallelism beside EP": at ETP = TP, EP divides CP × DP): `--cp 2 --ep 8` on 32 GPUs lists TP 1, CP 2,
    PP 4, DP 4, an EP that divides no DP of 4."""
    from archsim.cli import main

    with pytest.raises(SystemExit):
        main(["search", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    ep = text[text.index("--ep EP [EP ...]"):text.index("--etp N|tp [N|tp ...] the")]
    assert "CP × DP" in ep and "divides the experts and DP" not in ep, ep


@pytest.mark.long
def test_the_mixtral_modelzoo_figures_docs_quote_are_what_the_quoted_command_prints(tmp_path):
    """docs/training.md's Mixtral-8x7B check quoted 2.40 s and 566 TFLOP/s per GPU for its command, which printed
    2.408 s (2.41) and 564: the command is read from the page and run, and the sentence after it must state its
    figures at the precision it writes them (s to 0.01, TFLOP/s to 1, MFU to 0.01, GiB to 0.1)."""
    import re
    import shlex
    from pathlib import Path

    from archsim.cli import main

    page = (Path(__file__).resolve().parents[1] / "docs" / "training.md").read_text()
    start = page.index("    archsim train tests/data/hf_configs/mixtral_8x7b.json")
    block, rest = page[start:].split("\n\n", 1)
    words = shlex.split(block.replace("\\\n", " "))
    found = re.match(r"predicts ([\d.]+) s an iteration, \*\*(\d+) TFLOP/s per GPU\*\* \(MFU ([\d.]+)\), peak memory "
                     r"([\d.]+) GiB", rest)
    assert found, rest[:200]
    out = tmp_path / "run.json"
    assert main([*words[1:], "--format", "json", "--out", str(out)]) == 0
    meta = json.loads(out.read_text())["meta"]
    stated = tuple(float(x) for x in found.groups())
    assert stated == (round(meta["iteration_seconds"], 2), round(meta["tflops_per_gpu"]), round(meta["mfu"], 2),
                      round(meta["peak_memory_gib"], 1))


def _tiny_mixed(tmp_path, **change):
    """TINY with its first two of four layers dense: PP 2's even split puts them alone on pipeline rank 0."""
    return load_transformer(_write(tmp_path, TINY | {"first_k_dense_replace": 2} | change))


@pytest.mark.parametrize("keys, rank, said", [
    ({"pp": 2, "ep": 2}, 0, "(1)"),  # rank 0: layers 0, 1 (dense); rank 1: 2, 3 (MoE)
    ({"pp": 2, "ep": 2}, 1, None),  # rank 1 runs the all-to-alls itself
    ({"pp": 2, "ep": 1}, 0, None),  # no all-to-all at EP 1
    ({"pp": 1, "ep": 2}, 0, None),  # one rank holds every layer
])
def test_a_breakdown_of_a_rank_holding_only_dense_layers_is_named(tmp_path, keys, rank, said):
    """DeepSeek-V3 on PP 16, EP 64 printed `ep_communication: 0`: the breakdown is the rank that ends the iteration,
    pipeline rank 0, whose three layers are dense, and nothing said the other ranks' all-to-alls are in its bubble."""
    from archsim.training.layout_notes import breakdown_rank_note
    from archsim.training.parallel import Parallelism

    par = Parallelism(tp=1, dp=2, global_batch=8, micro_batch=1, **keys)
    text = breakdown_rank_note(par, _tiny_mixed(tmp_path), rank)
    if said is None:
        assert text == ""
    else:
        assert f"pipeline rank {rank}'s" in text and "ep_communication is 0" in text and said in text, text


def test_train_warns_it_where_the_breakdown_runs_no_all_to_all(tmp_path):
    """The note's claim checked on the run: the rank that ends a 1F1B iteration is the first (its last backward ends
    last), and its breakdown has no EP seconds though EP 2 runs."""
    from pathlib import Path

    import archsim

    path = _write(tmp_path, TINY | {"first_k_dense_replace": 2})
    cluster = Path(__file__).resolve().parents[1] / "configs" / "clusters" / "h100_2_servers.toml"
    with pytest.warns(UserWarning, match="breakdown is pipeline rank 0's") as caught:
        result, _ = archsim.train(str(path), cluster=cluster, pp=2, dp=2, ep=2, global_batch=8, seq=64)
    assert result.finishing_rank == 0 and result.breakdown["ep_communication"] == 0
    assert sum("breakdown is pipeline rank" in str(w.message) for w in caught) == 1
