"""Context parallelism as a user meets it: a runs file's ``cp_comm`` column, ``search --cp-comm``, CP named in
the result's repr, the Gantt's title and the network line, and the refusals and notes a user trips on. Each
test failed before its fix (no column, no flag, CP left out of the lines, a note that was wrong)."""

from __future__ import annotations

import json
import warnings

import pytest
from benchmark_scripts import ROOT

import archsim
from archsim.cli import main
from archsim.errors import InputError

LLAMA = ROOT / "tests" / "data" / "hf_configs" / "llama3_8b.json"  # 32 heads, 8 kv heads
H100 = ROOT / "configs" / "clusters" / "h100_2_servers.toml"  # 2 servers of 8 H100s
QUIET = {"dtype": "bf16", "seq": 16384}


def _train(**keys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return archsim.train(str(LLAMA), cluster=str(H100), **QUIET, **keys)


def test_a_runs_file_reads_cp_comm_per_row(tmp_path, capsys):
    """Each row's exchange is its own: all_gather, p2p in any case, and p2p where the cell is empty. Each row's
    seconds are train's for the same layout and exchange, and the all_gather row differs from the p2p one (the
    column is read, not dropped)."""
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,cp,cp_comm,micro_batch,global_batch\n2,1,2,4,all_gather,1,2\n2,1,2,4,P2P,1,2\n"
                    "2,1,2,4,,1,2\n2,1,8,,,1,8\n", encoding="utf-8")
    assert main(["train", str(LLAMA), "--cluster", str(H100), "--runs", str(runs), "--seq", "16384", "--dtype", "bf16",
                 "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["cp"], r["cp_comm"]) for r in rows] == [(4, "all_gather"), (4, "p2p"), (4, "p2p"), (1, "p2p")]
    for comm, row in (("all_gather", rows[0]), ("p2p", rows[1])):
        alone, _ = _train(tp=2, dp=2, cp=4, cp_comm=comm, global_batch=2)
        assert row["predicted_seconds"] == pytest.approx(alone.iteration_seconds, rel=1e-12)
    assert rows[1]["predicted_seconds"] == rows[2]["predicted_seconds"] != rows[0]["predicted_seconds"]


def test_a_bad_cp_comm_cell_and_the_flag_beside_runs_are_refused(tmp_path, capsys):
    runs = tmp_path / "runs.csv"
    runs.write_text("tp,pp,dp,cp,cp_comm,micro_batch,global_batch\n2,1,2,4,p2p,1,2\n2,1,2,4,ring,1,2\n",
                    encoding="utf-8")
    with pytest.raises(InputError) as err:
        archsim.train_runs(str(LLAMA), runs=str(runs), cluster=str(H100), seq=16384, dtype="bf16")
    assert (err.value.where.line, err.value.where.field) == (3, "cp_comm") and "all_gather" in str(err.value)
    good = tmp_path / "good.csv"
    good.write_text("tp,pp,dp,cp,micro_batch,global_batch\n2,1,2,4,1,2\n", encoding="utf-8")
    assert main(["train", str(LLAMA), "--cluster", str(H100), "--runs", str(good), "--cp-comm", "all_gather"]) == 2
    assert "--cp-comm" in capsys.readouterr().err  # a flag the rows set themselves: refused, not ignored


def _search(**keys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return archsim.search(str(LLAMA), cluster=str(H100), global_batch=4, top=40, schedule="1f1b",
                              max_micro_batch=1, recompute="full", sequence_parallel="on", **QUIET, **keys)


def test_search_tries_each_cp_comm_and_its_rows_run_through_train(capsys):
    """16 GPUs: TP × PP × DP = 16 has 15 ordered factorizations and 8 has 10 (counted by hand: (4+2 choose 2) and
    (3+2 choose 2)), so CP 1 and CP 2 under two exchanges enumerate 15 + 2 × 10 = 35. An all_gather row's
    command names it and runs through train to the row's seconds; its Megatron-LM arguments name Megatron's
    spelling, allgather."""
    result = _search(cp=[1, 2], cp_comm=["p2p", "all_gather"])
    meta = result.to_dict()["meta"]
    assert (meta["enumerated"], meta["cp"], meta["cp_comm"]) == (35, "1,2", "p2p,all_gather")
    kinds = {(r["cp"], r["cp_comm"]) for r in result.rows}
    assert kinds == {(1, ""), (2, "p2p"), (2, "all_gather")}
    row = next(r for r in result.rows if r["cp_comm"] == "all_gather")
    assert "--cp 2 --cp-comm all_gather" in row["command"]
    assert "--context-parallel-size 2 --cp-comm-type allgather" in row["megatron_args"]
    p2p = next(r for r in result.rows if r["cp_comm"] == "p2p")
    assert "--cp-comm" not in p2p["command"] and "--cp-comm-type" not in p2p["megatron_args"]
    for r in (row, p2p):
        assert main(["train", *r["command"].split()[2:], "--format", "json"]) == 0
        got = json.loads(capsys.readouterr().out)["meta"]
        assert (got["cp"], got["cp_comm"]) == (r["cp"], r["cp_comm"])
        assert got["iteration_seconds"] == pytest.approx(r["iteration_seconds"], rel=1e-12)


def test_search_meta_lists_one_cp_as_itself_and_refuses_cp_comm_without_a_cp_above_1(capsys):
    meta = _search(cp=4).to_dict()["meta"]
    assert (meta["cp"], meta["cp_comm"]) == (4, "p2p")
    with pytest.raises(InputError) as err:
        _search(cp_comm="all_gather")
    assert err.value.where.field == "cp-comm" and "cp_comm" in str(err.value)
    with pytest.raises(InputError, match="repeats"):
        _search(cp=[2, 2])
    assert main(["search", str(LLAMA), "--cluster", str(H100), "--global-batch", "4", "--cp-comm", "all_gather"]) == 2
    assert "--cp-comm is tried only by a CP above 1" in capsys.readouterr().err


def test_repr_gantt_title_and_network_line_name_cp(tmp_path, capsys):
    """TP 2 × CP 4 fills one 8-GPU server: no group crosses for CP, the DP pair of servers does; TP 2 × CP 8 puts
    each CP group over both servers (Megatron's order tp-cp-dp-pp: GPU t of 8 consecutive TP pairs)."""
    result, _ = _train(tp=2, cp=4, dp=2, cp_comm="all_gather", global_batch=2)
    assert "tp 2 × cp 4 × pp 1 × dp 2, cp-comm all_gather" in repr(result)
    plain, _ = _train(tp=2, dp=8, global_batch=8)
    assert "cp" not in repr(plain).split(";")[0]
    assert result.to_dict()["meta"]["inter_server"]["crossed_by"] == ["dp"]
    wide, _ = _train(tp=2, cp=8, global_batch=1)
    assert wide.to_dict()["meta"]["inter_server"]["crossed_by"] == ["cp", "dp"]  # dp: the DP × CP gradient group
    gantt = tmp_path / "g.html"
    assert main(["train", str(LLAMA), "--cluster", str(H100), "--tp", "2", "--cp", "8", "--global-batch", "1",
                 "--seq", "16384", "--dtype", "bf16", "--gantt", str(gantt)]) == 0
    out = capsys.readouterr().out
    assert "crossed by cp, dp" in out
    assert "<title>llama3_8b: TP2 CP8 (p2p) PP1 DP1, 1f1b" in gantt.read_text(encoding="utf-8")


@pytest.mark.parametrize(("seq", "cp", "offered"), [(4096, 3, "CP 2 or 4 does"), (1000, 8, "CP 5 or 10 does"),
                                                    (1001, 2, "no CP above 1 splits 1001 tokens so")])
def test_a_cp_that_does_not_split_the_sequence_names_the_nearest_that_do(seq, cp, offered):
    """By hand: 4,096 = 2 × 2,048 splits for CP 2, 4, 8 …, and 3 sits between 2 and 4; 1,000 = 2 × 500 splits for
    CP 2, 4, 5, 10 …, and 8 is nearest 10 (2 away) and 5 (3); 1,001 is odd, so no 2·CP divides it."""
    with pytest.raises(InputError) as err:
        archsim.train(str(LLAMA), cluster=str(H100), cp=cp, global_batch=1, seq=seq, dtype="bf16")
    assert err.value.where.field == "cp" and str(err.value).endswith(offered)


def test_cp_with_standard_attention_says_what_to_give():
    with pytest.raises(InputError) as err:
        _train(cp=2, dp=8, global_batch=8, attention="standard")
    text = str(err.value)
    assert "not attention='standard'" in text and "attention='flash'" in text and "drop cp" in text


def test_notes_on_cp_comm_at_cp_1_and_the_distributed_optimizer_over_dp_times_cp():
    """all_gather at CP 1 prices nothing: the run is the p2p one, and a note says so. The distributed optimizer at
    DP 1 with CP 8 shards Adam's states over the 8 CP ranks, so the old note that it shards nothing was wrong."""
    with pytest.warns(UserWarning, match="exchanges nothing"):
        named, _ = archsim.train(str(LLAMA), cluster=str(H100), dp=8, global_batch=8, cp_comm="all_gather", **QUIET)
    plain, _ = _train(dp=8, global_batch=8)
    assert named.iteration_seconds == plain.iteration_seconds
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sharded, _ = archsim.train(str(LLAMA), cluster=str(H100), tp=2, cp=8, global_batch=1,
                                   distributed_optimizer=True, **QUIET)
    assert not [w for w in caught if "shards nothing" in str(w.message)]
    whole, _ = _train(tp=2, cp=8, global_batch=1)
    # bytes per parameter, by hand: bf16 weights 2 + fp32 gradients 4 + Adam's fp32 master, m and v 12 (÷ 8 shards)
    for run, per_parameter in ((whole, 18.0), (sharded, 2 + 4 + 12 / 8)):
        assert run.memory[0].states == pytest.approx(per_parameter * run.memory[0].parameters, rel=1e-12)


def test_the_idle_gpu_note_names_cp_and_its_flag(capsys):
    """Failed before: TP 1 × CP 2 × DP 2 on 16 GPUs said "this layout (cp 2) uses 4 of the cluster's 16 GPUs (tp 1
    × pp 1 × dp 2); set --tp/--pp/--dp": the layout it named used 2 GPUs, and the flag that sets CP was not among
    those it offered. 1 × 2 × 1 × 2 = 4 GPUs of 2 × 8 = 16, by hand."""
    assert main(["train", str(LLAMA), "--cluster", str(H100), "--cp", "2", "--dp", "2", "--global-batch", "4",
                 "--seq", "4096", "--dtype", "bf16", "--format", "json"]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "GPUs (" in line]
    expected = ("archsim train: note: this layout uses 4 of the cluster's 16 GPUs (tp 1 × cp 2 × pp 1 × dp 2); "
                "set --tp/--cp/--pp/--dp, or archsim search to choose")
    assert notes == [expected], notes
