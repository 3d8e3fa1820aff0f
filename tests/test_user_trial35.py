"""User trial 35: an LLM engineer's Llama-3-8B-like and Mistral-like configs on 4 × 8 H100 (issues #38, #40).

Each test here failed on the code before its fix (said in its docstring)."""

import json

import pytest

from archsim.cli import main
from archsim.devices.catalog import GPUS
from archsim.devices.gpu_lookup import ALIASES, gpu
from archsim.errors import InputError

CLUSTER = """[cluster]
name = "trial35"

[[servers]]
count = 4
gpus = 8
gpu = "{gpu}"

[network]
nics_per_server = 8
nic_gbps = 400
"""

LLAMA = {"model_type": "llama", "hidden_size": 1024, "intermediate_size": 3584, "num_hidden_layers": 4,
         "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 32000,
         "max_position_embeddings": 1024, "hidden_act": "silu", "tie_word_embeddings": False}


def _train(tmp_path, capsys, gpu_name):
    (tmp_path / "cluster.toml").write_text(CLUSTER.format(gpu=gpu_name), encoding="utf-8")
    (tmp_path / "config.json").write_text(json.dumps(LLAMA), encoding="utf-8")
    code = main(["train", str(tmp_path / "config.json"), "--cluster", str(tmp_path / "cluster.toml"), "--tp", "2",
                 "--dp", "4", "--global-batch", "8", "--micro-batch", "2", "--seq", "1024", "--format", "json"])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("typo", ["a100-40", "v100-16", "h100x", "h200-nvl", "a100-80-pcie-x"])
def test_a_gpu_name_with_a_word_no_gpu_name_has_is_refused(typo, tmp_path, capsys):
    """Failed before: the cluster's `gpu` matched a catalog part by substring, so "a100-40" (the 40 GB part
    meant) trained on the 80 GB A100, "v100-16" on the 32 GB V100 and "h200-nvl" (the NVL card) on the
    H200 SXM, with no word said; "h100x" ran as the H100 SXM. Now one line naming the word, exit 2."""
    code, out, err = _train(tmp_path, capsys, typo)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("archsim train: error:") and repr(typo) in lines[0]
    assert "servers[1].gpu" in lines[0] and "h100-80gb-sxm" in lines[0]  # where, and what to write
    with pytest.raises(InputError, match="unknown GPU"):
        gpu(typo)


# CUDA's names of the catalog's boards (torch.cuda.get_device_name, nvidia-smi), old drivers' too
CUDA_NAMES = {"NVIDIA H100 80GB HBM3": "h100-80gb-sxm", "NVIDIA_H100_80GB_HBM3": "h100-80gb-sxm",
              "NVIDIA H100 PCIe": "h100-80gb-pcie", "NVIDIA H200": "h200-141gb",
              "NVIDIA A100-SXM4-80GB": "a100-80gb", "A100-SXM4-40GB": "a100-40gb",
              "NVIDIA A100-PCIE-40GB": "a100-40gb-pcie", "NVIDIA A100 80GB PCIe": "a100-80gb-pcie",
              "Tesla V100-SXM2-32GB": "v100-32gb", "Tesla V100-PCIE-32GB": "v100-pcie-32gb", "Tesla_T4": "t4-16gb",
              "NVIDIA L4": "l4-24gb", "Tesla P4": "p4-8gb", "Tesla P100-PCIE-16GB": "p100-pcie-16gb",
              "NVIDIA GeForce GTX 1080 Ti": "gtx-1080-ti-11gb", "GeForce GTX 1080 Ti": "gtx-1080-ti-11gb",
              "h100-80gb-sxm5": "h100-80gb-sxm", "H100-SXM-80GB": "h100-80gb-sxm"}


@pytest.mark.parametrize("name", sorted(CUDA_NAMES))
def test_cuda_names_still_name_their_board(name):
    """Whole names of a board, as CUDA reports them or spelled out, still read as that board."""
    assert gpu(name) is GPUS[CUDA_NAMES[name]]


def test_every_catalog_name_alias_and_printed_name_reads_back():
    """What outputs print (the board's full name) and what the docs list (keys, aliases) read back."""
    for key, device in GPUS.items():
        assert gpu(key) is device and gpu(device.name) is device and gpu(key.upper()) is device
    for alias, key in ALIASES.items():
        assert gpu(alias) is GPUS[key]


@pytest.mark.parametrize(("pp", "global_batch"), [(1, 8), (2, 2)])
def test_interleave_given_alone_is_named_in_its_refusal(pp, global_batch, tmp_path, capsys):
    """Failed before: ``--interleave 2`` on plain 1F1B (the default schedule) with one pipeline stage, or with
    fewer micro-batches than PP (until 2026-12-05: no multiple of PP), was refused as ``field 'schedule'`` about
    ``interleaved-1f1b``, a schedule the user never named, and the flag they gave went unmentioned. Now the refusal
    names --interleave 2."""
    (tmp_path / "cluster.toml").write_text(CLUSTER.format(gpu="h100"), encoding="utf-8")
    (tmp_path / "config.json").write_text(json.dumps(LLAMA), encoding="utf-8")
    code = main(["train", str(tmp_path / "config.json"), "--cluster", str(tmp_path / "cluster.toml"), "--tp", "2",
                 "--pp", str(pp), "--dp", "2", "--global-batch", str(global_batch), "--micro-batch", "1",
                 "--seq", "1024", "--interleave", "2"])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1, err
    assert "argument --interleave" in lines[0] and "--interleave 2" in lines[0], lines[0]


def _title(page):
    text = page.read_text(encoding="utf-8")
    return text[text.index("<title>") + 7:text.index("</title>")]


def test_train_draws_the_gantt_search_draws_for_its_row(tmp_path, capsys):
    """Failed before: ``archsim search --gantt`` titled its best row "…: TP2 PP1 DP4, zb-v"-like (the
    schedule named), and the row's own ``command`` run with ``--gantt`` drew the same timeline titled without
    the schedule, so the two pages of one configuration said different things. Now one title, schedule and
    chunks named, whichever command drew it."""
    (tmp_path / "cluster.toml").write_text(CLUSTER.format(gpu="h100"), encoding="utf-8")
    (tmp_path / "config.json").write_text(json.dumps(LLAMA), encoding="utf-8")
    assert main(["search", str(tmp_path / "config.json"), "--cluster", str(tmp_path / "cluster.toml"), "--gpus", "8",
                 "--global-batch", "16", "--seq", "1024", "--top", "1", "--schedule", "interleaved-1f1b",
                 "--chunks", "2", "--format", "json", "--gantt", str(tmp_path / "search.html")]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["interleave"] == 2
    argv = row["command"].split()[1:] + ["--gantt", str(tmp_path / "train.html")]
    assert main(argv) == 0
    capsys.readouterr()
    assert _title(tmp_path / "train.html") == _title(tmp_path / "search.html")
    assert "interleaved-1f1b" in _title(tmp_path / "train.html") and "2 chunks" in _title(tmp_path / "train.html")


def test_a_sweep_row_that_cannot_run_names_the_schedule_the_others_ran(tmp_path, capsys):
    """Failed before: in ``--sweep micro_batch=1,3`` at ``--interleave 2`` the rows that ran said
    ``interleaved-1f1b`` (the order plain 1F1B becomes with two chunks) and the row refused for its batch said
    ``1f1b``, so one sweep named two schedules for one setting. Now every row names the order it asks for."""
    (tmp_path / "cluster.toml").write_text(CLUSTER.format(gpu="h100"), encoding="utf-8")
    (tmp_path / "config.json").write_text(json.dumps(LLAMA), encoding="utf-8")
    assert main(["train", str(tmp_path / "config.json"), "--cluster", str(tmp_path / "cluster.toml"), "--tp", "2",
                 "--pp", "2", "--dp", "2", "--global-batch", "8", "--seq", "1024", "--interleave", "2",
                 "--sweep", "micro_batch=1,3", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [row["micro_batch"] for row in rows] == [1, 3] and rows[0]["error"] == "" and rows[1]["error"]
    assert [row["schedule"] for row in rows] == ["interleaved-1f1b", "interleaved-1f1b"]


@pytest.mark.parametrize(("pp", "v"), [(2, 4), (2, 2), (4, 2)])
def test_interleaved_first_rank_holds_korthikanti_factor_more_activations(pp, v, tmp_path):
    """Failed before: interleaved 1F1B's first rank held exactly 1F1B's activations whatever the chunks
    (Llama-3-8B, TP1 PP2 DP16, no recompute: 34.03 GiB at --interleave 1, 2 and 4), because its peak count of
    chunks in flight, (v − 1)p + 2(p − 1) + 1, was floored to a multiple of v. Narayanan et al. 2021 and
    Korthikanti et al. 2022 (§4.2.3): the first stage of the interleaved schedule holds
    1 + (p − 1)/(p·v) times 1F1B's activations — 9 chunks of 4 layers against 8 at p = 2, v = 4."""
    import archsim

    layers = 8
    config = dict(LLAMA, num_hidden_layers=layers)
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (tmp_path / "cluster.toml").write_text(CLUSTER.format(gpu="h100"), encoding="utf-8")
    common = {"cluster": str(tmp_path / "cluster.toml"), "pp": pp, "global_batch": 4 * pp, "micro_batch": 1,
              "seq": 1024, "recompute": "none"}
    with pytest.warns(UserWarning):  # the layout uses fewer GPUs than the cluster has
        plain, _ = archsim.train(str(tmp_path / "config.json"), **common)
    with pytest.warns(UserWarning):
        interleaved, _ = archsim.train(str(tmp_path / "config.json"), interleave=v, **common)
    # beside what it holds, once a rank: one layer's FlashAttention backward buffers (flash_api.cpp mha_bwd, since
    # 2026-12-03): fp32 softmax_d and dq_accum, 1,024 rows × 8 heads (× head dim 128), and, with 2 KV heads, the
    # training dtype's (fp16) dk_expanded and dv_expanded, 1,024 × 8 heads × 128 each
    buffers = 4 * (1024 * 8 + 1024 * 8 * 128) + 2 * 2 * 1024 * 8 * 128
    ratio = (interleaved.memory[0].activations - buffers) / (plain.memory[0].activations - buffers)
    assert ratio == pytest.approx(1 + (pp - 1) / (pp * v), rel=1e-12)
    found = archsim.search(str(tmp_path / "config.json"), cluster=str(tmp_path / "cluster.toml"), gpus=[pp],
                           global_batch=4 * pp, seq=1024, recompute=["none"], schedule=["interleaved-1f1b"],
                           chunks=[v], max_micro_batch=1, sequence_parallel="off", top=50, progress=False)
    row = next(r for r in found.rows if r["pp"] == pp and r["interleave"] == v)
    assert row["peak_memory_gib"] == pytest.approx(interleaved.peak_memory_gib, rel=1e-12)  # search's closed form


def test_plan_pipedream_shows_its_optimizer_under_way(capsys):
    """Failed before: ``archsim plan --method pipedream`` drew no progress while PipeDream's optimizer ran (10–20 s
    silent on a 32-layer Llama over 32 GPUs), where ``--method spp`` draws its steps. Bars are drawn as on a
    terminal here (``progress.shown(True)``)."""
    from archsim import progress

    with progress.shown(True):
        code = main(["plan", "layerpipe_sample", "--cluster", "configs/clusters/testbed_v100.toml", "--microbatches", "4",
                     "--method", "pipedream", "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0 and json.loads(out)["meta"]["method"] == "pipedream"
    assert "PipeDream" in err and "optimize" in err, err


def test_embedding_dropout_mask_is_split_by_sequence_parallelism(tmp_path):
    """Failed before: under sequence parallelism the first rank kept the embedding dropout's 1-byte mask of the
    whole s·b·h; Megatron-LM scatters the embeddings to the sequence-parallel region before that dropout
    (``LanguageModelEmbedding.forward``), so each TP rank keeps s·b·h/t (Korthikanti et al. 2022, §4.3). Hand count,
    GPT-3 1.3B (s 2,048, h 2,048, a 16, 24 layers, vocabulary 50,257 padded to 50,688 at TP 4), TP 4, SP, standard
    attention, no recompute, one micro-batch: 24 layers × sbh(34/t + 5as/(ht)) = 28.5 sbh each, the LM head's
    6·s·b·V/t logits bytes, and the mask's sbh/t."""
    import archsim

    (tmp_path / "cluster.toml").write_text(CLUSTER.format(gpu="h100"), encoding="utf-8")
    with pytest.warns(UserWarning):  # the layout uses 4 of the cluster's 32 GPUs
        result, _ = archsim.train("configs/transformers/gpt3_1.3b.toml", cluster=str(tmp_path / "cluster.toml"),
                                  tp=4, global_batch=1, micro_batch=1, recompute="none", sequence_parallel=True,
                                  attention="standard")
    s, h, a, t, layers, padded_vocab = 2048, 2048, 16, 4, 24, 50688
    sbh = s * h
    expected = layers * sbh * (34 / t + 5 * a * s / (h * t)) + 6 * s * padded_vocab / t + sbh / t
    assert result.memory[0].activations == pytest.approx(expected, rel=1e-12)
