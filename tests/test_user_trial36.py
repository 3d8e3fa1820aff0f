"""User trial 36: a researcher choosing a pipeline schedule for a 70B model across servers (issues #38, #40).

Each test here failed on the code before its fix (said in its docstring)."""

import warnings

import pytest

import archsim

GPT = "configs/transformers/gpt_1024h_24l.json"  # GPT-2-like: h 1024, 16 heads, 24 layers, seq 1024, dropout
NODE = "configs/clusters/a100_node.toml"
S = H = 1024
HEADS = 16
SBH = S * H  # one micro-batch of one sequence


def _train(**keywords):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return archsim.train(GPT, cluster=NODE, tp=1, pp=4, dp=1, global_batch=8, micro_batch=1, seq=S,
                             attention="standard", **keywords)


@pytest.mark.parametrize("schedule,kept_sbh", [("interleaved-1f1b", 9 * 3 * 2),
                                              ("interleaved-zb", 7 * 3 * 2 - 2 * 2 + 3 * 32 + 2 * 32)])
def test_full_recompute_rematerialises_one_layer_per_rank_not_per_chunk(schedule, kept_sbh):
    """A rank recomputes one layer at a time in the backward, whichever chunk it belongs to, so full
    recompute adds one layer's activations (Korthikanti et al. 2022: s·b·h·(34 + 5·a·s/h) at TP 1) to a
    rank once, not once per model chunk. Hand computation, PP 4 · V 2 (8 chunks of 3 layers), rank 1 (no
    embedding, no head): Megatron's interleaved warm-up holds (v − 1)·p + 2·(p − 1 − r) + 1 = 9 chunks, each
    3 layers × 2·s·b·h (the layer's input). torch's interleaved ZB (F ×4 of chunk 0, F ×3 of chunk 1, I, F, I)
    peaks inside its second I, as it reruns that chunk's last layer: 7 chunks of inputs less the 2 layers' already
    rerun (2·s·b·h each), 1 chunk between I and W and those 2 layers, whose W reads the rematerialised GEMM inputs
    and output gradients, 32·s·b·h a layer, beside the working layer (until 2026-12-02: 7 chunks of inputs, I
    releasing all; then the walk's peak after the second I, 6 chunks of inputs and 2 of W's, plus the working layer).
    Failed before: the working layer was counted on both chunks (one 34·s·b·h + 5·a·s²·b too many). The working
    layer adds 34·s·b·h + 5·a·s²·b less its input, the checkpoint among the kept (until 2026-12-02 counted twice,
    2·s·b·h over: failed there)."""
    result, _ = _train(recompute="full", schedule=schedule, interleave=2)
    kept = kept_sbh * SBH
    working = 32 * SBH + 5 * HEADS * S * S
    assert result.memory[1].activations == pytest.approx(kept + working, rel=1e-12)


def test_full_recompute_search_rows_agree_with_train():
    """search sizes a row's memory by its own closed-form in-flight counts: the working layer once per rank
    there too, so the row's peak memory is train's and both are the hand computation above (failed before:
    both counted the working layer per chunk)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = archsim.search(GPT, cluster=NODE, global_batch=8, seq=S, gpus=4, recompute=["full"],
                               schedule=["interleaved-1f1b"], chunks=[2], max_micro_batch=1,
                               attention="standard", refine=0, top=50)
    row = next(r for r in found.rows if (r["tp"], r["pp"], r["dp"]) == (1, 4, 1))
    result, _ = _train(recompute="full", schedule="interleaved-1f1b", interleave=2)
    assert row["peak_memory_gib"] == pytest.approx(result.peak_memory_gib, rel=1e-12)
    assert result.memory[1].activations == pytest.approx(9 * 3 * 2 * SBH + 32 * SBH + 5 * HEADS * S * S, rel=1e-12)


RUNS_HEADER = "tp,pp,dp,micro_batch,global_batch,recompute\n"


def _runs(tmp_path, body: str):
    path = tmp_path / "runs.csv"
    path.write_text(RUNS_HEADER + body, encoding="utf-8")
    return path


def test_runs_file_names_its_first_bad_row_whatever_is_wrong(tmp_path, capsys):
    """Line 3's TP 3 divides neither the 16 heads nor a server; line 4's recompute is no mode. The error names
    line 3, the first bad row. Failed before: the file's cells were all read first, so line 4 was named and
    line 3 only once line 4 was mended (after the rows above it had run)."""
    from archsim.cli import main

    runs = _runs(tmp_path, "1,1,1,1,8,full\n3,1,1,1,8,full\n1,1,1,1,8,partial\n")
    out = tmp_path / "out.csv"
    code = main(["train", GPT, "--cluster", NODE, "--runs", str(runs), "--attention", "standard", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert err.count("\n") == 1 and ", line 3, field 'tp':" in err, err


def test_a_bad_last_row_is_refused_before_any_row_runs(tmp_path, monkeypatch):
    """docs/api.md: "A bad row raises InputError naming its line and field before any row runs". A TP that
    does not divide the heads was found only when its row's turn came. Failed before: the two rows above it
    ran first (two iterations simulated, then the error)."""
    from archsim.errors import InputError
    from archsim.training import run

    ran = []
    real = run.train
    monkeypatch.setattr(run, "train", lambda *a, **k: ran.append(1) or real(*a, **k))
    runs = _runs(tmp_path, "1,1,1,1,8,full\n1,2,1,1,8,full\n3,1,1,1,8,full\n")
    with pytest.raises(InputError) as info:
        archsim.train_runs(GPT, runs=str(runs), cluster=NODE, attention="standard")
    assert info.value.where.line == 4 and info.value.where.field == "tp"
    assert ran == []


@pytest.mark.parametrize("torch_class,name,interleave", [
    ("ScheduleZBVZeroBubble", "zb-v", 1), ("ScheduleDualPipeV", "dualpipev", 1),
    ("ScheduleInterleaved1F1B", "interleaved-1f1b", 2), ("ScheduleInterleavedZeroBubble", "interleaved-zb", 2),
    ("ScheduleLoopedBFS", "looped-bfs", 2), ("ScheduleGPipe", "gpipe", 1)])
def test_torch_class_names_run_as_the_orders_they_name(torch_class, name, interleave):
    """`train --schedule` lists torch's class names among its choices. Failed before: ScheduleZBVZeroBubble and
    ScheduleDualPipeV stopped on "schedule 'zb-v' has 8 stages but the profile has 4" (their two chunks per rank
    not counted), and ScheduleInterleaved1F1B, ScheduleInterleavedZeroBubble and ScheduleLoopedBFS refused
    --interleave 2 ("--interleave takes one of the schedules …, not 'ScheduleInterleaved1F1B'")."""
    named, _ = _train(recompute="selective", schedule=name, interleave=interleave)
    result, _ = _train(recompute="selective", schedule=torch_class, interleave=interleave)
    assert result.parallelism.schedule_name == name
    assert (result.iteration_seconds, result.peak_memory_gib) == (named.iteration_seconds, named.peak_memory_gib)


@pytest.mark.parametrize("torch_class,reason", [("ScheduleDualPipeV", "dualpipev-needs-2p-microbatches"),
                                                ("ScheduleInterleaved1F1B", "interleave-needs-pp-microbatches")])
def test_torch_class_names_keep_their_orders_rules(torch_class, reason):
    """The rules a schedule runs under hold under its torch name: DualPipeV needs 2 × PP micro-batches, interleaved
    1F1B at least PP (Megatron-LM's rule; until 2026-12-05 a multiple of PP). Failed before: ScheduleDualPipeV at 4
    micro-batches on PP 4 stopped on the stage count, and ScheduleInterleaved1F1B could not be given its
    --interleave."""
    from archsim.errors import InputError

    with pytest.raises(InputError, match=reason), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        archsim.train(GPT, cluster=NODE, tp=1, pp=4, dp=1, global_batch=4 if "Dual" in torch_class else 3,
                      micro_batch=1, seq=S, attention="standard", schedule=torch_class,
                      interleave=1 if "Dual" in torch_class else 2)


def test_sweep_rows_name_the_chunks_and_order_each_point_ran(capsys):
    """docs/formats.md (train's columns, a --sweep's rows among them): `interleave` is the model chunks per rank the
    schedule runs, 2 for zb-v and dualpipev; `schedule` the order it builds. train's meta says so for one run.
    Failed before: a --sweep point of zb-v at interleave 1 printed interleave 1 beside the same run at 2, and
    a torch class name stood in the schedule column."""
    import json

    from archsim.cli import main

    code = main(["train", GPT, "--cluster", NODE, "--pp", "4", "--global-batch", "8", "--attention", "standard",
                 "--sweep", "schedule=zb-v,ScheduleDualPipeV,1f1b", "--sweep", "interleave=1,2", "--format", "json"])
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert code == 0
    ran = [(r["schedule"], r["interleave"]) for r in rows]
    assert ran == [("zb-v", 2), ("zb-v", 2), ("dualpipev", 2), ("dualpipev", 2), ("1f1b", 1), ("interleaved-1f1b", 2)]


def test_chrome_trace_links_name_the_ranks_they_join(tmp_path, capsys):
    """A V-shaped schedule's trace draws ranks r0…r3 and its hops on processes named by virtual stage
    ("link 4->5:act" on PP 4, where no rank 4 exists). ZB-V puts stage s on rank s, and stage s ≥ p on rank
    2p − 1 − s (Qi et al. 2024, Fig. 8), so stage 4 → 5 is r3 → r2. Failed before: the link processes named
    stages alone."""
    import json

    from archsim.cli import main

    trace = tmp_path / "t.json"
    assert main(["train", GPT, "--cluster", NODE, "--pp", "4", "--global-batch", "8", "--attention", "standard",
                 "--schedule", "zb-v", "--chrome-trace", str(trace), "--out", str(tmp_path / "o.txt")]) == 0
    capsys.readouterr()
    events = json.loads(trace.read_text(encoding="utf-8"))["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M"}

    def rank(stage: int) -> int:
        return stage if stage < 4 else 7 - stage

    hops = [e for e in events if e.get("cat") == "comm"]
    assert hops
    for hop in hops:
        src, dst = (int(op.split("F")[0].split("I")[0]) for op in hop["name"].split("->"))
        assert names[hop["pid"]].endswith(f"(r{rank(src)}->r{rank(dst)})"), names[hop["pid"]]
