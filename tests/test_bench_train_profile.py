"""The profiled iteration by kernel class (``benchmarks/bench_train_profile.py``) and the profiler run that feeds it
(``benchmarks/gpu_train_profile.py``).

References: kernel names read from the committed H200 profile, each assigned its class by hand from what the kernel
does (cuBLAS/nvjet GEMMs, PyTorch's FlashAttention-2, softmax, LayerNorm, dropout, fused Adam …); the file's own
``busy`` rows, recomputed here as the plain sum of its kernel rows; the profiler script run unchanged on the CPU.
"""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

import pytest
from benchmark_scripts import load_benchmark

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "benchmarks" / "results" / "gpu_train_profile_h200.csv"

# the start of a kernel name in the committed file → its class, assigned by hand
HAND = (
    ("Memset (Device)", "memset_memcpy"),
    ("nvjet_sm90_hsh_128x64_64x8_1x2_h_bz_NNT", "gemm"),  # cuBLAS's Hopper GEMM
    ("void cublasLt::splitKreduce_kernel<", "gemm"),  # a split-K GEMM's reduction: part of the GEMM
    ("void pytorch_flash::flash_fwd_kernel<", "flash"),
    ("void pytorch_flash::flash_bwd_dot_do_o_kernel<", "flash"),
    ("void (anonymous namespace)::softmax_warp_forward<c10::Half", "softmax"),
    ("void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<", "softmax"),  # the loss
    ("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernelTemplate<c10::Half", "layernorm"),
    ("void at::native::(anonymous namespace)::fused_dropout_kernel_vec<c10::Half", "elementwise"),
    (("void at::native::elementwise_kernel<128  4  at::native::gpu_kernel_impl_nocast<at::native::(anonymous "
     "namespace)::masked_fill_kernel"), "elementwise"),
    ("void at::native::(anonymous namespace)::CatArrayBatchedCopy<", "elementwise"),  # split's backward
    (("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
     "FusedOptimizerTensorListMetadata<4>"), "optimizer"),  # fused Adam
    ("void at::native::lpnorm_cleanup<", "optimizer"),  # the loss scale's gradient norm
    ("void at::native::reduce_kernel<128  4  at::native::ReduceOp<c10::Half", "reduction"),  # a bias gradient
    ("void at::native::(anonymous namespace)::sum_and_scatter<c10::Half", "embedding"),  # the table's backward
    ("void at::native::vectorized_gather_kernel<", "embedding"),  # the lookup
)


def rows() -> list[dict[str, str]]:
    lines = [line for line in PROFILE.read_text().splitlines() if line and not line.startswith("#")]
    return list(csv.DictReader(lines))


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_train_profile")


@pytest.mark.parametrize(("start", "cls"), HAND)
def test_real_kernel_names_fall_in_their_class(bench, start, cls):
    names = {r["name"] for r in rows() if r["kind"] == "kernel" and r["name"].startswith(start)}
    assert names, start  # a name the committed file has
    assert {bench.kernel_class(name) for name in names} == {cls}


def test_every_committed_kernel_has_a_class(bench):
    assert not {r["name"] for r in rows() if r["kind"] == "kernel" and bench.kernel_class(r["name"]) == "other"}


def test_busy_is_the_sum_of_the_kernel_rows(bench):
    by_point: dict[str, list[float]] = {}
    busy: dict[str, tuple[float, int]] = {}
    calls: dict[str, int] = {}
    for r in rows():
        if r["kind"] == "kernel":
            by_point.setdefault(r["point"], []).append(float(r["seconds"]))
            calls[r["point"]] = calls.get(r["point"], 0) + int(r["calls"])
        elif r["kind"] == "busy":
            busy[r["point"]] = (float(r["seconds"]), int(r["calls"]))
    assert len(busy) == 9
    for point, (seconds, count) in busy.items():
        assert sum(by_point[point]) == pytest.approx(seconds, rel=1e-5)  # six digits written per row
        assert calls[point] == count
    for m in bench.read_profile(PROFILE):  # the reader's classes hold every kernel once
        assert sum(m.seconds.values()) == pytest.approx(busy[m.point][0], rel=1e-5)
        assert sum(m.class_calls.values()) == m.calls == busy[m.point][1]


def test_the_bench_runs_on_the_committed_profile(bench, capsys):
    assert bench.main([]) == 0
    out = capsys.readouterr().out
    assert out.count("\n## gpt_") == 9
    # the headline point as the file states it: 1761 ms, 361 ms of kernels
    assert "iteration: measured 1761.0 ms" in out and "GPU busy 360.6 ms (20%) in 34054 kernels" in out
    assert "## Summary" in out and "## Full recompute's host time" in out


def test_the_profiler_runs_on_the_cpu(tmp_path):
    pytest.importorskip("torch", reason="PyTorch is not installed")
    out = tmp_path / "profile.csv"
    assert load_benchmark("gpu_train_profile").main(["--device", "cpu", "--tiny", "--out", str(out),
                                                      "--warmup", "1"]) == 0
    lines = [line for line in out.read_text().splitlines() if line and not line.startswith("#")]
    table = list(csv.DictReader(lines))
    points = {r["point"] for r in table}
    assert len(points) == 2
    for point in points:
        kinds = [r["kind"] for r in table if r["point"] == point]
        assert kinds.count("iteration") == 1 and kinds.count("busy") == 1 and kinds.count("kernel") >= 1
        assert set(kinds) == {"iteration", "busy", "kernel"}


def test_archsims_parts_add_up_to_its_iteration_and_recompute_reissues_the_forward(bench):
    """archsim's classes, launches and host excess sum to the iteration its event simulation gives (two paths); full
    recompute issues each layer's 17 eager forward kernels again, the count the probe's profiler measured (4 × 17 more
    launches on its 4-layer GPT, docs/accuracy.md "Hopper check")."""
    full = next(m for m in bench.read_profile(PROFILE) if m.recompute == "full" and m.micro_batch == 1)
    p = bench.predict(full)
    assert sum(p.seconds.values()) + p.launch + p.host == pytest.approx(p.iteration, rel=1e-9)
    q = bench.predict(replace(full, recompute="none"))
    assert p.eager_ops - q.eager_ops == 17 * 24 * 16  # per layer × 24 layers × 16 micro-batches
    assert p.host > 0 and q.host > 0  # micro-batch 1 is host-bound in archsim too
