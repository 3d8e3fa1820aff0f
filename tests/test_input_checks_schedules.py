"""``train`` and ``search`` agree on which schedule a layout runs (issue #40, "train and search agree"): train
refuses, by search's reason, what search prunes — a pipeline schedule on one stage, interleaving below PP
micro-batches (interleaved ZB: unless a multiple of PP), TP groups that straddle servers, DualPipeV below 2·PP micro-batches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from input_checks_common import GPT2, NODE

import archsim
from archsim.cli import main
from archsim.errors import InputError
from archsim.workload.model_files import load_transformer

ROOT = Path(__file__).resolve().parents[1]


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


# Megatron-LM's interleaved schedule (schedules.py, forward_backward_pipelining_with_interleaving, commit d98e8a64)
# runs groups of N micro-batches per model chunk, N in [PP, m] and m mod N 0 or ≥ PP — some N exists iff m ≥ PP
# (N = m). By hand: PP 2, m = 3 runs (N = 3), PP 4, m = 2 (< PP) breaks it. Interleaved ZB keeps its rounds of PP
# micro-batches: PP 2, m = 3 breaks it, m = 6 keeps it.
@pytest.mark.parametrize(("pp", "global_batch", "schedule", "reason"), [
    (2, 3, ("--interleave", "2"), None),
    (4, 2, ("--interleave", "2"), "interleave-needs-pp-microbatches"),
    (2, 3, ("--schedule", "interleaved-zb", "--interleave", "2"), "interleave-needs-microbatches-multiple-of-pp"),
    (2, 6, ("--schedule", "interleaved-zb", "--interleave", "2"), None)])
def test_train_refuses_interleaving_below_pp_micro_batches_and_zb_off_a_multiple(tmp_path, capsys, pp, global_batch,
                                                                                 schedule, reason):
    out = tmp_path / "out.csv"
    argv = ["train", str(GPT2), "--cluster", str(NODE), "--pp", str(pp), "--global-batch", str(global_batch),
            *schedule, "--out", str(out)]
    if reason is None:
        assert main(argv) == 0 and out.exists()
        return
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and reason in err
    assert not out.exists()


def test_search_prunes_the_same_interleaved_layouts_train_refuses():
    """Two GPUs, micro-batch 1: (TP, PP, DP) = (1, 2, 1) is the one interleavable layout; interleaved 1F1B keeps it
    at m = 3 (Megatron-LM's group N = 3) and prunes it at m = 1 (< PP); interleaved ZB prunes it at m = 3 (the 2-GPU
    TP and DP layouts fall to other rules or run at PP 1)."""
    odd = _search_reasons("interleaved-1f1b", 2, 3, chunks=2)
    one = _search_reasons("interleaved-1f1b", 2, 1, chunks=2)
    zb = _search_reasons("interleaved-zb", 2, 3, chunks=2)
    assert not any(r.startswith("interleave-needs") for r in odd)
    assert one.get("interleave-needs-pp-microbatches") == 1
    assert zb.get("interleave-needs-microbatches-multiple-of-pp") == 1
    with pytest.raises(InputError, match="at least PP = 2 micro-batches"):
        archsim.train(GPT2, cluster=NODE, global_batch=1, pp=2, interleave=2)
    result, _ = archsim.train(GPT2, cluster=NODE, global_batch=3, pp=2, interleave=2)
    assert result.iteration_seconds > 0


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

    from archsim.training.cluster_file import load_gpu_cluster
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
