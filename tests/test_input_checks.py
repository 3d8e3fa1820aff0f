"""Input that ``train``/``search`` accepted silently and now refuse with one line, nothing written
(issue #40) — and the neighbouring input that stays accepted, so a refusal does not overreach."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import archsim
from archsim.cli import main
from archsim.errors import InputError
from archsim.workload import load_network
from archsim.workload.transformer import load_transformer

ROOT = Path(__file__).resolve().parents[1]
GPT2 = ROOT / "configs" / "transformers" / "gpt2.json"  # n_positions 1024, as the released GPT-2's config
NODE = ROOT / "configs" / "clusters" / "a100_node.toml"

# Hugging Face configs by their documented keys: OPT's and BERT's learned tables hold
# max_position_embeddings positions (OPT's has 2 rows more, an offset, not more positions); Llama's
# and Mistral's max_position_embeddings is rotary's trained length, no table: no hard limit.
OPT = {"model_type": "opt", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
       "vocab_size": 1000, "max_position_embeddings": 2048, "ffn_dim": 1024}
BERT = {"model_type": "bert", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
        "vocab_size": 1000, "max_position_embeddings": 512, "intermediate_size": 1024}
LLAMA = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
         "vocab_size": 1000, "max_position_embeddings": 4096, "intermediate_size": 688}


def _config(tmp_path: Path, name: str, document: dict) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(document))
    return path


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
    path = _config(tmp_path, name, document)
    assert load_transformer(path, seq=limit).seq == limit
    with pytest.raises(InputError, match=str(limit)) as caught:
        load_transformer(path, seq=limit + 1)
    assert caught.value.where.field == "seq"


def test_rotary_positions_and_configs_without_a_limit_take_any_seq(tmp_path):
    llama = _config(tmp_path, "llama", LLAMA)
    assert load_transformer(llama, seq=8192).seq == 8192
    mistral = _config(tmp_path, "mistral", {**LLAMA, "model_type": "mistral"})
    assert load_transformer(mistral, seq=32768).seq == 32768
    # a [transformer] TOML states a sequence length, not a position limit: none is invented
    toml = ROOT / "configs" / "transformers" / "gpt3_1.3b.toml"
    assert load_transformer(toml).seq == 2048 and load_transformer(toml, seq=4096).seq == 4096


def test_a_vtrain_row_names_its_own_gpt_and_sequence():
    """vTrain's rows replace MODEL's shape and sequence (learned positions at the row's sequence)."""
    from archsim.training.parallel import Parallelism
    from archsim.training.runs import RunRow, row_config

    config = row_config(load_transformer(GPT2), RunRow(2, Parallelism(), shape=(1024, 16, 24, 2048)))
    assert config.seq == 2048


# -- --implementation pytorch-eager: plain PyTorch on one GPU (benchmarks/gpu_train_measure.py; NeuSight's fp32 runs)
EAGER = ("--implementation", "pytorch-eager", "--attention", "standard")


@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
@pytest.mark.parametrize("layout", [("--dp", "2"), ("--pp", "2"), ("--tp", "2"), ("--dp", "2", "--pp", "2")])
def test_eager_on_several_gpus_is_refused_in_one_line(tmp_path, capsys, dtype, layout):
    out = tmp_path / "out.csv"
    argv = ["train", str(GPT2), "--cluster", str(NODE), "--global-batch", "8", "--dtype", dtype, *EAGER, *layout,
            "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert "one GPU" in err and "--implementation megatron" in err and "'implementation'" in err
    assert not out.exists()


def test_eager_on_several_gpus_is_refused_by_the_api():
    with pytest.raises(InputError, match="one GPU") as caught:
        archsim.train(GPT2, cluster=NODE, global_batch=8, dp=2, implementation="pytorch-eager", attention="standard")
    assert caught.value.where.field == "implementation"


def test_eager_accumulates_micro_batches_on_one_gpu():
    """One GPU with several micro-batches is what the eager list models: their gradients summed unfused."""
    result, _ = archsim.train(GPT2, cluster=NODE, global_batch=8, micro_batch=2, implementation="pytorch-eager",
                              attention="standard")
    assert result.breakdown["grad_accumulation"] > 0 and result.breakdown["dp_communication"] == 0


# -- train --sweep: one value per axis and point
def test_a_sweep_axis_given_twice_is_refused(tmp_path, capsys):
    """``--sweep tp=1,2 --sweep tp=4`` ran two points, both at TP 4 (the later axis overwrote the earlier)."""
    from archsim.training.sweep import points

    out = tmp_path / "out.csv"
    argv = ["train", str(GPT2), "--cluster", str(NODE), "--global-batch", "8", "--sweep", "tp=1,2",
            "--sweep", "tp=4", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "tp" in err and "'sweep'" in err
    assert not out.exists()
    with pytest.raises(InputError, match="micro_batch"):  # the same axis under its two spellings
        list(points({}, [("micro_batch", (1,)), ("tp", (1, 2)), ("micro_batch", (2,))]))


@pytest.mark.parametrize(("flag", "extra"), [("--stage-layers", ("--pp", "2", "--stage-layers", "4,8")),
                                             ("--balance", ("--pp", "2", "--balance", "planned")),
                                             ("--gantt", ("--gantt", "{tmp}/g.html")),
                                             ("--chrome-trace", ("--chrome-trace", "{tmp}/t.json")),
                                             ("--schedule-csv", ("--schedule-csv", "{tmp}/s.csv"))])
def test_a_sweep_refuses_the_flags_it_does_not_apply(tmp_path, capsys, flag, extra):
    """Its points ran Megatron's even split and wrote no timeline, whatever these flags said."""
    out = tmp_path / "out.csv"
    argv = ["train", str(GPT2), "--cluster", str(NODE), "--global-batch", "8", "--sweep", "tp=1,2",
            *(e.format(tmp=tmp_path) for e in extra), "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and flag in err and "--sweep" in err
    assert list(tmp_path.iterdir()) == []


def test_stage_layers_and_a_planned_balance_together_are_refused(capsys):
    """--balance planned was dropped without a word when --stage-layers gave the split."""
    argv = ["train", str(GPT2), "--cluster", str(NODE), "--global-batch", "8", "--pp", "2", "--stage-layers", "4,8",
            "--balance", "planned"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "--stage-layers" in err and "--balance planned" in err


# -- search: each value of a many-valued flag once
@pytest.mark.parametrize(("flag", "values"), [("--recompute", ("none", "none")), ("--schedule", ("1f1b", "1f1b")),
                                              ("--chunks", ("2", "4", "2")), ("--gpus", ("8", "8"))])
def test_search_refuses_a_repeated_value(capsys, flag, values):
    """A repeated value enumerated its configurations twice: the same row printed twice among the best."""
    argv = ["search", str(GPT2), "--cluster", str(NODE), "--global-batch", "8", "--refine", "0", flag, *values]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and flag in err and "repeat" in err


def test_the_api_search_refuses_a_repeated_value():
    with pytest.raises(InputError, match="repeat") as caught:
        archsim.search(GPT2, cluster=NODE, global_batch=8, gpus=[4, 4], refine=0)
    assert caught.value.where.field == "gpus"


# -- train --runs: a header names each column once, a row holds no cell past the header's
@pytest.mark.parametrize(("body", "where"), [
    ("tp,pp,dp,micro_batch,global_batch,tp\n1,1,1,1,8,2\n", "line 1"),  # the later tp was read, silently
    ("tp,pp,dp,micro_batch,global_batch\n1,1,1,1,8\n1,1,1,1,8,16\n", "line 3")])  # the 16 was dropped
def test_a_runs_file_with_a_column_twice_or_a_cell_too_many_is_refused(tmp_path, capsys, body, where):
    runs = tmp_path / "runs.csv"
    runs.write_text(body)
    out = tmp_path / "out.csv"
    assert main(["train", str(GPT2), "--cluster", str(NODE), "--runs", str(runs), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "runs.csv" in err and where in err
    assert not out.exists()


# -- cluster files: keys train and search would not read
def _cluster(tmp_path: Path, cluster_keys: str) -> Path:
    path = tmp_path / "cluster.toml"
    path.write_text(f'[cluster]\nname = "two"\n{cluster_keys}\n[[servers]]\ncount = 2\ngpus = 8\n'
                    'intra_server_gbps = 4800\ngpu = "a100-80gb"\n')
    return path


@pytest.mark.parametrize("command", ["train", "search"])
def test_gpu_memory_gb_is_refused_where_the_board_sizes_the_gpu(tmp_path, capsys, command):
    """``gpu_memory_gb = 40`` beside 80 GB A100s: train and search planned with 80 GB, without a word."""
    cluster = _cluster(tmp_path, "inter_server_gbps = 200\ngpu_memory_gb = 40")
    assert main([command, str(GPT2), "--cluster", str(cluster), "--global-batch", "16"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "'gpu_memory_gb'" in err and "a100-40gb" in err


def test_a_bandwidth_range_is_refused_where_one_figure_is_used(tmp_path, capsys):
    """``inter_server_gbps = [100, 400]`` (plan draws within it) trained at 100 Gb/s, without a word."""
    cluster = _cluster(tmp_path, "inter_server_gbps = [100, 400]")
    assert main(["train", str(GPT2), "--cluster", str(cluster), "--global-batch", "16", "--dp", "16"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "'inter_server_gbps'" in err and "one" in err


# -- Hugging Face configs: a key that changes the shapes archsim builds
def test_a_head_dim_other_than_hidden_over_heads_is_refused(tmp_path):
    """Mistral-NeMo's config (hidden 5120, 32 heads, head_dim 128, not 160) was built with 160-wide heads."""
    nemo = _config(tmp_path, "nemo", {**LLAMA, "model_type": "mistral", "hidden_size": 5120, "num_attention_heads": 32,
                                      "num_key_value_heads": 8, "head_dim": 128})
    with pytest.raises(InputError, match="128") as caught:
        load_transformer(nemo)
    assert caught.value.where.field == "head_dim"
    same = _config(tmp_path, "llama", {**LLAMA, "head_dim": 64})  # 256 / 4: what archsim builds, accepted
    assert load_transformer(same).head_dim == 64


def test_seq_beside_a_vtrain_runs_file_is_refused(tmp_path, capsys):
    """vTrain's rows name their own sequence length: ``--seq 512`` was dropped for every row, without a word."""
    shown = (ROOT / "tests" / "data" / "e2e" / "vtrain_single_node_shown.csv").read_text().splitlines()
    runs = tmp_path / "vtrain.csv"
    runs.write_text("\n".join(shown[:3]) + "\n")
    argv = ["train", str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json"), "--cluster", str(NODE),
            "--runs", str(runs)]
    assert main([*argv, "--seq", "512"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "--seq" in err and "'seq'" in err
    assert main([*argv, "--format", "json"]) == 0  # without it, each row at its own sequence


# -- train and search agree on which schedule a layout runs (issue #40, "train and search agree")
def _search_reasons(schedule, gpus: int, global_batch: int, chunks=None) -> dict:
    """The reasons ``archsim.search`` counts for ``schedule`` on ``gpus`` GPUs at micro-batch 1, recompute full."""
    extra = {} if chunks is None else {"chunks": chunks}
    return archsim.search(GPT2, cluster=NODE, global_batch=global_batch, gpus=gpus, schedule=schedule,
                          recompute="full", max_micro_batch=1, sequence_parallel="off", **extra).rejected


@pytest.mark.parametrize("flags", [("--interleave", "2"), ("--schedule", "zb-v"), ("--schedule", "gpipe"),
                                   ("--schedule", "interleaved-1f1b", "--interleave", "2"),
                                   ("--schedule", "dualpipev")])
def test_train_refuses_a_pipeline_schedule_on_one_stage_as_search_does(tmp_path, capsys, flags):
    """One stage has no pipeline to schedule: search prunes such rows as ``schedule-needs-pp``; train ran them."""
    out = tmp_path / "out.csv"
    argv = ["train", str(GPT2), "--cluster", str(NODE), "--global-batch", "8", *flags, "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "schedule-needs-pp" in err and "--pp > 1" in err
    assert not out.exists()


def test_the_api_train_refuses_a_pipeline_schedule_on_one_stage():
    with pytest.raises(InputError, match="schedule-needs-pp") as caught:
        archsim.train(GPT2, cluster=NODE, global_batch=8, schedule="zb-v")
    assert caught.value.where.field == "schedule"


def test_search_prunes_a_pipeline_schedule_on_one_gpu_by_the_same_reason():
    """One GPU: TP = PP = DP = 1, the one candidate, pruned by the rule train refuses by."""
    assert _search_reasons("zb-v", 1, 8) == {"schedule-needs-pp": 1}
    assert "schedule-needs-pp" not in _search_reasons("1f1b", 1, 8)


def test_a_runs_row_at_pp_1_under_a_pipeline_schedule_is_refused_at_its_line(tmp_path, capsys):
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,global_batch,micro_batch\n1,2,1,8,1\n1,1,1,8,1\n")
    argv = ["train", str(GPT2), "--cluster", str(NODE), "--runs", str(runs), "--schedule", "zb-v"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "schedule-needs-pp" in err and "line 3" in err


def test_a_sweep_point_at_pp_1_under_a_pipeline_schedule_is_a_row_with_the_reason(tmp_path, capsys):
    out = tmp_path / "out.csv"
    argv = ["train", str(GPT2), "--cluster", str(NODE), "--global-batch", "8", "--schedule", "zb-v",
            "--sweep", "pp=1,2", "--format", "json", "--out", str(out)]
    assert main(argv) == 0
    rows = json.loads(out.read_text())["rows"]
    assert "schedule-needs-pp" in rows[0]["error"] and rows[0]["iteration_seconds"] is None
    assert rows[1]["error"] == "" and rows[1]["iteration_seconds"] > 0


# Megatron-LM's interleaved schedule with its default group of N = PP micro-batches per model chunk
# (schedules.py, forward_backward_pipelining_with_interleaving, commit d98e8a64): N ≤ m, and m mod N is 0 or
# ≥ PP — so m a multiple of PP. By hand: PP 2, m = 3 breaks it, m = 4 keeps it; PP 4, m = 2 (< PP) breaks it.
@pytest.mark.parametrize(("pp", "global_batch", "schedule"), [(2, 3, ("--interleave", "2")),
                                                              (4, 2, ("--interleave", "2")),
                                                              (2, 6, ("--schedule", "interleaved-zb", "--interleave",
                                                                      "2"))])
def test_train_refuses_interleaving_unless_the_micro_batches_are_a_multiple_of_pp(tmp_path, capsys, pp, global_batch,
                                                                                   schedule):
    out = tmp_path / "out.csv"
    argv = ["train", str(GPT2), "--cluster", str(NODE), "--pp", str(pp), "--global-batch", str(global_batch),
            *schedule, "--out", str(out)]
    if pp == 2 and global_batch == 6:  # m = 6, a multiple of 2: runs
        assert main(argv) == 0 and out.exists()
        return
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "interleave-needs-microbatches-multiple-of-pp" in err
    assert not out.exists()


def test_search_prunes_the_same_interleaved_layouts_train_refuses():
    """Two GPUs, micro-batch 1: (TP, PP, DP) = (1, 2, 1) is the one interleavable layout; m = 3 prunes it, m = 4
    keeps it (the 2-GPU TP and DP layouts fall to other rules or run at PP 1)."""
    odd = _search_reasons("interleaved-1f1b", 2, 3, chunks=2)
    even = _search_reasons("interleaved-1f1b", 2, 4, chunks=2)
    assert odd.get("interleave-needs-microbatches-multiple-of-pp") == 1
    assert "interleave-needs-microbatches-multiple-of-pp" not in even
    with pytest.raises(InputError, match="multiple of PP = 2"):
        archsim.train(GPT2, cluster=NODE, global_batch=3, pp=2, interleave=2)
    result, _ = archsim.train(GPT2, cluster=NODE, global_batch=4, pp=2, interleave=2)
    assert result.iteration_seconds > 0


# -- search --chunks without a schedule that takes chunks did nothing (its default could not be told from a user's)
@pytest.mark.parametrize("schedules", [("1f1b",), ("1f1b", "zb-v", "gpipe")])
def test_search_refuses_chunks_without_an_interleaved_schedule(tmp_path, capsys, schedules):
    out = tmp_path / "out.csv"
    argv = ["search", str(GPT2), "--cluster", str(NODE), "--global-batch", "8", "--gpus", "2",
            "--schedule", *schedules, "--chunks", "8", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "--chunks" in err and "'chunks'" in err
    assert not out.exists()


def test_the_api_search_refuses_chunks_without_an_interleaved_schedule():
    with pytest.raises(InputError, match="--chunks") as caught:
        archsim.search(GPT2, cluster=NODE, global_batch=8, gpus=2, schedule="1f1b", chunks=8)
    assert caught.value.where.field == "chunks"


@pytest.mark.parametrize("schedule", ["interleaved-1f1b", "interleaved-zb", "looped-bfs"])
def test_chunks_with_a_schedule_that_takes_them_is_searched(schedule):
    """The schedules that take chunks per rank try exactly the ones given; the default stays 2 and 4."""
    given = archsim.search(GPT2, cluster=NODE, global_batch=8, gpus=2, schedule=["1f1b", schedule], chunks=3,
                           max_micro_batch=1, recompute="full", sequence_parallel="off")
    default = archsim.search(GPT2, cluster=NODE, global_batch=8, gpus=2, schedule=["1f1b", schedule],
                             max_micro_batch=1, recompute="full", sequence_parallel="off")
    # (TP, PP, DP) over 2 GPUs: 3 layouts; 1f1b 1 each, the chunked schedule once per chunk count
    assert given.enumerated == 3 * (1 + 1) and default.enumerated == 3 * (1 + 2)


def test_search_without_chunks_or_interleaving_runs(tmp_path):
    out = tmp_path / "out.csv"
    argv = ["search", str(GPT2), "--cluster", str(NODE), "--global-batch", "8", "--gpus", "2", "--schedule", "1f1b",
            "--max-micro-batch", "1", "--out", str(out)]
    assert main(argv) == 0 and out.exists()


# -- TP groups: search pruned TP 3 or 6 on 6 GPUs of an 8-GPU server ("tp-straddles-servers"), which train ran
def _straddles_by_hand(tp: int, gpus: int, server: int) -> bool:
    """Megatron's order (TP innermost, consecutive GPUs): a group straddles when it covers GPUs of two
    servers without being whole servers."""
    for start in range(0, gpus, tp):
        first, last = start // server, (start + tp - 1) // server
        if first != last and (start % server or tp % server):
            return True
    return False


def test_train_and_search_agree_on_which_tp_groups_straddle_servers():
    from dataclasses import replace

    from archsim.training.cluster import load_gpu_cluster
    from archsim.training.parallel import Parallelism
    from archsim.training.search_space import Candidate, rejection

    c = replace(load_transformer(GPT2), heads=48, hidden=3072, ffn=12288, kv_heads=48)  # every TP below divides
    cluster = load_gpu_cluster(ROOT / "configs" / "clusters" / "a100_384_servers.toml")  # 8 GPUs a server
    seen = set()
    for gpus in range(1, 33):
        for tp in (1, 2, 3, 4, 6, 8, 12, 16, 24):
            if gpus % tp:
                continue
            dp = gpus // tp
            expected = _straddles_by_hand(tp, gpus, 8)
            searched = rejection(c, Candidate(tp, 1, dp, 1, "full", "1f1b", 1, False), dp, cluster.gpus_per_server)
            trained = cluster.problem(Parallelism(tp, 1, dp, dp, 1))
            assert (searched == "tp-straddles-servers") == expected == (trained == "tp-straddles-servers"), (tp, gpus)
            seen.add(expected)
    assert seen == {True, False}
    assert not _straddles_by_hand(6, 6, 8) and _straddles_by_hand(6, 12, 8)  # the case issue #40 names


@pytest.mark.parametrize(("pp", "global_batch", "refused"), [(2, 3, True), (2, 4, False), (3, 5, True)])
def test_train_refuses_dualpipev_below_2p_micro_batches_by_searchs_reason(tmp_path, capsys, pp, global_batch, refused):
    """DualPipeV's order needs m ≥ 2·PP (by hand: PP 2 takes 4, PP 3 takes 6); search prunes the rest as
    ``dualpipev-needs-2p-microbatches``, and train now says the same reason, before the cluster is read."""
    out = tmp_path / "out.csv"
    argv = ["train", str(GPT2), "--cluster", str(NODE), "--pp", str(pp), "--global-batch", str(global_batch),
            "--schedule", "dualpipev", "--out", str(out)]
    if not refused:
        assert main(argv) == 0 and out.exists()
        return
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "dualpipev-needs-2p-microbatches" in err
    assert not out.exists()
    assert _search_reasons("dualpipev", pp, global_batch).get("dualpipev-needs-2p-microbatches") == 1
