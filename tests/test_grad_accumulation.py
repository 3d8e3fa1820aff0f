"""Gradient accumulation fused into the weight-gradient GEMM or run as a separate pass
(archsim.training.grad_accumulation), against a hand count of a tiny GPT's parameters and bytes."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from archsim.cli import main
from archsim.errors import InputError
from archsim.training.cluster_file import single_node
from archsim.training.grad_accumulation import accumulation, unfused_pass_seconds
from archsim.training.iteration import model_pieces
from archsim.training.parallel import Parallelism
from archsim.training.run import train
from archsim.training.stages import stage_times
from archsim.workload.transformer import TransformerConfig

ROOT = Path(__file__).resolve().parents[1]
TINY = TransformerConfig("tiny", "gpt", layers=2, hidden=64, heads=4, vocab=128, seq=16, ffn=256, kv_heads=4,
                         tied_embeddings=True, positions=16)
# By hand: a layer is qkv 64·192 + 192, proj 64·64 + 64, fc1 64·256 + 256, fc2 256·64 + 64 and two norms'
# γ, β (4 · 64): 49,984 parameters in 12 tensors; the first stage adds the token table (128 · 64, the
# vocabulary already a multiple of 128) and the positions (16 · 64), the last the final norm (2 · 64).
TINY_PARAMETERS = 2 * 49_984 + 128 * 64 + 16 * 64 + 2 * 64  # 109,312
# One pass by hand: 109,312 × 6 = 655,872 bytes at the A100 80GB's 2.039 TB/s × the stored memory-bound
# fraction 0.808 (1.647512 TB/s): 0.39810 µs, no per-kernel gap (the fit's gap is per Megatron op).
A100_HBM_BYTES_PER_S = 2.039e12
STORED_MEMORY_FRACTION = 0.808
TINY_PASS_SECONDS = 655_872 / (2.039e12 * 0.808)


def _machine(implementation: str = "megatron", gpus: int = 1):
    node = single_node("a100-80gb", gpus)
    return replace(node.machine(Parallelism()), implementation=implementation)


def test_one_pass_is_six_bytes_per_parameter_at_the_memory_rate_and_no_kernel_gap():
    machine = _machine()
    assert machine.gpu.hbm_bytes_per_s == A100_HBM_BYTES_PER_S
    assert machine.kernels.memory_bound.memory == STORED_MEMORY_FRACTION
    assert TINY_PARAMETERS * 6 == 655_872
    assert TINY_PASS_SECONDS == pytest.approx(0.39810e-6, rel=1e-4)
    par = Parallelism(global_batch=4, micro_batch=1, grad_accumulation="unfused")
    assert unfused_pass_seconds(TINY, par, machine, 2, True, True) == pytest.approx(TINY_PASS_SECONDS, rel=1e-12)


def test_one_gpu_iteration_grows_by_m_minus_one_passes():
    """One stage runs its micro-batches back to back: the iteration grows by exactly (m − 1) passes,
    (m − 1)/m of one in each micro-batch's weight backward."""
    machine = _machine()
    fused = Parallelism(global_batch=4, micro_batch=1, recompute="none")
    unfused = replace(fused, grad_accumulation="unfused")
    one_pass = TINY_PASS_SECONDS
    pieces = model_pieces(TINY, fused, machine)
    w_fused = stage_times(TINY, fused, machine, pieces).backward_weight[0]
    w_unfused = stage_times(TINY, unfused, machine, pieces).backward_weight[0]
    assert w_unfused - w_fused == pytest.approx(one_pass * 3 / 4, rel=1e-9)
    grown = train(TINY, unfused, machine).iteration_seconds - train(TINY, fused, machine).iteration_seconds
    assert grown == pytest.approx(3 * one_pass, rel=1e-9)


def test_the_breakdown_names_the_passes_and_leaves_the_bubble_alone():
    """The m − 1 passes are their own part of the breakdown, not pipeline wait: on one GPU there is no
    bubble, fused or unfused."""
    machine = _machine()
    fused = Parallelism(global_batch=4, micro_batch=1, recompute="none")
    unfused = replace(fused, grad_accumulation="unfused")
    parts = train(TINY, unfused, machine).breakdown
    assert parts["grad_accumulation"] == pytest.approx(3 * TINY_PASS_SECONDS, rel=1e-9)
    assert parts["pipeline_bubble_and_p2p"] == pytest.approx(0, abs=1e-12)
    assert train(TINY, fused, machine).breakdown["grad_accumulation"] == 0


def test_fused_has_no_pass_and_is_megatrons_default():
    machine = _machine()
    par = Parallelism(global_batch=4, micro_batch=1)
    assert accumulation(par, machine) == "fused"
    assert unfused_pass_seconds(TINY, replace(par, grad_accumulation="fused"), machine, 2, True, True) == 0.0
    assert train(TINY, par, machine).iteration_seconds == \
        train(TINY, replace(par, grad_accumulation="fused"), machine).iteration_seconds


def test_one_microbatch_has_nothing_to_add_into():
    par = Parallelism(global_batch=1, micro_batch=1, grad_accumulation="unfused")
    assert unfused_pass_seconds(TINY, par, _machine(), 2, True, True) == 0.0


def test_pytorch_eager_is_unfused_and_refuses_fused():
    eager = _machine("pytorch-eager")
    par = Parallelism(global_batch=4, micro_batch=1)
    assert accumulation(par, eager) == "unfused"
    with pytest.raises(InputError, match="no gradient-accumulation fusion"):
        accumulation(replace(par, grad_accumulation="fused"), eager)


def test_bad_value_is_refused():
    with pytest.raises(InputError):
        Parallelism(grad_accumulation="sometimes")


@pytest.mark.parametrize("tp, pp, dp, micro_batch, schedule, interleave", [
    (1, 1, 1, 1, "1f1b", 1), (2, 1, 1, 2, "1f1b", 1), (1, 2, 1, 1, "1f1b", 1), (2, 2, 2, 1, "1f1b", 1),
    (1, 2, 1, 1, "1f1b", 2), (1, 2, 1, 2, "zb-h1", 1), (1, 2, 2, 1, "gpipe", 1)])
def test_unfused_is_never_faster_than_fused(tp, pp, dp, micro_batch, schedule, interleave):
    c = replace(TINY, layers=8)
    fused = Parallelism(tp, pp, dp, 16 * dp, micro_batch, "full", False, interleave, schedule)
    machines = single_node("a100-80gb", tp * pp * dp).laid_out(fused)
    machine = machines[0]
    a = train(c, fused, machine, machines).iteration_seconds
    b = train(c, replace(fused, grad_accumulation="unfused"), machine, machines).iteration_seconds
    assert b > a


def test_train_command_and_api_take_it(tmp_path, capsys):
    from archsim import api

    model = tmp_path / "tiny.toml"
    model.write_text('[transformer]\nname = "tiny"\nfamily = "gpt"\nlayers = 2\nhidden = 64\nheads = 4\n'
                     'vocab = 128\nseq = 16\nffn = 256\n', encoding="utf-8")
    cluster = ROOT / "configs" / "clusters" / "h200_1gpu.toml"
    seconds = {}
    for mode in ("fused", "unfused"):
        assert main(["train", str(model), "--cluster", str(cluster), "--global-batch", "4",
                     "--grad-accumulation", mode, "--format", "json"]) == 0
        out = json.loads(capsys.readouterr().out)
        meta = out.get("meta", out)
        assert meta["grad_accumulation"] == mode
        seconds[mode] = meta["iteration_seconds"]
        result, _ = api.train(model, cluster=cluster, global_batch=4, grad_accumulation=mode)
        assert result.iteration_seconds == pytest.approx(seconds[mode], rel=1e-12)
    assert seconds["unfused"] > seconds["fused"]
    assert main(["train", str(model), "--cluster", str(cluster), "--global-batch", "4", "--attention", "standard",
                 "--implementation", "pytorch-eager", "--grad-accumulation", "fused"]) == 2
    assert "no gradient-accumulation fusion" in capsys.readouterr().err


def test_train_sweeps_it(capsys):
    model = ROOT / "configs" / "transformers" / "gpt_1024h_24l.json"
    assert main(["train", str(model), "--cluster", str(ROOT / "configs" / "clusters" / "a100_node.toml"),
                 "--global-batch", "16", "--tp", "2", "--pp", "2", "--dp", "2",
                 "--sweep", "grad_accumulation=fused,unfused", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {r["grad_accumulation"]: r["iteration_seconds"] for r in out["rows"]}
    assert rows["unfused"] > rows["fused"]


def test_search_command_and_api_take_it(tmp_path, capsys):
    from archsim import api
    from archsim.training.search_rows import RowContext, train_command

    model = tmp_path / "tiny.toml"
    model.write_text('[transformer]\nname = "tiny"\nfamily = "gpt"\nlayers = 4\nhidden = 64\nheads = 4\n'
                     'vocab = 128\nseq = 16\nffn = 256\n', encoding="utf-8")
    cluster = ROOT / "configs" / "clusters" / "a100_node.toml"
    kwargs = {"cluster": cluster, "gpus": 2, "global_batch": 8, "max_micro_batch": 2, "schedule": ["1f1b"],
              "recompute": ["none"], "top": 50}
    # a row is its whole layout: TP 2 comes with and without sequence parallelism
    layout = ("tp", "pp", "dp", "micro_batch", "sequence_parallel", "schedule", "interleave", "recompute",
              "attention", "dp_overlap", "stage_layers")
    fused = {tuple(r[f] for f in layout): r for r in api.search(model, **kwargs).rows}
    unfused = api.search(model, grad_accumulation="unfused", **kwargs).rows
    assert unfused and all(r["grad_accumulation"] == "unfused" for r in unfused)
    assert {tuple(r[f] for f in layout) for r in unfused} == set(fused)
    for r in unfused:
        k = tuple(r[f] for f in layout)
        assert r["iteration_seconds"] >= fused[k]["iteration_seconds"]
        assert "--no-gradient-accumulation-fusion" in r["megatron_args"] or not r["megatron_args"]
        assert "--grad-accumulation unfused" in train_command("m.toml", "c.toml", r, RowContext(8))
    with pytest.raises(InputError):
        api.search(model, grad_accumulation="never", **kwargs)
    assert main(["search", str(model), "--cluster", str(cluster), "--gpus", "2", "--global-batch", "8",
                 "--max-micro-batch", "2", "--schedule", "1f1b", "--recompute", "none",
                 "--grad-accumulation", "unfused", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = out["rows"] if isinstance(out, dict) and "rows" in out else out
    assert "--grad-accumulation unfused" in json.dumps(rows)
