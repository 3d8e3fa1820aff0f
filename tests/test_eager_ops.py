"""The plain-PyTorch op list (:mod:`archsim.training.eager_ops`) against first principles and the
H200 probe's kernel counts.

References: the bytes each kernel of ``benchmarks/gpu_train_measure.py``'s layer must move, summed by
hand below (not read from the module); the GEMMs' FLOPs in closed form (24·T·h² + 4·T·s·h per forward
with f = 4h); torch.profiler's launch counts in the committed H200 probe CSV (recompute full minus
none = the recomputed forwards' kernels).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from archsim.devices.device import catalog_device
from archsim.errors import InputError
from archsim.training.calibrate import HOST_CONFIG, HOST_ROW, fit_probe, iteration_ops, read_probe
from archsim.training.cluster_file import single_node
from archsim.training.eager_ops import EAGER_OPTIMIZER_BYTES_PER_PARAMETER, eager_block_work, eager_head_work
from archsim.training.iteration import after_backward, model_pieces
from archsim.training.layer_ops import block_work
from archsim.training.machine import Machine
from archsim.training.parallel import Parallelism
from archsim.workload.transformer import TransformerConfig

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "benchmarks" / "results" / "gpu_efficiency_probe_h200.csv"
C = TransformerConfig("t", "gpt", 2, 64, 4, 1000, 32, 256, 4, True, 32)  # s 32, h 64, a 4, f 256


def elements(ops, kind=None) -> float:
    return sum(op.vector_elements for op in ops if kind is None or op.kind == kind)


@pytest.mark.parametrize("b", [1, 3])
def test_layer_bytes_are_each_kernels_reads_and_writes(b):
    t = C.seq * b
    x, f, s = t * C.hidden, t * C.ffn, C.seq * C.seq * b * C.heads
    # forward: LayerNorm x→y (2X) twice; masked_fill's clone and in-place fill (read + write each: 4S);
    # softmax read + write (2S); dropout on the probabilities (read, write, 1-byte mask: 2.5S); the
    # permuted context copied to [s, b, h] (2X); two dropouts (2.5X) and two residual adds (2 reads +
    # 1 write: 3X); GeLU (2F)
    forward = 2 * x + 4 * s + 2 * s + 2.5 * s + 2 * x + 2.5 * x + 3 * x + 2 * x + 2 * f + 2.5 * x + 3 * x
    # backward: LayerNorm dx (dy, x → dx: 3X) and its γ/β kernel (dy, x again: 2X), twice; the four
    # bias gradients read dY once (3X + X + F + X); split's backward concatenates dq, dk, dv (read 3X,
    # write 3X); baddbmm's backward scales dq and dk by 1/√d (read, write: 2X each); masked_fill of dP, clone
    # and fill (4S); softmax: CUDA's dy ∘ y product (read 2S, write S), then its kernel (y, dy∘y → dx: 3S);
    # dropouts (dy, mask → dx: 2.5S, 2.5X twice); autograd summing the residual stream's two gradients, twice
    # (3X); GeLU (x, dy → dx: 3F)
    backward = (2 * (3 * x + 2 * x) + 3 * x + x + f + x + 6 * x + 2 * 2 * x + 4 * s + 3 * s + 3 * s + 2.5 * s
                + 2 * 2.5 * x + 2 * 3 * x + 3 * f)
    work = eager_block_work(C, b)
    assert elements(work.forward) == pytest.approx(forward, abs=2)
    assert elements(work.backward) == pytest.approx(backward, abs=2)


def test_same_gemms_as_megatron_and_the_closed_form_flops():
    def flops(ops):
        return sum(2 * g.m * g.k * g.n * g.count for op in ops for g in op.gemms)

    b = 2
    t, h = C.seq * b, C.hidden
    eager, megatron = eager_block_work(C, b), block_work(C, b)
    assert flops(eager.forward) == flops(megatron.forward) == 24 * t * h * h + 4 * t * C.seq * h
    assert flops(eager.backward) == flops(megatron.backward) == 2 * flops(eager.forward)


def test_the_recomputed_forwards_kernels_match_the_profilers_count():
    """The probe's torch.profiler counts: recompute full launches L × (forward kernels) more than none."""
    launches = {r.name: r.count for r in read_probe(PROBE)[1] if r.section == "launches"}
    extra = launches[f"{HOST_ROW.removesuffix('_none')}_full"] - launches[HOST_ROW]
    assert extra == HOST_CONFIG.layers * len(eager_block_work(HOST_CONFIG, 1).forward)
    assert extra != HOST_CONFIG.layers * len(block_work(HOST_CONFIG, 1).forward)  # Megatron's fused list is shorter
    assert iteration_ops(HOST_CONFIG, "pytorch-eager", "full") - iteration_ops(HOST_CONFIG, "pytorch-eager") == extra


def test_probe_states_its_host_and_launches_per_megatron_op():
    """The probe writes its host iteration's op count in Megatron's list, and the fit divides by it:
    the training model counts a fit's per-op overheads in Megatron's ops whatever list runs."""
    rows = read_probe(PROBE)[1]
    host = next(r for r in rows if r.section == "host" and r.name == HOST_ROW)
    launches = next(r for r in rows if r.section == "launches" and r.name == HOST_ROW)
    assert host.ops == launches.ops == iteration_ops(HOST_CONFIG)
    fit = fit_probe(rows, catalog_device("h200"))
    synced = [r for r in rows if r.section == "host" and r.name == HOST_ROW + ".synchronized"]
    assert fit.efficiency.host_s == min(r.seconds / r.ops for r in [host, *synced])
    assert fit.kernels_per_op == launches.count / launches.ops


def test_head_moves_fp32_logits_each_way():
    t, v = C.seq, 1024  # 1000 padded to a multiple of 128
    work = eager_head_work(C, 1)
    # forward: fp16 → fp32 cast (read 2 + write 4 bytes), log-softmax (read 4, write 4), NLL (T values)
    assert elements(work.forward) == pytest.approx(2 * t * C.hidden + (3 + 4) * t * v + 2 * t)
    # backward: NLL's zeroed fp32 gradient (4), log-softmax backward (read dy, y; write: 12), cast back (6)
    assert elements(work.backward) == pytest.approx(5 * t * C.hidden + (2 + 6 + 3) * t * v)


def test_optimizer_bytes_per_parameter():
    # fp16 grad → fp32 (2 + 4), unscale in place (4 + 4), norm (4), Adam (read master, grad, m, v; write
    # master, m, v: 7 × 4), master → fp16 weight (4 + 2)
    assert EAGER_OPTIMIZER_BYTES_PER_PARAMETER == 6 + 8 + 4 + 28 + 6


def test_optimizer_step_pays_megatrons_kernel_gaps_not_one_per_eager_kernel():
    # The fit's per-kernel gap is stated per op of Megatron's list: the eager fp16 step (a copy per tensor, then
    # four multi-tensor kernels) pays it as often as Megatron's fused step, 4 times, whatever the layers.
    par = Parallelism(1, 1, 1, 8, 2)
    machine = replace(single_node().machine(par), implementation="pytorch-eager")
    gpu, k = machine.gpu, machine.kernels.memory_bound
    parameters = 1e6
    for layers in (2, 24):
        c = replace(C, layers=layers)
        step = after_backward(c, par, machine, 0, parameters)["optimizer"]
        by_hand = 52 * parameters / (gpu.hbm_bytes_per_s * k.memory) + 4 * k.launch_s
        assert step == pytest.approx(by_hand, rel=1e-12)


def test_default_is_megatron_and_bad_choices_fail():
    par = Parallelism(1, 1, 1, 8, 2)
    machine = single_node().machine(par)
    assert machine.implementation == "megatron"
    no_host = replace(machine, efficiency=replace(machine.efficiency, host_s=0.0))  # the GPU's time alone
    layer = model_pieces(C, par, no_host)["layer"]
    eager = model_pieces(C, par, replace(no_host, implementation="pytorch-eager"))["layer"]
    assert eager.forward > layer.forward and eager.backward_input > layer.backward_input
    with pytest.raises(InputError, match="implementation must be one of"):
        Machine(machine.gpu, machine.efficiency, machine.links, "apex")
    tp2 = Parallelism(2, 1, 1, 8, 2)
    with pytest.raises(InputError, match="one GPU"):
        model_pieces(C, tp2, replace(single_node().machine(tp2), implementation="pytorch-eager"))


@pytest.mark.long
def test_bench_predicts_with_the_eager_list_on_request(tmp_path):
    from benchmark_scripts import load_benchmark

    bench = load_benchmark("bench_vtrain_e2e")
    args = ["--measured", str(ROOT / "benchmarks" / "results" / "gpu_train_measured_h200.csv"),
            "--cluster", str(ROOT / "configs" / "clusters" / "h200_1gpu.toml"), "--efficiency-probe", str(PROBE)]
    texts = {}
    for implementation in ("megatron", "pytorch-eager"):
        md = tmp_path / f"{implementation}.md"
        assert bench.main([*args, "--implementation", implementation, "--markdown", str(md),
                           "--csv", str(tmp_path / f"{implementation}.csv")]) == 0
        texts[implementation] = md.read_text()
    assert "Op list: `pytorch-eager`" in texts["pytorch-eager"] and "Op list" not in texts["megatron"]
    committed = ROOT / "benchmarks" / "results" / "gpu_train_h200.md"
    assert texts["megatron"].split("\n", 4)[4] == committed.read_text().split("\n", 4)[4]  # unchanged by the variant


def test_an_eager_pass_is_issued_in_the_host_time_of_megatrons_ops():
    """The host's time per op is fitted per op of Megatron's list: a host-bound eager pass (17 forward
    kernels per layer) takes the host time of Megatron's 13 forward ops, not of its own 17."""
    par = Parallelism(1, 1, 1, 8, 2)
    machine = single_node().machine(par)
    slow_host = replace(machine, efficiency=replace(machine.efficiency, host_s=1.0))  # 1 s per op: host-bound
    megatron = model_pieces(C, par, slow_host)["layer"]
    eager = model_pieces(C, par, replace(slow_host, implementation="pytorch-eager"))["layer"]
    assert len(eager_block_work(C, 2).forward) == 17
    assert eager.forward == megatron.forward == pytest.approx(13.0)


def test_an_eager_pass_pays_the_fits_per_kernel_gap_as_often_as_megatrons_ops():
    """The training fit's gap per kernel (launch_s) is stated per op of Megatron's list too: an eager
    layer's forward (17 kernels) pays it 13 times in all, its backward (32) 19 times."""
    par = Parallelism(1, 1, 1, 8, 2)
    machine = single_node().machine(par)
    no_host = replace(machine, efficiency=replace(machine.efficiency, host_s=0.0))
    no_gap = replace(no_host, efficiency=replace(no_host.efficiency, launch_s=0.0))
    gap = no_host.efficiency.launch_s
    eager = model_pieces(C, par, replace(no_host, implementation="pytorch-eager"))["layer"]
    bodies = model_pieces(C, par, replace(no_gap, implementation="pytorch-eager"))["layer"]
    assert (len(eager_block_work(C, 2).forward), len(eager_block_work(C, 2).backward)) == (17, 32)
    assert eager.forward - bodies.forward == pytest.approx(13 * gap, rel=1e-9)
    both = eager.backward_input + eager.backward_weight - bodies.backward_input - bodies.backward_weight
    assert both == pytest.approx(19 * gap, rel=1e-9)


def test_eager_with_flash_attention_says_which_flag_to_give(capsys):
    """`train --implementation pytorch-eager --attention flash` was refused with "the pytorch-eager op list runs
    standard attention only", naming no flag; the line now names it. Still refused in fp32 (Hugging Face's modules:
    FlashAttention runs fp16/bf16 only); fp16 and bf16 run it (tests/test_eager_flash.py). (Without `--attention` it
    runs standard attention, the implementation's default: tests/test_user_trial_designer51b.py.)"""
    from archsim.cli import main

    root = Path(__file__).resolve().parents[1]
    assert main(["train", str(root / "configs/transformers/gpt2.json"), "--cluster",
                 str(root / "configs/clusters/h100_1gpu.toml"), "--global-batch", "1", "--dtype", "fp32",
                 "--implementation", "pytorch-eager", "--attention", "flash"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "--attention standard" in err
