"""A training-systems engineer's first runs: a Llama-2-13B-like TOML written from docs/formats.md on two servers
of H100s. The throughput figures are checked against a hand count (Narayanan et al. 2021's and Korthikanti et al.
2022's FLOP counts, PaLM's 6·N + 12·l·s·h per token), and the library's runs job against the command's flags."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from test_api_parity import CLI_ONLY, keywords

import archsim
from archsim.cli import main
from archsim.commands.train_many import RUNS_APART, RUNS_SET_PER_ROW
from archsim.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = str(ROOT / "configs" / "clusters" / "h100_2_servers.toml")  # 2 × 8 H100 SXM5
L, H, HEADS, V, FFN, SEQ = 40, 5120, 40, 32000, 13824, 4096  # Llama 2 13B (Touvron et al. 2023; its config.json)


def _llama2_13b(tmp_path: Path) -> str:
    path = tmp_path / "llama2_13b.toml"
    path.write_text(f'[transformer]\nfamily = "llama"\nname = "llama2-13b-like"\nlayers = {L}\nhidden = {H}\n'
                    f"heads = {HEADS}\nvocab = {V}\nseq = {SEQ}\nffn = {FFN}\n")
    return str(path)


def test_parameters_are_llama2_13bs_by_hand(tmp_path):
    """Per layer q, k, v, o (4·h²), gate, up, down (3·h·ffn) and two RMS norms (2·h); a final norm; an untied
    token table and LM head (2·V·h): 13,015,864,320, the count of meta-llama/Llama-2-13b-hf's weights."""
    result, _ = archsim.train(_llama2_13b(tmp_path), cluster=CLUSTER, tp=8, pp=2, global_batch=2, dtype="bf16")
    hand = L * (4 * H * H + 3 * H * FFN + 2 * H) + H + 2 * V * H
    assert hand == 13_015_864_320
    assert result.to_dict()["meta"]["parameters"] == hand


@pytest.mark.parametrize("recompute", ["full", "none"])
def test_tflops_mfu_and_tokens_per_second_match_a_hand_count(tmp_path, recompute):
    """Model FLOPs per token: 6 per weight of every GEMM (the layers' and the LM head's; the token table is a
    lookup) plus attention's QKᵀ and AV over the whole s × s square, 12·l·s·h (Narayanan et al. 2021; PaLM's
    MFU). Hardware FLOPs (Korthikanti et al. 2022) add what runs again: under full recompute each layer's forward,
    2·l·(4h² + 3h·ffn) + 4·l·s·h (not the LM head's), and with FlashAttention-2 its backward's second QKᵀ, 2·l·s·h.
    The norms' few weights (6·(2l + 1)·h FLOPs a token, 3·10⁻⁵ of the total) are inside the tolerance."""
    gpus, batch = 16, 64
    result, th = archsim.train(_llama2_13b(tmp_path), cluster=CLUSTER, tp=4, pp=2, dp=2, global_batch=batch,
                               recompute=recompute, dtype="bf16")
    seconds, tokens = result.iteration_seconds, batch * SEQ
    layer_gemms = L * (4 * H * H + 3 * H * FFN)
    model = 6 * (layer_gemms + V * H) + 12 * L * SEQ * H
    rerun = (2 * layer_gemms + 4 * L * SEQ * H if recompute == "full" else 0) + 2 * L * SEQ * H
    assert th.tokens_per_second == pytest.approx(tokens / seconds, rel=1e-12)
    assert th.tflops_per_gpu == pytest.approx(model * tokens / seconds / gpus / 1e12, rel=1e-4)
    assert th.hardware_tflops_per_gpu == pytest.approx((model + rerun) * tokens / seconds / gpus / 1e12, rel=1e-4)
    peak = 132 * 1.83e9 * 4096  # H100 SXM5: 132 SMs × 1,830 MHz boost × 4,096 dense bf16 FLOP/clock/SM = 989.4 T
    assert th.mfu == pytest.approx(model * tokens / seconds / gpus / peak, rel=1e-3)
    assert 0 < th.mfu < 1


def _runs_file(tmp_path: Path) -> str:
    path = tmp_path / "runs.csv"
    path.write_text("tp,pp,dp,micro_batch,global_batch\n8,2,1,1,4\n4,2,2,1,4\n")
    return str(path)


def test_every_flag_train_runs_reads_beside_runs_is_a_keyword_of_train_runs():
    """`archsim train --runs` ran every row with --mtp-layers, --overlap-moe-expert-parallel-comm and
    --moe-shared-expert-overlap, which archsim.train_runs did not take (docs/api.md: the flags as keywords)."""
    import inspect

    elsewhere = {dest for _, dest in (*RUNS_SET_PER_ROW, *RUNS_APART)} | set(CLI_ONLY) | {
        "runs", "implementation"}  # --implementation pytorch-eager is refused beside --runs
    read = [name for name in keywords("train") if name not in elsewhere]
    accepted = set(inspect.signature(archsim.train_runs).parameters)
    assert "mtp_layers" in read and [name for name in read if name not in accepted] == []


def test_train_runs_mtp_layers_prices_as_the_commands_flag(tmp_path, capsys):
    model, runs = _llama2_13b(tmp_path), _runs_file(tmp_path)
    assert main(["train", model, "--cluster", CLUSTER, "--runs", runs, "--dtype", "bf16", "--mtp-layers", "1",
                 "--format", "json"]) == 0
    cli = [row["predicted_seconds"] for row in json.loads(capsys.readouterr().out)["rows"]]
    with_mtp = archsim.train_runs(model, runs=runs, cluster=CLUSTER, dtype="bf16", mtp_layers=1)
    without = archsim.train_runs(model, runs=runs, cluster=CLUSTER, dtype="bf16")
    assert [row["predicted_seconds"] for row in with_mtp] == cli
    # one more layer, its 2h → h projection and a second LM head on the last stage: slower
    assert all(a["predicted_seconds"] > b["predicted_seconds"] for a, b in zip(with_mtp, without))


def test_train_runs_overlap_flag_is_checked_on_each_row_as_the_command_does(tmp_path, capsys):
    model, runs = _llama2_13b(tmp_path), _runs_file(tmp_path)
    assert main(["train", model, "--cluster", CLUSTER, "--runs", runs, "--overlap-moe-expert-parallel-comm"]) == 2
    assert "line 2" in capsys.readouterr().err
    with warnings.catch_warnings(), pytest.raises(InputError, match="needs EP > 1") as caught:
        warnings.simplefilter("ignore")
        archsim.train_runs(model, runs=runs, cluster=CLUSTER, overlap_moe_expert_parallel_comm=True)
    assert caught.value.where.line == 2


@pytest.mark.parametrize("flag", [["--gantt", "g.html"], ["--chrome-trace", "t.json"], ["--schedule-csv", "s.csv"],
                                  ["--sweep", "tp=4,8"]])
def test_a_timeline_output_beside_runs_is_not_told_to_become_a_column(tmp_path, capsys, flag):
    """`--runs … --gantt g.html` was told "each row of the runs file sets its own parallelism …; give them as its
    columns": a runs file has no gantt column. The line now says --runs draws no timeline and how to get one."""
    code = main(["train", _llama2_13b(tmp_path), "--cluster", CLUSTER, "--runs", _runs_file(tmp_path), *flag])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and flag[0] in err
    assert "as its columns" not in err and "without --runs" in err


def test_ep_on_a_dense_model_names_every_model_type_whose_experts_are_read(tmp_path, capsys):
    """The refusal named mixtral, qwen2_moe and qwen3_moe only; DeepSeek-V2/V3's experts are read too
    (docs/formats.md, since 2026-12-04)."""
    assert main(["train", _llama2_13b(tmp_path), "--cluster", CLUSTER, "--dp", "2", "--global-batch", "2",
                 "--ep", "2"]) == 2
    err = capsys.readouterr().err
    assert "is dense" in err and all(kind in err for kind in ("mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v2",
                                                               "deepseek_v3"))


@pytest.mark.parametrize("command, flag, told", [
    ("search", ["--runs", "runs.csv"], "--runs is archsim train's"), ("search", ["--sweep", "tp=1,2"], "archsim train's"),
    ("train", ["--top", "3"], "--top is archsim search's"), ("train", ["--pareto-html", "p.html"], "archsim search's")])
def test_another_jobs_flag_says_whose_it_is(tmp_path, capsys, command, flag, told):
    """`archsim search … --runs runs.csv` was told "did you mean '--chunks'?", `train --top 3` nothing: each is
    another job's flag, which the line now names, as `search --tp` is told (docs/search.md)."""
    code = main([command, _llama2_13b(tmp_path), "--cluster", CLUSTER, "--global-batch", "8", *flag])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and told in err and "did you mean" not in err


@pytest.mark.parametrize("job, keyword, told", [
    ("search", "runs", "archsim.train_runs(model, runs=…, cluster=…)"), ("train", "runs", "archsim.train_runs("),
    ("train", "sweep", "archsim.train_sweep(model, sweep="), ("train", "top", "top is archsim.search's"),
    ("train", "format", "to_dict() is the --format json document")])
def test_a_keyword_of_another_job_or_of_the_commands_output_says_what_to_call(tmp_path, job, keyword, told):
    """`archsim.search(runs=…)` was told "did you mean 'chunks'?", `archsim.train(runs=…)` only that the keyword is
    unknown: the line now names the function that does it."""
    with pytest.raises(InputError) as caught:
        getattr(archsim, job)(_llama2_13b(tmp_path), cluster=CLUSTER, global_batch=8, **{keyword: "x"})
    assert caught.value.where.field == keyword and told in caught.value.message
    assert "did you mean" not in caught.value.message


def test_the_gantt_keywords_advice_writes_the_page(tmp_path):
    """`archsim.train(gantt=…)` names archsim.report.gantt.write_gantt(result.timeline, PATH): that call works."""
    from archsim.report.gantt import write_gantt

    model = _llama2_13b(tmp_path)
    with pytest.raises(InputError, match=r"archsim\.report\.gantt\.write_gantt\(result\.timeline, PATH\)"):
        archsim.train(model, cluster=CLUSTER, tp=8, pp=2, global_batch=4, gantt=str(tmp_path / "g.html"))
    result, _ = archsim.train(model, cluster=CLUSTER, tp=8, pp=2, global_batch=4)
    page = write_gantt(result.timeline, tmp_path / "g.html")
    assert "plotly" in page.read_text(encoding="utf-8")


VTRAIN_HEADER = ("# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,tensor parallelism,"
                 "data parallelism,pipeline parallelism,iteration time (ms)")


@pytest.mark.parametrize("row, field, said", [
    ("8,64,x,1024,16,24,1024,2,2,2,100", "micro batch", "got 'x'"),
    ("8,64,4,1024,16,24,1024,2,2,2,-100", "iteration time (ms)", "got '-100'"),
    ("8,64,4,1024,16,24,1024,3,2,2,100", "# gpus", "8 GPUs ≠ TP × DP × PP = 3 × 2 × 2 = 12")])
def test_a_bad_row_of_vtrains_layout_names_its_column(tmp_path, capsys, row, field, said):
    """docs/formats.md: a runs file's bad row is named by line and column. In vTrain's layout the line alone was
    named (`line 2: GPUs ≠ TP × DP × PP`, no figures), where the archsim layout names the column too."""
    runs = tmp_path / "vtrain.csv"
    runs.write_text(f"{VTRAIN_HEADER}\n{row}\n")
    assert main(["train", "gpt_1024h_24l", "--cluster", str(ROOT / "configs" / "clusters" / "a100_node.toml"),
                 "--runs", str(runs)]) == 2
    err = capsys.readouterr().err
    assert f"line 2, field '{field}'" in err and said in err


def test_search_with_a_timeline_and_no_configuration_says_why_there_is_none(tmp_path, capsys):
    """`search --gpus 3 --gantt g.html` (no TP × PP × DP of 3 GPUs divides a 40-head, 40-layer model's work at batch
    512) was refused as "no configuration fits", none having been costed, and without the note's advice: the line
    now says why, as the search without --gantt notes it."""
    code = main(["search", _llama2_13b(tmp_path), "--cluster", CLUSTER, "--global-batch", "512", "--gpus", "3",
                 "--gantt", str(tmp_path / "g.html")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "argument --gantt" in err and "no split of them" in err
    assert "--gpus 2 or --gpus 4" in err and not (tmp_path / "g.html").exists()


def test_mfu_above_one_under_fp8_is_what_the_docs_say(tmp_path):
    """MFU divides by --dtype's peak under --fp8 (docs/training.md, "FP8 training"), so a run whose fp8 GEMMs beat
    bf16's dense peak reads above 1; docs/formats.md called it a fraction 0–1. Hand check: mfu × bf16 peak =
    mfu_at_fp8_peak × fp8 peak (H100 SXM5: 989.4 and 1,978.9 dense TFLOP/s, NVIDIA's datasheet halves of 1,979 and
    3,958 with sparsity)."""
    model = tmp_path / "wide.toml"
    model.write_text('[transformer]\nfamily = "gpt"\nlayers = 2\nhidden = 16384\nheads = 128\nvocab = 32000\n'
                     "seq = 2048\n")
    result, rates = archsim.train(str(model), cluster=str(ROOT / "configs" / "clusters" / "h100_1gpu.toml"),
                                  global_batch=8, dtype="bf16", fp8="e4m3", recompute="none")
    meta = result.to_dict()["meta"]
    assert rates.mfu > 1 and meta["mfu_peak"] == "bf16" and 0 < meta["mfu_at_fp8_peak"] < 1
    assert rates.mfu / meta["mfu_at_fp8_peak"] == pytest.approx(3958 / 1979, rel=1e-3)
    row = next(line for line in (ROOT / "docs" / "formats.md").read_text(encoding="utf-8").splitlines()
               if line.startswith("| `mfu` |"))
    assert "above 1 possible with `--fp8`" in row


def test_a_sweep_over_cp_and_cp_comm_prices_each_point_as_train_does(tmp_path, capsys):
    """--cp is train's flag and a runs file's column but was no --sweep axis (`--sweep cp=1,2`: "expected KEY=V1,V2,…
    with KEY one of …"); a long-context plan compares CP degrees and their exchanges. Each point against `archsim train`
    run alone with its flags, and tokens/s against global batch × sequence over the point's own time."""
    model, batch = _llama2_13b(tmp_path), 8
    common = ["--cluster", CLUSTER, "--tp", "4", "--pp", "2", "--global-batch", str(batch), "--dtype", "bf16",
              "--recompute", "none"]
    assert main(["train", model, *common, "--sweep", "cp=1,2", "--sweep", "cp_comm=p2p,a2a", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["cp"], r["cp_comm"], r["gpus"]) for r in rows] == [(1, "p2p", 8), (1, "a2a", 8), (2, "p2p", 16),
                                                                  (2, "a2a", 16)]
    for row in rows[2:]:
        assert main(["train", model, *common, "--cp", "2", "--cp-comm", row["cp_comm"], "--format", "json"]) == 0
        alone = json.loads(capsys.readouterr().out)["meta"]
        assert row["iteration_seconds"] == alone["iteration_seconds"] and row["peak_memory_gib"] == alone["peak_memory_gib"]
        assert row["tokens_per_second"] == pytest.approx(batch * SEQ / row["iteration_seconds"], rel=1e-12)


@pytest.mark.parametrize("row, field", [("4,2,1,1,4,\"full\"", "recompute"), ("'8',2,1,1,4,full", "tp")])
def test_a_quoted_cell_of_a_runs_row_is_told_it_is_quoted(tmp_path, capsys, row, field):
    """A spreadsheet exported with its text cells quoted: the row's `"full"` was refused as none of none, selective,
    full (did you mean 'full'?), the quotes unnamed; the header's quotes had their own line (docs/formats.md)."""
    runs = tmp_path / "runs.csv"
    runs.write_text(f"tp,pp,dp,micro_batch,global_batch,recompute\n{row}\n")
    assert main(["train", _llama2_13b(tmp_path), "--cluster", CLUSTER, "--runs", str(runs)]) == 2
    err = capsys.readouterr().err
    assert f"line 2, field '{field}': quoted cells are not read" in err and err.count("\n") == 1


def test_sweeps_help_names_every_axis(capsys):
    """`archsim train --help` is where a user reads which KEYs --sweep takes: it left out fsdp_reshard and
    fsdp_grad_sync, which the sweep took (archsim.training.sweep.AXES)."""
    from archsim.training.sweep import AXES

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    said = text[text.index("--sweep KEY=V1,V2,… sweep an axis ("):].split("(", 1)[1].split(")")[0]
    assert [key for key in AXES if key not in said.replace(",", " ").replace(":", " ").split()] == []


def test_a_sweep_point_is_refused_for_the_reason_train_gives_it(tmp_path, capsys):
    """TP 3 on a 40-head model, PP 2, DP 2 (12 of 16 GPUs): `train` refuses the heads (the model's refusal before
    the cluster's, train_layout.lay_out); the sweep's row said its TP group straddles two servers, which another
    cluster could fix and the heads no cluster can."""
    model = _llama2_13b(tmp_path)
    common = ["--cluster", CLUSTER, "--pp", "2", "--dp", "2", "--global-batch", "8"]
    assert main(["train", model, *common, "--tp", "3"]) == 2
    refused = capsys.readouterr().err.split("argument --tp: ")[1].strip()
    assert main(["train", model, *common, "--sweep", "tp=3,4", "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["tp"] == 3 and row["error"] == refused and "must divide the heads" in refused
