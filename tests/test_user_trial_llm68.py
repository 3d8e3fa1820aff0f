"""What an LLM training engineer's trial of ``train``, ``search`` and ``train --runs`` on four H100 servers found."""

import json
from pathlib import Path

import pytest

import archsim
from archsim.cli import main

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = str(ROOT / "configs" / "clusters" / "h100_2_servers.toml")
# a small Llama (GQA, SwiGLU): 8 layers split over 2 stages, 4 chunks of 2 layers under zb-v or interleave 2
SMALL_LLAMA = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 8,
               "num_key_value_heads": 2, "num_hidden_layers": 8, "vocab_size": 1000, "max_position_embeddings": 256,
               "tie_word_embeddings": False}
HEADER = "tp,pp,dp,micro_batch,global_batch,recompute,sequence_parallel,interleave,schedule,measured_seconds"


def _model(tmp_path) -> str:
    path = tmp_path / "small_llama" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(SMALL_LLAMA))
    return str(path)


def _runs(tmp_path, *rows: str) -> str:
    path = tmp_path / "runs.csv"
    path.write_text("\n".join((HEADER, *rows)) + "\n")
    return str(path)


def test_a_runs_row_names_its_own_schedule_and_runs_as_train_with_that_schedule(tmp_path, capsys):
    """A search row's layout (zb-v, interleaved-zb) could not be written in a runs file: the ``schedule`` column was
    refused, so one file could not hold rows of different schedules. Each row now runs its own, the one without a
    cell the command's --schedule, each predicted as ``archsim train`` with that schedule predicts it."""
    model = _model(tmp_path)
    runs = _runs(tmp_path, "2,2,4,1,16,none,true,2,ZB-V,", "2,2,4,1,16,none,true,2,interleaved-zb,",
                 "2,2,4,1,16,none,true,1,,", "2,2,4,1,16,none,true,1,zb-h1,")
    assert main(["train", model, "--cluster", CLUSTER, "--seq", "128", "--runs", runs, "--schedule", "gpipe",
                 "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [row["schedule"] for row in rows] == ["zb-v", "interleaved-zb", "gpipe", "zb-h1"]
    for row, schedule, chunks in zip(rows, ("zb-v", "interleaved-zb", "gpipe", "zb-h1"), (2, 2, 1, 1)):
        alone, _ = archsim.train(model, cluster=CLUSTER, seq=128, tp=2, pp=2, dp=4, global_batch=16, recompute="none",
                                 sequence_parallel=True, interleave=chunks, schedule=schedule)
        assert row["interleave"] == chunks
        assert row["predicted_seconds"] == pytest.approx(alone.iteration_seconds, rel=1e-12)
        assert row["peak_memory_gib"] == pytest.approx(alone.peak_memory_gib, rel=1e-12)
    # the schedules differ, so the rows do: the column is read, not passed over
    assert len({row["predicted_seconds"] for row in rows}) == 4


def test_a_runs_row_s_schedule_is_checked_at_its_line(tmp_path, capsys):
    model = _model(tmp_path)
    assert main(["train", model, "--cluster", CLUSTER, "--seq", "128", "--runs",
                 _runs(tmp_path, "2,2,4,1,16,none,true,1,1f1b,", "2,2,4,1,16,none,true,1,zb-h3,")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "line 3, field 'schedule'" in err and "did you mean 'zb-h2'?" in err
    # a schedule of one chunk per rank beside two chunks: train's refusal, at the row's line
    assert main(["train", model, "--cluster", CLUSTER, "--seq", "128", "--runs",
                 _runs(tmp_path, "2,2,4,1,16,none,true,2,zb-h1,")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "line 2" in err and "zb-h1" in err


def test_a_pipeline_of_fewer_micro_batches_than_stages_is_noted(tmp_path, capsys):
    """``--global-batch 8`` at DP 4 gives 2 micro-batches to a PP 4 pipeline: it never fills (MFU 0.16 on the
    trial's Llama 8B) and nothing said why. One note names the count, how it comes about and what fills it; a
    pipeline of as many micro-batches as stages (8 at DP 1) gets none, nor does PP 1."""
    model = _model(tmp_path)
    base = ["train", model, "--cluster", CLUSTER, "--seq", "128", "--tp", "2", "--global-batch", "8"]
    assert main([*base, "--pp", "4", "--dp", "2", "--micro-batch", "2"]) == 0
    err = capsys.readouterr().err
    # 8 ÷ (2 × 2) = 2 micro-batches for 4 stages (hand count)
    assert err.count("\n") == 1 and "2 micro-batches per pipeline" in err and "8 ÷ (2 × 2)" in err
    assert "--pp 4" in err and "--global-batch" in err
    for layout in (["--pp", "4", "--dp", "2", "--micro-batch", "1"], ["--pp", "1", "--dp", "8", "--micro-batch", "1"]):
        assert main([*base, *layout]) == 0  # 4 micro-batches for 4 stages; no pipeline
        assert "micro-batch" not in capsys.readouterr().err
    with pytest.warns(UserWarning, match=r"1 micro-batch per pipeline .* for pp=2"):
        archsim.train(model, cluster=CLUSTER, seq=128, tp=2, pp=2, dp=4, global_batch=4, micro_batch=1)


@pytest.mark.parametrize("argv, values", [
    (["search", "M", "--cluster", "C.toml", "--global-batch", "8", "--sequence-parallel"], "both, on, off"),
    (["train", "M", "--cluster", "C.toml", "--recompute"], "none, selective, full"),
    (["search", "M", "--cluster", "C.toml", "--global-batch", "8", "--recompute"], "none, selective, full"),
    (["cost", "vgg16", "--dataflow"], "ws, os, is"),
])
def test_a_flag_of_a_few_values_given_none_names_them(argv, values, capsys):
    """train's ``--sequence-parallel`` is a switch, search's takes both, on or off: brought to search alone it was told
    only ``expected one argument``. A flag of a few values given none now names them, as a wrong value is told."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.rstrip().endswith(f"one argument (one of {values})")


def test_a_flag_of_any_value_given_none_is_told_as_before(capsys):
    assert main(["train", "M", "--cluster", "C.toml", "--tp"]) == 2
    assert capsys.readouterr().err.rstrip().endswith("argument --tp: expected one argument")


def test_an_empty_search_names_balance_planned_where_uneven_stages_give_a_split(tmp_path, capsys):
    """``search --gpus 24`` on four H100 servers (Llama 8B's 32 layers, batch 256) said no split of 24 GPUs has PP
    dividing the layers and named 16 or 32 GPUs, while ``--balance planned`` ranks 707 configurations on 24 (TP 1 ×
    PP 6 × DP 4 first). Here: 12 GPUs, 8 layers, batch 8 — DP must divide 8 and TP the 2 key/value heads, so every
    split of 12 has PP 3, 6 or 12, none dividing 8 (hand count); PP 3 over uneven stages runs."""
    model = _model(tmp_path)
    argv = ["search", model, "--cluster", CLUSTER, "--seq", "128", "--global-batch", "8", "--gpus", "12",
            "--schedule", "1f1b", "--recompute", "none", "--sequence-parallel", "off", "--max-micro-batch", "1",
            "--top", "1", "--refine", "0", "--format", "json"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "no configuration on 12 GPUs" in err and "or --balance planned, whose uneven stages" in err
    assert main([*argv, "--balance", "planned"]) == 0  # the advice holds: a split ranks
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows and rows[0]["pp"] in (3, 6) and 8 % rows[0]["pp"]
    # 9 GPUs: PP 9 has more stages than the 8 layers, DP 3 or 9 does not divide 8 (hand count): no uneven split either
    nine = [*argv[:argv.index("--gpus") + 1], "9", *argv[argv.index("--gpus") + 2:]]
    assert main(nine) == 0
    err = capsys.readouterr().err
    assert "no configuration on 9 GPUs" in err
    assert "--balance planned" not in err
