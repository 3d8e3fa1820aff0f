"""The note ``train`` prints for an interleaved schedule run with one model chunk per rank names what that schedule
runs: it said interleaved-1f1b's "1F1B's bubble with a longer warm-up" of ``--schedule interleaved-zb --interleave 1``
too, which runs ZB-H1's order (its figures zb-h1's), and of looped-bfs, which runs GPipe's."""

from __future__ import annotations

import json

import pytest
from test_docs import ROOT

from archsim.cli import main
from archsim.policies.stage_orders import interleaved_zb, looped_bfs, zb_handcrafted

MODEL = str(ROOT / "configs" / "transformers" / "gpt_1024h_24l.json")  # 24 layers, 16 heads
NODE = str(ROOT / "configs" / "clusters" / "a100_node.toml")  # 8 GPUs
LAYOUT = ("--tp", "2", "--pp", "4", "--global-batch", "8")  # all 8 GPUs, 8 micro-batches: no other note
ONE_CHUNK = ("archsim train: note: --schedule {named} ran with one model chunk per pipeline rank (--interleave 1): it "
             "interleaves nothing ({named}: {runs}); --interleave V gives each rank V chunks")


def _train(capsys, *args: str) -> tuple[dict, str]:
    assert main(["train", MODEL, "--cluster", NODE, *LAYOUT, *args, "--format", "json"]) == 0
    out, err = capsys.readouterr()
    return json.loads(out)["meta"], err


@pytest.mark.parametrize(("named", "runs", "twin"), [
    ("interleaved-zb", "ZB-H1's order, the figures of --schedule zb-h1", "zb-h1"),
    ("looped-bfs", "GPipe's every forward before any backward, the figures of --schedule gpipe", "gpipe"),
])
def test_the_one_chunk_note_names_the_schedule_asked_for_and_what_it_runs(capsys, named, runs, twin):
    """Before: both said "(interleaved-1f1b: 1F1B's bubble with a longer warm-up, more activation memory)"."""
    one, err = _train(capsys, "--schedule", named, "--interleave", "1")
    assert err.splitlines() == [ONE_CHUNK.format(named=named, runs=runs)]
    assert "interleaved-1f1b" not in err
    plain, err = _train(capsys, "--schedule", twin)
    assert err == ""
    assert one["iteration_seconds"] == plain["iteration_seconds"]  # what the note says: the twin's figures
    assert one["memory_per_rank"] == plain["memory_per_rank"]


@pytest.mark.parametrize(("p", "m"), [(2, 4), (4, 8), (4, 3), (3, 6)])
def test_one_chunk_orders_are_what_the_note_says(p, m):
    """interleaved-zb over one chunk is ZB-H1's order action for action; looped-bfs runs every forward of a rank
    before any of its backwards, as GPipe does."""
    assert interleaved_zb(p, m, 1).ranks == zb_handcrafted(p, m, 1).ranks
    for actions in looped_bfs(p, m, 1).ranks:
        kinds = [action.kind for action in actions]
        assert kinds == ["F"] * m + ["B"] * m


@pytest.mark.parametrize("p2p", ["overlapped", "blocking", "megatron"])
def test_interleaved_1f1b_of_one_chunk_is_plain_1f1b_in_time_and_memory(capsys, p2p):
    """Megatron-LM sets a virtual pipeline size of 1 to None (``validate_args``) and then runs
    ``forward_backward_pipelining_without_interleaving``, whatever the overlap setting: one chunk a rank is plain 1F1B.
    Failed before (every mode): rank 0 held the interleaved warm-up's 2·PP − 1 = 7 micro-batches' activations, 1F1B's
    PP = 4, so its activations were 7/4 of 1F1B's less the fixed part; the meta named interleaved-1f1b."""
    runs = "Megatron-LM's plain 1F1B, the figures of --schedule 1f1b"
    one, err = _train(capsys, "--schedule", "interleaved-1f1b", "--interleave", "1", "--p2p", p2p)
    assert err.splitlines() == [ONE_CHUNK.format(named="interleaved-1f1b", runs=runs)]
    plain, err = _train(capsys, "--schedule", "1f1b", "--p2p", p2p)
    assert err == ""
    assert one["iteration_seconds"] == plain["iteration_seconds"]
    assert one["memory_per_rank"] == plain["memory_per_rank"]
    assert one["schedule"] == plain["schedule"] == "1f1b"  # the order that ran, as for torch's class names


def test_one_chunk_interleaved_parallelism_runs_1f1b_and_keeps_its_rules():
    """The one rule: the order built (and its p2p waits) is 1F1B's; the refusals stay those of the schedule named
    (at least PP micro-batches), and two chunks still run interleaved."""
    from archsim.errors import InputError
    from archsim.training.parallel import Parallelism

    for p2p in ("overlapped", "blocking", "megatron"):
        one = Parallelism(pp=4, global_batch=8, schedule="interleaved-1f1b", interleave=1, p2p=p2p)
        plain = Parallelism(pp=4, global_batch=8, p2p=p2p)
        assert (one.schedule_name, one.p2p_blocking) == ("1f1b", plain.p2p_blocking)
    assert Parallelism(pp=4, global_batch=8, schedule="interleaved-1f1b", interleave=2).schedule_name == "interleaved-1f1b"
    with pytest.raises(InputError, match="interleave-needs-pp-microbatches"):
        Parallelism(pp=4, global_batch=3, schedule="interleaved-1f1b", interleave=1)


# One chunk a rank, refused by the interleaved rule, names the plain schedule that runs there: (schedule, the global
# batch breaking its rule on PP 4, the reason, the advice, the plain schedule). Interleaved 1F1B: Megatron-LM runs
# plain 1F1B (a virtual pipeline size of 1 is None, so ``get_forward_backward_func`` picks
# ``forward_backward_pipelining_without_interleaving``, whose warm-up is min(PP − rank − 1, m)), which takes m < PP;
# interleaved ZB of one chunk runs ZB-H1's order, which takes any m, where its rule wants rounds of PP.
PLAIN = [("interleaved-1f1b", "2", "interleave-needs-pp-microbatches",
          ("with one model chunk per rank (--interleave 1) Megatron-LM runs plain 1F1B, which takes fewer micro-batches "
          "than PP: give --schedule 1f1b, or --interleave V of 2 or more with at least PP micro-batches"), "1f1b"),
         ("interleaved-zb", "6", "interleave-needs-microbatches-multiple-of-pp",
          ("with one model chunk per rank (--interleave 1) its order is ZB-H1's, which takes any number of "
          "micro-batches: give --schedule zb-h1, or --interleave V of 2 or more with a multiple of PP micro-batches"),
          "zb-h1")]


@pytest.mark.parametrize(("schedule", "batch", "reason", "advice", "plain"), PLAIN)
def test_one_chunk_off_the_interleaved_rule_is_refused_naming_the_plain_schedule(capsys, schedule, batch, reason,
                                                                                 advice, plain):
    """``train`` refuses it as ``search`` refuses ``--chunks 1`` (the plain schedule by its own name), and now says
    so: before, the line gave the interleaved rule alone, though no chunk interleaves. The advice runs; two chunks
    keep the interleaved rule's line without it."""
    argv = ["train", MODEL, "--cluster", NODE, "--tp", "2", "--pp", "4", "--global-batch", batch]
    assert main([*argv, "--schedule", schedule]) == 2  # --interleave defaults to 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.rstrip().endswith(f"({reason})"), err
    assert advice in err, err
    assert main([*argv, "--schedule", plain, "--format", "json"]) == 0  # the advice runs
    assert json.loads(capsys.readouterr().out)["meta"]["schedule"] == plain
    assert main([*argv, "--schedule", schedule, "--interleave", "2"]) == 2
    err = capsys.readouterr().err
    marker = {"1f1b": "Megatron-LM runs plain 1F1B", "zb-h1": "ZB-H1"}[plain]  # what the advice alone says
    assert reason in err and "with one model chunk per rank" not in err and marker not in err, err


@pytest.mark.parametrize(("schedule", "batch", "plain"), [(s, b, p) for s, b, _, _, p in PLAIN])
def test_the_library_names_the_plain_schedule_as_a_keyword(schedule, batch, plain):
    import archsim

    with pytest.raises(archsim.InputError) as refused:
        archsim.train(MODEL, cluster=NODE, tp=2, pp=4, global_batch=int(batch), schedule=schedule)
    text = str(refused.value)
    assert f"give schedule='{plain}', or interleave=V" in text and "--" not in text, text
    assert refused.value.where.field == "schedule"
