"""train's and search's --fp8 end to end: the refusals (one line, nothing printed), the scaling terms by hand, the
library's keyword giving the flag's numbers, runs files and sweeps, search's rows, and fp8 never slower than bf16 on
a GEMM-bound model (archsim/training/fp8_ops.py, fp8_scaling.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from api_parity_helpers import cli_error, cli_json
from test_docs import ROOT

import archsim
from archsim.devices.gpu_lookup import gpu
from archsim.errors import InputError
from archsim.training.cluster_file import load_gpu_cluster, single_node
from archsim.training.fitted import A100_KERNELS
from archsim.training.fp8_ops import check_fp8, fp8_weight_parameters
from archsim.training.fp8_scaling import scaling_seconds, weight_cast_seconds
from archsim.training.parallel import Parallelism
from archsim.training.run import train
from archsim.workload.model_files import load_transformer
from archsim.workload.transformer import TransformerConfig

H100_NODE = "configs/clusters/h100_2_servers.toml"
SMALL = "configs/transformers/gpt_1024h_24l.json"
BASE = ["train", SMALL, "--cluster", H100_NODE, "--global-batch", "8", "--dtype", "bf16"]


@pytest.mark.parametrize(("cluster", "flags", "said"), [
    ("configs/clusters/a100_node.toml", [],
     "needs a device with an fp8 peak (Hopper: H100, H200); NVIDIA A100 SXM4 80GB has fp16, bf16, tf32, fp32, fp64"),
    ("configs/clusters/testbed_v100_gpu.toml", [], "needs a device with an fp8 peak"),
    ("configs/clusters/scalesim_32x32_device.toml", ["--attention", "standard"],  # failed before: no way named
     "has fp32, fp16, bf16 (a device TOML states one as [compute.peak_tflops] fp8, in TFLOP/s)"),
    (H100_NODE, ["--dtype", "fp32"], ("runs beside a 16-bit --dtype (Transformer Engine's higher precision: bf16 or "
                                     "fp16), not --dtype fp32")),
    (H100_NODE, ["--dp", "2", "--fsdp"], "is not modelled with --fsdp"),
    (H100_NODE, ["--implementation", "pytorch-eager"], ("is Transformer Engine's, run by Megatron-LM: not with "
                                                       "--implementation pytorch-eager")),
])
def test_fp8_is_refused_in_one_line_where_it_cannot_run(cluster, flags, said, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    argv = ["train", SMALL, "--cluster", cluster, "--global-batch", "8", *flags, "--fp8", "hybrid"]
    error = cli_error(argv, capsys)
    assert error.startswith("archsim train: error: argument --fp8: --fp8 hybrid ") and said in error
    assert "\n" not in error


def test_a_t4_and_an_array_device_without_an_fp8_peak_are_refused_and_one_with_it_runs(tmp_path, capsys, monkeypatch):
    with pytest.raises(InputError, match="NVIDIA T4 has fp16, fp32"):
        check_fp8("e4m3", gpu("t4"), "fp16")
    monkeypatch.chdir(ROOT)
    device = (ROOT / "configs" / "devices" / "tpu_v4_like.toml").read_text()
    (tmp_path / "cluster.toml").write_text('[cluster]\nname = "one"\n\n[[servers]]\ncount = 1\ngpus = 1\n'
                                           'intra_server_gbps = 2400\ndevice = "chip.toml"\n')
    argv = ["train", SMALL, "--cluster", str(tmp_path / "cluster.toml"), "--global-batch", "2", "--dtype", "bf16"]
    # 2 · 8 arrays · 128 · 128 · 1.05 GHz = 275.25 TFLOP/s: the rate of its fp8 GEMMs too, not twice it
    (tmp_path / "chip.toml").write_text(device.replace("[memory]", "[compute.peak_tflops]\nfp8 = 550.5\n\n[memory]"))
    assert "state the fp8 peak as that" in cli_error([*argv, "--fp8", "hybrid"], capsys)
    (tmp_path / "chip.toml").write_text(device.replace("[memory]", "[compute.peak_tflops]\nbf16 = 275.25\nfp8 = "
                                                                   "275.25\n\n[memory]", 1))
    plain, fp8 = (cli_json([*argv, *more], capsys)["meta"] for more in ([], ["--fp8", "hybrid"]))
    assert fp8["fp8"] == "hybrid" and fp8["mfu_at_fp8_peak"] == pytest.approx(fp8["mfu"])
    # the arrays' own rate at 1-byte operands: their GEMMs no faster, the casts added
    assert fp8["iteration_seconds"] > plain["iteration_seconds"]


def test_the_scaling_terms_in_hand_counts():
    """One H100, 2 layers of 4 fp8 GEMMs: a micro-batch's amaxes (4 bytes × 3 a GEMM forward, 2 backward) are
    concatenated (read, written), none all-reduced (one rank), and updated (the amax read, the history of 1 and the
    scale read and written): 7 × the amaxes' bytes, two kernels. The weights' cast reads 2 and writes 1 + 1 bytes a
    parameter, one kernel a GEMM."""
    c = TransformerConfig("tiny-llama", "llama", 2, 64, 4, 256, 32, 128, 2, False)
    par = Parallelism(global_batch=2, fp8="hybrid")
    machine = replace(single_node("h100-80gb-sxm", 1), dtype="bf16").machine(par)
    hbm, k = 3350e9 * A100_KERNELS.memory, A100_KERNELS.launch_s
    forward, backward = scaling_seconds(c, par, machine, 2)
    assert forward == pytest.approx(7 * 4 * 3 * 4 * 2 / hbm + 2 * k, rel=1e-12)
    assert backward == pytest.approx(7 * 4 * 2 * 4 * 2 / hbm + 2 * k, rel=1e-12)
    weights = 64 * 128 + 64 * 64 + 3 * 64 * 128  # QKV (4 + 2·2 heads of 16), projection, SwiGLU
    assert fp8_weight_parameters(c, 1) == weights
    assert weight_cast_seconds(c, par, machine, 0) == pytest.approx(4 * 2 * weights / hbm + 4 * 2 * k, rel=1e-12)
    assert scaling_seconds(c, replace(par, fp8=None), machine, 2) == (0.0, 0.0)
    assert scaling_seconds(c, par, machine, 0) == (0.0, 0.0)


def test_the_iteration_holds_the_scaling_terms(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    c = load_transformer(SMALL)
    cluster = load_gpu_cluster(H100_NODE, "bf16")
    par = Parallelism(tp=2, pp=2, dp=2, global_batch=16, micro_batch=2, sequence_parallel=True, fp8="hybrid")
    machines = cluster.laid_out(par)
    result = train(c, par, machines[0], machines)
    rank = result.finishing_rank  # 12 layers a stage, one stage a rank, 4 micro-batches
    assert result.breakdown["fp8_scaling"] == pytest.approx(4 * sum(scaling_seconds(c, par, machines[rank], 12)))
    assert result.breakdown["fp8_weight_cast"] == result.post[rank]["fp8_weight_cast"] == pytest.approx(
        weight_cast_seconds(c, par, machines[rank], rank))
    assert "fp8_scaling" not in train(c, replace(par, fp8=None), machines[0], machines).breakdown


def test_the_gantts_note_names_the_weights_cast(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    from archsim import cli

    for more, named in (([], False), (["--fp8", "hybrid"], True)):
        assert cli.main([*BASE, *more, "--gantt", str(tmp_path / "g.html")]) == 0
        page = (tmp_path / "g.html").read_text(encoding="utf-8")
        assert ("the fp8 weights&#x27; cast, priced here" in page) is named


def test_the_librarys_fp8_gives_the_flags_numbers(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    meta = cli_json([*BASE, "--tp", "2", "--sequence-parallel", "--fp8", "hybrid"], capsys)["meta"]
    result, rates = archsim.train(SMALL, cluster=H100_NODE, global_batch=8, dtype="bf16", tp=2, sequence_parallel=True,
                                  fp8="hybrid")
    assert result.iteration_seconds == meta["iteration_seconds"] and rates.mfu == meta["mfu"]
    assert (meta["fp8"], meta["mfu_peak"]) == ("hybrid", "bf16")
    assert meta["mfu_at_fp8_peak"] == pytest.approx(meta["mfu"] * 989.4 / 1978.9, rel=1e-12)
    plain = cli_json([*BASE, "--tp", "2", "--sequence-parallel"], capsys)["meta"]
    assert not {"fp8", "mfu_peak", "mfu_at_fp8_peak"} & set(plain)  # without fp8 the meta is as before


def test_a_runs_files_rows_each_take_their_fp8_and_a_sweep_every_point(tmp_path, capsys, monkeypatch):
    """A runs file's fp8 column (hybrid, e4m3 in any case, empty or none: off) and fp8_param_gather column: each row
    as train runs it with those flags; --fp8 and --fp8-param-gather beside --runs refused, as --ep is."""
    monkeypatch.chdir(ROOT)
    runs = Path(tmp_path / "runs.csv")
    runs.write_text("tp,pp,dp,micro_batch,global_batch,fp8,fp8_param_gather,distributed_optimizer\n"
                    "2,1,1,1,8,,,\n2,1,1,1,8,E4M3,,\n1,2,1,1,8,none,false,\n1,1,2,1,8,hybrid,true,true\n")
    document = cli_json([*BASE[:4], "--dtype", "bf16", "--runs", str(runs)], capsys)
    assert "fp8" not in document["meta"]
    assert [(r["fp8"], r["fp8_param_gather"]) for r in document["rows"]] == [
        ("none", False), ("e4m3", False), ("none", False), ("hybrid", True)]
    flags = [[], ["--fp8", "e4m3"], [], ["--fp8", "hybrid", "--fp8-param-gather", "--distributed-optimizer"]]
    for row, more in zip(document["rows"], flags, strict=True):
        one = cli_json([*BASE, "--tp", str(row["tp"]), "--pp", str(row["pp"]), "--dp", str(row["dp"]),
                        "--micro-batch", "1", *more], capsys)["meta"]
        assert (row["predicted_seconds"], row["peak_memory_gib"]) == (one["iteration_seconds"], one["peak_memory_gib"])
    listed = archsim.train_runs(SMALL, runs=runs, cluster=H100_NODE, dtype="bf16")
    assert [r["predicted_seconds"] for r in listed] == [r["predicted_seconds"] for r in document["rows"]]
    (tmp_path / "plain.csv").write_text("tp,pp,dp,micro_batch,global_batch,fp8\n2,1,1,1,8,\n")
    plain = cli_json([*BASE[:4], "--dtype", "bf16", "--runs", str(tmp_path / "plain.csv")], capsys)
    assert "fp8" not in plain["rows"][0]  # the column only where a row sets it
    for flag in (["--fp8", "hybrid"], ["--fp8-param-gather"]):
        error = cli_error([*BASE[:4], "--dtype", "bf16", "--runs", str(runs), *flag], capsys)
        assert error.startswith(f"archsim train: error: argument --runs: {flag[0]}: each row of the runs file sets")
    runs.write_text("tp,pp,dp,micro_batch,global_batch,fp8\n2,1,1,1,8,hybrid\n2,1,1,1,8,e5m2\n")
    error = cli_error([*BASE[:4], "--dtype", "bf16", "--runs", str(runs)], capsys)
    assert error == (f"archsim train: error: {runs}, line 3, field 'fp8': expected one of hybrid, e4m3, none (any "
                     "case), got 'e5m2'")
    runs.write_text("tp,pp,dp,micro_batch,global_batch,fp8\n2,1,1,1,8,\n2,1,1,1,8,hybrid\n")
    error = cli_error(["train", SMALL, "--cluster", "configs/clusters/a100_node.toml", "--dtype", "bf16", "--runs",
                       str(runs)], capsys)
    assert f"{runs}, line 3, field 'fp8': " in error and "needs a device with an fp8 peak" in error
    swept = cli_json([*BASE, "--sweep", "fp8=none,hybrid"], capsys)["rows"]
    assert [r["fp8"] for r in swept] == ["none", "hybrid"]
    assert swept[1]["iteration_seconds"] == cli_json([*BASE, "--fp8", "hybrid"], capsys)["meta"]["iteration_seconds"]
    assert swept[0]["iteration_seconds"] == cli_json(BASE, capsys)["meta"]["iteration_seconds"]
    error = cli_error([*BASE, "--sweep", "fp8=e5m2"], capsys)
    assert "fp8: expected one of hybrid, e4m3, none, got" in error


def test_search_rows_carry_fp8_and_say_how_to_run_it(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    flags = ["--global-batch", "16", "--top", "3", "--schedule", "1f1b", "--max-micro-batch", "2", "--refine", "0",
             "--gpus", "8", "--dtype", "bf16"]
    document = cli_json(["search", SMALL, "--cluster", H100_NODE, *flags, "--fp8", "hybrid"], capsys)
    assert (document["meta"]["fp8"], document["meta"]["mfu_peak"]) == ("hybrid", "bf16")
    row = document["rows"][0]
    assert row["fp8"] == "hybrid" and "--fp8-format hybrid" in row["megatron_args"]
    assert row["command"].endswith(" --fp8 hybrid") or " --fp8 hybrid " in row["command"]
    again = cli_json(row["command"].split()[1:], capsys)["meta"]
    assert again["iteration_seconds"] == pytest.approx(row["iteration_seconds"], rel=1e-9)
    error = cli_error(["search", SMALL, "--cluster", "configs/clusters/a100_node.toml", *flags[:-2], "--fp8",
                       "hybrid"], capsys)
    assert "needs a device with an fp8 peak" in error


@pytest.mark.parametrize("layout", [{"tp": 8, "pp": 8, "dp": 1},
                                    {"tp": 4, "pp": 4, "dp": 2, "cp": 2, "interleave": 5}])
def test_fp8_is_never_slower_on_a_gemm_bound_model(layout, monkeypatch):
    """Llama 3 70B on 64 H100s: every fp8 GEMM of a layer, and the iteration, faster than in bf16; fp8's quantize
    kernels cost less than its GEMMs save."""
    monkeypatch.chdir(ROOT)
    c = load_transformer("configs/transformers/llama3_70b.toml")
    cluster = load_gpu_cluster("configs/clusters/dgx_h100_superpod.toml", "bf16")
    par = Parallelism(**layout, global_batch=128, micro_batch=1, recompute="none", sequence_parallel=True,
                      attention="flash", distributed_optimizer=True)
    machines = cluster.laid_out(par)
    plain, fp8 = (train(c, p, machines[0], machines) for p in (par, replace(par, fp8="hybrid")))
    assert fp8.iteration_seconds < plain.iteration_seconds
    seconds = {(r["piece"], r["name"], r["op"]): r["seconds"] for r in plain.ops}
    gemms = [(r, seconds[(r["piece"], r["name"], r["op"])]) for r in fp8.ops
             if r["piece"] == "layer" and r["name"] in ("qkv", "proj", "gate", "up", "fc2")]
    assert len(gemms) == 15 and all(r["seconds"] < theirs for r, theirs in gemms)
    casts = sum(r["seconds"] for r in fp8.ops if ".fp8_" in r["name"])
    assert casts < sum(theirs - r["seconds"] for r, theirs in gemms)


CHECK = {  # docs/training.md, "FP8 training": the check's layouts and the table's figures (s/step bf16, fp8)
    "llama3_8b": (["--cp", "2", "--dp", "4"], (12.54, 9.76)),  # 12.51, 9.73 before the CP ring's attention steps
    "llama3_70b": (["--tp", "4", "--pp", "4", "--cp", "2", "--dp", "2", "--interleave", "5", "--sequence-parallel"],
                   (15.74, 11.83)),  # 15.83, 11.95 until 2026-12-06 (TP collectives on LL128); 15.74, 11.89 until
                                     # 2026-12-04: the SP re-gathers' δ GEMMs on the SMs NCCL
}                                      # leaves them (archsim/training/comm_sms.py); 15.80, 11.92 before the ring's


@pytest.mark.parametrize("model", sorted(CHECK))
def test_the_docs_check_against_nvidias_step_times_states_what_train_prints(model, capsys, monkeypatch):
    """The table's archsim figures are these commands' (the NVIDIA figures beside them are never fitted on)."""
    monkeypatch.chdir(ROOT)
    layout, expected = CHECK[model]
    argv = ["train", model, "--cluster", "configs/clusters/dgx_h100_superpod.toml", *layout, "--global-batch", "128",
            "--micro-batch", "1", "--recompute", "none", "--dtype", "bf16", "--distributed-optimizer"]
    plain, fp8 = (cli_json([*argv, *more], capsys)["meta"] for more in ([], ["--fp8", "hybrid"]))
    assert (round(plain["iteration_seconds"], 2), round(fp8["iteration_seconds"], 2)) == expected
    if model == "llama3_8b":  # the text's memory: fp8's cached weights outweigh the inputs it halves
        assert (round(plain["peak_memory_gib"], 1), round(fp8["peak_memory_gib"], 1)) == (76.2, 87.0)
        assert plain["fits_memory"] and not fp8["fits_memory"]
        params = cli_json([*argv, "--fp8", "hybrid", "--fp8-param-gather"], capsys)["meta"]  # NeMo's fp8 recipe's
        assert (round(params["peak_memory_gib"], 1), round(params["iteration_seconds"], 2)) == (74.0, 9.74)
        assert params["fits_memory"] and fp8["peak_memory_gib"] - params["peak_memory_gib"] == pytest.approx(13.0)
        text = (ROOT / "docs" / "training.md").read_text(encoding="utf-8")
        assert "it fits: 74.0 GiB" in text and "9.74 s a step" in text
    text = (ROOT / "docs" / "training.md").read_text(encoding="utf-8")
    assert f"{expected[0]:.2f} / " in text and f"{expected[1]:.2f} / " in text
